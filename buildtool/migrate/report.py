"""A migrate run as text, JSON (``"version": 1``) or GitHub workflow commands. Pure."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from buildtool.console import escape_data, escape_property
from buildtool.migrate.files import ScanResult
from buildtool.migrate.scan import Match

JSON_VERSION = 1

_LABELS = {"renamed": "renamed", "removed": "removed", "renamed-header": "header moved"}


def describe(match: Match) -> str:
    """``renamed: libdemo.so -> libdemo_compiler.so`` / ``removed: X (advice)``."""
    rule = match.rule
    label = _LABELS[rule.kind]
    if rule.kind == "removed":
        return f"{label}: {rule.old} ({rule.advice})"
    return f"{label}: {rule.old} -> {rule.new}"


def _lines(result: ScanResult, fixed: bool) -> Iterator[str]:
    for entry in result.files:
        for match in entry.matches:
            done = " [fixed]" if fixed and match.rule.fixable else ""
            yield f"{entry.source.shown}:{match.line}:{match.column}: {describe(match)}{done}"


def _skipped(result: ScanResult) -> str:
    if not result.skipped:
        return ""
    return "; skipped " + ", ".join(f"{count} {reason}" for reason, count in result.skipped.items())


def summary(result: ScanResult) -> str:
    """One line: what was found, in how many files, of how many scanned; what was skipped."""
    scanned = f"{result.scanned} files scanned{_skipped(result)}"
    if not result.matches:
        return f"migrate: no stale names; {scanned}"
    kinds = Counter(_LABELS[m.rule.kind] for entry in result.files for m in entry.matches)
    parts = ", ".join(f"{count} {label}" for label, count in sorted(kinds.items()))
    return (
        f"migrate: {result.matches} stale references in {len(result.files)} files ({parts}); "
        f"{scanned}"
    )


def fix_summary(result: ScanResult, files: int, spans: int, *, dry_run: bool) -> str:
    """``migrate --fix: rewrote 5 spans in 3 files; 1 removed name left to change by hand``."""
    verb = "would rewrite" if dry_run else "rewrote"
    line = f"migrate --fix: {verb} {spans} spans in {files} files"
    left = sum(1 for e in result.files for m in e.matches if not m.rule.fixable)
    if left:
        line += f"; {left} uses of removed names left to change by hand"
    return line


def render_text(result: ScanResult, *, fixed: bool = False) -> str:
    """One ``file:line:column: ...`` line per stale reference, then the summary."""
    return "".join(line + "\n" for line in [*_lines(result, fixed), summary(result)])


def _finding(shown: str, match: Match, fixed: bool) -> dict[str, Any]:
    rule = match.rule
    return {
        "path": shown,
        "line": match.line,
        "column": match.column,
        "kind": rule.kind,
        "old": rule.old,
        "new": rule.new or None,
        "advice": rule.advice or None,
        "fixed": fixed and rule.fixable,
    }


def render_json(result: ScanResult, *, fixed: bool = False) -> str:
    """The run as one JSON document."""
    document = {
        "version": JSON_VERSION,
        "stale": result.matches,
        "files_scanned": result.scanned,
        "skipped": result.skipped,
        "findings": [
            _finding(entry.source.shown, match, fixed)
            for entry in result.files
            for match in entry.matches
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def render_github(result: ScanResult, *, fixed: bool = False) -> str:
    """An ``::error`` annotation per stale reference (a ``::notice`` once fixed), then the
    summary."""
    lines = []
    for entry in result.files:
        for match in entry.matches:
            level = "notice" if fixed and match.rule.fixable else "error"
            where = (
                f"file={escape_property(entry.source.shown)},line={match.line},col={match.column}"
            )
            title = escape_property(f"stale name ({_LABELS[match.rule.kind]})")
            lines.append(f"::{level} {where},title={title}::{escape_data(describe(match))}")
    lines.append(summary(result))
    return "".join(line + "\n" for line in lines)
