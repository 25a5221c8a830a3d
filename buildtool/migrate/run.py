"""A migrate run on a recipe's project: scan, fix, forwarding headers (the shell's entry points,
shared by ``buildtool migrate`` and the ``migrate`` step of ``buildtool ci``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from buildtool import __version__
from buildtool.errors import UsageError
from buildtool.migrate.files import MAX_BYTES, ScanResult, scan_paths
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
