"""Expanding a recipe's source globs on disk, refusing anything outside the project root."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from buildtool.errors import RecipeError
from buildtool.recipe.load import LoadedRecipe, key_path
from buildtool.recipe.values import relative_path_problem

MAX_MATCHES_PER_PATTERN = 10_000
"""A glob matching more files than this is a mistake (``**/*`` at a drive root), not a project."""

SourceMap = Mapping[str, tuple[str, ...]]
"""Key path of a ``sources`` array (``objects.gemm.sources``) -> matched files, root-relative."""


def _source_arrays(loaded: LoadedRecipe) -> Iterator[tuple[str, tuple[str, ...]]]:
    recipe = loaded.recipe
    tables: dict[str, Mapping[str, object]] = {
        "libraries": recipe.libraries,
        "plugins": recipe.plugins,
        "objects": recipe.objects,
        "executables": recipe.executables,
        "tests": recipe.tests,
        "extensions": recipe.extensions,
    }
    for table, entries in tables.items():
        for name, entry in entries.items():
            yield f"{table}.{name}.sources", getattr(entry, "sources", ())


MAX_PATTERN_LENGTH = 1024
"""Longer patterns are mistakes; very deep ones would exhaust pathlib's recursion."""


def _check_pattern(pattern: str, source: str, key: str) -> None:
    problem = relative_path_problem(pattern)
    if problem:
        raise RecipeError(source, key, problem)
    if len(pattern) > MAX_PATTERN_LENGTH or pattern.count("/") > MAX_PATTERN_LENGTH // 16:
        raise RecipeError(source, key, f"a pattern of {len(pattern)} characters is too long")
    if not PurePosixPath(pattern).parts:
        raise RecipeError(source, key, f"expected files, found the project root {pattern!r}")


def _matches(root: Path, pattern: str, source: str, key: str) -> list[Path]:
    """At most one match over the limit; what pathlib refuses becomes a RecipeError."""
    try:
        return list(itertools.islice(root.glob(pattern), MAX_MATCHES_PER_PATTERN + 1))
    except (ValueError, OSError) as error:  # "a**b", a name too long for the file system
        raise RecipeError(source, key, f"cannot expand {pattern!r}: {error}") from None


def _within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def expand_pattern(root: Path, pattern: str, source: str, key: str) -> tuple[str, ...]:
    """Files under ``root`` matching ``pattern``, sorted, as root-relative POSIX paths."""
    _check_pattern(pattern, source, key)
    found: list[str] = []
    for match in _matches(root, pattern, source, key):
        if len(found) == MAX_MATCHES_PER_PATTERN:
            raise RecipeError(
                source, key, f"{pattern!r} matches more than {MAX_MATCHES_PER_PATTERN} files"
            )
        if not match.is_file():
            continue
        if not _within(match, root):
            raise RecipeError(
                source, key, f"{match.relative_to(root)} leads outside the project root {root}"
            )
        found.append(match.relative_to(root).as_posix())
    if not found:
        raise RecipeError(source, key, f"{pattern!r} matches no file under {root}")
    return tuple(sorted(found))


def expand_sources(loaded: LoadedRecipe) -> dict[str, tuple[str, ...]]:
    """Every ``sources`` array of the recipe, expanded; an empty array stays empty."""
    root = loaded.root.resolve()
    expanded: dict[str, tuple[str, ...]] = {}
    for key, patterns in _source_arrays(loaded):
        files: list[str] = []
        for index, pattern in enumerate(patterns):
            for path in expand_pattern(root, pattern, loaded.source, key_path(key, index)):
                if path not in files:
                    files.append(path)
        expanded[key] = tuple(files)
    return expanded
