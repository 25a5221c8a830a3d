"""Every check, chained in catalogue order."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Final

from buildtool.linkage.checks.binding import check_bound_imports
from buildtool.linkage.checks.bindings import check_binding_types
from buildtool.linkage.checks.catalogue import Finding, finding_order
from buildtool.linkage.checks.causes import one_per_cause
from buildtool.linkage.checks.duplicates import (
    check_duplicate_object_code,
    check_owned_initializers,
    check_registrations,
)
from buildtool.linkage.checks.growth import check_size_budgets
from buildtool.linkage.checks.hardening import check_hardening
from buildtool.linkage.checks.macos_tag import check_macos_tag
from buildtool.linkage.checks.needed import (
    check_forbidden_needed,
    check_needed_found,
    check_needed_paths,
    check_recipe_libraries_present,
    check_required_needed,
    check_symbol_versions,
)
from buildtool.linkage.checks.placement import (
    check_duplicate_copies,
    check_placement,
    check_stale_monolith,
)
from buildtool.linkage.checks.plugins import check_plugins
from buildtool.linkage.checks.python_abi import check_python_abi
from buildtool.linkage.checks.search_paths import check_search_paths
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.checks.symbols import check_undefined_symbols
from buildtool.linkage.checks.tag_architecture import check_tag_architecture
from buildtool.linkage.checks.underlinking import check_underlinked_libraries

Check = Callable[[Subject], Iterator[Finding]]

Found = dict[Check, list[Finding]]
"""Each check's findings (a check pickles as its name, for a child to send them back)."""

CHECK_FUNCTIONS: tuple[Check, ...] = (
    check_required_needed,
    check_forbidden_needed,
    check_recipe_libraries_present,
    check_duplicate_object_code,
    check_owned_initializers,
    check_registrations,
    check_binding_types,
    check_undefined_symbols,
    check_bound_imports,
    check_needed_found,
    check_needed_paths,
    check_symbol_versions,
    check_python_abi,
    check_underlinked_libraries,
    check_macos_tag,
    check_tag_architecture,
    check_search_paths,
    check_placement,
    check_duplicate_copies,
    check_stale_monolith,
    check_plugins,
    check_size_budgets,
    check_hardening,
)


RUN_LAST: Final = (check_duplicate_object_code, check_owned_initializers, check_registrations)
"""The checks that ask for the initializers a child reads ahead (``verify``): the other checks
run first, while it reads."""


ASIDE: Final = (check_undefined_symbols,)
"""The check that may run in a child of its own while this process runs the others
(``checking``): the costliest (torch's wheel: half of the checks' 0.2 s), and one that reads
nothing a child would take from this process (the initializers read ahead: ``RUN_LAST``)."""


def findings_of(subject: Subject, checks: Iterable[Check]) -> Found:
    """What ``checks`` find, run in that order."""
    return {check: list(check(subject)) for check in checks}


def run_checks(
    subject: Subject, aside: Callable[[], Found | None] | None = None
) -> tuple[Finding, ...]:
    """Every finding, duplicates removed, in catalogue order then by path; the findings of one
    cause merged (``causes.one_per_cause``). The checks run in another order (``RUN_LAST``);
    each one's findings are taken in catalogue order all the same. ``aside``: the findings of
    ``ASIDE``, worked out elsewhere meanwhile, asked for once the others are done (None when
    that failed: they run here then)."""
    first = [check for check in CHECK_FUNCTIONS if check not in RUN_LAST]
    here = [check for check in (*first, *RUN_LAST) if aside is None or check not in ASIDE]
    found = findings_of(subject, here)
    if aside is not None:
        elsewhere = aside()
        found.update(findings_of(subject, ASIDE) if elsewhere is None else elsewhere)
    findings = dict.fromkeys(f for check in CHECK_FUNCTIONS for f in found[check])
    return one_per_cause(sorted(findings, key=finding_order))
