"""Whether two copies of one initializer share state: both reach one function of a third,
non-system library (a registry), so the second copy's registration collides with the first.

The facts come from the code (``BinaryFacts.initializers``): which imported functions each
initializer can call, and its shape, which two copies of one object file's initializer share.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from buildtool.linkage.binaries import BinaryFacts, InitializerReach, is_toolchain_function
from buildtool.linkage.checks.common import GRAFT_SUFFIX, base_name
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile

Pair = tuple[BinaryFile, BinaryFile]

SYSTEM_LIBRARY: Final = re.compile(
    r"^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libatomic|libgomp|ld-linux.*)"
    r"(\.so|-)"
    r"|^(kernel32|msvcrt|ucrtbase|vcruntime\d+(_\d+)?|msvcp\d+(_\w+)?|api-ms-win-[\w-]+"
    r"|libstdc\+\+-6|libgcc_s_[\w-]+|libwinpthread-1)\.dll$",
    re.IGNORECASE,
)
"""Libraries of the toolchain and the C runtime (ELF's, and Windows' DLLs of them): their
functions (``__cxa_atexit``, ``operator new``, ``atexit``) are what every initializer calls, no
registry of a project's."""

MIN_SHAPE_INSTRUCTIONS: Final = 8
"""Stripped copies are matched by shape alone: a shorter initializer proves no common origin."""


def _names(facts: BinaryFacts) -> frozenset[str]:
    """Strong dynamic definitions by name (a version suffix dropped); a DLL's every export
    (its facts call them weak only so that names are no duplicate-code evidence)."""
    if facts.format == "pe":
        return facts.defined
    return frozenset(key.split("@", 1)[0] for key in facts.defined - facts.weak_defined)


def _is_system(binary: BinaryFile, facts: BinaryFacts) -> bool:
    names = (GRAFT_SUFFIX.sub("", facts.soname or ""), GRAFT_SUFFIX.sub("", base_name(binary)))
    return any(SYSTEM_LIBRARY.match(name) for name in names if name)


def _shared_reach(
    first: tuple[InitializerReach, ...], second: tuple[InitializerReach, ...]
) -> frozenset[str]:
    """Imported functions that the initializers of one shape reach in both files: each shape
    on its own (two files' unrelated initializers of another shape prove nothing), and only
    shapes long enough to tell a copy (``_registering``)."""

    def by_shape(inits: tuple[InitializerReach, ...]) -> dict[str, frozenset[str]]:
        reaches: dict[str, frozenset[str]] = {}
        for init in _registering(inits):
            reaches[init.shape] = reaches.get(init.shape, frozenset()) | init.reaches
        return reaches

    mine, theirs = by_shape(first), by_shape(second)
    both = frozenset().union(*(mine[shape] & theirs[shape] for shape in mine.keys() & theirs))
    return frozenset(name for name in both if not is_toolchain_function(name))


def registry_callees(subject: Subject, pair: Pair) -> list[str]:
    """``library:function`` for each function of a third, non-system library, loaded with both,
    that the pair's duplicated initializers both reach (sorted)."""
    first, second = (subject.initializers(binary) for binary in pair)
    reached = _shared_reach(first, second)
    if not reached:
        return []
    found: set[str] = set()
    for other in subject.shared:
        facts = subject.facts(other)
        if other in pair or _is_system(other, facts):
            continue
        if not all(subject.co_loaded(other, binary) for binary in pair):
            continue
        found.update(f"{base_name(other)}:{name}" for name in reached & _names(facts))
    return sorted(found)


def through(callees: list[str]) -> str:
    """The evidence: which registry both copies register through."""
    shown = ", ".join(callees[:4]) + (f" and {len(callees) - 4} more" if len(callees) > 4 else "")
    return f"both register through {shown}"


def _registering(inits: tuple[InitializerReach, ...]) -> Iterator[InitializerReach]:
    for init in inits:
        if init.reaches and init.instructions >= MIN_SHAPE_INSTRUCTIONS and not init.guarded:
            yield init


def shape_groups(subject: Subject) -> list[list[BinaryFile]]:
    """Shared libraries, at least one of them stripped, grouped by an initializer shape they
    have in common (initializers that reach no import left out). An unstripped file whose
    initializers a sparse read left unread is not read again for this: its pairs with others
    are found by their static initializers' names."""
    by_shape: dict[str, list[BinaryFile]] = {}
    for binary in subject.shared:
        facts = subject.facts(binary)
        if facts.has_symtab and facts.initializers is None:
            continue
        for shape in {init.shape for init in _registering(subject.initializers(binary))}:
            by_shape.setdefault(shape, []).append(binary)
    return [
        group
        for group in by_shape.values()
        if len(group) > 1 and not all(subject.facts(b).has_symtab for b in group)
    ]


STREAM_SETUP: Final = frozenset(
    {"_ZNSt8ios_base4InitC1Ev", "_ZNSt8ios_base4InitD1Ev", "_ZSt21ios_base_library_initv",
     "__cxa_atexit"}
)  # fmt: skip
"""What including <iostream> makes every C++ file's initializer call: no state of its own."""


def initializers_build_state(subject: Subject, binary: BinaryFile) -> bool | None:
    """Whether ``binary``'s initializers build state a second copy of it would split or
    duplicate: they call some imported function (a registry in another library, libtvm_ffi's
    own C++ objects allocated and registered, a function it exports, which the copy loaded
    second binds to the first's), beyond <iostream>'s setup. False when they call nothing
    imported (blosc2's constructor filling its own CPU dispatch tables); None when nothing was
    read."""
    inits = subject.initializers(binary)
    if not inits:
        return None
    reached = frozenset().union(*(i.reaches for i in inits if not i.guarded))
    return bool(reached - STREAM_SETUP)
