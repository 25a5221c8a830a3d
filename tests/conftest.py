"""Shared fixtures: paths into the repository and a CLI runner."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from buildtool.cli import main

REPO = Path(__file__).resolve().parent.parent
PACKAGES = REPO / "tests" / "packages"
DEMO_RECIPE = REPO / "recipes" / "demo.toml"


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
