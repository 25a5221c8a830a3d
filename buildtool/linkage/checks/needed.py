"""Checks on DT_NEEDED: required and forbidden entries, entries not found."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Sequence

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import base_name, listed
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile


def check_required_needed(subject: Subject) -> Iterator[Finding]:
    for binary in subject.files:
        needed = subject.facts(binary).needed
        library = subject.policy.library_by_file(base_name(binary))
        executable = subject.policy.executable_by_file(base_name(binary))
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
    library = subject.policy.library_by_file(base_name(binary))
    executable = subject.policy.executable_by_file(base_name(binary))
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


_FOREIGN_SEARCH = {
    "macho": "searched its and its loaders' LC_RPATH (dyld: @rpath, @loader_path)",
    "pe": "searched the loaded DLLs, the module's folder, the os.add_dll_directory folders "
    "and the system DLLs (Windows)",
}


def _searched(facts: BinaryFacts) -> str:
    """What ld.so searched for a NEEDED entry of ``facts``, named as the file names it."""
    if facts.format in _FOREIGN_SEARCH:
        return _FOREIGN_SEARCH[facts.format]
    if facts.runpath is not None:
        own = f"RUNPATH {':'.join(facts.runpath) or '(empty)'}"
    elif facts.rpath is not None:
        own = f"RPATH {':'.join(facts.rpath) or '(empty)'} and its loaders' RPATH"
    else:
        own = "no RPATH or RUNPATH of its own, its loaders' RPATH"
    return f"searched {own}, ld.so.cache and the default directories"


def _context(binary: BinaryFile, roots: Sequence[BinaryFile]) -> str:
    others = sorted({root.display for root in roots if root is not binary})
    return f" (loaded by {listed(others)})" if others else ""


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
        no_search_path = facts.runpath is None and facts.rpath is None and facts.format == "elf"
        if subject.ships(binary, name) and no_search_path:
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
