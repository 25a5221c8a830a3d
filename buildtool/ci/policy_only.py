"""``buildtool ci`` with a policy-only recipe (what ``init --from-cmake`` writes: no sources):
the project keeps its own CMake and ``pyproject.toml``; ``ci`` drives and checks them.

The steps: ``migrate``; ``configure`` (the project's ``CMakeLists.txt``, with the File API
query); ``check-cmake`` (the split's mistakes stop the run before anything compiles); ``build``;
``ctest``; ``verify-build``; and when the project has its own ``pyproject.toml``, ``wheels`` (its
own backend builds the wheel, repaired as ``buildtool repair`` repairs it, verified),
``verify-wheels``, ``install`` and ``smoke-import`` (each top-level package of the wheel imported
in a fresh environment). A folder that was configured before keeps its generator and the cmake
that configured it; a new one gets Ninja and PyPI's cmake, like a generated build.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import logging
import os
import sys
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from buildtool import process
from buildtool.ci import pipeline
from buildtool.ci.pipeline import Step, StepOutcome, Workspace
from buildtool.cmake import ninja_log
from buildtool.cmake import run as cmake
from buildtool.errors import ChecksFailed, InputError
from buildtool.fsutil import owned_folder
from buildtool.linkage.report.model import Report, human_size
from buildtool.packaging import repair
from buildtool.plan import LinkPlan
from buildtool.recipe.load import LoadedRecipe
from buildtool.verification import WheelsRejected, wheel_verifier

log = logging.getLogger("buildtool")

SKBUILD_BACKEND = "scikit_build_core.build"


def is_policy_only(loaded: LoadedRecipe) -> bool:
    """A recipe that describes binaries its project's own CMake builds: no library has sources."""
    return not any(library.sources for library in loaded.recipe.libraries.values())


def own_pyproject(loaded: LoadedRecipe) -> dict[str, Any] | None:
    """The project's own ``pyproject.toml`` when it packages the project (``[build-system]`` or
    ``[project]``); None when there is none, or it only holds ``[tool.buildtool]``."""
    path = loaded.root / "pyproject.toml"
    if not path.is_file():
        return None
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise InputError(f"{path}: cannot read it as TOML: {error}") from None
    return data if "build-system" in data or "project" in data else None


# --- configure and build: the project's own CMake -------------------------------------------


def _cmake(build_dir: Path) -> str:
    """The cmake that configured the folder (it keeps its generator), else PyPI's."""
    from buildtool.cmakecheck.query import configured_cmake

    return configured_cmake(build_dir)


def configure_command(
    loaded: LoadedRecipe, build_dir: Path, defines: dict[str, str], build_type: str = "Release"
) -> list[str | Path]:
    """Configure the project's own CMake in ``build_dir``: a new folder with Ninja (PyPI's) and
    ``build_type`` unless ``-D``/``CMAKE_ARGS`` say otherwise; a configured one as it is."""
    extra = cmake.environment_cmake_args(os.environ)
    if (build_dir / "CMakeCache.txt").is_file():
        command: list[str | Path] = [_cmake(build_dir), "-S", loaded.root, "-B", build_dir, *extra]
        return command + [f"-D{name}={value}" for name, value in sorted(defines.items())]
    chosen = " ".join([*extra, *defines])
    default = {} if "CMAKE_BUILD_TYPE" in chosen else {"CMAKE_BUILD_TYPE": build_type}
    return cmake.configure_command(loaded.root, build_dir, {**default, **defines}, extra)


def step_configure(workspace: Workspace) -> StepOutcome:
    request = workspace.request
    loaded = request.loaded
    cmake.write_file_api_query(request.build_dir)
    pyproject = own_pyproject(loaded)
    # the build type the project's own wheel builds with: its wheel can then come from this
    # folder without a second compile (see wheel_folder)
    build_type = (wheel_build_type(pyproject) if pyproject else None) or "Release"
    process.run(configure_command(loaded, request.build_dir, dict(request.defines), build_type))
    from buildtool.cmakecheck.query import load_codemodel

    model = load_codemodel(request.build_dir)
    built = [t.name for t in model.targets if t.type in ("SHARED_LIBRARY", "EXECUTABLE")]
    return StepOutcome(detail=f"configured {request.build_dir}: {', '.join(built)}")


def step_build(workspace: Workspace) -> StepOutcome:
    request = workspace.request
    jobs = [] if request.jobs is None else ["--parallel", str(request.jobs)]
    process.run([_cmake(request.build_dir), "--build", request.build_dir, *jobs])
    return StepOutcome(detail=f"built {request.build_dir}")


def step_ctest(workspace: Workspace) -> StepOutcome:
    """The project's own tests, when its CMake declares any."""
    command = cmake.ctest_command(workspace.request.build_dir, tests_expected=False)
    output = process.run(command)
    passed = [line for line in output.splitlines() if "tests passed" in line]
    return StepOutcome(detail=passed[-1].strip() if passed else "the project declares no tests")


# --- wheels: the project's own pyproject.toml ---------------------------------------------------


def build_requirements_met(pyproject: dict[str, Any], source: Path) -> bool:
    """Whether buildtool's environment already holds every build requirement (then the wheel
    builds there, without pip's isolated environment and its downloads)."""
    from packaging.requirements import InvalidRequirement, Requirement

    system = pyproject.get("build-system", {})
    if "requires" not in system:
        return False  # pip's default backend (setuptools) in its own environment
    for text in system["requires"]:
        try:
            requirement = Requirement(str(text))
        except InvalidRequirement as error:
            raise InputError(f"{source}: build-system.requires: {error}") from None
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        try:
            installed = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            return False
        if not requirement.specifier.contains(installed, prereleases=True):
            return False
    return True


def backend_name(pyproject: dict[str, Any]) -> str:
    """The project's build backend (empty: none named, pip's default setuptools)."""
    return str(pyproject.get("build-system", {}).get("build-backend", ""))


def wheel_build_type(pyproject: dict[str, Any]) -> str | None:
    """The ``CMAKE_BUILD_TYPE`` the project's own wheel builds with: scikit-build-core's
    ``cmake.build-type`` (its default, Release, when unset); None for another backend or a
    value that is not a plain name."""
    if backend_name(pyproject) != SKBUILD_BACKEND:
        return None
    settings = pyproject.get("tool", {}).get("scikit-build", {})
    value = settings.get("cmake", {}).get("build-type", "Release")
    return value if isinstance(value, str) and value else None


@dataclasses.dataclass(frozen=True)
class WheelFolder:
    """Where the project's own backend builds its wheel in ci."""

    shared: bool
    """In the build folder ci configured and compiled: each source is compiled once per run
    (scikit-build-core configures it again with its own cache entries, and ninja compiles what
    they change, which the step then reports)."""
    reason: str
    """Why, as the step's output says it."""


def wheel_folder(
    backend: str,
    isolated: bool,
    folder: Mapping[str, str],
    build_type: str | None,
) -> WheelFolder:
    """Whether the project's wheel can come from ci's build folder (pure).

    ``folder``: the build folder's cache (``CMAKE_GENERATOR``, ``CMAKE_BUILD_TYPE``);
    ``build_type``: the one the wheel builds with (``wheel_build_type``). Only scikit-build-core
    takes a build folder, in buildtool's own environment (an isolated one is another
    scikit-build-core, which starts a folder afresh), with Ninja (what it configures with), and
    the same build type (another one would compile everything again, and change a developer's
    own folder under them).
    """
    if backend != SKBUILD_BACKEND:
        named = backend or "setuptools, pip's default"
        return WheelFolder(
            False,
            f"its backend ({named}) is not scikit-build-core: buildtool cannot hand it this "
            "build folder, so it compiles the project a second time, in folders of its own",
        )
    if isolated:
        return WheelFolder(
            False,
            "scikit-build-core builds in pip's isolated environment (build-system.requires is "
            "not all in buildtool's): it would configure the build folder afresh, so it builds "
            f"in the build folder's {SKBUILD_WHEEL_FOLDER}/, compiling the project a second time",
        )
    generator = folder.get("CMAKE_GENERATOR", "")
    if generator != "Ninja":
        return WheelFolder(
            False,
            f"the build folder was configured for {generator or 'no known generator'}, "
            f"scikit-build-core configures for Ninja: it builds in the build folder's "
            f"{SKBUILD_WHEEL_FOLDER}/, "
            "compiling the project a second time",
        )
    tree_type = folder.get("CMAKE_BUILD_TYPE", "")
    if build_type is None or tree_type != build_type:
        return WheelFolder(
            False,
            f"the build folder is a {tree_type or 'default'} build, the project's wheel "
            f"{build_type or 'another'}: it builds in the build folder's {SKBUILD_WHEEL_FOLDER}/, "
            "compiling the project a second time",
        )
    return WheelFolder(True, "scikit-build-core builds it from the build folder")


SKBUILD_WHEEL_FOLDER = "skb-wheel"
"""Inside the build folder: scikit-build-core's own folder when it cannot share the build
folder."""


def choose_wheel_folder(request: pipeline.CiRequest, pyproject: dict[str, Any]) -> WheelFolder:
    isolated = not build_requirements_met(pyproject, request.loaded.root / "pyproject.toml")
    cache = cmake.cached_values(request.build_dir, ["CMAKE_GENERATOR", "CMAKE_BUILD_TYPE"])
    return wheel_folder(backend_name(pyproject), isolated, cache, wheel_build_type(pyproject))


def wheel_command(
    loaded: LoadedRecipe,
    pyproject: dict[str, Any],
    build_dir: Path,
    defines: Sequence[str],
    folder: WheelFolder,
) -> list[str | Path]:
    """``pip wheel`` of the project root, as its own release would run it. scikit-build-core
    builds in ``build_dir`` itself when ``folder`` says so, else in a folder under it (a rerun
    compiles what changed), with the run's ``-D`` entries."""
    command: list[str | Path] = [
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check",
    ]  # fmt: skip
    if build_requirements_met(pyproject, loaded.root / "pyproject.toml"):
        command.append("--no-build-isolation")
    if backend_name(pyproject) == SKBUILD_BACKEND:
        skb_dir = build_dir.resolve()
        skb_dir = skb_dir if folder.shared else skb_dir / SKBUILD_WHEEL_FOLDER
        command.append(f"--config-settings=build-dir={skb_dir}")
        command += [f"--config-settings=cmake.define.{define}" for define in defines]
    return command


def top_level_packages(wheel: Path) -> list[str]:
    """The importable packages and modules at the top of a wheel (not its ``.dist-info``,
    ``.data`` or a repair tool's ``.libs``)."""
    names = set()
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            parts = PurePosixPath(member).parts
            if len(parts) == 2 and parts[1] == "__init__.py":
                names.add(parts[0])
            elif len(parts) == 1 and parts[0].endswith(".py"):
                names.add(parts[0][:-3])
    return sorted(name for name in names if name.isidentifier())


def _verify_report(workspace: Workspace) -> repair.Verifier:
    def keep(report: Report) -> None:
        workspace.wheel_report = report

    return wheel_verifier(workspace.request.loaded, keep, with_graph=True)


def _rejected(report: Report) -> StepOutcome:
    errors, warnings = report.count("error"), report.count("warning")
    detail = f"nothing published: verify-linkage failed on the wheel: {errors} errors, "
    detail += f"{warnings} warnings"
    first = next((f for f in report.findings if f.severity == "error"), None)
    if first is not None:
        detail += f"; {first.path}: {first.check_id} {first.check.name}: {first.message}"
    return StepOutcome("failed", detail, report.findings, report)


SKBUILD_INFO = ".skbuild-info.json"
"""scikit-build-core's record of the environment that last configured a folder: another one
there makes it clear the folder's cache (every object compiled again)."""


def build_own_wheel(
    workspace: Workspace, pyproject: dict[str, Any], staging: Path, folder: WheelFolder
) -> tuple[Path, list[str]]:
    """The project's wheel, unrepaired, and the objects its build compiled in the shared build
    folder (none when it has a folder of its own: those are not ci's)."""
    request = workspace.request
    defines = [f"{name}={value}" for name, value in request.defines]
    command = wheel_command(request.loaded, pyproject, request.build_dir, defines, folder)
    command += ["--wheel-dir", staging, request.loaded.root]
    if folder.shared:  # ci configured it from this project: the record may only clear it
        (request.build_dir / SKBUILD_INFO).unlink(missing_ok=True)
    before = ninja_log.read(request.build_dir)
    process.run(command, env=process.tool_environment(wheel_build=True))
    compiled = ninja_log.compiled_between(before, ninja_log.read(request.build_dir))
    wheels = sorted(staging.glob("*.whl"))
    if len(wheels) != 1:
        raise ChecksFailed(f"{request.loaded.root}: pip wheel built {len(wheels)} wheels, not one")
    return wheels[0], compiled if folder.shared else []


def how_built(folder: WheelFolder, build_dir: Path, compiled: Sequence[str]) -> str:
    """What the wheel step says about the compiles of the wheel's build (pure)."""
    if not folder.shared:
        return f"built by the project's backend: {folder.reason}"
    said = f"built by the project's backend from the build folder {build_dir}/"
    if not compiled:
        return f"{said}, nothing compiled again"
    targets = ", ".join(ninja_log.targets_of(list(compiled)))
    objects = "object" if len(compiled) == 1 else "objects"
    return f"{said}, which compiled {len(compiled)} {objects} of {targets} again"


COMPILED_AGAIN_WHY = (
    "scikit-build-core configures the build folder with its own cache entries (SKBUILD, the "
    "Python it runs, the pyproject.toml's cmake.define and cmake.args), and the project's CMake "
    "compiles these differently with them; the folder keeps them: a rerun compiles nothing "
    "again unless they change"
)


def step_wheels(workspace: Workspace) -> StepOutcome:
    """The project's wheel through its own backend, repaired (its libraries excluded) and
    verified in staging; published into ``--out-dir`` only when it passes."""
    request = workspace.request
    pyproject = own_pyproject(request.loaded)
    assert pyproject is not None  # the step is only in the list with one
    folder = choose_wheel_folder(request, pyproject)
    log.info("the project's wheel: %s", folder.reason)
    with owned_folder(request.build_dir, ".buildtool-ci-wheel-") as staging:
        raw, compiled = build_own_wheel(workspace, pyproject, staging, folder)
        built = how_built(folder, request.build_dir, compiled)
        if compiled:
            log.warning("the project's wheel was %s: %s", built, COMPILED_AGAIN_WHY)
        repair_request = repair.RepairRequest(
            wheel=raw,
            dest=request.out_dir,
            plan=workspace.plan,
            platform_tag=_platform_tag(request.loaded),
            environment=repair.wheel_build_environment(),
        )
        try:
            published = repair.repair_into(repair_request, _verify_report(workspace))
        except WheelsRejected as rejected:
            return _rejected(rejected.report)
    workspace.wheels = [published]
    size = published.stat().st_size
    return StepOutcome(detail=f"{published.name} ({human_size(size)}), {built}")


def _platform_tag(loaded: LoadedRecipe) -> str | None:
    pinned = loaded.recipe.wheel.platform_tag
    return None if pinned == "auto" else pinned


def step_smoke_import(workspace: Workspace) -> StepOutcome:
    """Every top-level package of the installed wheels, imported in the fresh environment (from
    a folder of its own: never the project's sources)."""
    if workspace.python is None:
        raise ChecksFailed("no environment to import from: the install step did not run")
    names = sorted({name for wheel in workspace.wheels for name in top_level_packages(wheel)})
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    folder = workspace.python.parent.parent
    process.run(
        [workspace.python, "-c", script, *names], cwd=folder, env=process.tool_environment()
    )
    return StepOutcome(detail=f"imported {', '.join(names) or 'nothing (no package in the wheel)'}")


def check_project(loaded: LoadedRecipe) -> None:
    """Before any step (bad input, exit 2): the project's own CMake must be there."""
    if not (loaded.root / "CMakeLists.txt").is_file():
        raise InputError(
            f"{loaded.source}: a policy-only recipe (no library has sources) makes `ci` build "
            f"the project's own CMake, but {loaded.root} (project.root) has no CMakeLists.txt"
        )


def steps_for(loaded: LoadedRecipe) -> tuple[Step, ...]:
    """The policy-only run's steps; the wheel steps only when the project has a pyproject.toml."""
    by_name = {step.name: step for step in pipeline.STEPS}
    steps = [
        by_name["migrate"],
        Step("configure", "configure the project's own CMake (with the File API query)",
             step_configure),
        by_name["check-cmake"],
        Step("build", "compile the project's own CMake build", step_build),
        Step("ctest", "run the project's tests (ctest), if it has any", step_ctest),
        by_name["verify-build"],
    ]  # fmt: skip
    if own_pyproject(loaded) is not None:
        steps += [
            Step("wheels", "build the wheel with the project's pyproject.toml, repair it",
                 step_wheels),
            by_name["verify-wheels"],
            by_name["install"],
            Step("smoke-import", "import the wheel's packages in the fresh environment",
                 step_smoke_import),
        ]  # fmt: skip
    return tuple(steps)


def prepare(request: pipeline.CiRequest) -> tuple[Workspace, tuple[Step, ...]]:
    """The policy-only run's workspace (the recipe's plan as the checks need it) and steps."""
    from buildtool.verification import plan_for_policy

    loaded = request.loaded
    check_project(loaded)
    plan: LinkPlan = plan_for_policy(loaded)
    return Workspace(request, plan), steps_for(loaded)
