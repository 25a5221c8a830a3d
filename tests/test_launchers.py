"""Compiler launchers: the option and recipe key, and real builds through ccache and distcc."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buildtool.cmake.configure import plan_recipe
from buildtool.cmake.launcher import chosen_launcher, launcher_defines
from buildtool.errors import RecipeError
from buildtool.packaging import wheel
from buildtool.packaging.distributions import variant_distributions
from buildtool.plan import LinkPlan
from buildtool.recipe.load import load_recipe, parse_recipe
from tests.conftest import DEMO_RECIPE, CliRunner, require
from tests.servers import free_port, wait_for_port

DAEMON_STOP_SECONDS = 10


def compiled_sources(plan: LinkPlan) -> int:
    """How many translation units a full build compiles."""
    units = [lib.sources for lib in plan.libraries]
    units += [obj.sources for obj in plan.objects]
    units += [exe.sources for exe in plan.executables]
    return sum(len(sources) for sources in units)


def require_tool(name: str) -> str:
    found = shutil.which(name)
    require(found is not None, f"{name} is not installed (apt-get install {name})")
    assert found is not None
    return found


# --- pure: choosing, finding, passing on --------------------------------------------------------


def test_launcher_defines_set_both_languages() -> None:
    assert launcher_defines(Path("/usr/bin/ccache")) == {
        "CMAKE_C_COMPILER_LAUNCHER": "/usr/bin/ccache",
        "CMAKE_CXX_COMPILER_LAUNCHER": "/usr/bin/ccache",
    }
    assert launcher_defines(None) == {}


def test_recipe_launcher_and_the_option_overriding_it() -> None:
    data: dict[str, Any] = {"project": {"name": "demo"}, "build": {"launcher": "distcc"}}
    recipe = parse_recipe(data, "r.toml")
    assert recipe.build.launcher == "distcc"
    loaded = load_recipe(DEMO_RECIPE)
    assert chosen_launcher(None, loaded)[0] == "none"
    assert chosen_launcher("ccache", loaded) == ("ccache", "--launcher ccache")


def test_unknown_recipe_launcher_names_the_choices() -> None:
    data: dict[str, Any] = {"project": {"name": "demo"}, "build": {"launcher": "icecc"}}
    with pytest.raises(RecipeError, match=r"build\.launcher: expected one of 'none', 'ccache'"):
        parse_recipe(data, "r.toml")


@pytest.mark.parametrize("command", ["configure", "build", "wheel", "ci"])
def test_missing_launcher_is_a_usage_error_naming_it(
    run_cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    options = ["--out-dir", str(tmp_path / "dist")] if command in ("wheel", "ci") else []
    if command != "wheel":
        options += ["--build-dir", str(tmp_path / "build")]
    result = run_cli(command, "--recipe", str(DEMO_RECIPE), "--launcher", "ccache", *options)
    assert result.exit_code == 2
    assert "the compiler launcher 'ccache' was not found on PATH" in result.stderr
    assert "apt-get install ccache" in result.stderr
    assert not (tmp_path / "build").exists()


def test_wheel_builds_get_the_launcher_as_cmake_defines(tmp_path: Path) -> None:
    """scikit-build-core configures the shared build tree with the launcher too, and builds
    only the wheel's targets in it."""
    loaded = load_recipe(DEMO_RECIPE)
    plan = plan_recipe(loaded)
    dist = variant_distributions(plan, "full", ".")[0]
    defines = tuple(launcher_defines(Path("/usr/bin/ccache")).items())
    tree = wheel.WheelTree(tmp_path, "Release", defines, {})
    settings = wheel.wheel_settings(plan, dist, tree, jobs=3)
    assert settings["cmake.define.CMAKE_CXX_COMPILER_LAUNCHER"] == "/usr/bin/ccache"
    assert settings["cmake.define.CMAKE_C_COMPILER_LAUNCHER"] == "/usr/bin/ccache"
    assert settings["build-dir"] == str(tmp_path)
    assert settings["cmake.build-type"] == "Release"
    assert settings["build.targets"] == "demo_ffi;demo_runtime;demo_compiler"
    assert settings["build.tool-args"] == "-j3"


# --- ccache: a second clean build is served from the cache --------------------------------------


def ccache_stats(env: dict[str, str]) -> dict[str, int]:
    output = subprocess.run(
        ["ccache", "--print-stats"], env=env, capture_output=True, text=True, check=True
    ).stdout
    stats = {}
    for line in output.splitlines():
        name, _, value = line.partition("\t")
        if value.isdigit():
            stats[name] = int(value)
    return stats


@pytest.mark.integration
def test_second_clean_build_is_served_from_ccache(
    run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_tool("ccache")
    # BASEDIR and NOHASHDIR let two build folders share entries (paths differ between them).
    settings = {
        "CCACHE_DIR": str(tmp_path / "cache"),
        "CCACHE_BASEDIR": str(tmp_path),
        "CCACHE_NOHASHDIR": "1",
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    env = {**os.environ, **settings}
    recipe = str(DEMO_RECIPE)
    first = run_cli(
        "build", "--recipe", recipe, "--build-dir", str(tmp_path / "one"), "--launcher", "ccache"
    )
    assert first.exit_code == 0, first.stderr
    misses = ccache_stats(env)["cache_miss"]
    subprocess.run(["ccache", "--zero-stats"], env=env, check=True, capture_output=True)
    second = run_cli(
        "build", "--recipe", recipe, "--build-dir", str(tmp_path / "two"), "--launcher", "ccache"
    )
    assert second.exit_code == 0, second.stderr
    stats = ccache_stats(env)
    hits = stats["direct_cache_hit"] + stats["preprocessed_cache_hit"]
    sources = compiled_sources(plan_recipe(load_recipe(DEMO_RECIPE)))
    print(f"ccache: first build {misses} misses; second build {hits} hits of {sources} sources")
    assert misses == sources
    assert hits == sources
    assert stats["cache_miss"] == 0


# --- distcc: every compile goes to a distccd started on 127.0.0.1 -------------------------------


def stop_daemon(daemon: subprocess.Popen[bytes]) -> None:
    # distccd preforks workers into its own session: end that whole group, then reap the parent.
    if daemon.poll() is None:
        os.killpg(daemon.pid, signal.SIGTERM)
        try:
            daemon.wait(timeout=DAEMON_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait(timeout=DAEMON_STOP_SECONDS)


@pytest.fixture
def distccd(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A distccd on 127.0.0.1 only, on a free port; yields the port and its log file."""
    executable = require_tool("distccd")
    require_tool("distcc")
    port = free_port()
    log_path = tmp_path / "distccd.log"
    command = [
        executable,
        "--daemon",
        "--no-detach",
        "--log-stderr",
        "--log-level=info",
        "--allow",
        "127.0.0.1",
        "--listen",
        "127.0.0.1",
        "--port",
        str(port),
        "--jobs",
        "2",
    ]
    with log_path.open("wb") as log_file:
        daemon = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
        )
    try:
        wait_for_port(port, daemon, "distccd")
        yield port, log_path
    finally:
        stop_daemon(daemon)


def distcc_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, port: int) -> None:
    monkeypatch.setenv("DISTCC_HOSTS", f"127.0.0.1:{port}/2")
    monkeypatch.setenv("DISTCC_FALLBACK", "0")  # a compile that cannot reach distccd fails
    monkeypatch.setenv("DISTCC_SKIP_LOCAL_RETRY", "1")
    state = tmp_path / "distcc-state"
    state.mkdir()
    monkeypatch.setenv("DISTCC_DIR", str(state))


@pytest.mark.integration
def test_build_through_distcc_compiles_on_the_daemon(
    run_cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    distccd: tuple[int, Path],
) -> None:
    port, log_path = distccd
    distcc_environment(monkeypatch, tmp_path, port)
    build_dir = str(tmp_path / "build")
    result = run_cli(
        "build", "--recipe", str(DEMO_RECIPE), "--build-dir", build_dir, "--launcher", "distcc"
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    log = log_path.read_text(encoding="utf-8", errors="replace")
    jobs = [line for line in log.splitlines() if "COMPILE_OK" in line]
    sources = compiled_sources(plan_recipe(load_recipe(DEMO_RECIPE)))
    print(f"distccd compiled {len(jobs)} of {sources} sources")
    assert len(jobs) == sources, log
    assert all("client: 127.0.0.1:" in line for line in jobs)


@pytest.mark.integration
def test_distcc_build_fails_without_a_reachable_daemon(
    run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_tool("distcc")
    distcc_environment(monkeypatch, tmp_path, free_port())
    build_dir = str(tmp_path / "build")
    result = run_cli(
        "build", "--recipe", str(DEMO_RECIPE), "--build-dir", build_dir, "--launcher", "distcc"
    )
    assert result.exit_code == 1
    assert "failed to distribute and fallbacks are disabled" in result.stderr
