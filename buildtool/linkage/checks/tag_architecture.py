"""A wheel's platform tags against the architectures its loadable binaries are built for.

pip installs a wheel wherever one of its tags fits, so every architecture a tag names must be
in every binary Python will load from it: its extension modules and the libraries they load.
A macOS arm64 wheel built on an Intel runner whose CMake ignored ``ARCHFLAGS``, a
``universal2`` wheel with thin files, an aarch64 module in an x86_64 wheel: each installs and
then fails at import (dyld: "incompatible architecture", ld.so: "cannot open shared object
file"). Every ELF shared library of a Linux wheel counts too, whoever opens it (cffi's dlopen
by path). Other binaries a wheel carries as data (executables, a DLL injected into 32-bit
processes) are not judged. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Final

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.binaries.facts import FORMAT_NAMES
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import listed
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile, InputSet
from buildtool.linkage.loaders.platform import linux_tag_machine, wheel_platform_tags

_MACOS_ARCHES: Final = {
    "arm64": ("arm64",),
    "x86_64": ("x86_64",),
    "universal2": ("arm64", "x86_64"),
    "intel": ("x86_64", "i386"),
    "i386": ("i386",),
}
_WINDOWS_TAGS: Final = {"win_amd64": "x86_64", "win32": "i386", "win_arm64": "arm64"}


def tag_machines(tag: str) -> tuple[str, tuple[str, ...]] | None:
    """The binary format a platform tag installs on and the machines it must hold
    (``macosx_11_0_universal2`` -> ``("macho", ("arm64", "x86_64"))``); None for a tag that
    names no known architecture (``any``, ``macosx_10_9_universal``)."""
    if tag.startswith("macosx_"):
        arch = tag.split("_", 3)[-1]
        return ("macho", _MACOS_ARCHES[arch]) if arch in _MACOS_ARCHES else None
    if tag in _WINDOWS_TAGS:
        return ("pe", (_WINDOWS_TAGS[tag],))
    machine = linux_tag_machine(tag)
    return ("elf", (machine,)) if machine else None


def _required(tags: tuple[str, ...]) -> dict[tuple[str, str], str]:
    """(format, machine) a wheel's loadable binaries must hold -> the first tag that asks."""
    required: dict[tuple[str, str], str] = {}
    for tag in tags:
        found = tag_machines(tag)
        if found is None:
            continue
        file_format, machines = found
        for machine in machines:
            required.setdefault((file_format, machine), tag)
    return required


def _is_module(subject: Subject, binary: BinaryFile) -> bool:
    """A Python extension module of any format: it defines ``PyInit_<name>`` (Mach-O names
    carry a leading underscore) and is no executable."""
    facts = binary.facts
    return (
        facts is not None
        and facts.file_type != "executable"
        and subject.defines_module_init(binary)
    )


def _loaded_by_modules(subject: Subject, entry: InputSet) -> set[str]:
    """Paths of the input's extension modules and of everything they load."""
    paths: set[str] = set()
    for binary in entry.files:
        if _is_module(subject, binary):
            closure = subject.closures.get(binary.location)
            paths |= set(closure.objects) if closure else {str(binary.location)}
    return paths


def _bundled_library(facts: BinaryFacts) -> bool:
    """An ELF shared library of a Linux wheel: whoever loads it (a NEEDED entry, or cffi and
    ctypes by path, like soundfile's ``libsndfile_x86_64.so``) does so in the interpreter's
    process, so it must be built for the tag's machine even when no module NEEDs it."""
    return facts.format == "elf" and facts.file_type == "shared"


def _have(facts: BinaryFacts) -> tuple[str, ...]:
    return facts.architectures or (facts.machine,)


def _finding(
    binary: BinaryFile, facts: BinaryFacts, missing: Mapping[tuple[str, str], str]
) -> Finding:
    built = "/".join(_have(facts))
    name = FORMAT_NAMES.get(facts.format, facts.format)
    formats = {file_format for file_format, _ in missing}
    if facts.format in formats:
        wants = listed(f"{machine} ({tag})" for (_, machine), tag in missing.items())
        message = f"is built for {built}, but the wheel's tags install it on {wants}"
    else:
        wanted = listed(FORMAT_NAMES.get(f, f) for f in sorted(formats))
        tags = listed(dict.fromkeys(missing.values()))
        message = (
            f"is a {name} file, but the wheel's tags ({tags}) install it where {wanted} files load"
        )
    return Finding(
        "BT152",
        binary.display,
        message,
        f"{name} file, machine {built}; Python loads it (an extension module or a library one "
        "loads)",
    )


def check_tag_architecture(subject: Subject) -> Iterator[Finding]:
    for entry in subject.sets:
        tags = wheel_platform_tags(PurePosixPath(entry.label).name) if entry.in_wheel else ()
        required = _required(tags)
        if not required:
            continue
        loaded = _loaded_by_modules(subject, entry)
        linux = any(file_format == "elf" for file_format, _ in required)
        for binary in entry.files:
            facts = binary.facts
            judged = facts is not None and (linux and _bundled_library(facts))
            if facts is None or not (judged or str(binary.location) in loaded):
                continue
            have = {(facts.format, machine) for machine in _have(facts)}
            missing = {key: tag for key, tag in required.items() if key not in have}
            if missing:
                yield _finding(binary, facts, missing)
