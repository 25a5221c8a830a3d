"""Rewriting exactly the reported spans and the unified diff of a rewrite (pure); writing the
rewrites, each file atomically in its own encoding and mode (``apply_rewrites``, the shell)."""

from __future__ import annotations

import dataclasses
import difflib
import logging
from collections.abc import Sequence

from buildtool.migrate.files import FileMatches, ScanResult, encode_source, write_source
from buildtool.migrate.scan import Match

log = logging.getLogger("buildtool")


def apply_fixes(text: str, matches: Sequence[Match]) -> tuple[str, int]:
    """``text`` with every fixable match replaced by its rule's new name; and how many were.

    Only the matched characters change: line endings, encoding-specific characters and a
    version suffix (``libdemo.so.0``) around them stay as they were.
    """
    pieces: list[str] = []
    position = 0
    count = 0
    for match in sorted(matches, key=lambda m: m.start):
        if not match.rule.fixable or match.start < position:
            continue
        pieces += [text[position : match.start], match.rule.new]
        position = match.end
        count += 1
    pieces.append(text[position:])
    return "".join(pieces), count


def unified_diff(shown: str, before: str, after: str) -> str:
    """A ``diff -u`` of one file (``a/`` and ``b/`` prefixes, as ``git apply`` takes it)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{shown}",
        tofile=f"b/{shown}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
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
    """Write every rewrite, each file atomically in its own encoding, line endings and mode.

    Every file is encoded before the first is written: one that cannot hold its replacement
    stops the run with nothing rewritten."""
    payloads = [encode_source(rewrite.entry.source, rewrite.text) for rewrite in rewrites]
    for rewrite, data in zip(rewrites, payloads, strict=True):
        write_source(rewrite.entry.source, data)
        log.debug("rewrote %d spans in %s", rewrite.spans, rewrite.entry.source.path)
