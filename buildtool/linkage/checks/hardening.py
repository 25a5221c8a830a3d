"""Hardening checks (BT140-BT145), on with ``[verify] hardening = true``. Pure.

In the spirit of Bitcoin Core's security-check: what makes a memory-safety bug in a library hard
to exploit once it is loaded. Each rule reads only ``BinaryFacts``; relocatable objects and core
files are not loaded as they are, so only shared libraries and executables are judged.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.subject import Subject

JUDGED_TYPES = frozenset({"shared", "pie", "executable"})
"""File types the dynamic loader maps as they are."""

WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/shm", "/run/lock", "/var/lock")
"""Folders anyone may write to on every Linux system: whoever plants a library there is loaded.
A list, not a look at this machine's disk: binaries are verified on one machine and run on many."""

Problem = tuple[str, str, str]
"""(check id, message, evidence)."""


def _relro(facts: BinaryFacts) -> Problem | None:
    now = "BIND_NOW present" if facts.bind_now else "DT_BIND_NOW, DF_BIND_NOW and DF_1_NOW absent"
    if not facts.relro:
        return ("BT140", "has no RELRO segment: relocated data stays writable",
                f"no PT_GNU_RELRO; {now}")  # fmt: skip
    if not facts.bind_now:
        return ("BT140", "has partial RELRO only: lazy binding leaves the GOT writable",
                f"PT_GNU_RELRO present; {now}")  # fmt: skip
    return None


def _stack(facts: BinaryFacts) -> Problem | None:
    if facts.exec_stack:
        return ("BT141", "has an executable stack", "PT_GNU_STACK missing or with PF_X")
    return None


def _rpath(facts: BinaryFacts) -> Problem | None:
    if facts.rpath is not None:
        return ("BT142", "has DT_RPATH", f"RPATH: {':'.join(facts.rpath)}")
    return None


def search_path_problem(entry: str) -> str | None:
    """Why a RUNPATH/RPATH entry lets someone else choose what is loaded, or None."""
    if entry.startswith(("$ORIGIN", "${ORIGIN}")):
        return None
    if not entry.startswith("/"):
        return "relative to the current directory"
    # POSIX keeps a leading '//' apart; the kernel does not
    normalized = "/" + posixpath.normpath(entry).lstrip("/")
    for folder in WORLD_WRITABLE:
        if normalized == folder or normalized.startswith(f"{folder}/"):
            return f"in the world-writable folder {folder}"
    return None


def _search_paths(facts: BinaryFacts) -> Iterator[Problem]:
    for tag, entries in (("RUNPATH", facts.runpath), ("RPATH", facts.rpath)):
        for entry in entries or ():
            problem = search_path_problem(entry)
            if problem:
                yield ("BT143", f"{tag} entry {entry!r} is {problem}",
                       f"{tag}: {':'.join(entries or ())}")  # fmt: skip


def _textrel(facts: BinaryFacts) -> Problem | None:
    if facts.textrel:
        return ("BT144", "has text relocations: its code is written to at load time",
                "DT_TEXTREL or DF_TEXTREL")  # fmt: skip
    return None


def _pie(facts: BinaryFacts) -> Problem | None:
    if facts.file_type == "executable":
        return ("BT145", "is not a position-independent executable",
                "ET_EXEC: loaded at a fixed address")  # fmt: skip
    return None


RULES: tuple[Callable[[BinaryFacts], Problem | None], ...] = (
    _relro,
    _stack,
    _rpath,
    _textrel,
    _pie,
)


def hardening_findings(display: str, facts: BinaryFacts) -> Iterator[Finding]:
    """Every hardening problem of one file (whatever the policy says)."""
    if facts.file_type not in JUDGED_TYPES:
        return
    problems = [rule(facts) for rule in RULES]
    problems += list(_search_paths(facts))
    for problem in problems:
        if problem is not None:
            check_id, message, evidence = problem
            yield Finding(check_id, display, message, evidence)


def check_hardening(subject: Subject) -> Iterator[Finding]:
    """With ``[verify] hardening = true``: every input file, hardened."""
    if not subject.policy.hardening:
        return
    for binary in subject.files:
        if subject.facts(binary).format == "elf":  # the ELF loader's protections only
            yield from hardening_findings(binary.display, subject.facts(binary))
