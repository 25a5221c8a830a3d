"""Argument plumbing and exit codes of ``main(argv)``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from buildtool import __version__
from tests.conftest import REPO, CliRunner


def test_version(run_cli: CliRunner, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        run_cli("--version")
    assert caught.value.code == 0
    assert capsys.readouterr().out == f"buildtool {__version__}\n"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ((), "the following arguments are required: COMMAND"),
        (("frobnicate",), "invalid choice: 'frobnicate'"),
        (("configure", "--variant", "tiny"), "invalid choice: 'tiny'"),
        (("configure", "--bogus"), "unrecognized arguments: --bogus"),
    ],
)
def test_bad_arguments_exit_2_without_traceback(
    run_cli: CliRunner, argv: tuple[str, ...], fragment: str
) -> None:
    result = run_cli(*argv)
    assert result.exit_code == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_define_is_a_usage_error(run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    result = run_cli("configure", "-D", "NOEQUALS", "--build-dir", "/nonexistent/x")
    assert result.exit_code == 2
    assert "-D expects NAME=VALUE, found 'NOEQUALS'" in result.stderr


def test_python_dash_m_entry_point() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "buildtool", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0
    assert completed.stdout.strip() == f"buildtool {__version__}"


def test_quiet_hides_info(run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    loud = run_cli("configure", "--check")
    quiet = run_cli("-q", "configure", "--check")
    assert loud.exit_code == quiet.exit_code == 0
    assert "generated files are current" in loud.stderr
    assert quiet.stderr == ""
