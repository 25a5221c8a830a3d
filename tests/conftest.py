"""Shared fixtures: paths into the repository and a CLI runner."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from buildtool.cli import main

REPO = Path(__file__).resolve().parent.parent
PACKAGES = REPO / "tests" / "packages"
DEMO_RECIPE = REPO / "recipes" / "demo.toml"


def require(available: bool, reason: str) -> None:
    """Skip a test whose tool or file this machine lacks, but fail under CI: .ci/run installs
    everything the suite needs, so a skip there would hide a test that never ran."""
    if available:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must provide it (see .ci/run)")
    pytest.skip(reason)


@dataclasses.dataclass(frozen=True)
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


CliRunner = Callable[..., CliResult]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """Run ``buildtool`` in-process without colour; return its exit code and output."""
    monkeypatch.setenv("NO_COLOR", "1")

    def run(*argv: str) -> CliResult:
        code = main(list(argv))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
