"""Cross-compiling toolchains: the ones buildtool ships by name, or a file of the project's.

``--toolchain mingw-w64-x86_64`` picks ``cmake-templates/toolchains/mingw-w64-x86_64.cmake``;
``--toolchain path/to/file.cmake`` takes the project's own. Either becomes
``CMAKE_TOOLCHAIN_FILE``, an absolute path: CMake reads it only on a build folder's first
configure and the wheel builds run from another folder.
"""

from __future__ import annotations

from pathlib import Path

from buildtool.errors import UsageError
from buildtool.resources import templates_dir

TOOLCHAIN_VARIABLE = "CMAKE_TOOLCHAIN_FILE"


def shipped_toolchains() -> dict[str, Path]:
    """The toolchain files buildtool ships, by name (the file name without ``.cmake``)."""
    folder = templates_dir() / "toolchains"
    return {path.stem: path for path in sorted(folder.glob("*.cmake"))}


def resolve_toolchain(text: str) -> Path:
    """The toolchain file ``--toolchain`` names: a shipped one's name, else a path to an
    existing file; anything else is a usage error that lists the shipped names."""
    shipped = shipped_toolchains()
    if text in shipped:
        return shipped[text]
    path = Path(text)
    if path.is_file():
        return path.resolve()
    names = ", ".join(shipped) or "none"
    looked = "a directory" if path.is_dir() else "no such file"
    raise UsageError(
        f"--toolchain {text!r}: expected the name of a toolchain buildtool ships ({names}) "
        f"or a CMake toolchain file, found {looked}"
    )


def toolchain_defines(text: str | None) -> dict[str, str]:
    """The cache entry ``--toolchain`` sets; none without it."""
    if text is None:
        return {}
    return {TOOLCHAIN_VARIABLE: str(resolve_toolchain(text))}
