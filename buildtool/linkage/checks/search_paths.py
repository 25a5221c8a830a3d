"""Checks on RPATH and RUNPATH entries."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import base_name, listed
from buildtool.linkage.checks.hardening import search_path_problem
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile
from buildtool.linkage.loaders.glibc import default_system_dirs, expand_entries


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
    name = base_name(binary)
    return (
        subject.policy.is_project_library(name)
        or subject.policy.executable_by_file(name) is not None
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
        return f"it is where {listed(resolved)} resolve"
    # a missing NEEDED the inputs ship is BT107 already: the entry would not be where it lies
    missing = sorted({e.needed for e in relevant if e.path is None} - subject.in_input)
    if missing:
        return f"{listed(missing)} would resolve from it on a machine that has the folder"
    return None


def _search_entry_finding(
    subject: Subject,
    binary: BinaryFile,
    entry: str,
    tag: str,
    entries: tuple[str, ...],
    *,
    built: str = "",
) -> Finding | None:
    problem = _bad_search_entry(entry)
    if problem is None:
        return None
    evidence = f"{tag}: {':'.join(entries)}{built}"
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


def _macho_search_paths(binary: BinaryFile, entries: tuple[str, ...]) -> Iterator[Finding]:
    """LC_RPATH: ``@loader_path`` and ``@executable_path`` entries are dyld's ``$ORIGIN``; a
    relative one is searched from the current directory."""
    for entry in entries:
        if not entry.startswith(("@", "/")):
            evidence = f"LC_RPATH: {':'.join(entries)}"
            problem = "relative to the current directory"
            yield Finding(
                "BT110", binary.display, f"LC_RPATH entry {entry!r} is {problem}", evidence
            )


def _judged_entries(
    subject: Subject, binary: BinaryFile, entries: tuple[str, ...], tag: str
) -> tuple[tuple[str, ...], str, str]:
    """The entries to judge, their name and a note: in a CMake build tree, what ``cmake
    --install`` writes (CMake's build RPATH, absolute and ending in an empty entry, is
    replaced at install and judged no further); elsewhere the file's own."""
    installed = subject.install_rpath(binary)
    if installed is None or installed == ":".join(entries):
        return entries, tag, ""
    judged = tuple(installed.split(":")) if installed else ()
    note = f" (installed by cmake_install.cmake; CMake's build {tag} {':'.join(entries)} is "
    note += "replaced at install)"
    return judged, f"install {tag}", note


def check_search_paths(subject: Subject) -> Iterator[Finding]:
    for binary in subject.files:
        facts = subject.facts(binary)
        if facts.format != "elf":
            yield from _macho_search_paths(binary, facts.rpath or ())
            continue
        entries = facts.runpath if facts.runpath is not None else facts.rpath
        tag = "RUNPATH" if facts.runpath is not None else "RPATH"
        judged, tag, built = _judged_entries(subject, binary, entries or (), tag)
        for entry in judged:
            finding = _search_entry_finding(subject, binary, entry, tag, judged, built=built)
            if finding:
                yield finding
        if facts.rpath is not None and facts.runpath is None:
            yield Finding(
                "BT111",
                binary.display,
                "uses DT_RPATH, not DT_RUNPATH",
                f"RPATH: {':'.join(facts.rpath)}",
            )
