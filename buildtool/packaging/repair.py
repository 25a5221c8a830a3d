"""Repairing a built wheel with the platform's tool (auditwheel on Linux, delocate on macOS),
never grafting the project's own libraries into it."""

from __future__ import annotations

import logging
import shutil
import sys
import sysconfig
from pathlib import Path

from buildtool import process
from buildtool.errors import ChecksFailed
from buildtool.packaging.loader import file_stem
from buildtool.plan import LinkPlan

log = logging.getLogger("buildtool")


def own_library_names(plan: LinkPlan) -> tuple[str, ...]:
    """File names of the project's libraries on every platform the repair tools run on."""
    names = [lib.file_name for lib in plan.libraries]
    names += [f"{file_stem(lib)}.dylib" for lib in plan.libraries]
    return tuple(dict.fromkeys(names))


def auditwheel_command(wheel: Path, dest: Path, plan: LinkPlan, platform_tag: str) -> list[str]:
    """``auditwheel repair`` that never grafts the project's own libraries.

    The compiler add-on needs the runtime, which another wheel ships: without ``--exclude`` it
    would get a private copy, and a process loading both copies aborts on duplicate registration.
    ``auto`` lets auditwheel pick the most compatible tag the binaries allow; a pinned tag is
    used alone (``--only-plat``) so the file name is exactly what the recipe says.
    """
    command = [sys.executable, "-m", "auditwheel", "repair", "--plat", platform_tag]
    if platform_tag != "auto":
        command.append("--only-plat")
    for name in own_library_names(plan):
        command += ["--exclude", name]
    return [*command, "--wheel-dir", str(dest), str(wheel)]


def delocate_command(wheel: Path, dest: Path, plan: LinkPlan) -> list[str]:
    """macOS only (not exercised on Linux): ``delocate-wheel`` with the same excludes."""
    tool = Path(sysconfig.get_path("scripts")) / "delocate-wheel"
    command = [str(tool), "--wheel-dir", str(dest)]
    for name in own_library_names(plan):
        command += ["--exclude", name]
    return [*command, str(wheel)]


def repair_wheel(wheel: Path, dest: Path, plan: LinkPlan, platform_tag: str) -> Path:
    """Repair ``wheel`` into the empty folder ``dest``; return the repaired wheel."""
    dest.mkdir(parents=True, exist_ok=True)
    if sys.platform.startswith("linux"):
        process.run(  # auditwheel's INFO lines at DEBUG: -v shows them, a failure its tail
            auditwheel_command(wheel, dest, plan, platform_tag),
            env=process.tool_environment(wheel_build=True),
            output_level=logging.DEBUG,
        )
    elif sys.platform == "darwin":
        process.run(
            delocate_command(wheel, dest, plan),
            env=process.tool_environment(wheel_build=True),
            output_level=logging.DEBUG,
        )
    else:
        log.warning("no repair tool for %s: %s is published as built", sys.platform, wheel.name)
        shutil.copy2(wheel, dest / wheel.name)
    produced = sorted(dest.glob("*.whl"))
    if len(produced) != 1:
        raise ChecksFailed(f"repairing {wheel.name} gave {len(produced)} wheels in {dest}")
    return produced[0]
