"""Where the files that ship with buildtool live: inside the wheel, or in a source checkout."""

from __future__ import annotations

from pathlib import Path

from buildtool.errors import InputError

_PACKAGE_DIR = Path(__file__).resolve().parent


def templates_dir() -> Path:
    """``cmake-templates/``: packaged as ``buildtool/cmake-templates`` in the wheel."""
    for candidate in (_PACKAGE_DIR / "cmake-templates", _PACKAGE_DIR.parent / "cmake-templates"):
        if (candidate / "buildtool.cmake").is_file():
            return candidate
    raise InputError(f"buildtool's CMake templates are missing (looked in {_PACKAGE_DIR})")


def read_templates() -> dict[str, str]:
    """Every template by file name."""
    folder = templates_dir()
    return {
        path.name: path.read_text(encoding="utf-8")
        for path in sorted(folder.iterdir())
        if path.is_file()
    }


def schema_path(name: str) -> Path:
    """A committed JSON schema shipped inside the package (``recipe``, ``report``)."""
    return _PACKAGE_DIR / "schemas" / f"{name}.schema.json"


def package_templates(folder: str) -> dict[str, str]:
    """The templates in ``buildtool/templates/<folder>`` (``loader``, ``packaging``) by file name.

    Package data of ``buildtool`` itself, so the same path works in a checkout and in the wheel.
    """
    directory = _PACKAGE_DIR / "templates" / folder
    if not directory.is_dir():
        raise InputError(f"buildtool's {folder} templates are missing (looked in {directory})")
    return {
        path.name: path.read_text(encoding="utf-8")
        for path in sorted(directory.iterdir())
        if path.is_file()
    }
