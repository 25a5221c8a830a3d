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
from collections.abc import Iterator
from pathlib import PurePosixPath

from buildtool.errors import RecipeError
from buildtool.recipe.model import MigrateSettings, Recipe

CMAKE_SPECIAL = re.compile(r'["\\$;#()\x00-\x1f\x7f]')
"""Characters that end or reinterpret a CMake argument: quotes, escapes, variable references,
list separators, comments, parentheses and control characters (a newline starts a command)."""

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
    if not _VERSION.match(recipe.project.version):
        raise RecipeError(
            source,
            "project.version",
            f"expected numbers separated by dots (1.2.3), found {recipe.project.version!r}",
        )
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
