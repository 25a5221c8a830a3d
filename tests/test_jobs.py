"""``-j/--jobs`` and ``CMAKE_BUILD_PARALLEL_LEVEL``: how many compiles ninja really runs at once,
measured by a compiler launcher that counts the compiles running beside it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from buildtool.cmake.run import parallel_jobs
from buildtool.errors import UsageError
from tests.conftest import REPO, CliRunner

COUNTING_LAUNCHER = """#!/bin/sh
# counts the compiles running at once: one file per running compile, the count on each start
touch "{dir}/running.$$"
ls "{dir}" | grep -c '^running' >> "{dir}/counts"
sleep 0.3
"$@"
status=$?
rm -f "{dir}/running.$$"
exit $status
"""


def test_the_flag_wins_over_the_environment() -> None:
    assert parallel_jobs(3, {"CMAKE_BUILD_PARALLEL_LEVEL": "7"}) == 3
    assert parallel_jobs(None, {"CMAKE_BUILD_PARALLEL_LEVEL": " 7 "}) == 7
    assert parallel_jobs(None, {"CMAKE_BUILD_PARALLEL_LEVEL": ""}) is None
    assert parallel_jobs(None, {}) is None
    for bad in ("0", "two", "-1", "1.5"):
        with pytest.raises(UsageError, match="CMAKE_BUILD_PARALLEL_LEVEL"):
            parallel_jobs(None, {"CMAKE_BUILD_PARALLEL_LEVEL": bad})


def test_bad_jobs_flag_is_a_usage_error(run_cli: CliRunner) -> None:
    result = run_cli("build", "-j", "0")
    assert result.exit_code == 2
    assert "expected a whole number >= 1, found '0'" in result.stderr


@pytest.mark.integration
def test_ninja_runs_as_many_compiles_as_asked(
    tmp_path: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(REPO / "src", tmp_path / "src", ignore=shutil.ignore_patterns("build"))
    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    recipe = str(tmp_path / "recipes" / "demo.toml")
    counts = tmp_path / "running"
    counts.mkdir()
    launcher = tmp_path / "count-compiles"
    launcher.write_text(COUNTING_LAUNCHER.format(dir=counts))
    launcher.chmod(0o755)

    def build(build_dir: str, *jobs: str) -> list[int]:
        (counts / "counts").unlink(missing_ok=True)
        result = run_cli("build", "--recipe", recipe, "--build-dir", str(tmp_path / build_dir),
                         "-D", f"CMAKE_CXX_COMPILER_LAUNCHER={launcher}", *jobs)  # fmt: skip
        assert result.exit_code == 0, result.stderr
        return [int(line) for line in (counts / "counts").read_text().split()]

    monkeypatch.setenv("CMAKE_BUILD_PARALLEL_LEVEL", "3")
    one_at_a_time = build("b1", "-j", "1")  # the flag wins over the environment
    assert len(one_at_a_time) >= 6
    assert max(one_at_a_time) == 1
    three = build("b3")  # the environment alone
    assert max(three) == 3
