"""A wheel's ``macosx_X_Y`` platform tag against the deployment target of its Mach-O files."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.subject import Subject

_MACOS_TAG = re.compile(r"macosx_(\d+)_(\d+)_[a-z0-9_]+")


def wheel_macos_release(wheel: str) -> tuple[int, int] | None:
    """The oldest macOS release a wheel's file name (its platform tags) says it installs on;
    None for a wheel without a ``macosx`` tag."""
    name = PurePosixPath(wheel).name
    if not name.endswith(".whl"):
        return None
    platforms = name[: -len(".whl")].split("-")[-1].split(".")
    releases = [
        (int(match.group(1)), int(match.group(2)))
        for platform in platforms
        if (match := _MACOS_TAG.fullmatch(platform))
    ]
    return min(releases) if releases else None


def release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def check_macos_tag(subject: Subject) -> Iterator[Finding]:
    for entry in subject.sets:
        tag = wheel_macos_release(entry.label) if entry.in_wheel else None
        if tag is None:
            continue
        for binary in entry.files:
            facts = binary.facts
            if facts is None or facts.format != "macho" or facts.minos is None:
                continue
            if release(facts.minos) > tag:
                shown = f"{tag[0]}.{tag[1]}"
                yield Finding(
                    "BT151",
                    binary.display,
                    f"needs macOS {facts.minos}, but the wheel's tag promises macOS {shown}",
                    f"minos {facts.minos} (LC_BUILD_VERSION); tag macosx_{tag[0]}_{tag[1]}",
                )
