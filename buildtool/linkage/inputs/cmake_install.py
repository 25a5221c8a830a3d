"""The RPATH ``cmake --install`` gives each installed file, read from ``cmake_install.cmake``.
Pure: text in, file name -> RPATH out.

The File API says whether a target is installed, not with which RPATH. The install script
says it: before copying, ``file(RPATH_CHECK FILE <installed file> RPATH <install RPATH>)``
for every file of a target CMake links with an RPATH (``INSTALL_RPATH``, empty when unset);
with ``BUILD_WITH_INSTALL_RPATH`` ON the build tree already has that RPATH, otherwise a
``file(RPATH_CHANGE ...)`` after the copy rewrites CMake's build RPATH into it.
"""

from __future__ import annotations

import posixpath
import re

_STATEMENT = re.compile(
    r'foreach\(file\s+(?P<files>(?:"[^"]*"\s*)+)\)'
    r'|file\(RPATH_CHECK\s+FILE\s+"(?P<file>[^"]*)"\s+RPATH\s+'
    r'(?:"(?P<rpath>(?:[^"\\]|\\.)*)"|\[(?P<eq>=*)\[(?P<bracket>.*?)\](?P=eq)\])\s*\)',
    re.DOTALL,
)
"""``foreach(file ...)`` lists and ``file(RPATH_CHECK FILE <f> RPATH <rpath>)``, the RPATH quoted
(CMake 3) or a bracket argument, taken as written (CMake 4: ``[[$ORIGIN/../lib]]``)."""


def _cmake_unquote(text: str) -> str:
    """A quoted CMake argument's escapes (``\\$ORIGIN``, ``\\;``) undone."""
    return re.sub(r"\\(.)", r"\1", text)


def install_rpaths(script: str) -> dict[str, str]:
    """Installed file name -> the RPATH it is installed with (``""``: none), from one
    ``cmake_install.cmake``."""
    found: dict[str, str] = {}
    loop: list[str] = []
    for match in _STATEMENT.finditer(script):
        if match["files"] is not None:
            loop = re.findall(r'"([^"]*)"', match["files"])
            continue
        files = loop if match["file"] == "${file}" else [match["file"]]
        rpath = match["bracket"] if match["rpath"] is None else _cmake_unquote(match["rpath"])
        for path in files:
            found[posixpath.basename(path)] = rpath
    return found


_INSTALL = re.compile(
    r'file\(INSTALL\s+DESTINATION\s+"(?P<dest>[^"]*)"\s+TYPE\s+(?:SHARED_LIBRARY|MODULE|'
    r'EXECUTABLE)\s+(?:[A-Z_]+\s+)*?FILES\s+(?P<files>(?:"[^"]*"\s*)+)\)'
)


PREFIX = "${CMAKE_INSTALL_PREFIX}/"
"""How an install script spells a destination under the install prefix."""


def install_folders(script: str) -> dict[str, str]:
    """Installed file name -> the folder ``cmake --install`` puts it in, relative to the install
    prefix (``lib``, ``bin``, ``lib/backends``; an absolute destination as written), from one
    ``cmake_install.cmake``."""
    found: dict[str, str] = {}
    for match in _INSTALL.finditer(script):
        destination = match["dest"].rstrip("/")
        folder = destination.removeprefix(PREFIX) if destination != PREFIX[:-1] else "."
        for path in re.findall(r'"([^"]*)"', match["files"]):
            found[posixpath.basename(path)] = folder
    return found
