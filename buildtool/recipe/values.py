"""Recipe values that reach the file system and the generated CMake, checked. Pure.

A recipe may come from anyone (a pull request, a downloaded project). Folder values are joined to
the project root and written into (the loader goes into ``python-package-dir``), so they must
stay inside it; strings pasted into the generated CMake must not be able to end an argument or a
command, or a recipe could run arbitrary CMake code at configure time. Source globs have the same
path rules (``sources.py``, which also checks where each match really leads).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath

from buildtool.errors import RecipeError
from buildtool.recipe.model import Executable, Extension, ObjectLibrary, Recipe, SharedLibrary

CMAKE_SPECIAL = re.compile(r'["\\$;#()\x00-\x1f\x7f]')
"""Characters that end or reinterpret a CMake argument: quotes, escapes, variable references,
list separators, comments, parentheses and control characters (a newline starts a command)."""

_DEFINITION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(=.*)?\Z", re.DOTALL)
"""``NAME`` or ``NAME=VALUE``, as ``target_compile_definitions`` takes them."""

_VERSION = re.compile(r"[0-9]+(\.[0-9]+){0,3}\Z")
"""What CMake's ``project(VERSION ...)`` accepts."""


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
    yield "project.cmake-file", recipe.project.cmake_file
    for index, path in enumerate(recipe.project.headers):
        yield f"project.headers[{index}]", path
    for index, path in enumerate(recipe.project.cmake_include):
        yield f"project.cmake-include[{index}]", path
    for key, entry in _targets(recipe):
        for index, folder in enumerate(entry.include_dirs):
            yield f"{key}.include-dirs[{index}]", folder


_Target = SharedLibrary | ObjectLibrary | Executable | Extension


def _targets(recipe: Recipe) -> Iterator[tuple[str, _Target]]:
    """(key path, table) of every target of the recipe."""
    tables: dict[str, Mapping[str, _Target]] = {
        "libraries": recipe.libraries,
        "objects": recipe.objects,
        "executables": recipe.executables,
        "tests": recipe.tests,
        "extensions": recipe.extensions,
    }
    for table, entries in tables.items():
        for name, entry in entries.items():
            yield f"{table}.{name}", entry


_FLAG_KEYS = ("definitions", "private-definitions", "compile-options", "link-options")


def _flags(recipe: Recipe) -> Iterator[tuple[str, str]]:
    """(key path, value) of every definition and compiler or linker flag."""
    for key, entry in _targets(recipe):
        for field in _FLAG_KEYS:
            for index, value in enumerate(getattr(entry, field.replace("-", "_"), ())):
                yield f"{key}.{field}[{index}]", value


def _cmake_strings(recipe: Recipe) -> Iterator[tuple[str, str]]:
    """(key path, value) of every free-form string the generated CMake contains."""
    yield "project.version", recipe.project.version
    for table, entries in (("executables", recipe.executables), ("tests", recipe.tests)):
        for name, exe in entries.items():
            for index, arg in enumerate(exe.args):
                yield f"{table}.{name}.args[{index}]", arg
    for name, external in recipe.externals.items():
        yield f"externals.{name}.find-package", external.find_package
        yield f"externals.{name}.version", external.version
        yield f"externals.{name}.pkg-config", external.pkg_config
        for index, item in enumerate(external.link):
            yield f"externals.{name}.link[{index}]", item
        for index, item in enumerate(external.components):
            yield f"externals.{name}.components[{index}]", item
    for name, option in recipe.options.items():
        yield f"options.{name}.help", option.help
    yield from _folders(recipe)
    yield from _flags(recipe)


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
    if not _VERSION.match(recipe.project.version):
        raise RecipeError(
            source,
            "project.version",
            f"expected numbers separated by dots (1.2.3), found {recipe.project.version!r}",
        )
    _check_definitions(recipe, source)
    _check_standards(recipe, source)
    _check_cmake_file(recipe.project.cmake_file, source)
    for key, file_name in _file_names(recipe):
        if "/" in file_name or "\\" in file_name or file_name in (".", ".."):
            raise RecipeError(source, key, f"expected a file name, found {file_name!r}")


def _check_definitions(recipe: Recipe, source: str) -> None:
    for key, value in _flags(recipe):
        if ".definitions[" in key or ".private-definitions[" in key:
            if not _DEFINITION.match(value):
                raise RecipeError(
                    source, key, f"expected NAME or NAME=VALUE (a C identifier), found {value!r}"
                )
        elif not value or value[0].isspace() or value[-1].isspace():
            raise RecipeError(source, key, f"expected a flag without outer spaces, found {value!r}")


_STANDARDS = {"cxx-standard": (98, 11, 14, 17, 20, 23, 26), "c-standard": (90, 99, 11, 17, 23)}


def _check_standards(recipe: Recipe, source: str) -> None:
    project = recipe.project
    for key, value in (("cxx-standard", project.cxx_standard), ("c-standard", project.c_standard)):
        known = _STANDARDS[key]
        if value not in known:
            shown = ", ".join(str(standard) for standard in known)
            raise RecipeError(source, f"project.{key}", f"expected one of {shown}, found {value}")


_RESERVED_CMAKE_FILES = ("CMakeLists.txt", "cmake/buildtool/buildtool.cmake")
"""The project's own root file, and the helpers buildtool writes beside the targets."""


def _check_cmake_file(cmake_file: str, source: str) -> None:
    if not cmake_file.endswith(".cmake") or cmake_file in _RESERVED_CMAKE_FILES:
        raise RecipeError(
            source,
            "project.cmake-file",
            "expected a root-relative path ending in .cmake other than "
            f"{_RESERVED_CMAKE_FILES[1]}, found {cmake_file!r}",
        )
