"""Two-level binding (Mach-O) and per-DLL imports (PE): each import must be exported by the one
library it is bound to, not merely by something loaded (that is ELF's rule: ``symbols``)."""

from __future__ import annotations

from collections.abc import Iterator

from buildtool.linkage.binaries.facts import BinaryFacts
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import listed
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile
from buildtool.linkage.loaders.loaded import Closure


def _exports(closure: Closure, path: str, seen: frozenset[str] = frozenset()) -> frozenset[str]:
    """What the file at ``path`` exports: its own definitions and its re-exported libraries'."""
    facts = closure.objects[path]
    exported = set(facts.defined)
    for edge in closure.edges:
        reexported = edge.requester == path and edge.needed in facts.reexported
        if reexported and edge.path and edge.path not in seen:
            exported |= _exports(closure, edge.path, seen | {path})
    return frozenset(exported)


def _providers(closure: Closure, requester: str) -> dict[str, str]:
    """The requester's load names -> the path each resolved to (found ones only)."""
    return {e.needed: e.path for e in closure.edges if e.requester == requester and e.path}


def unbound_imports(facts: BinaryFacts, location: str, closure: Closure) -> dict[str, set[str]]:
    """Library -> the imports bound to it that it does not export. Imports of a library that
    was not found (its own finding) or that the system provides, flat lookups ("": the
    executable may define them), ordinal imports and weak imports are not judged."""
    providers = _providers(closure, location)
    exports: dict[str, frozenset[str]] = {}
    lacking: dict[str, set[str]] = {}
    for library, symbol in facts.bound_imports:
        path = providers.get(library)
        if not library or path is None or symbol.startswith("#"):
            continue
        if symbol in facts.weak_undefined:
            continue
        if path not in exports:
            exports[path] = _exports(closure, path)
        if symbol not in exports[path]:
            lacking.setdefault(library, set()).add(symbol)
    return lacking


def _finding(binary: BinaryFile, lacking: dict[str, set[str]]) -> Finding:
    parts = [f"{library} lacks {listed(symbols)}" for library, symbols in sorted(lacking.items())]
    count = sum(len(symbols) for symbols in lacking.values())
    return Finding(
        "BT106",
        binary.display,
        "has undefined symbols that the library each is bound to does not export",
        f"{count} unbound: " + "; ".join(parts),
    )


def check_bound_imports(subject: Subject) -> Iterator[Finding]:
    for binary in subject.files:
        facts = subject.facts(binary)
        closure = subject.closures.get(binary.location)
        if facts.format == "elf" or closure is None or not facts.bound_imports:
            continue
        lacking = unbound_imports(facts, str(binary.location), closure)
        if lacking:
            yield _finding(binary, lacking)
