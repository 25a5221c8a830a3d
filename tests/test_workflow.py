"""``examples/github-workflow.yml``, the ready-to-copy workflow: real subcommands and options,
the triggers and jobs it promises, and the one place that says what pip installs as buildtool."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from buildtool.cli import make_parser
from tests.conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

WORKFLOW = REPO / "examples" / "github-workflow.yml"


def cli_options() -> dict[str, set[str]]:
    """Every subcommand of ``buildtool`` and the options it accepts, from the real parser."""
    parser = make_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    global_options = {s for action in parser._actions for s in action.option_strings}
    return {
        name: global_options | {s for action in sub._actions for s in action.option_strings}
        for name, sub in subparsers.choices.items()
    }


def load_workflow() -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return data


def workflow_steps(workflow: dict[Any, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def buildtool_invocations(workflow: dict[Any, Any]) -> list[list[str]]:
    """The arguments after ``buildtool`` in every ``run:`` line that calls it."""
    invocations = []
    for step in workflow_steps(workflow):
        for line in str(step.get("run", "")).splitlines():
            words = shlex.split(line, comments=True)
            if "buildtool" in words:
                invocations.append(words[words.index("buildtool") + 1 :])
    return invocations


def test_workflow_calls_only_real_subcommands_and_options() -> None:
    options = cli_options()
    invocations = buildtool_invocations(load_workflow())
    assert {words[0] for words in invocations} == {"ci", "verify-linkage"}
    for words in invocations:
        command, arguments = words[0], words[1:]
        assert command in options, command
        for argument in arguments:
            if argument.startswith("-"):
                assert argument.split("=", 1)[0] in options[command], (command, argument)


def test_workflow_runs_ci_on_pull_requests_and_releases_with_cibuildwheel() -> None:
    workflow = load_workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert isinstance(triggers, dict)
    assert "pull_request" in triggers
    assert "release" in triggers
    ci_job = workflow["jobs"]["ci"]
    assert any(str(step.get("run", "")).startswith("buildtool ci") for step in ci_job["steps"])
    wheels = workflow["jobs"]["wheels"]
    systems = " ".join(wheels["strategy"]["matrix"]["os"])
    assert all(system in systems for system in ("ubuntu", "macos", "windows"))
    cibuildwheel = [
        s for s in wheels["steps"] if str(s.get("uses", "")).startswith("pypa/cibuildwheel@")
    ]
    assert len(cibuildwheel) == 1
    assert cibuildwheel[0]["with"]["config-file"] == "cibuildwheel.toml"
    settings = cibuildwheel[0]["env"]
    assert all(name.startswith("CIBW_") or name == "SOURCE_DATE_EPOCH" for name in settings)
    # no platform's repair command is set here, beside the configuration's
    assert not any(name.startswith("CIBW_REPAIR_WHEEL_COMMAND") for name in settings)


# --- cibuildwheel's configuration: each half of the split, repaired by buildtool ---------------

CIBUILDWHEEL_CONFIG = REPO / "examples" / "cibuildwheel.toml"


def cibuildwheel_config() -> dict[str, Any]:
    with CIBUILDWHEEL_CONFIG.open("rb") as handle:
        config: dict[str, Any] = tomllib.load(handle)["tool"]["cibuildwheel"]
    return config


def test_every_platform_repairs_with_buildtool_repair_and_real_options() -> None:
    config = cibuildwheel_config()
    # one command for every platform: no override may bring back a bare auditwheel, delocate
    # or delvewheel that grafts the project's own libraries
    assert not any(
        "repair-wheel-command" in config.get(p, {}) for p in ("linux", "macos", "windows")
    )
    words = shlex.split(config["repair-wheel-command"])
    assert words[:2] == ["buildtool", "repair"]
    options = cli_options()["repair"]
    assert all(word.split("=")[0] in options for word in words[2:] if word.startswith("-"))
    assert {"{wheel}", "{dest_dir}"} <= set(words)


def test_buildtool_is_installed_where_cibuildwheel_builds_on_every_platform() -> None:
    config = cibuildwheel_config()
    assert config["before-build"] == 'python -m pip install "$BUILDTOOL"'
    assert config["windows"]["before-build"] == 'python -m pip install "%BUILDTOOL%"'  # cmd.exe
    assert "BUILDTOOL" in config["linux"]["environment-pass"]  # into the manylinux container


def test_each_half_is_one_run_over_its_generated_pyproject() -> None:
    workflow = load_workflow()
    root = REPO / workflow["env"]["PROJECT_ROOT"]
    entries = workflow["jobs"]["wheels"]["strategy"]["matrix"]["distribution"]
    names = {}
    for entry in entries:
        with (root / entry["dir"] / "pyproject.toml").open("rb") as handle:
            names[entry["name"]] = tomllib.load(handle)["project"]["name"]
    assert names == {"full": "demo", "runtime": "demo-runtime", "compiler": "demo-compiler"}
    skipped = {entry["name"] for entry in entries if entry["test-skip"] == "*"}
    assert skipped == {"compiler"}  # it imports only with the runtime wheel installed


# --- what pip installs as buildtool --------------------------------------------------------------


def distribution_name() -> str:
    """This project's distribution name, from its own ``pyproject.toml``."""
    with (REPO / "pyproject.toml").open("rb") as handle:
        name: str = tomllib.load(handle)["project"]["name"]
    return name


def install_step(workflow: dict[Any, Any]) -> str:
    steps = workflow["jobs"]["ci"]["steps"]
    return next(str(s["run"]) for s in steps if "pip install" in str(s.get("run", "")))


def test_the_workflow_installs_this_distribution_never_pypis_buildtool() -> None:
    workflow = load_workflow()
    requirement = workflow["env"]["BUILDTOOL"]
    assert requirement.split()[0] == distribution_name() != "buildtool"
    installs = [
        line.strip()
        for step in workflow_steps(workflow)
        for line in str(step.get("run", "")).splitlines()
        if "pip install" in line
    ]
    assert installs, "the workflow installs buildtool somewhere"
    assert all(line.endswith('pip install "$BUILDTOOL"') for line in installs), installs


def run_install_step(tmp_path: Path, requirement: str) -> subprocess.CompletedProcess[str]:
    """The ci job's install step under bash, with ``sudo`` and ``python`` standing in (they
    record their arguments): what the step does with the ``BUILDTOOL`` it is given."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sudo", "python"):
        stub = bin_dir / tool
        stub.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{tmp_path}/calls"\n')
        stub.chmod(0o755)
    environment = {"PATH": f"{bin_dir}:/usr/bin:/bin", "BUILDTOOL": requirement}
    return subprocess.run(
        ["bash", "-e", "-c", install_step(load_workflow())],
        capture_output=True,
        text=True,
        check=False,
        env=environment,
    )


def test_the_placeholder_requirement_stops_the_ci_job_with_an_annotation(tmp_path: Path) -> None:
    placeholder = load_workflow()["env"]["BUILDTOOL"]
    result = run_install_step(tmp_path, placeholder)
    assert result.returncode == 1
    assert result.stdout.startswith(
        "::error file=.github/workflows/buildtool.yml::set env.BUILDTOOL"
    )
    assert not (tmp_path / "calls").exists(), "nothing was installed"


def test_a_set_requirement_is_installed_as_written(tmp_path: Path) -> None:
    pinned = "buildtool-split @ git+https://github.com/example/buildtool@v0.1.0"
    result = run_install_step(tmp_path, pinned)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[-1] == f"python -m pip install {pinned}"
