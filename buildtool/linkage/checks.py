"""The checks: ELF facts + NEEDED closures + policy -> findings. Pure.

Each check is a small generator over a ``Subject`` (everything one run read and resolved);
``run_checks`` chains them in catalogue order.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import PurePosixPath

from buildtool.linkage.elf import LINKER_GENERATED, ElfFacts
from buildtool.linkage.findings import Finding, finding_order
from buildtool.linkage.hardening import check_hardening, search_path_problem
from buildtool.linkage.inputs import BinaryFile
from buildtool.linkage.policy import LibraryRule, ObjectRule
from buildtool.linkage.resolve import (
    Closure,
    default_system_dirs,
    expand_entries,
    unresolved_against,
    unsatisfied_version_needs,
)
from buildtool.linkage.subject import Subject

GRAFT_SUFFIX = re.compile(r"(?:-[0-9a-f]{8})+(?=\.so)")
"""auditwheel renames grafted copies ``libx.so`` -> ``libx-1a2b3c4d.so`` (a copy grafted twice,
by two repairs, gets two hashes)."""

PYTHON_API = re.compile(r"_?Py[A-Z_a-z]")
"""Python C-API symbols: the interpreter that loads an extension provides them."""

SHOWN = 8
"""How many symbols or names a finding lists before it says "and N more"."""


def _listed(items: Iterable[str]) -> str:
    ordered = sorted(items)
    shown = ", ".join(ordered[:SHOWN])
    return shown + (f" and {len(ordered) - SHOWN} more" if len(ordered) > SHOWN else "")


def _name(binary: BinaryFile) -> str:
    return binary.location.name


def check_required_needed(subject: Subject) -> Iterator[Finding]:
    for binary in subject.files:
        needed = subject.facts(binary).needed
        library = subject.policy.library_by_file(_name(binary))
        executable = subject.policy.executable_by_file(_name(binary))
        rule_required = library.required_needed if library else ()
        rule_required += executable.required_needed if executable else ()
        for required in rule_required:
            if required not in needed:
                yield Finding(
                    "BT101",
                    binary.display,
                    f"does not need {required}, which the recipe requires",
                    f"DT_NEEDED: {', '.join(needed) or 'none'}",
                    needed=required,
                )


def _forbidden_for(subject: Subject, binary: BinaryFile) -> Iterator[tuple[str, str]]:
    """(needed entry, why forbidden) pairs."""
    needed = subject.facts(binary).needed
    library = subject.policy.library_by_file(_name(binary))
    executable = subject.policy.executable_by_file(_name(binary))
    patterns = (library.forbidden_needed if library else ()) + (
        executable.forbidden_needed if executable else ()
    )
    for entry in needed:
        matched = [p for p in patterns if fnmatch.fnmatchcase(entry, p)]
        if matched:
            yield entry, f"matches forbidden pattern {matched[0]!r}"
    if executable is None:
        return
    for entry in needed:
        # every NEEDED its input ships counts, declared in the recipe or not
        is_project = subject.ships(binary, entry)
        allowed = any(fnmatch.fnmatchcase(entry, p) for p in executable.allowed_project_needed)
        if is_project and not allowed:
            shown = ", ".join(executable.allowed_project_needed) or "none"
            yield entry, f"is a project library outside its allow-list ({shown})"


def check_forbidden_needed(subject: Subject) -> Iterator[Finding]:
    for binary in subject.files:
        for entry, why in _forbidden_for(subject, binary):
            yield Finding(
                "BT102",
                binary.display,
                f"needs {entry}, which {why}",
                f"DT_NEEDED: {', '.join(subject.facts(binary).needed)}",
                needed=entry,
            )


def _static_inits(facts: ElfFacts) -> frozenset[str]:
    # GCC splits cold paths into "<fn>.cold": the same initializer, not another one.
    return frozenset(name.removesuffix(".cold") for name in facts.static_initializers)


def _exported_strong(facts: ElfFacts, among: frozenset[str]) -> frozenset[str]:
    """The keys of ``among`` that ``facts`` exports as strong, non-unique definitions."""
    return (among & facts.defined) - facts.unique - facts.weak_defined - LINKER_GENERATED


def _pairs(subject: Subject, files: list[BinaryFile]) -> Iterator[tuple[BinaryFile, BinaryFile]]:
    """Co-loaded pairs, the one that loads the other second: it brought the copy in."""
    for index, first in enumerate(files):
        for second in files[index + 1 :]:
            if not subject.co_loaded(first, second):
                continue
            yield (second, first) if subject.needs(first, second) else (first, second)


def _shared_keys(
    subject: Subject, keys_of: Callable[[ElfFacts], frozenset[str]]
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


def _shared_functions(subject: Subject, pairs: Iterable[Pair]) -> dict[Pair, list[str]]:
    """The functions each pair both defines (a digest comparison), by name: the names are read
    from the smaller file of each pair, once per file."""
    found: dict[Pair, tuple[BinaryFile, frozenset[int]]] = {}
    for pair in pairs:
        first, second = (subject.facts(binary).symtab_functions for binary in pair)
        both = first.common(second)
        if both:
            found[pair] = (pair[0] if first.stored <= second.stored else pair[1], both)
    wanted: dict[str, tuple[BinaryFile, set[int]]] = {}
    for named_by, both in found.values():
        wanted.setdefault(named_by.display, (named_by, set()))[1].update(both)
    names = {
        display: subject.function_names(named_by, frozenset(digests))
        for display, (named_by, digests) in wanted.items()
    }
    return {
        pair: [names[named_by.display].get(d, f"#{d:016x}") for d in both]
        for pair, (named_by, both) in found.items()
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


def _exported_names(facts: ElfFacts) -> frozenset[str]:
    """Strong dynamic definitions by name (a version suffix dropped)."""
    names = facts.defined - facts.weak_defined
    if facts.versioned_definitions:
        return frozenset(key.split("@", 1)[0] for key in names)
    return names


def _object_code_finding(
    subject: Subject, pair: Pair, initializers: Iterable[str], functions: Sequence[str]
) -> Finding:
    """BT103 when the shared code can collide, BT124 when it is a private copy in each.

    Code whose functions all have internal linkage does something only through its static
    initializer, which then reaches state outside the file (the seed's registry): it collides.
    A statically linked library kept private (most of its external-linkage functions bound inside
    each library) registers into its own copies of its registries: each library works alone."""
    first, second = (_exported_names(subject.facts(binary)) for binary in pair)
    interposing = [name for name in functions if name in first and name in second]
    private = [name for name in functions if _bound_privately(name, first | second)]
    counts = (
        f"{len(functions)} defined functions in both: {len(private)} with external linkage "
        f"bound inside each library (not in .dynsym), {len(interposing)} exported by both"
    )
    if private and len(private) > len(interposing) and not _recipe_registrations(subject, pair):
        return Finding(
            "BT124",
            pair[1].display,
            f"contains a private copy of object code also in {pair[0].display}: each library "
            f"binds to its own copy (about {_wasted(subject, pair, len(functions))} of code "
            "twice)",
            f"unstripped: static initializers {_listed(initializers)}; {counts}; bound inside "
            f"each: {_listed(private)}; without a recipe no rule tells a private registry from "
            "a shared one (a recipe's object libraries make this BT103)",
        )
    return _duplicate_finding(
        pair,
        f"unstripped: static initializers {_listed(initializers)} and {counts}: "
        f"{_listed(functions)}",
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
    if not (_is_grafted(first) and _is_grafted(second)):
        return None
    return GRAFT_SUFFIX.sub("", first.soname or "")


def _stripped_finding(subject: Subject, pair: Pair, names: Iterable[str]) -> Finding:
    vendored = _both_grafted(subject, pair)
    if vendored:
        return Finding(
            "BT124",
            pair[1].display,
            f"and {pair[0].display} are two vendored copies of {vendored}, grafted by a repair "
            "tool: their exported symbols interpose",
            f"stripped: exported symbols defined in both: {_listed(names)}",
        )
    return _duplicate_finding(pair, f"stripped: exported symbols defined in both: {_listed(names)}")


def check_duplicate_object_code(subject: Subject) -> Iterator[Finding]:
    inits = _shared_keys(subject, _static_inits)
    functions = _shared_functions(subject, inits)
    reported: set[tuple[BinaryFile, BinaryFile]] = set()
    for pair, names in sorted(inits.items(), key=lambda item: _pair_key(item[0])):
        also = functions.get(pair)
        if also:
            reported.add(pair)
            yield _object_code_finding(subject, pair, names, also)
    exported = _stripped_exports(subject)
    for pair, names in sorted(exported.items(), key=lambda item: _pair_key(item[0])):
        stripped = not all(subject.facts(b).has_symtab for b in pair)
        if pair not in reported and stripped:
            yield _stripped_finding(subject, pair, names)


def _pair_key(pair: tuple[BinaryFile, BinaryFile]) -> tuple[str, str]:
    return (pair[0].display, pair[1].display)


def _object_marks(facts: ElfFacts, obj: ObjectRule) -> str:
    """Evidence that ``obj``'s code is in a library: the strongest kind the file still has."""
    if facts.has_symtab:
        found = _static_inits(facts) & set(obj.static_initializers)
        if found:
            return f"unstripped: static initializers {_listed(found)}"
    # Stripped, or a policy-only recipe (no sources, so no initializer names): the strings.
    strings = facts.registration_strings & set(obj.registers)
    kind = "unstripped" if facts.has_symtab else "stripped"
    return f"{kind}: registration strings {_listed(strings)}" if strings else ""


def check_owned_initializers(subject: Subject) -> Iterator[Finding]:
    """With a recipe: an object library's code lives in its owner only."""
    for rule in subject.policy.libraries:
        for obj in rule.objects:
            for binary in subject.shared:
                if _name(binary) == rule.file_name:
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
    for rule in subject.policy.libraries:
        for name in rule.registers:
            holders = [b for b in subject.shared if name in subject.facts(b).registration_strings]
            for pair in _pairs(subject, holders):
                # The library the recipe names keeps the name; the other one is the intruder.
                first, second = pair[::-1] if _name(pair[1]) == rule.file_name else pair
                yield Finding(
                    "BT104",
                    second.display,
                    f"registration {name!r} is also in {first.display}; the recipe puts it in "
                    f"{rule.file_name}",
                    "string constant present in both libraries",
                )
            owners = [b for b in subject.shared if _name(b) == rule.file_name]
            for owner in owners:
                if name not in subject.facts(owner).registration_strings:
                    yield _registration_missing(subject.facts(owner), owner, rule, name)


def _registration_missing(
    facts: ElfFacts, owner: BinaryFile, rule: LibraryRule, name: str
) -> Finding:
    """BT105 when the absence is proven: the file keeps its ``.symtab`` and none of the static
    initializers of its sources and objects is in it, so the registering code is not there.
    Otherwise BT115: compilers store short names as instruction immediates, not strings."""
    initializers = set(rule.static_initializers)
    initializers.update(i for obj in rule.objects for i in obj.static_initializers)
    present = _static_inits(facts) & initializers
    if facts.has_symtab and not present:
        return Finding(
            "BT105",
            owner.display,
            f"registration {name!r} is not in this library",
            "not found as a string constant in its read-only data, and none of the static "
            "initializers of its sources is in its .symtab",
        )
    why = (
        f"its sources' static initializers are there ({_listed(present)})"
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


def _unresolved_in(subject: Subject, facts: ElfFacts, closure: Closure) -> set[str]:
    indexes = (subject.definitions(path, closure.objects[path]) for path in closure.load_order)
    return {
        key for key in unresolved_against(facts.undefined, indexes) if not PYTHON_API.match(key)
    }


def _undefined_findings(
    subject: Subject, binary: BinaryFile, contexts: Sequence[Closure]
) -> Finding | None:
    """Symbols (and versions) unresolved in every context ``binary`` is loaded in."""
    facts = subject.facts(binary)
    unresolved: set[str] | None = None
    versions: set[str] | None = None
    for closure in contexts:
        if unresolved is None or unresolved:
            found = _unresolved_in(subject, facts, closure)
            unresolved = found if unresolved is None else unresolved & found
        needs = {f"{file} {v}" for file, v in unsatisfied_version_needs(facts, closure)}
        versions = needs if versions is None else versions & needs
    if not unresolved and not versions:
        return None
    parts = []
    if unresolved:
        parts.append(f"{len(unresolved)} undefined: {_listed(unresolved)}")
    if versions:
        parts.append(f"versions not defined: {_listed(versions)}")
    first = contexts[0]
    loaded = ", ".join(
        PurePosixPath(path).name for path in first.load_order if path != str(binary.location)
    )
    return Finding(
        "BT106",
        binary.display,
        "has undefined symbols that nothing it loads defines",
        "; ".join(parts) + f" (closure: {loaded or 'nothing'})",
    )


def check_undefined_symbols(subject: Subject) -> Iterator[Finding]:
    for binary in subject.files:
        # a missing NEEDED is its own finding; its symbols cannot be judged in that context
        contexts = [c for c in subject.contexts(binary) if not c.missing]
        own = subject.closures.get(binary.location)
        if not contexts and own is not None and not own.missing:
            contexts = [own]  # every loader misses something: the file's own needs still count
        if contexts:
            finding = _undefined_findings(subject, binary, contexts)
            if finding:
                yield finding


def _missing_in_contexts(
    subject: Subject,
) -> dict[tuple[str, str], tuple[BinaryFile, list[BinaryFile]]]:
    """(input file, NEEDED name) that ld.so would not find in some root's load context -> the
    file and the roots (the file itself when it is one): a dependency is judged where it is
    loaded, with its loaders' inherited DT_RPATH and the SONAMEs they loaded before it."""
    by_location = {str(b.location): b for b in subject.files}
    missing: dict[tuple[str, str], tuple[BinaryFile, list[BinaryFile]]] = {}
    for root in subject.roots:
        closure = subject.closures.get(root.location)
        for edge in closure.missing if closure else ():
            requester = by_location.get(edge.requester)
            if requester is not None:
                key = (edge.requester, edge.needed)
                missing.setdefault(key, (requester, []))[1].append(root)
    return missing


def _searched(facts: ElfFacts) -> str:
    """What ld.so searched for a NEEDED entry of ``facts``, named as the file names it."""
    if facts.runpath is not None:
        own = f"RUNPATH {':'.join(facts.runpath) or '(empty)'}"
    elif facts.rpath is not None:
        own = f"RPATH {':'.join(facts.rpath) or '(empty)'} and its loaders' RPATH"
    else:
        own = "no RPATH or RUNPATH of its own, its loaders' RPATH"
    return f"searched {own}, ld.so.cache and the default directories"


def _context(binary: BinaryFile, roots: Sequence[BinaryFile]) -> str:
    others = sorted({root.display for root in roots if root is not binary})
    return f" (loaded by {_listed(others)})" if others else ""


def _missing_finding(
    subject: Subject, binary: BinaryFile, name: str, roots: Sequence[BinaryFile]
) -> Finding:
    facts = subject.facts(binary)
    evidence = _searched(facts) + _context(binary, roots)
    message = f"needs {name}, which the dynamic loader would not find"
    if subject.ships(binary, name):
        return Finding("BT107", binary.display, message, evidence, needed=name)
    own = subject.origin_of(binary)
    own_dist = own.distribution if own else None
    for provider in subject.other_providers(binary, name):
        dist = provider.distribution
        if dist is not None and own_dist is not None and dist.name in own_dist.requires:
            return Finding(
                "BT114",
                binary.display,
                f"needs {name}, found only when {dist.name} is imported first",
                f"{name} ships in {dist.name}, which {own_dist.name} requires; ld.so matches a "
                f"NEEDED name against the SONAMEs already loaded before it searches; {evidence}",
                needed=name,
            )
        evidence += f"; {provider.label} has {name}, but "
        evidence += f"{own_dist.name if own_dist else 'this input'} does not require it"
    return Finding("BT108", binary.display, message, evidence, needed=name)


def check_needed_found(subject: Subject) -> Iterator[Finding]:
    no_runpath: dict[str, tuple[BinaryFile, list[str], list[BinaryFile]]] = {}
    for (location, name), (binary, roots) in _missing_in_contexts(subject).items():
        facts = subject.facts(binary)
        if subject.ships(binary, name) and facts.runpath is None and facts.rpath is None:
            entry = no_runpath.setdefault(location, (binary, [], []))
            entry[1].append(name)
            entry[2].extend(roots)
            continue
        yield _missing_finding(subject, binary, name, roots)
    for binary, names, roots in no_runpath.values():
        yield Finding(
            "BT112",
            binary.display,
            f"needs {', '.join(names)}, which ship with it, but has no RUNPATH",
            "DT_RUNPATH and DT_RPATH absent" + _context(binary, roots),
        )


def _bad_search_entry(entry: str) -> str | None:
    if entry in ("", "."):
        return "empty or '.' (the current directory)"
    if entry.startswith(("$ORIGIN", "${ORIGIN}")):
        return None
    if entry.startswith("/"):
        return search_path_problem(entry) or "absolute"
    return "relative to the current directory"


def _is_project_file(subject: Subject, binary: BinaryFile) -> bool:
    """The recipe's own libraries and executables: they keep the strict ``$ORIGIN``-only rule."""
    name = _name(binary)
    return (
        name in subject.policy.project_files or subject.policy.executable_by_file(name) is not None
    )


def _entry_consequence(subject: Subject, binary: BinaryFile, entry: str, tag: str) -> str | None:
    """What an absolute entry does for ``binary``'s NEEDED closure: which NEEDED it resolves here,
    or which missing NEEDED it would resolve on a machine that has the folder; None: nothing."""
    closure = subject.closures.get(binary.location)
    if closure is None:
        return None
    facts = subject.facts(binary)
    folder = expand_entries((entry,), facts, str(binary.location.parent))[0]
    own = str(binary.location)
    # DT_RPATH (without DT_RUNPATH) serves the whole chain below the file; DT_RUNPATH its own needs
    inherited = tag == "RPATH"
    relevant = [e for e in closure.edges if inherited or e.requester == own]
    resolved = sorted(
        {e.needed for e in relevant if e.path and posixpath.dirname(e.path) == folder and
         e.via in ("rpath", "runpath")}
    )  # fmt: skip
    if resolved:
        return f"it is where {_listed(resolved)} resolve"
    # a missing NEEDED the inputs ship is BT107 already: the entry would not be where it lies
    missing = sorted({e.needed for e in relevant if e.path is None} - subject.in_input)
    if missing:
        return f"{_listed(missing)} would resolve from it on a machine that has the folder"
    return None


def _search_entry_finding(
    subject: Subject, binary: BinaryFile, entry: str, tag: str, entries: tuple[str, ...]
) -> Finding | None:
    problem = _bad_search_entry(entry)
    if problem is None:
        return None
    evidence = f"{tag}: {':'.join(entries)}"
    if problem != "absolute" or _is_project_file(subject, binary):
        return Finding("BT110", binary.display, f"{tag} entry {entry!r} is {problem}", evidence)
    facts = subject.facts(binary)
    folder = posixpath.normpath(entry)
    if folder in default_system_dirs(facts.elf_class, facts.machine) and not facts.nodeflib:
        message = f"{tag} entry {entry!r} is a default directory: ld.so searches it anyway"
        return Finding("BT113", binary.display, message, evidence)
    consequence = _entry_consequence(subject, binary, entry, tag)
    if consequence:
        message = f"{tag} entry {entry!r} is absolute and {consequence}"
        return Finding("BT110", binary.display, message, evidence)
    message = f"{tag} entry {entry!r} is an unused absolute entry: no NEEDED resolves from it"
    return Finding("BT113", binary.display, message, evidence)


def check_search_paths(subject: Subject) -> Iterator[Finding]:
    for binary in subject.files:
        facts = subject.facts(binary)
        entries = facts.runpath if facts.runpath is not None else facts.rpath
        tag = "RUNPATH" if facts.runpath is not None else "RPATH"
        for entry in entries or ():
            finding = _search_entry_finding(subject, binary, entry, tag, entries or ())
            if finding:
                yield finding
        if facts.rpath is not None and facts.runpath is None:
            yield Finding(
                "BT111",
                binary.display,
                "uses DT_RPATH, not DT_RUNPATH",
                f"RPATH: {':'.join(facts.rpath)}",
            )


def _grafted_name(binary: BinaryFile, facts: ElfFacts) -> str:
    return GRAFT_SUFFIX.sub("", facts.soname or _name(binary))


def _is_grafted(facts: ElfFacts) -> bool:
    return bool(facts.soname and GRAFT_SUFFIX.search(facts.soname))


def check_layout(subject: Subject) -> Iterator[Finding]:
    project = [b for b in subject.shared if _name(b) in subject.policy.project_files]
    folders = sorted({str(b.location.parent) for b in project})
    if len(folders) > 1:
        yield Finding(
            "BT120",
            project[0].display,
            "the project's libraries are spread over several folders",
            f"folders: {', '.join(folders)}",
        )
    for binary in project:
        if binary.location.parent.name != "lib":
            yield Finding(
                "BT120",
                binary.display,
                "a project library outside a lib/ folder",
                f"folder: {binary.location.parent}",
            )
    for binary in subject.files:
        if _name(binary) in subject.policy.removed:
            yield Finding(
                "BT121",
                binary.display,
                f"{_name(binary)} is a removed legacy library",
                f"recipe: verify.removed lists {_name(binary)}",
            )


def _harmless_copy(subject: Subject, first: BinaryFile, second: BinaryFile) -> bool:
    """Two libraries with one (graft-free) SONAME that one process can hold without harm:
    third-party copies grafted by repair tools (each wheel vendors its own), or one SONAME in
    two inputs (ld.so maps the first one loaded and matches the other's users against it)."""
    a, b = subject.facts(first), subject.facts(second)
    if _is_grafted(a) and _is_grafted(b):
        return True
    return a.soname == b.soname and subject.origin_of(first) != subject.origin_of(second)


def check_duplicate_copies(subject: Subject) -> Iterator[Finding]:
    """BT122 keys on SONAME: files without one are modules, not copies of a library."""
    same = subject.identical_copies
    seen: dict[str, list[BinaryFile]] = {}
    for binary in sorted(subject.shared, key=lambda b: (len(b.display), b.display)):
        facts = subject.facts(binary)
        if facts.soname is None or binary.display in same:
            continue
        key = _grafted_name(binary, facts)
        earlier = [b for b in seen.get(key, []) if not _harmless_copy(subject, b, binary)]
        if earlier:
            yield Finding(
                "BT122",
                binary.display,
                f"is a second copy of {earlier[0].display}",
                f"both are {key} (SONAMEs {subject.facts(earlier[0]).soname} and {facts.soname})",
            )
        seen.setdefault(key, []).append(binary)


def _shared_initializers(
    subject: Subject, libraries: Sequence[BinaryFile]
) -> dict[str, dict[str, set[str]]]:
    """Library location -> location of another library of the folder -> the static initializers
    exactly these two hold (no third one): one's own code, copied into the other."""
    holders: dict[str, list[str]] = {}
    for binary in libraries:
        for name in _static_inits(subject.facts(binary)):
            holders.setdefault(name, []).append(str(binary.location))
    shared: dict[str, dict[str, set[str]]] = {}
    for name, pair in holders.items():
        if len(pair) == 2:
            first, second = pair
            shared.setdefault(first, {}).setdefault(second, set()).add(name)
            shared.setdefault(second, {}).setdefault(first, set()).add(name)
    return shared


def check_stale_monolith(subject: Subject) -> Iterator[Finding]:
    """A library nothing loads that holds the static initializers of several libraries beside
    it (TVM's leftover libtvm.so next to libtvm_runtime.so), with or without a recipe."""
    folders: dict[PurePosixPath, list[BinaryFile]] = {}
    for binary in subject.shared:
        if subject.facts(binary).soname and subject.facts(binary).static_initializers:
            folders.setdefault(binary.location.parent, []).append(binary)
    for libraries in folders.values():
        shared = _shared_initializers(subject, libraries)
        for candidate in libraries:
            loaded = str(candidate.location) in subject.loaded_by_others
            if loaded or _name(candidate) in subject.policy.removed:
                continue  # a removed library is BT121 already
            parts = shared.get(str(candidate.location), {})
            if len(parts) >= 2:
                ordered = [
                    (b, parts[str(b.location)]) for b in libraries if str(b.location) in parts
                ]
                shown = "; ".join(f"{_name(b)}: {_listed(inits)}" for b, inits in ordered)
                yield Finding(
                    "BT125",
                    candidate.display,
                    f"is a stale monolith: it holds the code of {len(parts)} libraries beside "
                    "it and nothing loads it",
                    f"their own static initializers are in it ({shown})",
                )


def check_size_budgets(subject: Subject) -> Iterator[Finding]:
    for rule in subject.policy.libraries:
        for binary in subject.shared:
            size = subject.facts(binary).file_size
            if _name(binary) == rule.file_name and rule.size_budget and size > rule.size_budget:
                yield Finding(
                    "BT130",
                    binary.display,
                    f"is {size / 1e6:.2f} MB, over its budget of {rule.size_budget / 1e6:.2f} MB",
                    f"file size {size} bytes",
                )


CHECK_FUNCTIONS: tuple[Callable[[Subject], Iterator[Finding]], ...] = (
    check_required_needed,
    check_forbidden_needed,
    check_duplicate_object_code,
    check_owned_initializers,
    check_registrations,
    check_undefined_symbols,
    check_needed_found,
    check_search_paths,
    check_layout,
    check_duplicate_copies,
    check_stale_monolith,
    check_size_budgets,
    check_hardening,
)


def run_checks(subject: Subject) -> tuple[Finding, ...]:
    """Every finding, duplicates removed, in catalogue order then by path."""
    findings = dict.fromkeys(f for check in CHECK_FUNCTIONS for f in check(subject))
    return tuple(sorted(findings, key=finding_order))
