"""``suite.run_checks``: the checks run in another order than the catalogue's, and the report
does not show it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from buildtool.linkage.checks import suite
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.subject import Subject

Check = Callable[[Subject], Iterator[Finding]]


def _check(ran: list[str], name: str, evidence: str) -> Check:
    def check(_subject: Subject) -> Iterator[Finding]:
        ran.append(name)
        yield Finding("BT103", "lib/libtwo.so", "contains the same object code", evidence)

    return check


def test_findings_alike_but_for_evidence_keep_the_catalogue_order_of_their_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two checks whose findings sort alike (check, path, message) and run in the other order
    (the first one is run last): the report lists the first check's finding first, as when the
    checks ran in catalogue order."""
    ran: list[str] = []
    first, second = _check(ran, "first", "from the first"), _check(ran, "second", "from the second")
    monkeypatch.setattr(suite, "CHECK_FUNCTIONS", (first, second))
    monkeypatch.setattr(suite, "RUN_LAST", (first,))
    findings = suite.run_checks(object())  # type: ignore[arg-type]  # the checks read nothing
    assert ran == ["second", "first"]
    assert [f.evidence for f in findings] == ["from the first", "from the second"]


def test_every_check_run_last_is_a_check_of_the_catalogue() -> None:
    assert set(suite.RUN_LAST) <= set(suite.CHECK_FUNCTIONS)
