"""Faults and bad input that once escaped as tracebacks or CMake errors: a recipe nested too
deeply for the TOML parser, two tables whose CMake targets collide, an object library without
sources, SIGTERM during a wheel build (what CI runners send on cancel), Ctrl-C while the command
line is still being imported, and staging folders that a killed run left behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from buildtool.fsutil import OWNER_LOCK, owned_folder, remove_abandoned_folders
from tests.conftest import REPO, CliRunner
from tests.processes import descendants

WAIT = 300.0


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A copy of the example project; returns its recipe."""
    shutil.copytree(REPO / "src", tmp_path / "src", ignore=shutil.ignore_patterns("build"))
    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    return tmp_path / "recipes" / "demo.toml"


def test_deeply_nested_recipe_is_bad_input(tmp_path: Path, run_cli: CliRunner) -> None:
    recipe = tmp_path / "deep.toml"
    recipe.write_text('[project]\nname = "x"\nvalue = ' + "[" * 5000 + "]" * 5000 + "\n")
    result = run_cli("configure", "--recipe", str(recipe))
    assert result.exit_code == 2
    assert f"{recipe}: not a readable recipe: arrays or inline tables are nested" in result.stderr
    assert "Traceback" not in result.stderr
    shallow = tmp_path / "shallow.toml"  # a few levels are ordinary TOML, read as such
    shallow.write_text('[project]\nname = "x"\nvalue = [[["a"]]]\n')
    result = run_cli("configure", "--recipe", str(shallow))
    assert result.exit_code == 2
    assert "project.value" in result.stderr  # an unknown key: the file was read


def test_executable_named_like_a_library_is_refused(
    demo: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    demo.write_text(demo.read_text() + '\n[executables.ffi]\nsources = ["apps/minrpc/*.cc"]\n')
    result = run_cli("configure", "--recipe", str(demo), "--build-dir", str(tmp_path / "b"))
    assert result.exit_code == 2, result.stderr
    assert "executables.ffi: its CMake target 'demo_ffi' is also libraries.ffi's" in result.stderr
    assert not (tmp_path / "b" / "CMakeCache.txt").exists()  # refused before CMake ran


def test_object_library_without_sources_is_refused(
    demo: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    text = demo.read_text().replace('sources = ["contrib/gemm/*.cc"]', "sources = []")
    demo.write_text(text)
    result = run_cli("configure", "--recipe", str(demo), "--build-dir", str(tmp_path / "b"))
    assert result.exit_code == 2, result.stderr
    assert "objects.gemm.sources: empty" in result.stderr
    assert not (tmp_path / "b" / "CMakeCache.txt").exists()


# --- staging folders of killed runs -----------------------------------------------------------

HOLDER = """
import sys, time
from pathlib import Path
from buildtool.fsutil import owned_folder
with owned_folder(Path(sys.argv[1]), ".buildtool-wheel-") as folder:
    print(folder, flush=True)
    time.sleep(600)
"""


def _hold_a_folder(parent: Path) -> tuple[subprocess.Popen[str], Path]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(parent)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    return holder, Path(holder.stdout.readline().strip())


def test_only_folders_of_dead_runs_are_removed(tmp_path: Path) -> None:
    killed, abandoned = _hold_a_folder(tmp_path)
    alive, in_use = _hold_a_folder(tmp_path)
    unlocked = tmp_path / ".buildtool-wheel-unknown"  # no lock: nothing proves it stale
    unlocked.mkdir()
    try:
        killed.send_signal(signal.SIGKILL)  # no cleanup at all
        killed.communicate(timeout=WAIT)
        assert (abandoned / OWNER_LOCK).is_file()
        assert remove_abandoned_folders(tmp_path, ".buildtool-wheel-") == [abandoned]
        assert not abandoned.exists()
        assert in_use.is_dir()
        assert unlocked.is_dir()
        with owned_folder(tmp_path, ".buildtool-wheel-") as mine:  # the next run's own
            assert mine.is_dir()
            assert in_use.is_dir()
        assert not mine.exists()
    finally:
        for holder in (killed, alive):
            holder.kill()
            holder.communicate(timeout=WAIT)
    assert remove_abandoned_folders(tmp_path, ".buildtool-wheel-") == [in_use]


# --- real signals -----------------------------------------------------------------------------


def _alive(pid: int, name: str) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return f"({name})" in stat and ") Z " not in stat


def _wait_for_descendant(parent: subprocess.Popen[str], name: str) -> dict[int, str]:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        below = descendants(parent.pid)
        if name in below.values():
            return below
        assert parent.poll() is None, "the run ended before the build started"
        time.sleep(0.05)
    raise AssertionError(f"no {name} below the run")


def _start(*argv: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "buildtool", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip


@pytest.mark.integration
@pytest.mark.wheel
def test_sigterm_during_a_wheel_build(demo: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    stale = out_dir / ".buildtool-wheel-killed"  # a killed run's: its lock is held by no one
    stale.mkdir()
    (stale / OWNER_LOCK).write_text("12345\n")
    build = tmp_path / "build"
    running = _start("wheel", "--recipe", str(demo),
                     "--out-dir", str(out_dir), "--build-root", str(build))  # fmt: skip
    below = _wait_for_descendant(running, "cmake")
    staging = [p.name for p in out_dir.iterdir()]
    assert len(staging) == 1, staging  # the killed run's is gone already
    assert staging[0].startswith(".buildtool-wheel-")
    running.send_signal(signal.SIGTERM)  # to buildtool alone, as a runner's cancel may be
    output, _ = running.communicate(timeout=WAIT)
    assert running.returncode == 143, output
    assert "Traceback" not in output
    assert "terminated (SIGTERM)" in output
    assert list(out_dir.iterdir()) == []  # its own staging folder and the killed run's
    time.sleep(0.2)
    left = {pid: name for pid, name in below.items() if _alive(pid, name)}
    assert left == {}, f"still running after buildtool ended: {left}"


IMPORTED_EARLY = "argparse"
"""An ``-X importtime`` line the command line prints while it is still importing its modules
(``buildtool.cli`` imports argparse first; the command module comes after)."""


def _interrupt_during_imports(argv: list[str]) -> tuple[int, str]:
    command = [sys.executable, "-X", "importtime", "-m", "buildtool", *argv]
    running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert running.stderr is not None
    lines: Iterator[str] = iter(running.stderr)
    seen = []
    for line in lines:
        seen.append(line)
        if line.rsplit("|", 1)[-1].strip() == IMPORTED_EARLY:
            running.send_signal(signal.SIGINT)
            break
    rest = running.communicate(timeout=WAIT)[1].splitlines(keepends=True)
    errors = "".join(line for line in [*seen, *rest] if not line.startswith("import time:"))
    return running.returncode, errors


@pytest.mark.parametrize(
    "argv", [["verify-linkage", "--no-recipe", "/bin/true"], ["schema"]], ids=["verify", "schema"]
)
def test_ctrl_c_during_imports(argv: list[str]) -> None:
    code, errors = _interrupt_during_imports(argv)
    assert code == 130, errors
    assert "Traceback" not in errors
    assert "KeyboardInterrupt" not in errors


@pytest.mark.integration
def test_sigterm_during_ci_ends_the_compilers(demo: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    running = _start("ci", "--recipe", str(demo), "--out-dir", str(out_dir),
                     "--build-dir", str(tmp_path / "build"))  # fmt: skip
    below = _wait_for_descendant(running, "cc1plus")
    running.send_signal(signal.SIGTERM)
    output, _ = running.communicate(timeout=WAIT)
    assert running.returncode == 143, output
    assert "Traceback" not in output
    assert "terminated; the reports name the step that was running" in output
    assert '"interrupted": true' in (out_dir / "buildtool-ci.json").read_text()
    time.sleep(0.2)
    left = {pid: name for pid, name in below.items() if _alive(pid, name)}
    assert left == {}, f"still running after buildtool ended: {left}"
