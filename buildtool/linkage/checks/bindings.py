"""Python bindings two extension modules of one package both register (BT127).

The interpreter imports every module of a package into one process, whatever their NEEDED
entries say. pybind11 keeps the types modules register in one registry per internals key (the
``__pybind11_internals_v<N>_...__`` entry of ``builtins``, which each module's init code
names), unless a type is bound ``py::module_local()``: a type two modules register there
fails the second import. What a module's init code registers comes from the code
(``BinaryFacts.module_init``, x86-64): the type records it fills, each a type's
``std::type_info`` and a byte of flags (pybind11 2.x: bit 3 the default holder, bit 4
``module_local``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Final

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import listed
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile

DEFAULT_HOLDER: Final = 0x08
"""pybind11 2.x's ``type_record::default_holder`` bit: every class bound with the default
holder (``std::unique_ptr``) sets it, which tells the record's flags from other bytes."""
MODULE_LOCAL: Final = 0x10
"""pybind11 2.x's ``type_record::module_local`` bit."""
REGISTRY_KEY: Final = re.compile(r"__pybind11_internals_v\w+__")
"""The key of pybind11's registry in ``builtins``: modules built with the same one share it."""
_NAME_PART = re.compile(r"(\d+)")


def type_name(mangled: str) -> str:
    """A ``std::type_info`` name readable: ``5Point`` -> ``Point``, ``N3geo5PointE`` ->
    ``geo::Point``; anything else (templates) as it is."""
    inner = mangled[1:-1] if mangled.startswith("N") and mangled.endswith("E") else mangled
    parts: list[str] = []
    while inner:
        length = _NAME_PART.match(inner)
        if length is None:
            return mangled
        start = length.end()
        parts.append(inner[start : start + int(length.group(1))])
        inner = inner[start + int(length.group(1)) :]
    return "::".join(parts) or mangled


def _registries(facts: BinaryFacts) -> frozenset[str]:
    init = facts.module_init
    return frozenset(s for s in init.strings if REGISTRY_KEY.fullmatch(s)) if init else frozenset()


def _global_types(facts: BinaryFacts) -> frozenset[str]:
    """Types the module's init code registers in the shared registry (not module-local)."""
    records = facts.module_init.records if facts.module_init else ()
    return frozenset(
        record.type_name
        for record in records
        if record.flags & DEFAULT_HOLDER and not record.flags & MODULE_LOCAL
    )


def check_binding_types(subject: Subject) -> Iterator[Finding]:
    """BT127: the same type registered with one shared registry by two modules of a package."""
    groups: dict[tuple[str, str], list[BinaryFile]] = {}
    for binary in subject.files:
        package = subject.package_of(binary)
        if package is None:
            continue
        for registry in _registries(subject.facts(binary)):
            groups.setdefault((package, registry), []).append(binary)
    for (package, registry), modules in sorted(groups.items()):
        for first, second in itertools.combinations(modules, 2):
            both = _global_types(subject.facts(first)) & _global_types(subject.facts(second))
            if both:
                yield _finding(first, second, package, registry, both)


def _finding(
    first: BinaryFile, second: BinaryFile, package: str, registry: str, types: frozenset[str]
) -> Finding:
    names = listed(type_name(name) for name in types)
    return Finding(
        "BT127",
        second.display,
        f"registers the Python binding of C++ type {names}, which {first.display} registers "
        f"too: the interpreter imports both modules of package {package!r}, and the second "
        "import fails (the type is already registered)",
        f"both init functions fill a pybind11 type record for std::type_info {listed(types)} "
        f"without module_local (flags bit 4 clear), registering into {registry}",
    )
