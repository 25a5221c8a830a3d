"""``buildtool wheel``: build, repair, check and verify wheels, then publish them all or none.

Every wheel comes from one CMake build tree: the folder ``buildtool build`` compiles (one tree
per wheel tag). Each distribution is a set of CMake install components of that tree, which
scikit-build-core installs (``install.components``) after building only the targets the wheel
ships (``build.targets``): a translation unit is compiled once, whichever wheels ship it, and
nothing is built that no wheel ships. scikit-build-core configures the folder again with its own
cache entries; buildtool hands it the folder's own build type and options, so its compile
commands stay the ones the folder was built with and ninja compiles nothing again.

The runtime wheel comes from the full build too, once ``runtime_proof`` has shown that
switching the optional libraries off changes nothing it ships; when it does change something,
the runtime wheel builds in a tree of its own with them switched off, and the log says why.

The hooks run in buildtool's own environment (no build isolation: the same cmake, ninja and
scikit-build-core every time). Everything is produced in a hidden staging folder inside the
output folder and renamed into it only when every wheel was built, repaired, checked and
verified: a failure leaves the output folder as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
import sysconfig
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Protocol

import pyproject_hooks

from buildtool import process
from buildtool.cmake import configure
from buildtool.cmake import run as cmake_run
from buildtool.cmake.runtime_proof import RuntimeProof, prove_runtime_unchanged
from buildtool.errors import ChecksFailed, ToolFailed, UsageError
from buildtool.fsutil import folder_lock, owned_folder
from buildtool.packaging.distributions import (
    BUILD_BACKEND,
    Distribution,
    WheelVariant,
    backend_of,
    extensions_of,
    has_split,
    variant_distributions,
)
from buildtool.packaging.loader import file_stem
from buildtool.packaging.repair import repair_wheel
from buildtool.packaging.sdist import stage_sdist_tree
from buildtool.plan import LinkPlan, option_values, with_option_values
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
    build_dir: Path
    """The CMake build tree every wheel comes from (``buildtool build``'s); configured first when
    it is not configured for the full build with ``defines``."""
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
    # pyproject_hooks' own command line (a script and a temporary folder) is no use to rerun:
    # logged at DEBUG only; build_raw_wheel logs the command a user would type instead
    process.run(
        cmd,
        cwd=Path(cwd) if cwd else None,
        env=process.tool_environment(extra_environ, wheel_build=True),
        quiet=True,
    )


def _hooks(project_dir: Path) -> pyproject_hooks.BuildBackendHookCaller:
    return pyproject_hooks.BuildBackendHookCaller(
        str(project_dir), BUILD_BACKEND, runner=_hook_runner, python_executable=sys.executable
    )


@dataclasses.dataclass(frozen=True)
class WheelTree:
    """A configured CMake build tree and the configuration wheels built from it must keep."""

    folder: Path
    """The build tree."""
    build_type: str
    """Its ``CMAKE_BUILD_TYPE`` (scikit-build-core's ``cmake.build-type``)."""
    defines: tuple[tuple[str, str], ...]
    """The cache entries it was configured with that scikit-build-core must set the same way
    (the optional libraries' switches, the launcher's, ``-D NAME=VALUE``)."""
    option_values: Mapping[str, bool]
    """The recipe options' values in its cache: which targets exist."""


def read_wheel_tree(folder: Path, plan: LinkPlan, defines: Mapping[str, str]) -> WheelTree:
    """``folder`` (configured) as wheels see it."""
    options = [option.name for option in plan.options] + list(plan.build_switches)
    build_type = cmake_run.cached_values(folder, ["CMAKE_BUILD_TYPE"]).get("CMAKE_BUILD_TYPE")
    return WheelTree(
        folder=folder.resolve(),
        build_type=build_type or "Release",
        defines=tuple(sorted(defines.items())),
        option_values=cmake_run.cached_option_values(folder, options),
    )


def wheel_targets(plan: LinkPlan, dist: Distribution, tree: WheelTree) -> tuple[str, ...]:
    """The CMake targets ``dist``'s wheel ships that ``tree`` builds: its libraries and
    extension modules (never the executables and tests, which no wheel ships)."""
    built = with_option_values(plan, tree.option_values)
    names = {lib.name for lib in built.libraries}
    targets = [built.library(name).target for name in dist.libraries if name in names]
    targets += [plugin.target for plugin in built.plugins if plugin.name in dist.plugins]
    targets += [module.target for module in extensions_of(built, dist)]
    return tuple(targets)


def switched_off(plan: LinkPlan, dist: Distribution, tree: WheelTree) -> str:
    """Why ``dist`` has no wheel from ``tree`` (an add-on or a plugin's wheel all of whose
    targets the tree's options switch off: ``when``), or '' when it has one."""
    if dist.ships_package or wheel_targets(plan, dist, tree):
        return ""
    off = [name for name, on in option_values(plan, tree.option_values).items() if not on]
    return f"everything it ships is switched off in {tree.folder} (OFF: {', '.join(off)})"


def wheel_settings(
    plan: LinkPlan, dist: Distribution, tree: WheelTree, jobs: int | None = None
) -> dict[str, str]:
    """scikit-build-core's config settings for building ``dist`` from ``tree`` (pure).

    The tree's own build type and cache entries (``cmake.define.<NAME>`` wins over the
    distribution's ``[tool.scikit-build.cmake.define]``) keep its compile commands; only the
    wheel's targets are built; ``jobs`` limits ninja's parallel compiles.
    """
    settings = {
        "build-dir": str(tree.folder),
        "cmake.build-type": tree.build_type,
        "build.targets": ";".join(wheel_targets(plan, dist, tree)),
    }
    settings.update({f"cmake.define.{name}": value for name, value in tree.defines})
    if jobs is not None:  # scikit-build-core has no jobs setting: ninja's own -j, after --
        settings["build.tool-args"] = f"-j{jobs}"
    return settings


def rerun_command(
    loaded: LoadedRecipe,
    dist: Distribution,
    settings: Mapping[str, str],
    wheel_dir: Path,
    *,
    epoch: str,
    python: str = sys.executable,
) -> list[str]:
    """The command a user types to get the wheel ``build_raw_wheel`` builds (pure): ``pip
    wheel`` of the distribution's folder in this environment (no build isolation: the same
    scikit-build-core, cmake and ninja, and the same build tree, which an isolated build would
    configure afresh), with the same config settings and ``SOURCE_DATE_EPOCH`` (the same bytes).

    A folder whose ``pyproject.toml`` names scikit-build-core gets its settings as they are.
    The root's of generated mode names buildtool's backend, which hands scikit-build-core the
    same settings when told the recipe, the build tree and the distribution.
    """
    project_dir = loaded.root / dist.project_dir
    command = [f"SOURCE_DATE_EPOCH={epoch}", python, "-m", "pip", "wheel"]
    command += ["--no-build-isolation", "--no-deps", "--wheel-dir", _shown(wheel_dir)]
    if backend_of(dist) == BUILD_BACKEND:
        passed = dict(settings)
    else:
        recipe = os.path.relpath(loaded.path, project_dir)
        passed = {
            "buildtool.recipe": Path(recipe).as_posix(),
            "buildtool.build-dir": settings["build-dir"],
            "buildtool.distribution": dist.name,
        }
        passed.update(
            {name: value for name, value in settings.items() if name.startswith("cmake.define.")}
        )
        if "build.tool-args" in settings:
            passed["build.tool-args"] = settings["build.tool-args"]
    command += [part for name, value in passed.items() for part in ("-C", f"{name}={value}")]
    return [*command, _shown(project_dir)]


def build_raw_wheel(
    loaded: LoadedRecipe,
    dist: Distribution,
    settings: Mapping[str, str],
    dest: Path,
    rerun_dir: Path | None = None,
) -> Path:
    """Run the ``build_wheel`` hook of ``dist`` with ``settings``; return the unrepaired wheel.

    The log (and a failure) names the command that builds the same wheel into ``rerun_dir``
    (default: ``dest``), not the hook's internal command line."""
    epoch = process.wheel_build_epoch()
    rerun = rerun_command(loaded, dist, settings, rerun_dir or dest, epoch=epoch)
    log.info(
        "building the %s wheel from the build folder %s/ with scikit-build-core, as this "
        "command does:",
        dist.name,
        _shown(Path(settings["build-dir"])),
    )
    log.info("$ %s", process.format_command(rerun))
    try:
        name = _hooks(loaded.root / dist.project_dir).build_wheel(str(dest), dict(settings))
    except pyproject_hooks.BackendUnavailable:
        raise UsageError(
            f"{BUILD_BACKEND} cannot be imported by {sys.executable}: pip install scikit-build-core"
        ) from None
    except ToolFailed as failure:
        raise failure.as_command(rerun) from None
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
    """What the build adds to the package: extension modules (for this interpreter), and with
    ``project.headers`` the export headers of the wheel's libraries, and (in the wheel that ships
    the package) the configured headers and the CMake package config."""
    package = plan.project.package
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    files = {f"{package}/{module.name}{suffix}" for module in extensions_of(plan, dist)}
    if not plan.project.headers:
        return files
    # each library's export header goes with the library (the add-on's with the add-on)
    files.update(
        f"{package}/include/{plan.library(lib).output_name}_export.h" for lib in dist.libraries
    )
    if dist.ships_package:
        name = plan.project.name
        files.add(f"{package}/lib/cmake/{name}/{name}Config.cmake")
        files.update(f"{package}/include/{path}" for path, _ in plan.configured_headers)
    return files


def expected_files(
    plan: LinkPlan,
    dist: Distribution,
    package_files: frozenset[str],
    option_values: Mapping[str, bool] | None = None,
) -> set[str]:
    """Every file ``dist``'s wheel must hold outside its ``.dist-info`` folder, built with
    ``option_values`` (the recipe options' defaults otherwise): what an OFF option leaves out
    (``when``) is expected nowhere."""
    plan = with_option_values(plan, option_values)
    built = {lib.name for lib in plan.libraries}
    dist = dataclasses.replace(
        dist, libraries=tuple(name for name in dist.libraries if name in built)
    )
    package = plan.project.package
    libraries = {f"{package}/lib/{plan.library(name).file_name}" for name in dist.libraries}
    libraries |= {
        f"{package}/{plugin.folder}/{plugin.file_name}"
        for plugin in plan.plugins
        if plugin.name in dist.plugins
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
            f"{recipe.source}: --split needs an optional library to leave out of the runtime "
            "wheel (set optional = true on one) or a plugin with a wheel of its own "
            "(distribution); without --split, one full wheel is built"
        )


STAGING_PREFIX = ".buildtool-wheel-"
"""Name start of the staging folders inside the output folder."""


@contextlib.contextmanager
def staging_folder(out_dir: Path) -> Iterator[Path]:
    """A hidden folder inside ``out_dir`` (same file system: renames are atomic), removed after;
    ones that killed runs left there are removed first (``fsutil.owned_folder``)."""
    with owned_folder(out_dir, STAGING_PREFIX) as staging:
        yield staging


def _build_one(
    request: WheelRequest, plan: LinkPlan, dist: Distribution, tree: WheelTree, staging: Path
) -> Path:
    raw_dir = staging / "raw" / dist.name
    settings = wheel_settings(plan, dist, tree, request.jobs)
    try:
        raw = build_raw_wheel(request.loaded, dist, settings, raw_dir, request.out_dir)
    except ToolFailed as failure:  # the backend's configure: a target the project has too
        configure.refuse_target_collisions(request.loaded, plan, failure.output)
        raise
    platform_tag = request.loaded.recipe.wheel.platform_tag
    repaired = repair_wheel(raw, staging / "repaired" / dist.name, plan, platform_tag)
    package_files = python_package_files(request.loaded)
    expected = expected_files(plan, dist, package_files, tree.option_values)
    check_wheel_contents(repaired, expected, plan)
    return repaired


def full_tree(request: WheelRequest, plan: LinkPlan) -> WheelTree:
    """The build tree of the full build, configured for it first when it is not."""
    defines = {**configure.variant_defines(plan, "full"), **dict(request.defines)}
    # the interpreter too: scikit-build-core configures with its own (an isolated build's)
    expected = {**configure.python_defines(plan), **dict(request.defines)}
    configure.ensure_configured(request.loaded, request.build_dir, expected)
    return read_wheel_tree(request.build_dir, plan, defines)


RuntimeProofSink = Callable[[RuntimeProof], None]
"""Told the runtime proof of a split build (the ci step reports it)."""


def runtime_tree(
    request: WheelRequest, plan: LinkPlan, runtime: Distribution, full: WheelTree
) -> tuple[WheelTree, RuntimeProof]:
    """The tree the runtime wheel comes from: the full build's when switching the optional
    libraries off changes none of its targets (``runtime_proof``), else a tree of its own."""
    defines = {**dict(request.defines), **configure.variant_defines(plan, "runtime")}
    configured = {**defines, **configure.python_defines(plan)}
    extra = cmake_run.environment_cmake_args(os.environ)
    roots = wheel_targets(plan, runtime, full)
    # built first (nothing to do after `buildtool build`): ninja's log says which headers they read
    configure.build(full.folder, request.jobs, roots)
    proof = prove_runtime_unchanged(request.loaded.root, full.folder, configured, roots, extra)
    if proof.holds:
        log.info(
            "the %s wheel comes from the full build: configured with %s off (in %s, nothing "
            "compiled), %s compile and link the same",
            runtime.name,
            ", ".join(plan.build_switches),
            _shown(proof.runtime_tree),
            ", ".join(roots),
        )
        return full, proof
    log.warning(
        "the %s wheel builds apart, in %s (every runtime source compiled a second time): "
        "switching %s off changes what it ships: %s",
        runtime.name,
        proof.runtime_tree,
        ", ".join(plan.build_switches),
        "; ".join(proof.differences),
    )
    return read_wheel_tree(proof.runtime_tree, plan, defines), proof


def _shown(path: Path) -> str:
    """``path`` relative to the working folder when it is inside it (as a log line reads)."""
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    return str(path)


def wheel_trees(
    request: WheelRequest,
    plan: LinkPlan,
    dists: Sequence[Distribution],
    on_proof: RuntimeProofSink | None = None,
) -> dict[str, WheelTree]:
    """The build tree of each distribution (by name)."""
    full = full_tree(request, plan)
    trees = {dist.name: full for dist in dists}
    if request.variant == "split":
        runtime = dists[0]
        trees[runtime.name], proof = runtime_tree(request, plan, runtime, full)
        if on_proof is not None:
            on_proof(proof)
    return trees


def build_sdist(request: WheelRequest, plan: LinkPlan, staging: Path) -> Path:
    """The full distribution's sdist (what ``pip install <sdist>`` builds everything from),
    built from a staged copy of the project (``sdist.py``): the project's own files are never
    modified, and the build and output folders stay out of it."""
    dest = staging / "sdist"
    dest.mkdir(parents=True, exist_ok=True)
    skip = [request.build_dir, request.out_dir]
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


def build_wheels(
    request: WheelRequest,
    verify: WheelVerifier | None = None,
    on_proof: RuntimeProofSink | None = None,
) -> list[BuiltArtifact]:
    """Build, repair, check and verify every wheel of the variant; publish all or none."""
    loaded = request.loaded
    plan = configure.plan_recipe(loaded)
    _check_request(request, plan)
    full_dir = configure.full_distribution_dir(loaded, plan)
    dists = variant_distributions(plan, request.variant, full_dir)
    staged: list[tuple[str, Path]] = []
    with staging_folder(request.out_dir) as staging:
        trees = wheel_trees(request, plan, dists, on_proof)  # configures: before the lock below
        with folder_lock(request.build_dir, "wheel"):
            for dist in dists:
                off = switched_off(plan, dist, trees[dist.name])
                if off:
                    log.info("no %s wheel: %s", dist.name, off)
                    continue
                staged.append(
                    (dist.name, _build_one(request, plan, dist, trees[dist.name], staging))
                )
        if verify is None:
            log.warning("verify-linkage skipped: the wheels were checked for contents only")
        else:
            wheels = [wheel for _, wheel in staged]
            verify(wheels, plan, [request.out_dir / wheel.name for wheel in wheels])
        if request.sdist:
            staged.append((plan.project.name, build_sdist(request, plan, staging)))
        return _publish(staged, request.out_dir)
