"""Argument plumbing and exit codes of ``main(argv)``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from buildtool import __version__
from buildtool.linkage.inputs.pool import PARALLEL_MIN_BYTES
from tests.conftest import REPO, CliRunner
from tests.test_verify import system_libraries


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
        (("verify-linkage", "--reader", "readelf"), "invalid choice: 'readelf'"),
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


def test_the_command_exits_with_its_code_and_all_its_output(tmp_path: Path) -> None:
    """``console`` ends the process at once: the report must still be complete, every worker
    gone, and the exit code main's."""
    library = next(system_libraries()).read_bytes()
    copies = PARALLEL_MIN_BYTES // len(library) + 1  # enough for a pool of workers
    for copy in range(copies):
        (tmp_path / f"lib{copy}.so").write_bytes(library)
    command = [sys.executable, "-m", "buildtool", "verify-linkage", "--no-recipe"]
    result = subprocess.run(
        [*command, "--format", "json", "--jobs", "2", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr  # no worker was cut off
    assert json.loads(result.stdout)["files_checked"] == copies
    missing = [*command, str(tmp_path / "missing")]
    bad = subprocess.run(missing, capture_output=True, text=True, check=False)
    assert bad.returncode == 2
    assert "no such file or folder" in bad.stderr


def test_quiet_hides_info(run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    loud = run_cli("configure", "--check")
    quiet = run_cli("-q", "configure", "--check")
    assert loud.exit_code == quiet.exit_code == 0
    assert "generated files are current" in loud.stderr
    assert quiet.stderr == ""


@pytest.mark.parametrize("where", ["before", "after"])
def test_verbosity_options_go_before_or_after_the_command(
    run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.chdir(REPO)
    command = ["configure", "--check"]
    quiet = run_cli(*(["-q", *command] if where == "before" else [*command, "-q"]))
    loud = run_cli(*(["-v", *command] if where == "before" else [*command, "-v"]))
    assert quiet.exit_code == loud.exit_code == 0
    assert quiet.stderr == ""
    assert "generated files are current" in loud.stderr


def test_verbosity_counts_add_up_across_both_places() -> None:
    from buildtool.cli import make_parser, verbosity

    parser = make_parser("build")
    assert verbosity(parser.parse_args_strictly(["-v", "build", "-v"])) == 2
    assert verbosity(parser.parse_args_strictly(["-v", "build", "-q", "-q"])) == -1


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (("build", "--bogus"), "usage: buildtool build "),
        (("verify-linkage", "--format", "pdf"), "usage: buildtool verify-linkage "),
        (("check-cmake",), "usage: buildtool check-cmake "),
        (("frobnicate",), "usage: buildtool [-h] [--version]"),
    ],
)
def test_a_usage_error_prints_the_usage_of_the_command_it_is_in(
    run_cli: CliRunner, argv: tuple[str, ...], usage: str
) -> None:
    result = run_cli(*argv)
    assert result.exit_code == 2
    assert result.stderr.startswith(usage)
    assert result.stderr.count("usage:") == 1


@pytest.mark.parametrize("command", ["build", "wheel", "ci", "verify-linkage"])
def test_jobs_is_spelled_and_checked_alike_on_every_command(
    run_cli: CliRunner, command: str
) -> None:
    from buildtool.cli import make_parser

    parser = make_parser(command)
    for spelling in ("-j", "--jobs"):
        argv = [command, spelling, "3"] + (["BUILD"] if command == "check-cmake" else [])
        assert parser.parse_args_strictly(argv).jobs == 3
    result = run_cli(command, "-j", "0")
    assert result.exit_code == 2
    assert "argument -j/--jobs: expected a whole number >= 1, found '0'" in result.stderr


def test_a_command_loads_only_its_own_module(good_build: Path) -> None:
    """verify-linkage starts without importing the build, wheel and ci machinery."""
    program = (
        "import sys\n"
        "from buildtool.cli import main\n"
        f"code = main(['-q', 'verify-linkage', '--no-recipe', {str(good_build)!r}])\n"
        "print(code, sorted(m for m in sys.modules if m.startswith('buildtool.commands.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    last_line = result.stdout.splitlines()[-1]  # after the report
    modules = ["buildtool.commands.common", "buildtool.commands.verify_linkage"]
    assert last_line == f"0 {modules}"


def test_a_folder_is_checked_without_the_wheel_modules(good_build: Path) -> None:
    """The wheel reader (and with it zipfile, hashlib and ISA-L) loads for wheel inputs only."""
    program = (
        "import sys\n"
        "from buildtool.cli import main\n"
        f"code = main(['-q', 'verify-linkage', '--no-recipe', {str(good_build)!r}])\n"
        "wheel = {'buildtool.linkage.inputs.wheel_archive', 'buildtool.linkage.inputs.inflate',"
        " 'isal'}\n"
        "print(code, sorted(wheel & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines()[-1] == "0 []"


def test_inputs_outside_the_working_folder_are_checked_without_the_recipe_modules(
    good_build: Path, tmp_path: Path
) -> None:
    """No recipe applies to inputs from elsewhere, so none is looked for: the recipe loader (and
    with it tomllib and the recipe model, 45 ms) never loads."""
    program = (
        "import sys\n"
        "from buildtool.cli import main\n"
        f"code = main(['-q', 'verify-linkage', {str(good_build)!r}])\n"
        "recipe = {'buildtool.recipe.load', 'buildtool.recipe.model', 'tomllib'}\n"
        "print(code, sorted(recipe & set(sys.modules)))\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=elsewhere
    )
    assert result.stdout.splitlines()[-1] == "0 []"


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    from buildtool.cli import COMMANDS, main

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
