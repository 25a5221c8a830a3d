"""Recipe values that reach the file system and the generated CMake, checked. Pure.

A recipe may come from anyone (a pull request, a downloaded project). Folder values are joined to
the project root and written into (the loader goes into ``python-package-dir``), so they must
stay inside it; strings pasted into the generated CMake must not be able to end an argument or a
command, or a recipe could run arbitrary CMake code at configure time. Source globs have the same
path rules (``sources.py``, which also checks where each match really leads).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath

from buildtool.errors import RecipeError
from buildtool.recipe.model import (
    Executable,
    Extension,
    MigrateSettings,
    ObjectLibrary,
    PluginLibrary,
    Recipe,
    SharedLibrary,
)

CMAKE_SPECIAL = re.compile(r'["\\$;#()\x00-\x1f\x7f]')
"""Characters that end or reinterpret a CMake argument: quotes, escapes, variable references,
list separators, comments, parentheses and control characters (a newline starts a command)."""

_DEFINITION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(=.*)?\Z", re.DOTALL)
"""``NAME`` or ``NAME=VALUE``, as ``target_compile_definitions`` takes them."""

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
    yield "project.cmake-file", recipe.project.cmake_file
    for index, path in enumerate(recipe.project.headers):
        yield f"project.headers[{index}]", path
    for index, path in enumerate(recipe.project.cmake_include):
        yield f"project.cmake-include[{index}]", path
    for key, entry in _targets(recipe):
        for index, folder in enumerate(entry.include_dirs):
            yield f"{key}.include-dirs[{index}]", folder
    for path, header in recipe.configured_headers.items():
        key = _quoted("configured-headers", path)
        yield key, path
        yield f"{key}.template", header.template


_Target = SharedLibrary | PluginLibrary | ObjectLibrary | Executable | Extension


def _targets(recipe: Recipe) -> Iterator[tuple[str, _Target]]:
    """(key path, table) of every target of the recipe."""
    tables: dict[str, Mapping[str, _Target]] = {
        "libraries": recipe.libraries,
        "plugins": recipe.plugins,
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
    for name, lib in recipe.libraries.items():
        yield f"libraries.{name}.plugin-folder", lib.plugin_folder
    for name, plugin in recipe.plugins.items():
        yield f"plugins.{name}.alternatives", plugin.alternatives


_PLUGIN_FOLDER = re.compile(r"[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*\Z")
"""Folder names a plugin folder may have: it becomes an install destination and a C string."""


def _check_plugin_folders(recipe: Recipe, source: str) -> None:
    """A plugin folder is a plain relative folder of the install layout, written normalized
    (it is compared with where files lie, and pasted into CMake and C definitions)."""
    for name, lib in recipe.libraries.items():
        folder = lib.plugin_folder
        pure = PurePosixPath(folder)
        plain = _PLUGIN_FOLDER.match(folder) and pure.as_posix() == folder and folder != "."
        if relative_path_problem(folder) or not plain:
            raise RecipeError(
                source,
                f"libraries.{name}.plugin-folder",
                "expected a folder relative to the install prefix, of letters, digits and "
                "'_', '.', '+', '-', without '..' ('lib', 'lib/backends', 'bin'), found "
                f"{folder!r}",
            )


def _file_names(recipe: Recipe) -> Iterator[tuple[str, str]]:
    for table, entries in _built_files(recipe):
        for name, lib in entries.items():
            if lib.file:
                yield f"{table}.{name}.file", lib.file


def _built_files(
    recipe: Recipe,
) -> tuple[tuple[str, Mapping[str, SharedLibrary | PluginLibrary]], ...]:
    """The tables whose entries name their built file (``file``, ``output-name``)."""
    return (("libraries", recipe.libraries), ("plugins", recipe.plugins))


_OUTPUT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*\Z")
"""A library's base file name: it begins a file name and a CMake property value."""


def _check_output_names(recipe: Recipe, source: str) -> None:
    for table, entries in _built_files(recipe):
        for name, lib in entries.items():
            _check_output_name(f"{table}.{name}", lib, source)


def _check_output_name(key: str, lib: SharedLibrary | PluginLibrary, source: str) -> None:
    if lib.output_name and not _OUTPUT_NAME.match(lib.output_name):
        raise RecipeError(
            source,
            f"{key}.output-name",
            "expected a base file name of letters, digits and '_', '.', '+', '-' "
            f"(sentencepiece gives libsentencepiece.so), found {lib.output_name!r}",
        )
    if lib.output_name and lib.file and lib.file != f"lib{lib.output_name}.so":
        raise RecipeError(
            source,
            f"{key}.file",
            f"output-name {lib.output_name!r} makes lib{lib.output_name}.so, but file says "
            f"{lib.file!r}; set one of them",
        )


_FIND_VERSION = re.compile(r"\d+(\.\d+){0,3}(\.\.\.<?\d+(\.\d+){0,3})?\Z")
"""CMake's ``find_package`` version: ``1.2``, or a range ``1.2...<2``."""
_PKG_CONFIG = re.compile(r"[A-Za-z0-9_.+-]+( *(>=|<=|!=|=|<|>) *[A-Za-z0-9_.+~-]+)?\Z")
"""A pkg-config module with an optional constraint: ``zlib``, ``zlib >= 1.2``."""


def _check_externals(recipe: Recipe, source: str) -> None:
    for name, external in recipe.externals.items():
        if external.version and not _FIND_VERSION.match(external.version):
            raise RecipeError(
                source,
                f"externals.{name}.version",
                f"expected a version (1.2, or a range 1.2...<2), found {external.version!r}",
            )
        if external.pkg_config and not _PKG_CONFIG.match(external.pkg_config):
            raise RecipeError(
                source,
                f"externals.{name}.pkg-config",
                "expected a pkg-config module with an optional constraint (zlib, zlib >= 1.2), "
                f"found {external.pkg_config!r}",
            )


def _growth_allowances(recipe: Recipe, source: str) -> None:
    for name, percent in recipe.verify.max_growth_percent.items():
        key = f"verify.max-growth-percent.{name}"
        if name not in recipe.libraries:
            known = ", ".join(sorted(recipe.libraries)) or "none"
            raise RecipeError(source, key, f"expected the name of a library ({known})")
        if not percent >= 0:  # NaN too
            raise RecipeError(source, key, f"expected a percentage >= 0, found {percent!r}")


def check_values(recipe: Recipe, source: str) -> None:
    """Refuse folders outside the project, CMake-breaking strings, bad file names and growth
    allowances for libraries that do not exist."""
    _growth_allowances(recipe, source)
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
    _check_definitions(recipe, source)
    _check_plugin_folders(recipe, source)
    _check_output_names(recipe, source)
    _check_externals(recipe, source)
    _check_standards(recipe, source)
    _check_cmake_file(recipe.project.cmake_file, source)
    for key, file_name in _file_names(recipe):
        if "/" in file_name or "\\" in file_name or file_name in (".", ".."):
            raise RecipeError(source, key, f"expected a file name, found {file_name!r}")
    check_migrate(recipe.migrate, source)


_BAD_NAME = re.compile(r"[\x00-\x1f\x7f]|^\s|\s$")
"""A control character (a newline: matches are found within one line), or white space at either
end (invisible in a report, and never what a name means)."""

_BAD_HEADER = re.compile(r"[\s\"'<>\x00-\x1f\x7f]")
"""What cannot stand inside ``#include "..."`` or ``<...>``."""


def _quoted(table: str, key: str) -> str:
    """The key path of an entry as TOML writes it: ``migrate.renamed."libdemo.so"``."""
    bare = re.fullmatch(r"[A-Za-z0-9_-]+", key)
    return f"migrate.{table}." + (key if bare else json.dumps(key, ensure_ascii=False))


def _name_problem(name: str, what: str) -> str | None:
    if not name:
        return f"expected a non-empty {what}"
    if _BAD_NAME.search(name):
        return (
            f"a {what} may not hold control characters nor start or end with white space, "
            f"found {name!r}"
        )
    return None


def _header_problem(path: str) -> str | None:
    problem = relative_path_problem(path)
    if problem:
        return problem.replace("the project root", "an include folder")
    if _BAD_HEADER.search(path):
        return f"expected an include path without spaces, quotes or angle brackets, found {path!r}"
    return None


def _migrate_entries(migrate: MigrateSettings) -> Iterator[tuple[str, str, str]]:
    """(table, old, new-or-advice) of every entry of ``[migrate]``."""
    for table, entries in (
        ("renamed", migrate.renamed),
        ("removed", migrate.removed),
        ("renamed-headers", migrate.renamed_headers),
    ):
        for old, new in entries.items():
            yield table, old, new


def _entry_problem(table: str, old: str, new: str) -> str | None:
    if table == "renamed-headers":
        return _header_problem(old) or _header_problem(new)
    problem = _name_problem(old, "name")
    if problem:
        return problem
    if table == "removed":
        return None if new.strip() else "expected advice to show with each use, found nothing"
    return _name_problem(new, "replacement") or (
        f"the replacement is the old name itself ({new!r})" if new == old else None
    )


def check_migrate(migrate: MigrateSettings, source: str) -> None:
    """Refuse empty or malformed names and paths, an old name in two tables, and a replacement
    that is itself an old name (a second ``--fix`` would change it again)."""
    seen: dict[str, str] = {}
    for table, old, new in _migrate_entries(migrate):
        key = _quoted(table, old)
        problem = _entry_problem(table, old, new)
        if problem:
            raise RecipeError(source, key, problem)
        if old in seen:
            raise RecipeError(source, key, f"{old!r} is already in migrate.{seen[old]}")
        seen[old] = table
    for table, old, new in _migrate_entries(migrate):
        if table != "removed" and new in seen:
            raise RecipeError(
                source,
                _quoted(table, old),
                f"the replacement {new!r} is itself an old name (in migrate.{seen[new]}); "
                "name the final one",
            )
    _check_migrate_paths(migrate, source)


def _check_migrate_paths(migrate: MigrateSettings, source: str) -> None:
    if migrate.shims:
        problem = relative_path_problem(migrate.shims)
        if problem:
            raise RecipeError(source, "migrate.shims", problem)
    for index, pattern in enumerate(migrate.exclude):
        problem = relative_path_problem(pattern)
        if problem:
            raise RecipeError(source, f"migrate.exclude[{index}]", problem)


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
