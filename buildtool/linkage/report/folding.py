"""Repeated findings folded for a person, and the tally per check. Pure.

The same finding in many files (pandas' 44 libraries linked without BIND_NOW, the same RPATH in
every extension module of scipy) is one entry that lists its files: what the entry says is
decided by the key ``fold`` takes (``same_finding`` by default). A finding that names its cause
apart from the file (a library not found, whoever needs it) is one finding already, listing its
files (``checks.causes``); it is an entry of its own here too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence

from buildtool.linkage.checks.catalogue import CHECKS_BY_ID, Check, Finding


def same_finding(finding: Finding) -> Hashable:
    """Findings alike in all but their file: the same check, message and evidence."""
    return (finding.check_id, finding.message, finding.evidence)


@dataclasses.dataclass(frozen=True)
class FoldedFinding:
    """One finding as the files that share it."""

    findings: tuple[Finding, ...]
    """The findings folded, in report order; their files are ``paths``."""

    @property
    def first(self) -> Finding:
        return self.findings[0]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(path for finding in self.findings for path in finding.paths))

    @property
    def folded(self) -> bool:
        """Whether more than one file shares it."""
        return len(self.paths) > 1


def fold(
    findings: Sequence[Finding], key: Callable[[Finding], Hashable] = same_finding
) -> list[FoldedFinding]:
    """The findings with equal ``key`` folded into one entry each, in first-seen order."""
    groups: dict[Hashable, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(key(finding), []).append(finding)
    return [FoldedFinding(tuple(group)) for group in groups.values()]


@dataclasses.dataclass(frozen=True)
class CheckTally:
    """How often one check fired."""

    check: Check
    findings: int
    """Findings of this check."""
    files: int
    """Files with at least one of them."""


def tally(findings: Sequence[Finding]) -> list[CheckTally]:
    """Findings and files per check, errors first, then in catalogue order."""
    counts: dict[str, list[Finding]] = {}
    for finding in findings:
        counts.setdefault(finding.check_id, []).append(finding)
    rank = {"error": 0, "warning": 1, "info": 2}
    ordered = sorted(counts, key=lambda check_id: (rank[CHECKS_BY_ID[check_id].severity], check_id))
    return [
        CheckTally(
            CHECKS_BY_ID[check_id],
            len(counts[check_id]),
            len({path for f in counts[check_id] for path in f.paths}),
        )
        for check_id in ordered
    ]
