"""``buildtool ci``: the whole chain as named steps, run in order until the first failure.

Each step is a plain function of the ``Workspace`` (what earlier steps produced) that returns a
``StepOutcome`` or raises a ``BuildtoolError``. ``run_steps`` times them, turns errors into failed
steps, marks the rest skipped after a failure, and tells an observer as it goes: the command
module decides how that looks (GitHub folding, colours). Nothing here prints; tool output reaches
the ``buildtool`` logger through ``process.run``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from buildtool import process
from buildtool.cmake import configure
from buildtool.cmake.launcher import LAUNCHER_VARIABLES, LAUNCHERS, CacheStats, read_cache_stats
from buildtool.cmake.run import cached_option_values, ctest_command
from buildtool.console import collecting_warnings, warnings_summary
from buildtool.errors import BuildtoolError, ChecksFailed, TerminationRequested, ToolFailed
from buildtool.fsutil import write_atomic
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.growth import Baseline
from buildtool.linkage.report.model import Report, human_size
from buildtool.linkage.report.text import demangled_names, render_text
from buildtool.linkage.verify import verify_paths
from buildtool.packaging import wheel
from buildtool.packaging.distributions import WheelVariant, has_split
from buildtool.plan import LinkPlan, option_values_from_defines
from buildtool.recipe.load import LoadedRecipe
from buildtool.verification import WheelsRejected, policy_for_recipe, wheel_verifier

log = logging.getLogger("buildtool")

StepStatus = Literal["passed", "failed", "skipped"]

SKIPPED_AFTER_FAILURE = "not run: an earlier step failed"


@dataclasses.dataclass(frozen=True)
class CiRequest:
    """What ``buildtool ci`` was asked for."""

    loaded: LoadedRecipe
    """The recipe."""
    out_dir: Path
    """Wheels and the reports (``buildtool-ci.json``, ``buildtool-ci.junit.xml``) go here."""
    build_dir: Path
    """The CMake build folder; wheel builds and the smoke-test environment go beneath it."""
    launcher: str = "none"
    """The compiler launcher's name, for the report."""
    defines: tuple[tuple[str, str], ...] = ()
    """Extra CMake cache entries for the configure and every wheel build (the launcher's, then
    ``-D NAME=VALUE``)."""
    baseline: Baseline | None = None
    """An earlier run's verify-linkage report: ``verify-build`` shows each library's change
    against it and enforces ``[verify] max-growth-percent`` (BT131)."""
    jobs: int | None = None
    """Compile jobs ninja runs at once, in the build and the wheel builds; None: its default."""


@dataclasses.dataclass(frozen=True)
class StepOutcome:
    """What a step function returns (a failure may also be raised as a ``BuildtoolError``)."""

    status: StepStatus = "passed"
    detail: str = ""
    """One line on what the step did or why it failed; more lines may follow."""
    findings: tuple[Finding, ...] = ()
    """verify-linkage findings, for annotations and the reports."""
    report: Report | None = None
    """The whole verify-linkage report, for the HTML page."""


@dataclasses.dataclass(frozen=True)
class StepResult:
    """One step of a run, as reported."""

    name: str
    status: StepStatus
    seconds: float
    detail: str
    findings: tuple[Finding, ...] = ()
    report: Report | None = None
    """The step's verify-linkage report, when it made one."""
    output_tail: str = ""
    """The last lines of a failed tool's output, which the console showed as it ran: the
    reports read elsewhere (JUnit, HTML, the step summary) carry them."""


@dataclasses.dataclass(frozen=True)
class CiResult:
    """A whole run."""

    recipe: str
    launcher: str
    steps: tuple[StepResult, ...]
    interrupted: bool = False
    """Ctrl-C or SIGTERM stopped it during a step."""
    terminated: bool = False
    """It was SIGTERM (exit 143 rather than 130)."""
    compile_cache: CacheStats | None = None
    """What the launcher's cache did during the run, by its own statistics (ccache, sccache);
    None without one."""

    @property
    def failed_step(self) -> StepResult | None:
        return next((step for step in self.steps if step.status == "failed"), None)

    @property
    def passed(self) -> bool:
        return self.failed_step is None and not self.interrupted

    @property
    def seconds(self) -> float:
        return round(sum(step.seconds for step in self.steps), 2)


@dataclasses.dataclass
class Workspace:
    """What one run's steps hand on to later steps (mutable, owned by that run)."""

    request: CiRequest
    plan: LinkPlan
    wheels: list[Path] = dataclasses.field(default_factory=list)
    """The wheels the ``wheels`` step published."""
    python: Path | None = None
    """The interpreter of the fresh environment the ``install`` step made."""
    wheel_report: Report | None = None
    """verify-linkage on the staged wheels, made by the ``wheels`` step before it published."""


StepFunction = Callable[[Workspace], StepOutcome]


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    summary: str
    run: StepFunction


class CiObserver(Protocol):
    """Told about each step as it starts and ends: how the CLI renders a run."""

    def step_started(self, step: Step, number: int, total: int) -> None: ...

    def step_finished(self, result: StepResult) -> None: ...


# --- steps ---------------------------------------------------------------------------------------


def step_generated(workspace: Workspace) -> StepOutcome:
    configure.check_generated(workspace.request.loaded)
    return StepOutcome(detail="generated files are current")


def step_migrate(workspace: Workspace) -> StepOutcome:
    """``buildtool migrate`` on the project root: no name the split removed or renamed is left."""
    from buildtool.migrate import report, run  # here: the other steps need none of it

    loaded = workspace.request.loaded
    rules = run.project_rules(loaded)
    if rules.empty:
        return StepOutcome(detail=f"no [migrate] entries in {loaded.source}: nothing to look for")
    result = run.scan_project(loaded, rules)
    if result.matches:
        # the summary first (the step's one-line detail), then every stale reference
        lines = report.render_text(result).splitlines()
        raise ChecksFailed("\n".join([lines[-1], *lines[:-1]]))
    return StepOutcome(detail=report.summary(result))


def step_configure(workspace: Workspace) -> StepOutcome:
    request = workspace.request
    targets = configure.configure(request.loaded, request.build_dir, "full", dict(request.defines))
    built = [t.name for t in targets if t.type in ("SHARED_LIBRARY", "EXECUTABLE")]
    return StepOutcome(
        detail=f"configured the build folder {request.build_dir}/ for {', '.join(built)}"
    )


def step_check_cmake(workspace: Workspace) -> StepOutcome:
    """check-cmake on the configured tree: the split's mistakes fail the run before any compile."""
    from buildtool.cmakecheck.check import check_build_dir
    from buildtool.cmakecheck.report import render_text as render_cmake_text

    report = check_build_dir(
        workspace.request.build_dir, workspace.request.loaded, "the recipe ci builds with"
    )
    log.info("%s", render_cmake_text(report).rstrip("\n"))
    errors, warnings = report.count("error"), report.count("warning")
    detail = f"{report.targets} CMake targets checked: {errors} errors, {warnings} warnings"
    first = next((f for f in report.findings if f.severity == "error"), None)
    if first is not None:
        detail += f"; {first.check_id} {first.check.name}: {first.message}"
    status: StepStatus = "failed" if report.failed else "passed"
    return StepOutcome(status, detail, report.findings)


def step_build(workspace: Workspace) -> StepOutcome:
    configure.build(workspace.request.build_dir, workspace.request.jobs)
    return StepOutcome(detail=f"compiled in the build folder {workspace.request.build_dir}/")


def step_ctest(workspace: Workspace) -> StepOutcome:
    declared = any(executable.is_test for executable in workspace.plan.executables)
    output = process.run(ctest_command(workspace.request.build_dir, tests_expected=declared))
    passed = [line for line in output.splitlines() if "tests passed" in line]
    if passed:
        return StepOutcome(detail=passed[-1].strip())
    return StepOutcome(detail="ctest passed" if declared else "no tests: the recipe declares none")


def _outcome(report: Report) -> StepOutcome:
    log.info("%s", render_text(report, names=demangled_names(report)).rstrip("\n"))
    errors, warnings = report.count("error"), report.count("warning")
    detail = f"{report.files_checked} files checked: {errors} errors, {warnings} warnings"
    first = next((f for f in report.findings if f.severity == "error"), None)
    if first is not None:
        detail += f"; {first.path}: {first.check_id} {first.check.name}: {first.message}"
    status: StepStatus = "failed" if report.failed else "passed"
    return StepOutcome(status, detail, report.findings, report)


def step_verify_build(workspace: Workspace) -> StepOutcome:
    request = workspace.request
    values = cached_option_values(request.build_dir, [o.name for o in workspace.plan.options])
    policy = policy_for_recipe(request.loaded, values, "the recipe ci builds with")
    report = verify_paths([request.build_dir], policy, baseline=request.baseline, with_graph=True)
    return _outcome(report)  # the HTML report draws its graph


def _keep_report(workspace: Workspace) -> Callable[[Report], None]:
    def keep(report: Report) -> None:
        workspace.wheel_report = report

    return keep


def step_wheels(workspace: Workspace) -> StepOutcome:
    """Build, repair and verify the wheels in staging; publish them only when they pass."""
    request = workspace.request
    variant: WheelVariant = "split" if has_split(workspace.plan) else "full"
    wheel_request = wheel.WheelRequest(
        loaded=request.loaded,
        variant=variant,
        out_dir=request.out_dir,
        build_dir=request.build_dir,
        defines=request.defines,
        jobs=request.jobs,
    )
    values = option_values_from_defines(request.defines)
    verify = wheel_verifier(request.loaded, _keep_report(workspace), values, with_graph=True)
    try:
        built = wheel.build_wheels(wheel_request, verify=verify)
    except WheelsRejected as rejected:
        outcome = _outcome(rejected.report)
        detail = f"nothing published: verify-linkage failed on the staged wheels: {outcome.detail}"
        return dataclasses.replace(outcome, detail=detail)
    workspace.wheels = [artifact.path for artifact in built]
    names = ", ".join(f"{a.path.name} ({human_size(a.size)})" for a in built)
    return StepOutcome(detail=f"{variant} wheels: {names}")


def step_verify_wheels(workspace: Workspace) -> StepOutcome:
    """The verification the ``wheels`` step ran before publishing, reported as its own step."""
    if workspace.wheel_report is None or not workspace.wheels:
        raise ChecksFailed("no wheels to verify")
    return _outcome(workspace.wheel_report)


def step_install(workspace: Workspace) -> StepOutcome:
    """The wheels in a fresh environment (made with uv where it is installed), or the
    environment of an earlier run when it holds exactly these wheels already."""
    from buildtool.ci import smoke_env

    request = workspace.request
    folder = (request.build_dir / "ci-venv").resolve()
    made = smoke_env.prepare(folder, workspace.wheels, request.out_dir.resolve())
    workspace.python = made.python
    wheels = f"{len(workspace.wheels)} wheels"
    if made.how == "reused":
        return StepOutcome(detail=f"{folder} holds these {wheels} already (same bytes): reused")
    return StepOutcome(detail=f"installed {wheels} into {folder} ({made.how})")


SMOKE_SCRIPT = """\
import importlib, json, sys
package = importlib.import_module(sys.argv[1])
base = importlib.import_module(sys.argv[1] + ".base")
listing = getattr(package, "list_global_functions", None)
print(json.dumps({
    "runtime_only": base.runtime_only(),
    "loaded": sorted(base.loaded_libraries()),
    "names": sorted(listing()) if callable(listing) else None,
}))
"""
"""Imports the package in the fresh environment and prints what its generated loader did,
through the loader's documented API (``base.loaded_libraries()``, ``base.runtime_only()``).
The registered names are compared only when the package offers ``list_global_functions()``
(a documented convention, TVM's name for it)."""
SMOKE_SCRIPT_NAME = "buildtool_smoke_import.py"


def expected_registrations(plan: LinkPlan, runtime_only: bool) -> tuple[set[str], set[str]]:
    """Registered names that must be present, and those that must be absent, in a mode."""
    present: set[str] = set()
    absent: set[str] = set()
    for name, library in plan.registrations:
        optional = plan.library(library).optional
        (absent if runtime_only and optional else present).add(name)
    return present, absent


def smoke_problems(facts: dict[str, Any], plan: LinkPlan, runtime_only: bool) -> list[str]:
    """What the smoke import's ``facts`` show to be wrong, given the plan (pure)."""
    problems = []
    # Without an optional library every import is runtime-only: nothing optional is loaded.
    expected_runtime_only = runtime_only or not any(lib.optional for lib in plan.libraries)
    if facts.get("runtime_only") is not expected_runtime_only:
        problems.append(
            f"runtime_only() is {facts.get('runtime_only')}, expected {expected_runtime_only}"
        )
    wanted = plan.runtime_libraries if runtime_only else plan.libraries
    expected_loaded = sorted(lib.name for lib in wanted)
    if facts.get("loaded") != expected_loaded:
        problems.append(f"loaded libraries {facts.get('loaded')}, expected {expected_loaded}")
    names = facts.get("names")
    if names is not None:
        present, absent = expected_registrations(plan, runtime_only)
        problems += [f"{name} is not registered" for name in sorted(present - set(names))]
        problems += [
            f"{name} is registered (its library is optional)"
            for name in sorted(absent)
            if name in names
        ]
    return problems


def smoke_import(workspace: Workspace, runtime_only: bool) -> StepOutcome:
    if workspace.python is None:
        raise ChecksFailed("no environment to import from: the install step did not run")
    project = workspace.plan.project
    variable = f"{project.env_prefix}_USE_RUNTIME_LIB"
    env = process.tool_environment({variable: "1" if runtime_only else "0"})
    # A script file, not -c: its folder (not the current one) goes first on sys.path.
    script = workspace.python.parent.parent / SMOKE_SCRIPT_NAME
    write_atomic(script, SMOKE_SCRIPT)
    output = process.run([workspace.python, script, project.package], cwd=script.parent, env=env)
    facts = json.loads(output.splitlines()[-1])
    problems = smoke_problems(facts, workspace.plan, runtime_only)
    if problems:
        raise ChecksFailed(
            f"import {project.package} with {variable}={int(runtime_only)}: " + "; ".join(problems)
        )
    detail = f"import {project.package} with {variable}={int(runtime_only)}: loaded "
    detail += ", ".join(facts["loaded"])
    if facts["names"] is None:
        detail += f" (registrations not listed: {project.package} has no list_global_functions)"
    else:
        detail += f"; {len(facts['names'])} registered names as the recipe says"
    return StepOutcome(detail=detail)


def step_smoke_full(workspace: Workspace) -> StepOutcome:
    return smoke_import(workspace, runtime_only=False)


def step_smoke_runtime(workspace: Workspace) -> StepOutcome:
    return smoke_import(workspace, runtime_only=True)


STEPS: tuple[Step, ...] = (
    Step("generated", "generated files are current (configure --check)", step_generated),
    Step(
        "migrate", "no name the split removed or renamed is left (buildtool migrate)", step_migrate
    ),
    Step("configure", "configure the CMake build", step_configure),
    Step(
        "check-cmake",
        "check-cmake on CMake's code model, before anything compiles",
        step_check_cmake,
    ),
    Step("build", "compile with ninja", step_build),
    Step("ctest", "run the C++ tests", step_ctest),
    Step("verify-build", "verify-linkage on the build tree", step_verify_build),
    Step("wheels", "build and repair the wheels", step_wheels),
    Step("verify-wheels", "verify-linkage on the wheels, together", step_verify_wheels),
    Step("install", "install the wheels into a fresh virtual environment", step_install),
    Step("smoke-full", "import the package with every library", step_smoke_full),
    Step("smoke-runtime", "import the package runtime-only", step_smoke_runtime),
)


# --- the runner ----------------------------------------------------------------------------------


def run_step(step: Step, workspace: Workspace) -> StepResult:
    """Run one step, timed; a ``BuildtoolError`` makes it a failed step."""
    start = time.monotonic()
    with collecting_warnings() as warnings:
        tail = ""
        try:
            outcome = step.run(workspace)
        except BuildtoolError as error:
            outcome = StepOutcome("failed", str(error))
            tail = error.output_tail if isinstance(error, ToolFailed) else ""
    seconds = round(time.monotonic() - start, 2)
    detail = with_warnings(outcome.detail, warnings.lines)
    if warnings.lines:
        log.warning("%s: %s", step.name, warnings_summary(warnings.lines))
    return StepResult(
        step.name, outcome.status, seconds, detail, outcome.findings, outcome.report, tail
    )


def with_warnings(detail: str, warnings: Sequence[str]) -> str:
    """``detail`` with the number of warnings the step logged on its first line."""
    first, newline, rest = detail.partition("\n")
    count = f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''} logged"
    return f"{first}; {count}{newline}{rest}" if warnings else detail


def run_steps(steps: Sequence[Step], workspace: Workspace, observer: CiObserver) -> CiResult:
    """Run ``steps`` in order until one fails; the rest are reported skipped."""
    results: list[StepResult] = []
    interrupted = terminated = False
    for number, step in enumerate(steps, start=1):
        if any(result.status == "failed" for result in results):
            results.append(StepResult(step.name, "skipped", 0.0, SKIPPED_AFTER_FAILURE))
            continue
        observer.step_started(step, number, len(steps))
        try:
            result = run_step(step, workspace)
        except KeyboardInterrupt as stop:
            interrupted = True
            terminated = isinstance(stop, TerminationRequested)
            result = StepResult(step.name, "failed", 0.0, "interrupted")
        observer.step_finished(result)
        results.append(result)
    request = workspace.request
    return CiResult(
        request.loaded.source, request.launcher, tuple(results), interrupted, terminated
    )


def _launcher_stats(request: CiRequest) -> CacheStats | None:
    """The launcher's statistics now (None: it keeps none, or cannot say)."""
    executable = dict(request.defines).get(LAUNCHER_VARIABLES[1])
    if request.launcher not in LAUNCHERS or executable is None:
        return None
    try:
        return read_cache_stats(request.launcher, Path(executable))
    except BuildtoolError as error:
        log.warning("%s: no statistics: %s", request.launcher, error)
        return None


def run_ci(
    request: CiRequest,
    observer: CiObserver,
    steps: Sequence[Step] = STEPS,
    workspace: Workspace | None = None,
) -> CiResult:
    """The whole chain on ``request``'s recipe; ``steps`` and ``workspace``: another chain's
    (``policy_only.prepare``: the project's own CMake and pyproject.toml)."""
    if workspace is None:
        workspace = Workspace(request, configure.plan_recipe(request.loaded))
    before = _launcher_stats(request)
    result = run_steps(steps, workspace, observer)
    after = _launcher_stats(request) if before is not None else None
    if before is None or after is None:
        return result
    used = after.since(before)
    if used.errors:  # the build went on uncached where the store failed: say so once
        log.warning(
            "%s: its cache store could not be used (%s); the compiles went on uncached: check "
            "the store's address and credentials",
            request.launcher,
            used.summary(request.launcher),
        )
    else:
        log.info("%s", used.summary(request.launcher))
    return dataclasses.replace(result, compile_cache=used)
