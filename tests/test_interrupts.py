"""Nothing half-written: a real Ctrl-C (SIGINT to the process group) during ``configure`` leaves
every generated file either as it was or as it should be, exits 130 without a traceback; two
``configure`` runs on one build folder wait for each other; reports are written atomically."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from buildtool.cmake.configure import generated_files, plan_recipe
from buildtool.recipe.load import load_recipe
from tests.conftest import REPO, require
from tests.processes import processes

pytestmark = pytest.mark.integration

WAIT = 120.0
"""Seconds any step may take before the test gives up (a fresh CMake configure takes a few)."""


@dataclasses.dataclass(frozen=True)
class Project:
    root: Path
    recipe: Path
    old: dict[str, str]
    """Generated files as they are on disk before the run."""
    new: dict[str, str]
    """Generated files as the edited recipe gives them."""


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """A copy of the example whose recipe was edited after its files were generated."""
    shutil.copytree(REPO / "src", tmp_path / "src", ignore=shutil.ignore_patterns("build"))
    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    recipe = tmp_path / "recipes" / "demo.toml"
    old_loaded = load_recipe(recipe)
    old = {name: (old_loaded.root / name).read_text() for name in generated_files(
        old_loaded, plan_recipe(old_loaded))}  # fmt: skip
    recipe.write_text(recipe.read_text().replace('no-as-needed = ["runtime"]\n', ""))
    loaded = load_recipe(recipe)
    new = generated_files(loaded, plan_recipe(loaded))
    assert old.keys() == new.keys()
    assert any(old[name] != new[name] for name in old)
    return Project(tmp_path / "src", recipe, old, new)


SLOW_CMAKE = 'execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 2)\n'
"""Included by CMake after project(): keeps cmake running long enough to be caught at it."""


def start_configure(project: Project, build_dir: Path) -> subprocess.Popen[str]:
    slow = project.root.parent / "slow.cmake"
    slow.write_text(SLOW_CMAKE, encoding="utf-8")
    command = [sys.executable, "-m", "buildtool", "configure", "--recipe", str(project.recipe),
               "--build-dir", str(build_dir), "-D", f"CMAKE_PROJECT_INCLUDE={slow}"]  # fmt: skip
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )  # fmt: skip


def wait_for_child(parent: subprocess.Popen[str], name: str) -> None:
    """Until ``parent`` runs a child process called ``name`` (cmake, while configure holds the
    build folder's lock)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if any(ppid == parent.pid and comm == name for _pid, ppid, comm in processes()):
            return
        assert parent.poll() is None, "configure ended before cmake started"
        time.sleep(0.01)
    raise AssertionError(f"no {name} child appeared")


def assert_old_or_new(project: Project) -> None:
    for name in project.old:
        text = (project.root / name).read_text()
        assert text in (project.old[name], project.new[name]), f"{name} is half-written"
    leftovers = [p for p in project.root.rglob("*.tmp") if p.name.startswith(".")]
    assert leftovers == []


def test_ctrl_c_while_cmake_runs(project: Project, tmp_path: Path) -> None:
    running = start_configure(project, tmp_path / "build")
    wait_for_child(running, "cmake")
    os.killpg(running.pid, signal.SIGINT)
    _out, err = running.communicate(timeout=WAIT)
    assert running.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted; outputs were left as they were" in err
    assert_old_or_new(project)


def test_ctrl_c_while_files_are_generated(project: Project, tmp_path: Path) -> None:
    running = start_configure(project, tmp_path / "build")
    assert running.stderr is not None
    lines = []
    for line in running.stderr:
        lines.append(line)
        if line.startswith("generated "):
            os.killpg(running.pid, signal.SIGINT)  # after the first file, before the others
            break
    _out, rest = running.communicate(timeout=WAIT)
    err = "".join(lines) + rest
    assert running.returncode == 130, err
    assert "Traceback" not in err
    assert_old_or_new(project)


def test_two_configures_on_one_build_folder_wait_for_each_other(
    project: Project, tmp_path: Path
) -> None:
    build_dir = tmp_path / "build"
    first = start_configure(project, build_dir)
    wait_for_child(first, "cmake")  # the first holds the folder's lock now
    second = start_configure(project, build_dir)
    results = [process.communicate(timeout=WAIT) for process in (first, second)]
    assert (first.returncode, second.returncode) == (0, 0), results
    assert "another buildtool configure is running on" in results[1][1]
    assert "waiting for it to finish" in results[1][1]
    assert (build_dir / "CMakeCache.txt").is_file()
    assert (build_dir / "build.ninja").is_file()
    for name, text in project.new.items():
        assert (project.root / name).read_text() == text


# --- reports ----------------------------------------------------------------------------------


@pytest.fixture
def elf_file() -> Path:
    found = shutil.which("true")
    require(found is not None, "needs /bin/true")
    assert found is not None
    return Path(found)


def verify_to(report: Path, *paths: str) -> int:
    from buildtool.cli import main

    return main(["-q", "verify-linkage", "--no-recipe", "--format", "json",
                 "--output", str(report), *paths])  # fmt: skip


def test_report_goes_to_the_output_file(
    elf_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    assert verify_to(report, str(elf_file)) in (0, 1)
    assert '"version": 1' in report.read_text()
    assert capsys.readouterr().out == ""


def test_failed_or_interrupted_run_leaves_the_old_report(
    elf_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "report.json"
    report.write_text("previous report\n")
    assert verify_to(report, str(tmp_path / "missing")) == 2
    assert report.read_text() == "previous report\n"

    def ctrl_c(_fd: int) -> None:
        raise KeyboardInterrupt  # Ctrl-C at the worst moment: the new report half on disk

    monkeypatch.setattr(os, "fsync", ctrl_c)
    assert verify_to(report, str(elf_file)) == 130
    assert report.read_text() == "previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
