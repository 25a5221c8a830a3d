"""The folders a package adds to the Windows DLL search with ``os.add_dll_directory``, read from
its Python files (delvewheel's patch in ``__init__.py``, torch's ``lib`` folder, a loader that
computes the folder at run time)."""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from pathlib import PurePosixPath
from typing import Final

_JOIN: Final = re.compile(
    r"os\.path\.join\(\s*os\.path\.dirname\(\s*(?:os\.path\.(?:abspath|realpath)\(\s*)?__file__\s*\)?\s*\)"
    r"((?:\s*,\s*(?:os\.pardir|'[^']*'|\"[^\"]*\"))+)\s*\)"
)
_PART: Final = re.compile(r"os\.pardir|'([^']*)'|\"([^\"]*)\"")


def add_dll_directories(text: str) -> tuple[tuple[str, ...], bool]:
    """What a Python file adds with ``os.add_dll_directory``: the folders relative to the file's
    own folder (``..`` for ``os.pardir``) that it builds as ``os.path.join(os.path.dirname(
    __file__), ...)`` (delvewheel's patch, torch's ``lib`` folder), and whether it also adds a
    folder it computes at run time (then its package's DLL folders count as added)."""
    if "add_dll_directory" not in text:
        return (), False
    folders = []
    for match in _JOIN.finditer(text):
        parts = [
            ".." if part.group(0) == "os.pardir" else (part.group(1) or part.group(2) or "")
            for part in _PART.finditer(match.group(1))
        ]
        folders.append("/".join(part for part in parts if part))
    return tuple(folders), not folders


def dll_directories(
    scripts: Collection[tuple[PurePosixPath, str]],
    binaries: Collection[PurePosixPath],
    in_wheel: bool = False,
) -> tuple[PurePosixPath, ...]:
    """The folders ``scripts`` ((location, text) of Python files) add with
    ``os.add_dll_directory``: the literal ones, and for a script that adds a folder it computes,
    every folder of its top-level package that holds a DLL."""
    found: dict[PurePosixPath, None] = {}
    for location, text in scripts:
        literal, computed = add_dll_directories(text)
        for folder in literal:
            found[PurePosixPath(os.path.normpath(location.parent / folder))] = None
        if computed:
            # a wheel's member: its top-level package; on disk: the script's folder
            top = location.parts[:2] if in_wheel else location.parent.parts
            package = PurePosixPath(*top)
            for binary in binaries:
                if binary.suffix.lower() == ".dll" and binary.is_relative_to(package):
                    found[binary.parent] = None
    return tuple(found)
