"""Checks on where files sit: one lib/ folder, legacy libraries, second copies, stale monoliths."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import (
    GRAFT_SUFFIX,
    base_name,
    is_grafted,
    listed,
    static_inits,
)
from buildtool.linkage.checks.initializer_reach import initializers_build_state
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile


def _grafted_name(binary: BinaryFile, facts: BinaryFacts) -> str:
    return GRAFT_SUFFIX.sub("", facts.soname or base_name(binary))


_LIBRARY_FOLDERS: dict[str, tuple[str, ...]] = {"pe": ("lib", "bin")}
"""Where a project library may sit, by format: Windows has no RPATH, so outside a wheel a DLL
sits in bin/ beside the executables that load it."""


def _installed_parent(subject: Subject, binary: BinaryFile) -> str:
    installed = subject.folder_name(binary)
    if installed == binary.location.parent.name:
        return str(binary.location.parent)
    return f"(installed) {installed}"


def check_placement(subject: Subject) -> Iterator[Finding]:
    project = [b for b in subject.shared if subject.policy.is_project_library(base_name(b))]
    # a build tree's libraries count where its install puts them (ggml's build/src -> lib)
    folders = sorted({_installed_parent(subject, b) for b in project})
    if len(folders) > 1:
        yield Finding(
            "BT120",
            project[0].display,
            "the project's libraries are spread over several folders",
            f"folders: {', '.join(folders)}",
        )
    for binary in project:
        allowed = _LIBRARY_FOLDERS.get(subject.facts(binary).format, ("lib",))
        if subject.folder_name(binary) not in allowed:
            yield Finding(
                "BT120",
                binary.display,
                f"a project library outside a {' or '.join(f + '/' for f in allowed)} folder",
                f"folder: {binary.location.parent}",
            )
    for binary in subject.files:
        if base_name(binary) in subject.policy.removed:
            yield Finding(
                "BT121",
                binary.display,
                f"{base_name(binary)} is a removed legacy library",
                f"recipe: verify.removed lists {base_name(binary)}",
            )


def _harmless_copy(subject: Subject, first: BinaryFile, second: BinaryFile) -> bool:
    """Two libraries with one (graft-free) SONAME that one process can hold without harm:
    third-party copies grafted by repair tools (each wheel vendors its own), or one SONAME in
    two inputs (ld.so maps the first one loaded and matches the other's users against it)."""
    a, b = subject.facts(first), subject.facts(second)
    if is_grafted(a) and is_grafted(b):
        return True
    return a.soname == b.soname and subject.origin_of(first) != subject.origin_of(second)


def check_duplicate_copies(subject: Subject) -> Iterator[Finding]:
    """BT122 keys on SONAME: files without one, and extension modules, are modules, not copies
    of a library (a DLL's export name is its file name, so two ``_zeros.cp311-win_amd64.pyd``
    in two folders look alike, but Python loads each by its full path as a module of its own)."""
    same = subject.identical_copies
    seen: dict[str, list[BinaryFile]] = {}
    for binary in sorted(subject.shared, key=lambda b: (len(b.display), b.display)):
        facts = subject.facts(binary)
        if facts.soname is None or binary.display in same or subject.defines_module_init(binary):
            continue
        key = _grafted_name(binary, facts)
        earlier = [b for b in seen.get(key, []) if not _harmless_copy(subject, b, binary)]
        if earlier:
            yield _copy_finding(subject, earlier[0], binary, key)
        seen.setdefault(key, []).append(binary)


def _runs_initializers(facts: BinaryFacts) -> bool:
    """Whether loading the file runs code of its own: static initializers by name, or an init
    array longer than the C runtime's one entry (frame_dummy; a C constructor has no name to
    find). Not known for another format: assumed."""
    if facts.format != "elf":
        return True
    pointer = 8 if facts.elf_class == 64 else 4
    return bool(static_inits(facts)) or facts.init_array_size > pointer


def _copy_collides(subject: Subject, binary: BinaryFile) -> bool:
    """Whether a second copy of ``binary`` collides with the first: it runs initializers that
    build state (``initializers_build_state``; unknown counts as yes)."""
    if not _runs_initializers(subject.facts(binary)):
        return False
    return initializers_build_state(subject, binary) is not False


def _copy_finding(subject: Subject, first: BinaryFile, second: BinaryFile, key: str) -> Finding:
    """BT122 when a copy runs initializers that build state (registrations run twice, or split
    between two registries); else BT124: each copy keeps its own state (tables' two libblosc2
    builds)."""
    a, b = subject.facts(first), subject.facts(second)
    names = f"both are {key} (SONAMEs {a.soname} and {b.soname})"
    if _copy_collides(subject, first) or _copy_collides(subject, second):
        return Finding("BT122", second.display, f"is a second copy of {first.display}", names)
    return Finding(
        "BT124",
        second.display,
        f"is a second copy of {first.display} whose initializers call nothing imported: each "
        "copy keeps its own state",
        f"{names}; neither copy's initializers call an imported function",
    )


def _shared_initializers(
    subject: Subject, libraries: Sequence[BinaryFile]
) -> dict[str, dict[str, set[str]]]:
    """Library location -> location of another library of the folder -> the static initializers
    exactly these two hold (no third one): one's own code, copied into the other."""
    holders: dict[str, list[str]] = {}
    for binary in libraries:
        for name in static_inits(subject.facts(binary)):
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
            if loaded or base_name(candidate) in subject.policy.removed:
                continue  # a removed library is BT121 already
            parts = shared.get(str(candidate.location), {})
            if len(parts) >= 2:
                ordered = [
                    (b, parts[str(b.location)]) for b in libraries if str(b.location) in parts
                ]
                shown = "; ".join(f"{base_name(b)}: {listed(inits)}" for b, inits in ordered)
                yield Finding(
                    "BT125",
                    candidate.display,
                    f"is a stale monolith: it holds the code of {len(parts)} libraries beside "
                    "it and nothing loads it",
                    f"their own static initializers are in it ({shown})",
                )
