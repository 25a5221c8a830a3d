"""Subprocesses: never a shell, a minimal explicit environment, and failures that show the command
line and the tail of the output."""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from pathlib import Path

import pytest

from buildtool import process
from buildtool.errors import ToolFailed
from tests.conftest import REPO

PRINT_ARGS = "import json, sys; print(json.dumps(sys.argv[1:]))"
PRINT_ENV = "import json, os; print(json.dumps(dict(os.environ)))"


def test_arguments_reach_the_tool_literally(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hostile = ["a;b", f"$(touch {marker})", f"`touch {marker}`", "x && y", "*", "'\"", "|", ""]
    output = process.run([sys.executable, "-c", PRINT_ARGS, *hostile], cwd=tmp_path, stream=False)
    assert json.loads(output) == hostile
    assert not marker.exists()


def test_only_the_minimal_environment_reaches_the_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUILDTOOL_TEST_SECRET", "do-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "do-not-leak")  # AWS_* reach sccache on purpose
    monkeypatch.setenv("LD_PRELOAD", "/nonexistent/preload.so")
    monkeypatch.setenv("CCACHE_DIR", "/kept/on/purpose")
    seen = json.loads(process.run([sys.executable, "-c", PRINT_ENV], stream=False))
    assert "do-not-leak" not in seen.values()
    assert "LD_PRELOAD" not in seen
    assert seen["CCACHE_DIR"] == "/kept/on/purpose"
    assert seen["PATH"]
    allowed = set(process.PASSED_ENVIRONMENT)
    extra = {name for name in seen if name not in allowed and not name.startswith(
        process.PASSED_PREFIXES)}  # fmt: skip
    assert extra <= {"LC_CTYPE", "PWD", "SHLVL", "_"}, extra  # what the child itself may add


def test_failure_carries_the_command_and_the_tail_of_the_output() -> None:
    script = "import sys\nfor i in range(100): print(f'line {i}')\nsys.exit(3)"
    command = [sys.executable, "-c", script, "with space"]
    with pytest.raises(ToolFailed) as raised:
        process.run(command, stream=False)
    error = raised.value
    assert error.returncode == 3
    assert error.exit_code == 1
    message = str(error)
    assert message.startswith(f"command failed with exit code 3: {sys.executable} -c ")
    assert "with space" in message
    tail = error.output_tail.splitlines()
    assert tail == [f"line {i}" for i in range(100 - process.TAIL_LINES, 100)]
    assert "line 99" in message
    assert "line 0\n" not in message


def test_a_missing_tool_is_a_tool_failure(tmp_path: Path) -> None:
    with pytest.raises(ToolFailed, match="exit code 127") as raised:
        process.run([tmp_path / "no-such-tool", "--version"])
    assert str(tmp_path / "no-such-tool") in str(raised.value)


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def test_no_module_asks_for_a_shell() -> None:
    """Static proof for the whole package: no shell=True, os.system, os.popen or shell helpers."""
    offenders = []
    for path in sorted((REPO / "buildtool").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for call in _calls(tree):
            name = ast.unparse(call.func)
            shell = any(k.arg == "shell" and ast.unparse(k.value) != "False" for k in call.keywords)
            if shell or name in ("os.system", "os.popen", "subprocess.getoutput",
                                 "subprocess.getstatusoutput"):  # fmt: skip
                offenders.append(f"{path.relative_to(REPO)}:{call.lineno}: {ast.unparse(call)}")
    assert offenders == []


def test_a_streamed_failure_is_not_printed_twice(caplog: pytest.LogCaptureFixture) -> None:
    """A compile error streamed as it happened is not repeated under the failure; with the
    stream hidden (-q), the failure carries the tail instead."""
    script = "import sys\nprint('main.cc:3:5: ' + 'err' + 'or: nope')\nsys.exit(1)"
    command = [sys.executable, "-c", script]
    with caplog.at_level("INFO", logger="buildtool"), pytest.raises(ToolFailed) as raised:
        process.run(command)
    streamed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("  ")]
    assert streamed == ["  main.cc:3:5: error: nope"]
    assert "error: nope" not in str(raised.value)
    assert str(raised.value).endswith("(its output is above)")
    with caplog.at_level("WARNING", logger="buildtool"), pytest.raises(ToolFailed) as hidden:
        process.run(command)
    assert "main.cc:3:5: error: nope" in str(hidden.value)


def test_a_filter_that_hangs_is_ended_and_its_caller_does_without() -> None:
    echo = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read().upper())"]
    assert process.filter_text(echo, "abc\n", timeout=30, env={}) == "ABC\n"
    hang = [sys.executable, "-c", "import time; time.sleep(60)"]
    assert process.filter_text(hang, "x", timeout=0.5, env={}) is None
    failing = [sys.executable, "-c", "raise SystemExit(3)"]
    assert process.filter_text(failing, "x", timeout=30, env={}) is None
    assert process.filter_text(["/nonexistent/filter"], "x", timeout=30, env={}) is None


def test_only_the_process_module_starts_processes() -> None:
    """Every child process goes through buildtool/process.py (its process group, its
    environment, its logging): no other module calls subprocess or os.exec*/spawn*."""
    starters = re.compile(
        r"\b(subprocess\.(run|Popen|call|check_call|check_output)|os\.(exec|spawn|posix_spawn|fork)\w*)\("
    )
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted((REPO / "buildtool").rglob("*.py"))
        if path.name != "process.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if starters.search(line)
    ]
    assert offenders == []


def test_a_quiet_tool_streams_at_debug_and_fails_with_its_tail(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A repair tool's chatter (auditwheel's INFO lines) is shown with -v only; when it fails,
    the failure carries its last lines."""
    import logging

    script = "import sys\nprint('INFO:auditwheel.main_repair:' + 'repairing')\nsys.exit(2)"
    with caplog.at_level("INFO", logger="buildtool"), pytest.raises(ToolFailed) as raised:
        process.run([sys.executable, "-c", script], output_level=logging.DEBUG)
    assert not [r for r in caplog.records if r.getMessage().startswith("  INFO:")]
    assert "INFO:auditwheel.main_repair:repairing" in str(raised.value)
    with caplog.at_level("DEBUG", logger="buildtool"):
        process.run([sys.executable, "-c", "print('chatter')"], output_level=logging.DEBUG)
    assert "  chatter" in [r.getMessage() for r in caplog.records]


def _read_all(pipe: int) -> bytes:
    chunks = []
    while chunk := os.read(pipe, 4096):
        chunks.append(chunk)
    os.close(pipe)
    return b"".join(chunks)


def _fail(_pipe: int) -> None:
    raise RuntimeError("in the child only")


def test_a_forked_child_writes_to_its_pipe_and_exits_without_the_parents_cleanup(
    capfd: pytest.CaptureFixture[str],
) -> None:
    shared = bytearray(b"as the parent had it")
    forked = process.fork_with_pipe(lambda pipe: os.write(pipe, bytes(shared)))
    assert forked is not None
    pid, pipe = forked
    assert _read_all(pipe) == b"as the parent had it"
    assert os.waitpid(pid, 0)[1] == 0
    failing = process.fork_with_pipe(_fail)
    assert failing is not None
    assert _read_all(failing[1]) == b""  # nothing written: the reader sees end of file
    assert os.waitstatus_to_exitcode(os.waitpid(failing[0], 0)[1]) == 1
    assert "in the child only" not in capfd.readouterr().err  # no traceback, no pytest teardown
