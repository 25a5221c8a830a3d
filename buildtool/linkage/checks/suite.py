"""Every check, chained in catalogue order."""

from __future__ import annotations

from collections.abc import Callable, Iterator
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

CHECK_FUNCTIONS: tuple[Callable[[Subject], Iterator[Finding]], ...] = (
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


def run_checks(subject: Subject) -> tuple[Finding, ...]:
    """Every finding, duplicates removed, in catalogue order then by path; the findings of one
    cause merged (``causes.one_per_cause``). The checks run in another order (``RUN_LAST``);
    each one's findings are taken in catalogue order all the same."""
    first = [check for check in CHECK_FUNCTIONS if check not in RUN_LAST]
    found = {check: list(check(subject)) for check in (*first, *RUN_LAST)}
    findings = dict.fromkeys(f for check in CHECK_FUNCTIONS for f in found[check])
    return one_per_cause(sorted(findings, key=finding_order))
