"""Checks on code and registrations held twice by co-loaded libraries."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import filterfalse
from typing import Final

from buildtool.linkage.binaries import LINKER_GENERATED, BinaryFacts, is_toolchain_function
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import (
    GRAFT_SUFFIX,
    base_name,
    binds_own_calls,
    is_grafted,
    listed,
    own_calls_kept_by,
    static_inits,
)
from buildtool.linkage.checks.initializer_reach import (
    accepting_callees,
    keeping_nothing,
    name_nothing,
    registered_strings,
    registry_callees,
    shape_groups,
    through,
    told_apart,
)
from buildtool.linkage.checks.policy import LibraryRule, ObjectRule, PluginRule
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile


def _exported_strong(facts: BinaryFacts, among: frozenset[str]) -> frozenset[str]:
    """The keys of ``among`` that ``facts`` exports as strong, non-unique definitions."""
    strong = (among & facts.defined) - facts.unique - facts.weak_defined
    # a catch-all version script ({ *; }) exports the linker's own symbols too: _end@@Qt_6
    return frozenset(
        key
        for key in strong
        if key.split("@", 1)[0] not in LINKER_GENERATED and not is_toolchain_function(key)
    )


def _pairs(subject: Subject, files: list[BinaryFile]) -> Iterator[tuple[BinaryFile, BinaryFile]]:
    """Co-loaded pairs, the one that loads the other second: it brought the copy in."""
    for index, first in enumerate(files):
        for second in files[index + 1 :]:
            if not subject.co_loaded(first, second):
                continue
            yield (second, first) if subject.needs(first, second) else (first, second)


def _shared_keys(
    subject: Subject, keys_of: Callable[[BinaryFacts], frozenset[str]]
) -> dict[tuple[BinaryFile, BinaryFile], set[str]]:
    """Co-loaded pairs of shared libraries and the keys both have (one pass over all keys)."""
    libraries = subject.shared
    owners: dict[str, list[int]] = {}
    for index, binary in enumerate(libraries):
        for key in keys_of(subject.facts(binary)):
            owners.setdefault(key, []).append(index)
    groups: dict[tuple[int, ...], set[str]] = {}
    for key, found_in in owners.items():
        if len(found_in) > 1:
            groups.setdefault(tuple(found_in), set()).add(key)
    shared: dict[tuple[BinaryFile, BinaryFile], set[str]] = {}
    for group, keys in groups.items():
        for pair in _pairs(subject, [libraries[index] for index in group]):
            shared.setdefault(pair, set()).update(keys)
    return shared


def _duplicate_finding(pair: tuple[BinaryFile, BinaryFile], evidence: str) -> Finding:
    first, second = pair
    return Finding(
        "BT103",
        second.display,
        f"contains the same object code as {first.display}, and one process loads both",
        evidence,
    )


Pair = tuple[BinaryFile, BinaryFile]


def _initializer_pairs(subject: Subject) -> dict[Pair, set[str]]:
    """Co-loaded pairs of libraries with static initializers of the same names, and those names
    (worked out once: ``initializers_to_read`` asks before the check)."""
    return subject.per_object(
        "initializer pairs", subject.files, lambda _files: _shared_keys(subject, _project_inits)
    )


def _common_functions(subject: Subject) -> dict[Pair, frozenset[int]]:
    """The pairs of ``_initializer_pairs`` that define functions in common, and the digests of
    those functions."""

    def common(_files: object) -> dict[Pair, frozenset[int]]:
        found: dict[Pair, frozenset[int]] = {}
        for pair in _initializer_pairs(subject):
            first, second = (subject.facts(binary).symtab_functions for binary in pair)
            both = first.common(second)
            if both:
                found[pair] = both
        return found

    return subject.per_object("functions in common", subject.files, common)


def initializers_to_read(subject: Subject) -> list[BinaryFile]:
    """The libraries whose initializers a read left unread (``BinaryFacts.initializers`` None)
    that ``check_duplicate_object_code`` reads again: those in a pair with static initializers
    of the same names and functions in common, whose initializers tell a copy from look-alikes
    (``told_apart``). Told by the digests alone, before any name is read: a pair whose functions
    in common all turn out to be the toolchain's is read for nothing. Other checks may read
    more; these are the reads worth starting early (``verify``)."""
    wanted = (binary for pair in _common_functions(subject) for binary in pair)
    return list(dict.fromkeys(b for b in wanted if subject.facts(b).initializers is None))


def _shared_functions(subject: Subject) -> dict[Pair, list[str]]:
    """The functions each pair of ``_initializer_pairs`` both defines (a digest comparison), by
    name: the names are read from the smaller file of each pair, once per file."""
    found: dict[Pair, tuple[BinaryFile, frozenset[int]]] = {}
    for pair, both in _common_functions(subject).items():
        first, second = (subject.facts(binary).symtab_functions for binary in pair)
        found[pair] = (pair[0] if first.stored <= second.stored else pair[1], both)
    wanted: dict[str, tuple[BinaryFile, set[int]]] = {}
    for named_by, both in found.values():
        wanted.setdefault(named_by.display, (named_by, set()))[1].update(both)
    names = {
        display: subject.function_names(named_by, frozenset(digests))
        for display, (named_by, digests) in wanted.items()
    }
    named = {
        pair: [names[named_by.display].get(d, f"#{d:016x}") for d in both]
        for pair, (named_by, both) in found.items()
    }
    return {
        pair: kept
        for pair, functions in named.items()
        if (kept := [name for name in functions if not is_toolchain_function(name)])
    }


def _stripped_exports(subject: Subject) -> dict[tuple[BinaryFile, BinaryFile], set[str]]:
    """Pairs with a stripped library and the strong exports both define (only a stripped
    library's exports can be this evidence, so no other key is gathered)."""
    stripped = [b for b in subject.shared if not subject.facts(b).has_symtab]
    among = frozenset().union(*(subject.facts(b).defined for b in stripped))
    return _shared_keys(subject, lambda facts: _exported_strong(facts, among)) if among else {}


_INTERNAL_LINKAGE = re.compile(r"L[0-9]|_GLOBAL__N_")
"""Marks of internal linkage in an Itanium-mangled name: ``L<length><name>`` (a ``static`` name,
also as a template argument) and the anonymous namespace."""


def _bound_privately(name: str, exported: frozenset[str]) -> bool:
    """A C++ function with external linkage in its source that the link kept out of ``.dynsym``
    (hidden visibility, a version script's ``local:``): callers in the library bind to this copy,
    never to another library's. C names cannot tell ``static`` from hidden, so they do not
    count."""
    return name.startswith("_Z") and not _INTERNAL_LINKAGE.search(name) and name not in exported


def _exported_names(facts: BinaryFacts) -> frozenset[str]:
    """Strong dynamic definitions by name (a version suffix dropped), less ``STB_GNU_UNIQUE``
    ones: C++ inline variables and template static members, which the loader binds to one copy
    in a process by design (Qt's ``QMetaTypeInterfaceWrapper<T>`` in every Qt library)."""
    names = facts.defined - facts.weak_defined - facts.unique
    if facts.versioned_definitions:
        return frozenset(key.split("@", 1)[0] for key in names)
    return names


def _exported(subject: Subject, binary: BinaryFile) -> frozenset[str]:
    """``_exported_names``, worked out once per library for every pair it is in (tensorflow's
    libtensorflow_cc.so.2: 436k versioned keys, split four times before)."""
    return subject.per_object("exported names", subject.facts(binary), _exported_names)


def _via(subject: Subject, pair: Pair, bound: list[str]) -> str:
    """The evidence of a shared registry: its functions, and what the copies register."""
    return through(bound, registered_strings(subject, pair))


def _binding(
    subject: Subject, pair: Pair, functions: Sequence[str]
) -> tuple[list[str], list[str], str]:
    """(functions both export, so the loader binds both libraries' callers to one copy;
    functions each binds inside itself; how it was told). Both linked ``-Bsymbolic``: each
    binds its own calls first, exported or not."""
    if all(subject.facts(binary).format == "macho" for binary in pair):
        # a Mach-O file's symbol table lists its external functions only, each called directly
        return [], list(functions), "bound inside each library (Mach-O calls its own directly)"
    if _both_symbolic(subject, pair):
        private = [name for name in functions if _bound_privately(name, frozenset())]
        return [], private, "bound inside each library (both are linked -Bsymbolic)"
    first, second = (_exported(subject, binary) for binary in pair)
    interposing = [name for name in functions if name in first and name in second]
    exported = first | second
    private = [name for name in functions if _bound_privately(name, exported)]
    return interposing, private, "bound inside each library (not in .dynsym)"


def _object_code_finding(
    subject: Subject, pair: Pair, initializers: Iterable[str], functions: Sequence[str]
) -> Finding:
    """BT103 when the shared code can collide, BT124 when it is a private copy in each.

    Code whose functions all have internal linkage does something only through its static
    initializer, which then reaches state outside the file (the seed's registry): it collides.
    A statically linked library kept private (most of its external-linkage functions bound inside
    each library) registers into its own copies of its registries: each library works alone."""
    interposing, private, how = _binding(subject, pair, functions)
    counts = (
        f"{len(functions)} defined functions in both: {len(private)} with external linkage "
        f"{how}, {len(interposing)} exported by both"
    )
    bound = registry_callees(subject, pair)
    if bound:
        return _duplicate_finding(
            pair,
            f"unstripped: static initializers {listed(initializers)}; "
            f"{_via(subject, pair, bound)}; {counts}",
        )
    if private and len(private) > len(interposing) and not _recipe_registrations(subject, pair):
        return Finding(
            "BT124",
            pair[1].display,
            f"contains a private copy of object code also in {pair[0].display}: each library "
            f"binds to its own copy (about {_wasted(subject, pair, len(functions))} of code "
            "twice)",
            f"unstripped: static initializers {listed(initializers)}; {counts}; bound inside "
            f"each: {listed(private)}; {_no_registry_in_common(subject, pair)}",
        )
    called = keeping_nothing(subject, pair, frozenset(initializers))
    if called is not None and not _recipe_registrations(subject, pair):
        return _keeping_nothing_finding(subject, pair, (initializers, called), functions, counts)
    return _duplicate_finding(
        pair,
        f"unstripped: static initializers {listed(initializers)} and {counts}: {listed(functions)}",
    )


def _keeping_nothing_finding(
    subject: Subject,
    pair: Pair,
    initializers: tuple[Iterable[str], list[str]],
    functions: Sequence[str],
    counts: str,
) -> Finding:
    """BT124 for object code whose static initializers keep no registration
    (``keeping_nothing``): (their names, what they call)."""
    names, called = initializers
    calls = f"call only {listed(called)}" if called else "call nothing"
    return Finding(
        "BT124",
        pair[1].display,
        f"contains object code also in {pair[0].display} whose static initializers register "
        "nothing: each caller binds to one copy of each function "
        f"(about {_wasted(subject, pair, len(functions))} of code twice)",
        f"unstripped: static initializers {listed(names)}, which in both {calls}, on objects "
        f"of their own; {counts}: {listed(functions)}",
    )


def _no_registry_in_common(subject: Subject, pair: Pair) -> str:
    """BT124's evidence that the copies collide nowhere."""
    accepting = accepting_callees(subject, pair)
    if accepting:
        return (
            "their initializers call no function of a third library in common but "
            f"{listed(accepting)}, which takes a second registration alike (each registers its "
            "own copy)"
        )
    return (
        "their initializers call no function of a third library in common (each registers into "
        "its own copy)"
    )


def _recipe_registrations(subject: Subject, pair: Pair) -> frozenset[str]:
    """Names the recipe says are registered (by a library or an object library) that both files
    hold: their code registers into the registry the two share, so the copies collide."""
    first, second = (subject.facts(binary).registration_strings for binary in pair)
    return frozenset(subject.policy.registration_names) & first & second


def _wasted(subject: Subject, pair: Pair, shared: int) -> str:
    """An estimate of the duplicated code: the smaller library's code size in proportion to the
    share of its functions that the other one also has (``.symtab`` keeps no sizes here)."""
    facts = min((subject.facts(binary) for binary in pair), key=lambda f: f.code_size)
    total = max(len(facts.symtab_functions), shared, 1)
    return f"{facts.code_size * shared / total / 1e6:.2f} MB"


def _both_grafted(subject: Subject, pair: Pair) -> str | None:
    """The library two repair-tool copies are of (``libgfortran.so.5``), or None."""
    first, second = (subject.facts(binary) for binary in pair)
    if not (is_grafted(first) and is_grafted(second)):
        return None
    return GRAFT_SUFFIX.sub("", first.soname or "")


def _stripped_finding(subject: Subject, pair: Pair, names: Iterable[str]) -> Finding | None:
    bound = registry_callees(subject, pair)
    if bound:
        return _duplicate_finding(
            pair,
            f"stripped: exported symbols defined in both: {listed(names)}; "
            f"{_via(subject, pair, bound)}",
        )
    if subject.both_plugins(*pair):
        return None  # opened RTLD_LOCAL: each binds its own exports, and nothing is registered
    if _both_symbolic(subject, pair):
        why = own_calls_kept_by(subject.facts(pair[1]))
        return Finding(
            "BT124",
            pair[1].display,
            f"exports code that {pair[0].display} exports too; each binds its own callers to "
            f"its own copy ({why})",
            f"stripped: exported symbols defined in both: {listed(names)}; {why} in both; "
            "their initializers call no function of a third library in common",
        )
    vendored = _both_grafted(subject, pair)
    if vendored:
        return Finding(
            "BT124",
            pair[1].display,
            f"exports code that {pair[0].display} ({vendored}) exports too; both are libraries "
            "a repair tool grafted, so one process binds both libraries' callers to one copy "
            "of that code",
            f"stripped: exported symbols defined in both: {listed(names)}",
        )
    # one library binding to the other's exports works (tables' two LZ4 builds round-trip):
    # without a registration the copies collide on, it costs space, not the load
    return Finding(
        "BT124",
        pair[1].display,
        f"exports code that {pair[0].display} exports too; one process binds both libraries' "
        "callers to the copy loaded first",
        f"stripped: exported symbols defined in both: {listed(names)}; no static initializer of "
        "either reaches a registry of a third library",
    )


def _shared_registrations(subject: Subject, reported: set[Pair]) -> Iterator[Finding]:
    """Copies found by their initializers alone (stripped hidden code exports nothing, and a
    DLL names none of its code): the same initializer in both, reaching one registry, unless
    both files name their initializers apart (``_named_apart``)."""
    pairs: set[Pair] = set()
    for group in shape_groups(subject):
        pairs.update(_pairs(subject, group))
        pairs.update(_package_pairs(subject, group))
    for pair in sorted(pairs - reported, key=_pair_key):
        if _named_apart(subject, pair):
            continue
        bound = registry_callees(subject, pair)
        if bound:
            reported.add(pair)
            kind = "unstripped" if all(subject.facts(b).has_symtab for b in pair) else "stripped"
            evidence = f"{kind}: an initializer with the same code in both; "
            yield _duplicate_finding(pair, evidence + _via(subject, pair, bound))


def _named_apart(subject: Subject, pair: Pair) -> bool:
    """Whether both files name their initializers and no name is in both: a copy of an object
    file keeps its initializer's name (``_GLOBAL__sub_I_<source>``), so initializers alike in
    code but named after other sources are one header's boilerplate compiled into each (VTK's
    ``vtkDebugLeaksManager`` counters and ``AddRegistrar_*`` calls in every wrapper source),
    which every library runs for itself, not copies. Unless they name what they register: a
    header's registration of one name (a string, data handed on) collides all the same."""
    facts = [subject.facts(binary) for binary in pair]
    names = [subject.per_object("project initializers", f, _project_inits) for f in facts]
    unstripped = all(f.has_symtab for f in facts)
    return unstripped and all(names) and not names[0] & names[1] and name_nothing(subject, pair)


def _package_pairs(subject: Subject, files: list[BinaryFile]) -> Iterator[Pair]:
    """Python extension modules of one package that no load context holds together: the
    interpreter imports them into one process all the same (``RTLD_LOCAL``: each binds its own
    exports, so only a registry of a third library they both load is shared)."""
    for index, first in enumerate(files):
        package = subject.package_of(first)
        for second in files[index + 1 :] if package is not None else ():
            if subject.package_of(second) == package and not subject.co_loaded(first, second):
                yield first, second


def _project_inits(facts: BinaryFacts) -> frozenset[str]:
    """Static initializers less the toolchain runtime's (``is_toolchain_function``)."""
    return frozenset(name for name in static_inits(facts) if not is_toolchain_function(name))


def check_duplicate_object_code(subject: Subject) -> Iterator[Finding]:
    inits = _initializer_pairs(subject)
    functions = _shared_functions(subject)
    reported: set[tuple[BinaryFile, BinaryFile]] = set()
    for pair, names in sorted(inits.items(), key=lambda item: _pair_key(item[0])):
        also = functions.get(pair)
        if also and told_apart(subject, pair):
            continue  # same names, different content: the initializers' code says so
        if also:
            reported.add(pair)
            yield _object_code_finding(subject, pair, names, also)
        elif _reach_is_read(subject, pair) and (bound := registry_callees(subject, pair)):
            reported.add(pair)
            yield _duplicate_finding(
                pair,
                f"unstripped: static initializers {listed(names)}; {_via(subject, pair, bound)}",
            )
    yield from _alike_builds(subject, reported)
    exported = _stripped_exports(subject)
    for pair, names in sorted(exported.items(), key=lambda item: _pair_key(item[0])):
        stripped = not all(subject.facts(b).has_symtab for b in pair)
        if pair in reported or not stripped:
            continue
        finding = _stripped_finding(subject, pair, names)
        if finding is not None:
            reported.add(pair)
            yield finding
    yield from _shared_registrations(subject, reported)


def _reach_is_read(subject: Subject, pair: Pair) -> bool:
    """Whether initializers of the same names, with no function in common, may be proven copies
    by their code: when both files' initializers were read with the files (PE and Mach-O name
    little of their code, so theirs are read again when left out). Same-named initializers are
    weak evidence (``init.cpp`` is in many libraries), not worth reading a big wheel member
    again for (libtorch_cpu.so's 434 MB)."""
    if all(subject.facts(binary).format in ("pe", "macho") for binary in pair):
        return True
    return all(subject.facts(binary).initializers is not None for binary in pair)


ALIKE: Final = 0.5
"""Two libraries whose exported names overlap this much (shared / all, at least
``ALIKE_NAMES``) are two builds of one library: ggml's CPU variants, not a static library
leaking a few of its names into a bigger one (tables' LZ4 in libblosc2: 0.2)."""
ALIKE_NAMES: Final = 3


def _exported_functions(subject: Subject, binary: BinaryFile) -> frozenset[str]:
    exported = _exported(subject, binary)
    return frozenset(filterfalse(is_toolchain_function, exported - LINKER_GENERATED))


def _alike_candidates(subject: Subject) -> Iterator[tuple[Pair, frozenset[str], int]]:
    """Co-loaded pairs whose export sets could be alike enough (sizes within the ratio), with
    the names both export and the size of their union."""
    sized = sorted(
        ((b, _exported_functions(subject, b)) for b in subject.shared
         if subject.facts(b).format == "elf"),
        key=lambda item: len(item[1]),
    )  # fmt: skip
    for index, (first, mine) in enumerate(sized):
        for second, theirs in sized[index + 1 :]:
            if len(mine) < ALIKE * len(theirs):
                break
            both = mine & theirs
            if len(both) >= ALIKE_NAMES and subject.co_loaded(first, second):
                yield (first, second), both, len(mine | theirs)


def _alike_builds(subject: Subject, reported: set[Pair]) -> Iterator[Finding]:
    """BT103 for two builds of one library that one process loads (a program linking two CPU
    variants): every caller, and each library's calls to its own exported functions, bind to
    the copy loaded first, so one library runs the other's code, stripped or not."""
    for (first, second), both, union in _alike_candidates(subject):
        pair = (second, first) if subject.needs(first, second) else (first, second)
        if pair in reported or (second, first) in reported or len(both) < ALIKE * union:
            continue
        if _both_grafted(subject, pair) or _both_symbolic(subject, pair):
            continue
        if subject.both_plugins(*pair):
            continue  # opened RTLD_LOCAL: neither one's exports bind the other's calls
        reported.add(pair)
        yield _duplicate_finding(
            pair,
            f"{len(both)} of the {union} functions the two export are the same names: two "
            f"builds of one library, whose callers (and its own calls to them) bind to the copy "
            f"loaded first: {listed(both)}",
        )


def _both_symbolic(subject: Subject, pair: Pair) -> bool:
    """Both bind their own calls to their own code first (``binds_own_calls``: linked
    ``-Bsymbolic``, or Mach-O), so neither runs the other's (LLVM's static libraries in two
    such libraries load both ways and work)."""
    return all(binds_own_calls(subject.facts(binary)) for binary in pair)


def _pair_key(pair: tuple[BinaryFile, BinaryFile]) -> tuple[str, str]:
    return (pair[0].display, pair[1].display)


def _object_marks(facts: BinaryFacts, obj: ObjectRule) -> str:
    """Evidence that ``obj``'s code is in a library: the strongest kind the file still has."""
    if facts.has_symtab:
        found = static_inits(facts) & set(obj.static_initializers)
        if found:
            return f"unstripped: static initializers {listed(found)}"
    # Stripped, or a policy-only recipe (no sources, so no initializer names): the strings.
    strings = facts.registration_strings & set(obj.registers)
    kind = "unstripped" if facts.has_symtab else "stripped"
    return f"{kind}: registration strings {listed(strings)}" if strings else ""


def _owners(subject: Subject) -> tuple[LibraryRule | PluginRule, ...]:
    """The recipe's libraries and plugins: what owns object libraries and registrations."""
    return (*subject.policy.libraries, *subject.policy.plugins)


def check_owned_initializers(subject: Subject) -> Iterator[Finding]:
    """With a recipe: an object library's code lives in its owner only."""
    for rule in _owners(subject):
        for obj in rule.objects:
            for binary in subject.shared:
                if rule.matches(base_name(binary)):
                    continue
                evidence = _object_marks(subject.facts(binary), obj)
                if evidence:
                    yield Finding(
                        "BT103",
                        binary.display,
                        f"contains object library {obj.name!r}, which the recipe links into "
                        f"{rule.file_name} only",
                        evidence,
                    )


def check_registrations(subject: Subject) -> Iterator[Finding]:
    """BT104 for a declared name in two files one process holds at once (two alternatives of
    one host never are); BT105/BT115 for one missing from the file the recipe puts it in."""
    for rule in _owners(subject):
        for name in rule.registers:
            holders = [b for b in subject.shared if name in subject.facts(b).registration_strings]
            for pair in _pairs(subject, holders):
                # The library the recipe names keeps the name; the other one is the intruder.
                first, second = pair[::-1] if rule.matches(base_name(pair[1])) else pair
                yield Finding(
                    "BT104",
                    second.display,
                    f"registration {name!r} is also in {first.display}; the recipe puts it in "
                    f"{rule.file_name}",
                    "string constant present in both libraries",
                )
            owners = [b for b in subject.shared if rule.matches(base_name(b))]
            for owner in owners:
                if name not in subject.facts(owner).registration_strings:
                    yield _registration_missing(subject.facts(owner), owner, rule, name)


def _registration_missing(
    facts: BinaryFacts, owner: BinaryFile, rule: LibraryRule | PluginRule, name: str
) -> Finding:
    """BT105 when the absence is proven: the file keeps its ``.symtab`` and none of the static
    initializers of its sources and objects is in it, so the registering code is not there.
    Otherwise BT115: compilers store short names as instruction immediates, not strings."""
    initializers = set(rule.static_initializers)
    initializers.update(i for obj in rule.objects for i in obj.static_initializers)
    present = static_inits(facts) & initializers
    if facts.has_symtab and not present:
        return Finding(
            "BT105",
            owner.display,
            f"registration {name!r} is not in this library",
            "not found as a string constant in its read-only data, and none of the static "
            "initializers of its sources is in its .symtab",
        )
    why = (
        f"its sources' static initializers are there ({listed(present)})"
        if present
        else "it is stripped"
    )
    return Finding(
        "BT115",
        owner.display,
        f"registration {name!r} not found as a string",
        f"no such string constant in its read-only data, but {why}: a short name may be stored "
        "in instructions, so its absence is not proven",
    )
