"""Checks on undefined symbols: what no object of a load context defines."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import listed
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile
from buildtool.linkage.loaders.loaded import Closure
from buildtool.linkage.loaders.symbols import (
    platform_may_define,
    unresolved_against,
    unsatisfied_version_needs,
)

PYTHON_API = re.compile(r"_?Py[A-Z_a-z]")
"""Python C-API symbols: the interpreter that loads an extension provides them."""


def unresolved_in(subject: Subject, facts: BinaryFacts, closure: Closure) -> set[str]:
    """The strong undefined keys of ``facts`` that no object of ``closure`` (nor of the
    interpreter that opens its root, see ``Subject.scopes``) defines, nor may (a platform
    library's); Python C-API symbols left out."""
    unresolved = {key for key in facts.undefined if not PYTHON_API.match(key)}
    for scope in subject.scopes(closure):
        indexes = (subject.definitions(path, scope.objects[path]) for path in scope.load_order)
        found = unresolved_against(unresolved, indexes)
        unresolved = set(found - platform_may_define(facts, found, scope))
    return unresolved


def _undefined_findings(
    subject: Subject, binary: BinaryFile, contexts: Sequence[Closure]
) -> Finding | None:
    """Symbols (and versions) unresolved in every context ``binary`` is loaded in."""
    facts = subject.facts(binary)
    unresolved: set[str] | None = None
    versions: set[str] | None = None
    for closure in contexts:
        if unresolved is None or unresolved:
            found = unresolved_in(subject, facts, closure)
            unresolved = found if unresolved is None else unresolved & found
        needs = {f"{file} {v}" for file, v in unsatisfied_version_needs(facts, closure)}
        versions = needs if versions is None else versions & needs
    if not unresolved and not versions:
        return None
    parts = []
    if unresolved:
        parts.append(f"{len(unresolved)} undefined: {listed(unresolved)}")
    if versions:
        parts.append(f"versions not defined: {listed(versions)}")
    first = contexts[0]
    loaded = ", ".join(
        PurePosixPath(path).name for path in first.load_order if path != str(binary.location)
    )
    return Finding(
        "BT106",
        binary.display,
        "has undefined symbols that nothing it loads defines",
        "; ".join(parts)
        + f" (closure: {loaded or 'nothing'})"
        + _local_host(subject, binary)
        + subject.undeclared_module(binary),
    )


def _local_host(subject: Subject, binary: BinaryFile) -> str:
    """Why a plugin's host's symbols do not count: the recipe's loader opens the host
    ``RTLD_LOCAL``, which keeps them out of the global scope the plugin binds against."""
    plugin = subject.plugin_of(binary)
    if plugin is None or plugin.host is None or plugin.rule.host_global:
        return ""
    return (
        f'; its host {plugin.host.location.name} is opened RTLD_LOCAL (load = "local"), so '
        "only what the plugin NEEDs is in its scope"
    )


def check_undefined_symbols(subject: Subject) -> Iterator[Finding]:
    for binary in subject.files:
        if subject.facts(binary).format != "elf":
            continue  # bound to one library each: checks.binding
        # a missing NEEDED is its own finding; its symbols cannot be judged in that context
        contexts = [c for c in subject.contexts(binary) if not subject.unresolvable(c)]
        own = subject.closures.get(binary.location)
        if not contexts and own is not None and not subject.unresolvable(own):
            contexts = [own]  # every loader misses something: the file's own needs still count
        if contexts:
            finding = _undefined_findings(subject, binary, contexts)
            if finding:
                yield finding
