"""``buildtool wheel``: build, repair, check and verify wheels, then publish them all or none.

The wheels are built through scikit-build-core's PEP 517 hooks in buildtool's own environment
(no build isolation: the same cmake, ninja and scikit-build-core every time, so a rebuild reuses
the CMake build folder and compiles only what changed). Each distribution builds in
``<build-root>/skb/<distribution>/<wheel tag>``, apart from the developer's own CMake build.

Everything is produced in a hidden staging folder inside the output folder and renamed into it
only when every wheel was built, repaired, checked and verified: a failure leaves the output
folder as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import sys
import sysconfig
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Protocol

import pyproject_hooks

from buildtool import process
from buildtool.cmake import configure
from buildtool.errors import ChecksFailed, ToolFailed, UsageError
from buildtool.fsutil import folder_lock, owned_folder, write_atomic
from buildtool.packaging.distributions import (
    BUILD_BACKEND,
    Distribution,
    WheelVariant,
    extensions_of,
    has_split,
    variant_distributions,
)
from buildtool.packaging.loader import file_stem
from buildtool.packaging.repair import repair_wheel
from buildtool.packaging.sdist import stage_sdist_tree
from buildtool.plan import LinkPlan
from buildtool.recipe.load import LoadedRecipe

log = logging.getLogger("buildtool")


class WheelVerifier(Protocol):
    """The verify-linkage step, run on the repaired wheels of a variant together (as they are
    installed together: the compiler add-on needs the runtime wheel) before any is published.

    Raises ``ChecksFailed`` (or any ``BuildtoolError``) to reject them; returns to accept them.
    """

    def __call__(
        self, wheels: Sequence[Path], plan: LinkPlan, /, published: Sequence[Path] = ()
    ) -> None:
        """``published``: where each wheel will be published, for the report to name (the
        staged files are gone once a run ends)."""


@dataclasses.dataclass(frozen=True)
class WheelRequest:
    """What ``buildtool wheel`` was asked for."""

    loaded: LoadedRecipe
    """The recipe."""
    variant: WheelVariant
    """``full`` (one wheel) or ``split`` (runtime wheel plus compiler add-on)."""
    out_dir: Path
    """Where the finished wheels (and the sdist) go."""
    build_root: Path
    """Build folders go in ``<build_root>/skb/<distribution>/<wheel tag>``."""
    sdist: bool = False
    """Also build the full distribution's sdist."""
    defines: tuple[tuple[str, str], ...] = ()
    """Extra CMake cache entries for every wheel build (the launcher's, then ``-D NAME=VALUE``)."""
    jobs: int | None = None
    """Compile jobs ninja runs at once (``build.tool-args`` of scikit-build-core, which passes
    them to ninja); None: ninja's default."""


@dataclasses.dataclass(frozen=True)
class BuiltArtifact:
    """A published wheel or sdist."""

    distribution: str
    path: Path
    size: int
    """Bytes on disk."""


def _hook_runner(
    cmd: Sequence[str], cwd: str | None = None, extra_environ: Mapping[str, str] | None = None
) -> None:
    process.run(
        cmd,
        cwd=Path(cwd) if cwd else None,
        env=process.tool_environment(extra_environ, wheel_build=True),
    )


def _hooks(project_dir: Path) -> pyproject_hooks.BuildBackendHookCaller:
    return pyproject_hooks.BuildBackendHookCaller(
        str(project_dir), BUILD_BACKEND, runner=_hook_runner, python_executable=sys.executable
    )


def skb_build_dir(build_root: Path, dist: Distribution) -> Path:
    """scikit-build-core's build folder for ``dist`` (``{wheel_tag}`` is filled in by it)."""
    return build_root.resolve() / "skb" / dist.name / "{wheel_tag}"


ENVIRONMENT_STAMP = ".buildtool-environment.json"
"""Beside a distribution's wheel build folders: the build environment they were configured in."""


def start_afresh_if_environment_changed(folder: Path) -> None:
    """Empty a distribution's wheel build ``folder`` when the build environment changed.

    CMake reads the compilers and their flags (``CXXFLAGS``...) only when a build folder is first
    configured, and keeps what ``CMAKE_ARGS`` once set in its cache: a rebuild in the same folder
    would silently keep the old ones.
    """
    current = {name: os.environ.get(name, "") for name in process.BUILD_ENVIRONMENT}
    stamp = folder / ENVIRONMENT_STAMP
    try:
        previous = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        previous = None
    if previous is not None and previous != current:
        changed = sorted(name for name in current if previous.get(name, "") != current[name])
        log.info("%s changed: building in %s from scratch", ", ".join(changed), folder)
        shutil.rmtree(folder)
    write_atomic(stamp, json.dumps(current, indent=2, sort_keys=True) + "\n")


def build_raw_wheel(
    loaded: LoadedRecipe,
    dist: Distribution,
    build_root: Path,
    dest: Path,
    defines: Iterable[tuple[str, str]] = (),
    *,
    jobs: int | None = None,
) -> Path:
    """Run the ``build_wheel`` hook of ``dist``; return the unrepaired wheel.

    ``defines`` become ``cmake.define.<NAME>`` config settings, which scikit-build-core merges
    with the distribution's own ``cmake.define`` table; ``jobs`` limits ninja's parallel compiles.
    """
    build_dir = skb_build_dir(build_root, dist)
    start_afresh_if_environment_changed(build_dir.parent)
    settings = {"build-dir": str(build_dir)}
    settings.update({f"cmake.define.{name}": value for name, value in defines})
    if jobs is not None:  # scikit-build-core has no jobs setting: ninja's own -j, after --
        settings["build.tool-args"] = f"-j{jobs}"
    log.info("building the %s wheel", dist.name)
    try:
        name = _hooks(loaded.root / dist.project_dir).build_wheel(str(dest), settings)
    except pyproject_hooks.BackendUnavailable:
        raise UsageError(
            f"{BUILD_BACKEND} cannot be imported by {sys.executable}: pip install scikit-build-core"
        ) from None
    return dest / name


def python_package_files(loaded: LoadedRecipe) -> frozenset[str]:
    """Wheel paths of the Python package's files, as CMake installs them (with the public
    headers of ``project.headers``, which install with the package)."""
    project = loaded.recipe.project
    folder = loaded.root / project.python_package_dir
    files = {
        str(PurePosixPath(project.package) / path.relative_to(folder).as_posix())
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    for headers in project.headers:
        top = loaded.root / headers
        files.update(
            f"{project.package}/include/{path.relative_to(top).as_posix()}"
            for path in top.rglob("*")
            if path.is_file()
        )
    return frozenset(files)


def built_package_files(plan: LinkPlan, dist: Distribution) -> set[str]:
    """What the build adds to the package of a wheel that ships it: extension modules (for this
    interpreter), and with ``project.headers`` the export headers of its libraries and the CMake
    package config."""
    package = plan.project.package
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    files = {f"{package}/{module.name}{suffix}" for module in extensions_of(plan, dist)}
    if not dist.ships_package:
        return files
    if plan.project.headers:
        name = plan.project.name
        files.add(f"{package}/lib/cmake/{name}/{name}Config.cmake")
        files.update(
            f"{package}/include/{plan.library(lib).output_name}_export.h" for lib in dist.libraries
        )
        files.update(f"{package}/include/{path}" for path, _ in plan.configured_headers)
    return files


def expected_files(plan: LinkPlan, dist: Distribution, package_files: frozenset[str]) -> set[str]:
    """Every file ``dist``'s wheel must hold outside its ``.dist-info`` folder."""
    libraries = {
        f"{plan.project.package}/lib/{plan.library(name).file_name}" for name in dist.libraries
    }
    if not dist.ships_package:
        return libraries | built_package_files(plan, dist)
    return libraries | set(package_files) | built_package_files(plan, dist)


def _is_own_library_copy(member: str, plan: LinkPlan) -> bool:
    name = PurePosixPath(member).name
    return any(
        name.startswith((f"{file_stem(lib)}-", f"{file_stem(lib)}.")) for lib in plan.libraries
    )


def content_problems(members: Iterable[str], expected: set[str], plan: LinkPlan) -> list[str]:
    """What is wrong with a wheel's file list: missing files, strays, grafted own libraries.

    ``<dist>.libs/`` may hold system libraries auditwheel grafted, never one of the project's.
    """
    problems = []
    present = {member for member in members if not member.endswith("/")}
    for member in sorted(present - expected):
        top = member.split("/", 1)[0]
        if top.endswith(".dist-info"):
            continue
        if top.endswith(".libs") and not _is_own_library_copy(member, plan):
            continue
        what = "a grafted copy of a project library" if top.endswith(".libs") else "unexpected"
        problems.append(f"{member}: {what}")
    problems += [f"{member}: missing" for member in sorted(expected - present)]
    return problems


def check_wheel_contents(wheel: Path, expected: set[str], plan: LinkPlan) -> None:
    with zipfile.ZipFile(wheel) as archive:
        problems = content_problems(archive.namelist(), expected, plan)
    if problems:
        listed = "".join(f"\n  {problem}" for problem in problems)
        raise ChecksFailed(f"{wheel.name} does not hold what the recipe says:{listed}")


def _check_request(request: WheelRequest, plan: LinkPlan) -> None:
    recipe = request.loaded
    if not plan.project.python_package_dir:
        raise UsageError(
            f"{recipe.source}: project.python-package-dir is empty; wheels keep the libraries "
            "under <package>/lib/ beside the package's loader, so the recipe must name its folder"
        )
    if request.variant == "split" and not has_split(plan):
        raise UsageError(
            f"{recipe.source}: --variant split needs an optional library to leave out of the "
            "runtime wheel (set optional = true on one); use --variant full"
        )


STAGING_PREFIX = ".buildtool-wheel-"
"""Name start of the staging folders inside the output folder."""


@contextlib.contextmanager
def staging_folder(out_dir: Path) -> Iterator[Path]:
    """A hidden folder inside ``out_dir`` (same file system: renames are atomic), removed after;
    ones that killed runs left there are removed first (``fsutil.owned_folder``)."""
    with owned_folder(out_dir, STAGING_PREFIX) as staging:
        yield staging


def _build_one(request: WheelRequest, plan: LinkPlan, dist: Distribution, staging: Path) -> Path:
    raw_dir = staging / "raw" / dist.name
    try:
        raw = build_raw_wheel(
            request.loaded, dist, request.build_root, raw_dir, request.defines, jobs=request.jobs
        )
    except ToolFailed as failure:  # the backend's configure: a target the project has too
        configure.refuse_target_collisions(request.loaded, plan, failure.output)
        raise
    platform_tag = request.loaded.recipe.wheel.platform_tag
    repaired = repair_wheel(raw, staging / "repaired" / dist.name, plan, platform_tag)
    package_files = python_package_files(request.loaded)
    check_wheel_contents(repaired, expected_files(plan, dist, package_files), plan)
    return repaired


def build_sdist(request: WheelRequest, plan: LinkPlan, staging: Path) -> Path:
    """The full distribution's sdist (what ``pip install <sdist>`` builds everything from),
    built from a staged copy of the project (``sdist.py``): the project's own files are never
    modified, and the build and output folders stay out of it."""
    dest = staging / "sdist"
    dest.mkdir(parents=True, exist_ok=True)
    skip = [request.build_root, request.out_dir]
    tree = stage_sdist_tree(request.loaded, plan, staging / "sdist-tree", skip)
    log.info("building the %s sdist", plan.project.name)
    return dest / _hooks(tree).build_sdist(str(dest), {})


def _publish(artifacts: Sequence[tuple[str, Path]], out_dir: Path) -> list[BuiltArtifact]:
    published = []
    for distribution, staged in artifacts:
        target = out_dir / staged.name
        staged.replace(target)
        size = target.stat().st_size
        log.info("%s: %s (%d bytes)", distribution, target, size)
        published.append(BuiltArtifact(distribution, target, size))
    return published


def build_wheels(request: WheelRequest, verify: WheelVerifier | None = None) -> list[BuiltArtifact]:
    """Build, repair, check and verify every wheel of the variant; publish all or none."""
    loaded = request.loaded
    plan = configure.plan_recipe(loaded)
    _check_request(request, plan)
    configure.write_generated(loaded, configure.generated_files(loaded, plan))
    full_dir = configure.full_distribution_dir(loaded, plan)
    staged: list[tuple[str, Path]] = []
    with (
        folder_lock(request.build_root / "skb", "wheel"),
        staging_folder(request.out_dir) as staging,
    ):
        for dist in variant_distributions(plan, request.variant, full_dir):
            staged.append((dist.name, _build_one(request, plan, dist, staging)))
        if verify is None:
            log.warning("verify-linkage skipped: the wheels were checked for contents only")
        else:
            wheels = [wheel for _, wheel in staged]
            verify(wheels, plan, [request.out_dir / wheel.name for wheel in wheels])
        if request.sdist:
            staged.append((plan.project.name, build_sdist(request, plan, staging)))
        return _publish(staged, request.out_dir)
