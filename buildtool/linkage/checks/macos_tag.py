"""A wheel's ``macosx_X_Y`` platform tag against the deployment target of its Mach-O files."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Final

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


FIRST_ARM64_RELEASE: Final = (11, 0)
"""No Mac with an arm64 CPU runs an older macOS: pip installs a ``macosx_10_9_universal2``
wheel on one (never a ``macosx_10_x_arm64`` one), where the arm64 slice of its files runs, and
that slice's minimum of 11.0 promises no more than the machine has."""


def promised(tag: tuple[int, int], machine: str) -> tuple[int, int]:
    """The oldest macOS the tag installs a file of ``machine`` (a slice's) on."""
    return max(tag, FIRST_ARM64_RELEASE) if machine == "arm64" else tag


def check_macos_tag(subject: Subject) -> Iterator[Finding]:
    for entry in subject.sets:
        tag = wheel_macos_release(entry.label) if entry.in_wheel else None
        if tag is None:
            continue
        for binary in entry.files:
            facts = binary.facts
            if facts is None or facts.format != "macho" or facts.minos is None:
                continue
            oldest = promised(tag, facts.machine)
            if release(facts.minos) > oldest:
                shown = f"{oldest[0]}.{oldest[1]}"
                arm64 = f" ({facts.machine}: from macOS {shown})" if oldest != tag else ""
                yield Finding(
                    "BT151",
                    binary.display,
                    f"needs macOS {facts.minos}, but the wheel's tag promises macOS {shown}",
                    f"minos {facts.minos} (LC_BUILD_VERSION); tag macosx_{tag[0]}_{tag[1]}{arm64}",
                )
