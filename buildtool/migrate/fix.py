"""Rewriting exactly the reported spans (pure), and the unified diff of a rewrite."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from buildtool.migrate.scan import Match


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
