"""Recipe values that reach the file system and the generated CMake, checked. Pure.

A recipe may come from anyone (a pull request, a downloaded project). Folder values are joined to
the project root and written into (the loader goes into ``python-package-dir``), so they must
stay inside it; strings pasted into the generated CMake must not be able to end an argument or a
command, or a recipe could run arbitrary CMake code at configure time. Source globs have the same
path rules (``sources.py``, which also checks where each match really leads).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from buildtool.errors import RecipeError
from buildtool.recipe.model import Recipe

CMAKE_SPECIAL = re.compile(r'["\\$;#()\x00-\x1f\x7f]')
"""Characters that end or reinterpret a CMake argument: quotes, escapes, variable references,
list separators, comments, parentheses and control characters (a newline starts a command)."""

CMAKE_VERSION_PARTS = 4
"""CMake's ``project(VERSION ...)`` takes at most four numbers and nothing else."""


def normalized_version(version: str, source: str) -> str:
    """``version`` in PEP 440's normal form (``1.0.0-rc1`` -> ``1.0.0rc1``): what wheel file
    names, the metadata and the build info carry. Any PEP 440 version is accepted: dev, pre,
    post and local ones (``0.19.dev0``, ``1.0.0rc1``, ``1.0.post2``, ``1.0.0+cu121``)."""
    from packaging.version import InvalidVersion, Version  # here: only loading needs it

    try:
        return str(Version(version))
    except InvalidVersion:
        raise RecipeError(
            source,
            "project.version",
            "expected a PEP 440 version (1.2.3, 0.19.dev0, 1.0.0rc1, 1.0.post1, 1.0.0+cu121), "
            f"found {version!r}",
        ) from None


def cmake_version(version: str) -> str:
    """The release numbers of a PEP 440 version, as CMake's ``project(VERSION)`` takes them
    (``0.19.dev0`` -> ``0.19``; the full version goes into the build info as a string)."""
    from packaging.version import Version

    return ".".join(str(part) for part in Version(version).release[:CMAKE_VERSION_PARTS])


def relative_path_problem(path: str) -> str | None:
    """Why ``path`` is not a plain relative path inside its root, or None."""
    pure = PurePosixPath(path)
    first = pure.parts[0] if pure.parts else ""
    if not path or pure.is_absolute() or "\\" in path or ":" in first:
        return f"expected a path relative to the project root, found {path!r}"
    if ".." in pure.parts:
        return f"paths may not escape the project root, found {path!r}"
    return None


def _folders(recipe: Recipe) -> Iterator[tuple[str, str]]:
    """(key path, value) of every folder the recipe names under the project root."""
    if recipe.project.python_package_dir:
        yield "project.python-package-dir", recipe.project.python_package_dir
    for name, lib in recipe.libraries.items():
        for index, folder in enumerate(lib.include_dirs):
            yield f"libraries.{name}.include-dirs[{index}]", folder


def _cmake_strings(recipe: Recipe) -> Iterator[tuple[str, str]]:
    """(key path, value) of every free-form string the generated CMake contains."""
    yield "project.version", recipe.project.version
    for table, entries in (("executables", recipe.executables), ("tests", recipe.tests)):
        for name, exe in entries.items():
            for index, arg in enumerate(exe.args):
                yield f"{table}.{name}.args[{index}]", arg
    for name, external in recipe.externals.items():
        yield f"externals.{name}.find-package", external.find_package
        for index, item in enumerate(external.link):
            yield f"externals.{name}.link[{index}]", item
    yield from _folders(recipe)


def _file_names(recipe: Recipe) -> Iterator[tuple[str, str]]:
    for name, lib in recipe.libraries.items():
        if lib.file:
            yield f"libraries.{name}.file", lib.file


def check_values(recipe: Recipe, source: str) -> None:
    """Refuse folders outside the project, CMake-breaking strings and bad file names."""
    for key, folder in _folders(recipe):
        problem = relative_path_problem(folder)
        if problem:
            raise RecipeError(source, key, problem)
    for key, text in _cmake_strings(recipe):
        special = CMAKE_SPECIAL.search(text)
        if special:
            raise RecipeError(
                source, key, f"{special.group()!r} would break the generated CMake, in {text!r}"
            )
    for key, file_name in _file_names(recipe):
        if "/" in file_name or "\\" in file_name or file_name in (".", ".."):
            raise RecipeError(source, key, f"expected a file name, found {file_name!r}")
