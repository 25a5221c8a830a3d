"""One finding per cause. Pure.

A check whose findings name their cause apart from the file (``Check.per_cause``: a library
no input ships, whoever needs it) finds it once per file that needs it; one deleted library
would be a finding for every file of a build. The findings with one cause are one finding about
the first file, listing the others (``Finding.also``); what the files' evidence shares is said
once, what differs (each file's search) briefly.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Final

from buildtool.linkage.checks.catalogue import Finding

SHOWN_SEARCHES: Final = 3
"""How many differing parts of the files' evidence a merged finding quotes."""


def cause(finding: Finding) -> Hashable:
    """What a finding is about, apart from its file: for a ``per_cause`` check, the check, the
    NEEDED entry and the message (which names the entry and why it fails); else the finding."""
    if finding.check.per_cause and finding.needed:
        return (finding.check_id, finding.needed, finding.message)
    return finding


def one_per_cause(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """``findings`` (in report order) with those of one cause merged into the first of them."""
    groups: dict[Hashable, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(cause(finding), []).append(finding)
    return tuple(_merged(group) for group in groups.values())


def _merged(group: Sequence[Finding]) -> Finding:
    first = group[0]
    if len(group) == 1:
        return first
    also = tuple(dict.fromkeys(p for f in group for p in f.paths if p != first.path))
    return Finding(
        first.check_id,
        first.path,
        first.message,
        merged_evidence([f.evidence for f in group]),
        needed=first.needed,
        also=also,
    )


def merged_evidence(evidence: Sequence[str]) -> str:
    """The evidence of several files' findings as one: the parts (``; ``-separated) every one
    has, in the first one's order, then the parts that differ (each file's search), the first
    ``SHOWN_SEARCHES`` of them quoted."""
    distinct = list(dict.fromkeys(evidence))
    if len(distinct) == 1:
        return distinct[0]
    parts = [text.split("; ") for text in distinct]
    shared = [part for part in parts[0] if all(part in other for other in parts[1:])]
    differing = list(dict.fromkeys("; ".join(p for p in each if p not in shared) for each in parts))
    differing = [text for text in differing if text]
    shown = differing[:SHOWN_SEARCHES]
    more = len(differing) - len(shown)
    told = " | ".join(shown) + (f" | {more} more" if more else "")
    return "; ".join([*shared, f"per file: {told}"] if told else shared)
