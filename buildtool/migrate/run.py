"""A migrate run on a recipe's project: scan, fix, forwarding headers (the shell's entry points,
shared by ``buildtool migrate`` and the ``migrate`` step of ``buildtool ci``)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

from buildtool import __version__
from buildtool.errors import UsageError
from buildtool.migrate.files import MAX_BYTES, FileMatches, ScanResult, scan_paths, write_source
from buildtool.migrate.fix import apply_fixes, unified_diff
from buildtool.migrate.rules import Rules, compile_rules
from buildtool.migrate.shims import ShimsWritten, render_shims, write_shims
from buildtool.recipe.load import LoadedRecipe

log = logging.getLogger("buildtool")


def project_rules(loaded: LoadedRecipe) -> Rules:
    """The recipe's ``[migrate]`` table, compiled (exit 2 naming the key when it is wrong)."""
    return compile_rules(loaded.recipe.migrate, loaded.source)


def scan_project(
    loaded: LoadedRecipe,
    rules: Rules,
    paths: Sequence[Path] = (),
    *,
    max_bytes: int = MAX_BYTES,
    cwd: Path | None = None,
) -> ScanResult:
    """Scan ``paths`` (default: the project root), never the recipe itself."""
    return scan_paths(
        paths or [loaded.root],
        rules,
        root=loaded.root,
        skip=[loaded.path],
        max_bytes=max_bytes,
        cwd=cwd,
    )


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """One file's fix."""

    entry: FileMatches
    """The file and what was found in it."""
    text: str
    """Its text after the fix."""
    spans: int
    """How many spans were rewritten."""


def plan_fixes(result: ScanResult) -> tuple[Rewrite, ...]:
    """The rewrite of every file that has something to fix (pure)."""
    rewrites = []
    for entry in result.files:
        text, spans = apply_fixes(entry.source.text, entry.matches)
        if spans:
            rewrites.append(Rewrite(entry, text, spans))
    return tuple(rewrites)


def render_diff(rewrites: Sequence[Rewrite]) -> str:
    """The unified diff of every rewrite (``--dry-run``)."""
    return "".join(
        unified_diff(r.entry.source.shown, r.entry.source.text, r.text) for r in rewrites
    )


def apply_rewrites(rewrites: Sequence[Rewrite]) -> None:
    """Write every rewrite, each file atomically in its own encoding, line endings and mode."""
    for rewrite in rewrites:
        write_source(rewrite.entry.source, rewrite.text)
        log.debug("rewrote %d spans in %s", rewrite.spans, rewrite.entry.source.path)


def write_project_shims(loaded: LoadedRecipe, rules: Rules, folder: Path | None) -> ShimsWritten:
    """Forwarding headers for every renamed header, under ``folder`` (else the recipe's
    ``migrate.shims``, relative to the project root)."""
    if folder is None:
        if not loaded.recipe.migrate.shims:
            raise UsageError(
                "--shims needs a folder: give one (--shims DIR) or set migrate.shims in "
                f"{loaded.source}"
            )
        folder = loaded.root / loaded.recipe.migrate.shims
    headers = {old: rule.new for old, rule in rules.headers.items()}
    shims = render_shims(
        headers,
        env_prefix=loaded.recipe.project.env_prefix,
        recipe=loaded.source_from_root,
        version=__version__,
    )
    return write_shims(folder, shims)
