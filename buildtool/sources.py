"""Expanding a recipe's source globs on disk, refusing anything outside the project root."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from buildtool.errors import RecipeError
from buildtool.recipe import LoadedRecipe, key_path

MAX_MATCHES_PER_PATTERN = 10_000
"""A glob matching more files than this is a mistake (``**/*`` at a drive root), not a project."""

SourceMap = Mapping[str, tuple[str, ...]]
"""Key path of a ``sources`` array (``objects.gemm.sources``) -> matched files, root-relative."""


def _source_arrays(loaded: LoadedRecipe) -> Iterator[tuple[str, tuple[str, ...]]]:
    recipe = loaded.recipe
    tables: dict[str, Mapping[str, object]] = {
        "libraries": recipe.libraries,
        "objects": recipe.objects,
        "executables": recipe.executables,
        "tests": recipe.tests,
    }
    for table, entries in tables.items():
        for name, entry in entries.items():
            yield f"{table}.{name}.sources", getattr(entry, "sources", ())


def _check_pattern(pattern: str, source: str, key: str) -> None:
    pure = PurePosixPath(pattern)
    if not pattern or pure.is_absolute() or "\\" in pattern or ":" in pure.parts[0]:
        raise RecipeError(
            source, key, f"expected a path relative to the project root, found {pattern!r}"
        )
    if ".." in pure.parts:
        raise RecipeError(source, key, f"paths may not escape the project root, found {pattern!r}")


def _within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def expand_pattern(root: Path, pattern: str, source: str, key: str) -> tuple[str, ...]:
    """Files under ``root`` matching ``pattern``, sorted, as root-relative POSIX paths."""
    _check_pattern(pattern, source, key)
    matches = itertools.islice(root.glob(pattern), MAX_MATCHES_PER_PATTERN + 1)
    found: list[str] = []
    for match in matches:
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
