"""``buildtool ci``: the step runner and its reports (pure), then real runs on the example.

One session-scoped run of the whole chain on the bundled example is shared by the tests of a
passing run; a deliberately broken copy of the example (minrpc without ``no-as-needed``) shows a
failing run under a simulated GitHub Actions.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any, cast

import jsonschema
import pytest

from buildtool import process
from buildtool.ci import pipeline, reports
from buildtool.cmake import run as cmake_run
from buildtool.cmake.configure import generated_files, plan_recipe, write_generated
from buildtool.errors import ChecksFailed, ToolFailed
from buildtool.linkage.checks.catalogue import Finding
from buildtool.packaging import wheel
from buildtool.packaging.distributions import variant_distributions
from buildtool.recipe.load import load_recipe
from tests.conftest import DEMO_RECIPE, REPO, CliRunner

CI_SCHEMA = REPO / "buildtool" / "schemas" / "ci.schema.json"
STEP_NAMES = [step.name for step in pipeline.STEPS]


def validate_report(document: dict[str, Any]) -> None:
    schema = json.loads(CI_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validate(document, schema)


# --- pure: the runner, the reports --------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def step_started(self, step: pipeline.Step, number: int, total: int) -> None:
        self.events.append(f"start {step.name} {number}/{total}")

    def step_finished(self, result: pipeline.StepResult) -> None:
        self.events.append(f"end {result.name} {result.status}")


def passing(_workspace: pipeline.Workspace) -> pipeline.StepOutcome:
    return pipeline.StepOutcome(detail="fine")


def failing(_workspace: pipeline.Workspace) -> pipeline.StepOutcome:
    raise ChecksFailed("it broke\nsecond line")


def not_available(_workspace: pipeline.Workspace) -> pipeline.StepOutcome:
    return pipeline.StepOutcome("skipped", "not available here")


def interrupting(_workspace: pipeline.Workspace) -> pipeline.StepOutcome:
    raise KeyboardInterrupt


def fake_workspace() -> pipeline.Workspace:
    loaded = load_recipe(DEMO_RECIPE)
    request = pipeline.CiRequest(loaded, Path("dist"), Path("build"))
    return pipeline.Workspace(request, plan_recipe(loaded))


def test_runner_stops_at_the_first_failure_and_skips_the_rest() -> None:
    steps = [
        pipeline.Step("one", "first", passing),
        pipeline.Step("two", "optional", not_available),
        pipeline.Step("three", "breaks", failing),
        pipeline.Step("four", "never runs", passing),
        pipeline.Step("five", "never runs", passing),
    ]
    recorder = Recorder()
    result = pipeline.run_steps(steps, fake_workspace(), recorder)
    assert [(s.name, s.status) for s in result.steps] == [
        ("one", "passed"),
        ("two", "skipped"),
        ("three", "failed"),
        ("four", "skipped"),
        ("five", "skipped"),
    ]
    assert recorder.events == [
        "start one 1/5",
        "end one passed",
        "start two 2/5",
        "end two skipped",
        "start three 3/5",
        "end three failed",
    ]
    assert result.failed_step is not None
    assert result.failed_step.detail == "it broke\nsecond line"
    assert not result.passed
    assert reports.verdict(result) == "buildtool ci: failed at step three: it broke"


def test_an_interrupt_is_recorded_and_ends_the_run() -> None:
    steps = [pipeline.Step("one", "", interrupting), pipeline.Step("two", "", passing)]
    result = pipeline.run_steps(steps, fake_workspace(), Recorder())
    assert result.interrupted
    assert [s.status for s in result.steps] == ["failed", "skipped"]
    assert reports.verdict(result) == "buildtool ci: interrupted during one"


FINDING = Finding(
    "BT101", "build/bin/minrpc", "minrpc does not need libdemo_runtime.so", "NEEDED: x"
)


def sample_result() -> pipeline.CiResult:
    return pipeline.CiResult(
        recipe="recipes/demo.toml",
        launcher="ccache",
        steps=(
            pipeline.StepResult("build", "passed", 1.5, "compiled in the build folder build/"),
            pipeline.StepResult("verify-build", "failed", 0.25, "1 error", (FINDING,)),
            pipeline.StepResult("wheels", "skipped", 0.0, pipeline.SKIPPED_AFTER_FAILURE),
        ),
    )


def test_json_report_is_versioned_and_matches_its_schema() -> None:
    document = reports.report_json(sample_result())
    validate_report(document)
    assert document["version"] == 1
    assert document["failed_step"] == "verify-build"
    assert document["seconds"] == 1.75
    finding = document["steps"][1]["findings"][0]
    assert finding["id"] == "BT101"
    assert finding["name"] == "required-needed-missing"
    assert finding["path"] == "build/bin/minrpc"


def test_junit_has_one_case_per_step_and_the_failure_message() -> None:
    root = ET.fromstring(reports.render_junit(sample_result()))
    assert root.attrib["tests"] == "3"
    assert root.attrib["failures"] == "1"
    assert root.attrib["skipped"] == "1"
    cases = {case.attrib["name"]: case for case in root.iter("testcase")}
    assert list(cases) == ["build", "verify-build", "wheels"]
    failure = cases["verify-build"].find("failure")
    assert failure is not None
    assert failure.attrib["message"] == "1 error"
    assert "BT101 required-needed-missing: build/bin/minrpc" in (failure.text or "")
    assert cases["wheels"].find("skipped") is not None
    assert cases["build"].find("failure") is None


def test_markdown_summary_has_the_table_and_the_findings() -> None:
    markdown = reports.render_markdown(sample_result())
    assert markdown.startswith("## buildtool ci: failed at step verify-build: 1 error\n")
    assert "| `verify-build` | ❌ failed | 0.25 |" in markdown
    assert "| `wheels` | ⏭️ skipped | 0.00 |" in markdown
    assert "`BT101` required-needed-missing in `build/bin/minrpc`" in markdown


def test_the_html_page_has_the_table_of_the_steps_and_their_outcomes() -> None:
    page = reports.render_html(sample_result())
    steps = page.split('<table class="steps">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(
        r'<tr class="step (\w+)"><td><code>([\w-]+)</code></td>.*?<td class="num">([\d.]+)</td>',
        steps,
    )
    assert rows == [
        ("passed", "build", "1.50"),
        ("failed", "verify-build", "0.25"),
        ("skipped", "wheels", "0.00"),
    ]
    assert "buildtool ci: failed at step verify-build: 1 error" in page
    assert '<td class="num">1.75</td>' in steps  # the total
    assert 'href="#checks"' not in page  # no verify-linkage report: nothing to link to


def test_a_failed_tools_last_lines_reach_the_reports_read_elsewhere() -> None:
    """The console streamed the compile error once; JUnit, the HTML page and the step summary
    are read where that stream is not, so they carry the tool's last lines."""
    error = "main.cc:3:5: error: expected ';'"
    failed = pipeline.StepResult(
        "build", "failed", 2.0, "command failed with exit code 1: ninja (its output is above)",
        output_tail=f"[1/2] Building CXX object main.cc.o\n{error}",
    )  # fmt: skip
    result = pipeline.CiResult("recipes/demo.toml", "none", (failed,))
    root = ET.fromstring(reports.render_junit(result))
    failure = next(root.iter("failure"))
    assert error in (failure.text or "")
    assert error in reports.render_markdown(result)
    assert "main.cc:3:5: error: expected &#x27;;&#x27;" in reports.render_html(result)


def test_a_step_that_raised_a_tool_failure_keeps_its_output_tail() -> None:
    def fails(_workspace: pipeline.Workspace) -> pipeline.StepOutcome:
        process.run([sys.executable, "-c", "print('the error'); raise SystemExit(1)"])
        return pipeline.StepOutcome()

    step = pipeline.Step("build", "compile", fails)
    result = pipeline.run_step(step, cast(pipeline.Workspace, None))
    assert result.status == "failed"
    assert result.output_tail == "the error"


def test_summary_table_lists_every_step_and_the_total() -> None:
    table = reports.render_table(sample_result())
    assert table.splitlines() == [
        "step          status   seconds",
        "build         passed      1.50",
        "verify-build  failed      0.25",
        "wheels        skipped     0.00",
        "total                     1.75",
    ]


def test_smoke_facts_are_checked_against_the_plan() -> None:
    plan = plan_recipe(load_recipe(DEMO_RECIPE))
    present, absent = pipeline.expected_registrations(plan, runtime_only=True)
    assert "compiler.build" in absent
    assert "rpc.testing.GetShapeSize" in present
    good = {"runtime_only": True, "loaded": ["ffi", "runtime"], "names": sorted(present)}
    assert pipeline.smoke_problems(good, plan, runtime_only=True) == []
    bad = {
        "runtime_only": False,
        "loaded": ["ffi"],
        "names": [*sorted(present - {"runtime.GetVersion"}), "compiler.build"],
    }
    assert pipeline.smoke_problems(bad, plan, runtime_only=True) == [
        "runtime_only() is False, expected True",
        "loaded libraries ['ffi'], expected ['ffi', 'runtime']",
        "runtime.GetVersion is not registered",
        "compiler.build is registered (its library is optional)",
    ]
    unlisted = {"runtime_only": False, "loaded": ["compiler", "ffi", "runtime"], "names": None}
    assert pipeline.smoke_problems(unlisted, plan, runtime_only=False) == []


TINY_RECIPE = """\
[project]
name = "tiny"
env-prefix = "TINY"
python-package-dir = "python/tiny"

[libraries.core]
sources = ["core/*.cc"]
"""
"""A project with one required library, no optional one and no tests."""


def write_tiny(root: Path) -> Path:
    (root / "core").mkdir(parents=True)
    (root / "core" / "core.cc").write_text('extern "C" int tiny_answer() { return 42; }\n')
    (root / "python" / "tiny").mkdir(parents=True)
    (root / "python" / "tiny" / "__init__.py").write_text("")
    (root / "buildtool.toml").write_text(TINY_RECIPE)
    return root / "buildtool.toml"


def test_smoke_without_an_optional_library_is_runtime_only_in_both_modes(tmp_path: Path) -> None:
    plan = plan_recipe(load_recipe(write_tiny(tmp_path)))
    facts = {"runtime_only": True, "loaded": ["core"], "names": None}
    assert pipeline.smoke_problems(facts, plan, runtime_only=False) == []
    assert pipeline.smoke_problems(facts, plan, runtime_only=True) == []
    wrong = {**facts, "runtime_only": False}
    assert pipeline.smoke_problems(wrong, plan, runtime_only=False) == [
        "runtime_only() is False, expected True"
    ]


@pytest.mark.integration
@pytest.mark.wheel
def test_ci_passes_on_a_project_with_only_a_required_library(tmp_path: Path) -> None:
    """No optional library (the loader is always runtime-only) and no tests (nothing for ctest)."""
    root = tmp_path / "tiny"
    write_tiny(root)
    configured = subprocess.run(
        [sys.executable, "-m", "buildtool", "configure"],
        cwd=root,
        env=ci_environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert configured.returncode == 0, configured.stdout + configured.stderr
    result = subprocess.run(
        [sys.executable, "-m", "buildtool", "ci"],
        cwd=root,
        env=ci_environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^smoke-full +passed", result.stdout, re.MULTILINE)
    assert "no tests: the recipe declares none" in result.stdout


# --- the whole chain on the bundled example ------------------------------------------------------


def ci_environment(**extra: str) -> dict[str, str]:
    drop = ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "LD_LIBRARY_PATH", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("DEMO_")}
    return {**env, "NO_COLOR": "1", **extra}


@pytest.fixture(scope="session")
def example_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``buildtool ci`` on the bundled example, as a user runs it (a subprocess)."""
    work = tmp_path_factory.mktemp("ci-example")
    command = [
        sys.executable,
        "-m",
        "buildtool",
        "ci",
        "--recipe",
        str(DEMO_RECIPE),
        "--build-dir",
        str(work / "build"),
        "--out-dir",
        str(work / "dist"),
    ]
    result = subprocess.run(
        command, cwd=work, env=ci_environment(), capture_output=True, text=True, check=False
    )
    return result, work / "dist"


@pytest.mark.integration
@pytest.mark.wheel
def test_ci_passes_on_the_example(
    example_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = example_run
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1].startswith("buildtool ci: passed (12 steps, ")
    for name in STEP_NAMES:
        assert re.search(rf"^{name} +passed +\d+\.\d\d$", result.stdout, re.MULTILINE), name
    assert "::group::" not in result.stdout
    assert "\033[" not in result.stdout
    # CMake detects the compiler once, for the build folder: the runtime proof's configure is
    # an internal check, one line at the default level
    assert result.stdout.count("-- The CXX compiler identification") == 1, result.stdout
    assert "runtime-configuration" not in "".join(x for x in lines if x.startswith("$ "))
    proof = [line for line in lines if "wheel comes from the full build" in line]
    assert len(proof) == 1, result.stdout
    assert "configured with DEMO_BUILD_COMPILER off" in proof[0]


@pytest.mark.integration
@pytest.mark.wheel
def test_ci_writes_json_and_junit_reports(
    example_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, out_dir = example_run
    document = json.loads((out_dir / reports.JSON_NAME).read_text(encoding="utf-8"))
    validate_report(document)
    assert document["passed"] is True
    assert [step["name"] for step in document["steps"]] == STEP_NAMES
    assert {step["status"] for step in document["steps"]} == {"passed"}
    smoke = {step["name"]: step["detail"] for step in document["steps"]}
    assert "loaded ffi, runtime;" in smoke["smoke-runtime"]
    assert "loaded compiler, ffi, runtime;" in smoke["smoke-full"]
    root = ET.parse(out_dir / reports.JUNIT_NAME).getroot()
    assert [case.attrib["name"] for case in root.iter("testcase")] == STEP_NAMES
    assert root.attrib["failures"] == "0"
    wheels = sorted(path.name.split("-")[0] for path in out_dir.glob("*.whl"))
    assert wheels == ["demo_compiler", "demo_runtime"]
    page = (out_dir / reports.HTML_NAME).read_text(encoding="utf-8")
    assert "<h2>verify-build: " in page
    assert "<h2>verify-wheels: " in page
    assert page.count('data-path="') >= 8  # the build tree's files and the wheels' members


# --- the logged wheel commands: what a user types to get the same wheels ------------------------


def logged_wheel_commands(output: str) -> dict[str, str]:
    """Distribution -> the command logged for its wheel (the line after "building the X wheel
    ... as this command does:")."""
    lines = output.splitlines()
    found = {}
    for number, line in enumerate(lines):
        match = re.match(r"building the (\S+) wheel from .* as this command does:$", line)
        if match:
            after = lines[number + 1]
            assert after.startswith("$ "), after
            found[match[1]] = after.removeprefix("$ ")
    return found


def rerun(command: str, wheel_dir: Path, cwd: Path) -> Path:
    """The logged command run through a shell where the run was, as a user pastes it; only its
    output folder is another one (the run's holds the published wheels)."""
    argv = shlex.split(command)
    argv[argv.index("--wheel-dir") + 1] = str(wheel_dir)
    done = subprocess.run(
        ["sh", "-c", shlex.join(argv)],
        cwd=cwd,
        env=ci_environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = wheel_dir.glob("*.whl")
    return wheel


def wheel_files(wheel: Path) -> dict[str, bytes]:
    """A wheel's files but the two a repair rewrites (WHEEL: the platform tag; RECORD)."""
    with zipfile.ZipFile(wheel) as archive:
        return {
            name: archive.read(name)
            for name in archive.namelist()
            if not name.endswith(("/", ".dist-info/WHEEL", ".dist-info/RECORD"))
        }


def ninja_log_entries(build: Path) -> int:
    return len((build / ".ninja_log").read_text(encoding="utf-8").splitlines())


def test_the_rerun_command_speaks_to_the_backend_its_folder_names() -> None:
    """A folder under packaging/ names scikit-build-core: every setting as it is. The root of
    generated mode names buildtool's backend: the recipe (from that folder), the build folder,
    the distribution, and the settings the backend does not work out itself."""
    loaded = load_recipe(DEMO_RECIPE)
    plan = plan_recipe(loaded)
    settings = {
        "build-dir": "/b",
        "cmake.build-type": "Release",
        "build.targets": "demo_ffi;demo_runtime",
        "cmake.define.DEMO_BUILD_COMPILER": "ON",
        "build.tool-args": "-j3",
    }
    runtime, _ = variant_distributions(plan, "split", ".")
    command = wheel.rerun_command(loaded, runtime, settings, Path("/out"), epoch="1", python="py")
    assert command[:8] == ["SOURCE_DATE_EPOCH=1", "py", "-m", "pip", "wheel",
                           "--no-build-isolation", "--no-deps", "--wheel-dir"]  # fmt: skip
    assert command[9:-1] == [part for k, v in settings.items() for part in ("-C", f"{k}={v}")]
    assert command[-1].endswith("src/packaging/demo-runtime")
    (full,) = variant_distributions(plan, "full", ".")
    command = wheel.rerun_command(loaded, full, settings, Path("/out"), epoch="1", python="py")
    assert command[9:-1] == [
        "-C", "buildtool.recipe=../recipes/demo.toml", "-C", "buildtool.build-dir=/b",
        "-C", "buildtool.distribution=demo", "-C", "cmake.define.DEMO_BUILD_COMPILER=ON",
        "-C", "build.tool-args=-j3",
    ]  # fmt: skip
    assert command[-1].endswith("src")


def test_a_failed_wheel_build_names_the_command_to_rerun(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The backend's hook runs through pyproject_hooks' internal script; its failure is
    reported with the command a user reruns, and the last lines of the output."""

    class FailingHooks:
        def build_wheel(self, wheel_directory: str, _settings: dict[str, str]) -> str:
            internal = [sys.executable, "_in_process.py", "build_wheel", wheel_directory]
            raise ToolFailed(internal, 1, "CMake Error: something", output_shown=False)

    monkeypatch.setattr(wheel, "_hooks", lambda _folder: FailingHooks())
    loaded = load_recipe(DEMO_RECIPE)
    runtime, _ = variant_distributions(plan_recipe(loaded), "split", ".")
    with pytest.raises(ToolFailed) as failed:
        wheel.build_raw_wheel(loaded, runtime, {"build-dir": "/b"}, tmp_path, tmp_path / "out")
    message = str(failed.value)
    assert message.startswith("command failed with exit code 1: SOURCE_DATE_EPOCH=")
    assert " -m pip wheel --no-build-isolation " in message
    assert "_in_process" not in message
    assert message.endswith("--- last lines of its output ---\nCMake Error: something")


@pytest.mark.integration
@pytest.mark.wheel
def test_the_logged_wheel_commands_build_the_same_wheels(
    example_run: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    result, out_dir = example_run
    work, build = out_dir.parent, out_dir.parent / "build"
    assert "_in_process" not in result.stdout  # pyproject_hooks' internal command line
    commands = logged_wheel_commands(result.stdout)
    assert set(commands) == {"demo-runtime", "demo-compiler"}
    entries = ninja_log_entries(build)
    for name, command in commands.items():
        assert " -m pip wheel --no-build-isolation --no-deps " in command
        configured = (build / "CMakeInit.txt").stat().st_mtime_ns
        rebuilt = rerun(command, tmp_path / name, work)
        # scikit-build-core wrote its initial cache into the same build folder, not one of its own
        assert (build / "CMakeInit.txt").stat().st_mtime_ns > configured
        (published,) = out_dir.glob(f"{name.replace('-', '_')}-*.whl")
        assert rebuilt.name.split("-")[:4] == published.name.split("-")[:4]
        assert wheel_files(rebuilt) == wheel_files(published), name
    # from the same build folder as it was: nothing compiled or linked, the switches as ci left them
    assert ninja_log_entries(build) == entries
    assert cmake_run.cached_values(build, ["DEMO_BUILD_COMPILER"]) == {"DEMO_BUILD_COMPILER": "ON"}


@pytest.mark.integration
@pytest.mark.wheel
def test_the_logged_command_of_the_full_wheel_goes_through_buildtools_backend(
    example_run: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    """Generated mode's root pyproject.toml names buildtool's backend, not scikit-build-core:
    the command tells it the recipe, the build folder and the distribution."""
    _, out_dir = example_run
    work, build = out_dir.parent, out_dir.parent / "build"
    built = subprocess.run(
        [sys.executable, "-m", "buildtool", "wheel", "--recipe", str(DEMO_RECIPE),
         "--build-dir", str(build), "--out-dir", str(tmp_path / "full")],
        cwd=work, env=ci_environment(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (command,) = logged_wheel_commands(built.stderr).values()  # wheel logs to stderr
    assert "-C buildtool.distribution=demo -C" in command
    assert "-C buildtool.recipe=../recipes/demo.toml" in command
    entries = ninja_log_entries(build)
    configured = (build / "CMakeInit.txt").stat().st_mtime_ns
    rebuilt = rerun(command, tmp_path / "rerun", work)
    assert (build / "CMakeInit.txt").stat().st_mtime_ns > configured
    (published,) = (tmp_path / "full").glob("demo-*.whl")
    assert wheel_files(rebuilt) == wheel_files(published)
    assert ninja_log_entries(build) == entries


# --- a broken example fails at verify, the GitHub way -------------------------------------------

MINRPC_NO_AS_NEEDED = 'no-as-needed = ["runtime"]\n'

BREAKS = [
    pytest.param(
        (MINRPC_NO_AS_NEEDED, ""),
        "BT101",
        id="minrpc-without-no-as-needed",
    ),
    pytest.param(
        (MINRPC_NO_AS_NEEDED, MINRPC_NO_AS_NEEDED + 'allowed-needed = ["libdemo_runtime.so"]\n'),
        "BT102",
        id="minrpc-needs-a-library-outside-its-allow-list",
    ),
]


def broken_copy(folder: Path, old: str, new: str) -> Path:
    """A copy of the example with one edit to its recipe, generated files brought up to date."""
    shutil.copytree(REPO / "recipes", folder / "recipes")
    shutil.copytree(REPO / "src", folder / "src", ignore=shutil.ignore_patterns("__pycache__"))
    recipe = folder / "recipes" / "demo.toml"
    text = recipe.read_text(encoding="utf-8")
    assert text.count(old) == 1
    recipe.write_text(text.replace(old, new), encoding="utf-8")
    loaded = load_recipe(recipe)
    write_generated(loaded, generated_files(loaded, plan_recipe(loaded)))
    return recipe


@pytest.mark.integration
@pytest.mark.parametrize(("edit", "check_id"), BREAKS)
def test_broken_example_fails_at_verify_with_github_annotations(
    run_cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    edit: tuple[str, str],
    check_id: str,
) -> None:
    recipe = broken_copy(tmp_path / "project", *edit)
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier content\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out_dir = tmp_path / "dist"
    build_dir = str(tmp_path / "build")
    result = run_cli(
        "ci", "--recipe", str(recipe), "--build-dir", build_dir, "--out-dir", str(out_dir)
    )
    assert result.exit_code == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1].startswith("buildtool ci: failed at step verify-build: ")
    assert lines.count("::endgroup::") == 7
    assert "::group::[7/12] verify-build: verify-linkage on the build tree" in lines
    annotations = [line for line in lines if line.startswith("::error file=")]
    assert any(
        line.split(",", 1)[0].endswith("/bin/minrpc") and f"title={check_id} " in line
        for line in annotations
    ), annotations
    assert "::group::[8/12] wheels" not in result.stdout

    markdown = summary.read_text(encoding="utf-8")
    assert markdown.startswith("earlier content\n## buildtool ci: failed at step verify-build")
    assert "| `verify-build` | ❌ failed |" in markdown
    assert "| `smoke-runtime` | ⏭️ skipped |" in markdown
    assert re.search(rf"`{check_id}` [a-z-]+ in `[^`]*/bin/minrpc`", markdown)

    document = json.loads((out_dir / reports.JSON_NAME).read_text(encoding="utf-8"))
    validate_report(document)
    assert document["failed_step"] == "verify-build"
    statuses = [step["status"] for step in document["steps"]]
    assert statuses == ["passed"] * 6 + ["failed"] + ["skipped"] * 5
    cases = {
        case.attrib["name"]: case
        for case in ET.parse(out_dir / reports.JUNIT_NAME).iter("testcase")
    }
    failure = cases["verify-build"].find("failure")
    assert failure is not None
    assert "minrpc" in failure.attrib["message"]
    page = (out_dir / reports.HTML_NAME).read_text(encoding="utf-8")
    assert f"<code>{check_id}</code>" in page  # the findings table
    assert 'class="node kind-executable role-executable sev-error"' in page  # minrpc, marked


# --- wheels that fail verification are never published ---------------------------------------


def copy_with_stale_monolith(folder: Path) -> Path:
    """A copy of the example whose Python package still ships the removed ``libdemo.so`` (the
    recipe's ``[verify] removed``): the build tree is clean, only the wheels carry the defect."""
    recipe = broken_copy(folder, "version = ", "version = ")
    stale = folder / "src" / "python" / "demo" / "libdemo.so"
    stub = folder / "stub.c"
    stub.write_text("int demo_legacy_entry(void) { return 0; }\n", encoding="utf-8")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(stale), str(stub)], check=True)
    return recipe


@pytest.fixture(scope="module")
def stale_monolith_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_with_stale_monolith(tmp_path_factory.mktemp("stale-monolith"))


def untouched_out_dir(folder: Path) -> Path:
    folder.mkdir()
    (folder / "keep.txt").write_text("untouched", encoding="utf-8")
    return folder


@pytest.mark.integration
@pytest.mark.wheel
def test_ci_publishes_no_wheel_that_fails_verification(
    run_cli: CliRunner, tmp_path: Path, stale_monolith_project: Path
) -> None:
    out_dir = untouched_out_dir(tmp_path / "dist")
    build_dir = str(stale_monolith_project.parent.parent / "build")
    result = run_cli(
        "ci", "--recipe", str(stale_monolith_project), "--build-dir", build_dir,
        "--out-dir", str(out_dir),
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "buildtool ci: failed at step wheels: nothing published" in result.stdout
    assert "BT121" in result.stdout
    reports_written = {reports.JSON_NAME, reports.JUNIT_NAME, reports.HTML_NAME}
    assert {p.name for p in out_dir.iterdir()} == {"keep.txt", *reports_written}
    assert (out_dir / "keep.txt").read_text(encoding="utf-8") == "untouched"
    document = json.loads((out_dir / reports.JSON_NAME).read_text(encoding="utf-8"))
    wheels_step = next(step for step in document["steps"] if step["name"] == "wheels")
    assert any(f["id"] == "BT121" for f in wheels_step["findings"])
    # the staging folder is gone: the reports name the wheels where they would be published
    finding_lines = [line for line in result.stdout.splitlines() if "BT121" in line]
    assert finding_lines
    assert all(".buildtool-wheel-" not in line for line in finding_lines)
    assert ".buildtool-wheel-" not in (out_dir / reports.JSON_NAME).read_text(encoding="utf-8")
    assert ".buildtool-wheel-" not in (out_dir / reports.HTML_NAME).read_text(encoding="utf-8")
    assert all(f["path"].startswith(f"{out_dir}/") for f in wheels_step["findings"])


@pytest.mark.integration
@pytest.mark.wheel
def test_wheel_publishes_no_wheel_that_fails_verification(
    run_cli: CliRunner, tmp_path: Path, stale_monolith_project: Path
) -> None:
    out_dir = untouched_out_dir(tmp_path / "dist")
    build_root = str(stale_monolith_project.parent.parent / "build")
    result = run_cli(
        "wheel", "--recipe", str(stale_monolith_project), "--split",
        "--build-root", build_root, "--out-dir", str(out_dir),
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "BT121" in result.stderr
    assert [p.name for p in out_dir.iterdir()] == ["keep.txt"]
