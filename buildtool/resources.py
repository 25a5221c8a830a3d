"""Where the files that ship with buildtool live: inside the wheel, or in a source checkout."""

from __future__ import annotations

from pathlib import Path

from buildtool.errors import InputError

_PACKAGE_DIR = Path(__file__).resolve().parent


def templates_dir() -> Path:
    """``cmake-templates/``, every template buildtool renders (CMake at its top, the package
    loader in ``loader/``, the distributions' pyproject.toml in ``packaging/``): packaged as
    ``buildtool/cmake-templates`` in the wheel."""
    for candidate in (_PACKAGE_DIR / "cmake-templates", _PACKAGE_DIR.parent / "cmake-templates"):
        if (candidate / "buildtool.cmake").is_file():
            return candidate
    raise InputError(f"buildtool's templates are missing (looked in {_PACKAGE_DIR})")


def read_templates(folder: str = "") -> dict[str, str]:
    """The templates in ``cmake-templates/<folder>`` by file name (the CMake ones at the top;
    ``loader``, ``packaging``)."""
    directory = templates_dir() / folder
    if not directory.is_dir():
        raise InputError(f"buildtool's {folder} templates are missing (looked in {directory})")
    return {
        path.name: path.read_text(encoding="utf-8")
        for path in sorted(directory.iterdir())
        if path.is_file()
    }


def schema_path(name: str) -> Path:
    """A committed JSON schema shipped inside the package (``recipe``, ``report``)."""
    return _PACKAGE_DIR / "schemas" / f"{name}.schema.json"
