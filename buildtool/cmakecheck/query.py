"""The shell of check-cmake: ask CMake for its code model and probe the toolchain.

Only the build folder is written to (the File API query files, and CMake's own re-run); the
project's sources are never touched.
"""

from __future__ import annotations

import functools
import json
import logging
import shlex
from pathlib import Path

from buildtool import process
from buildtool.cmakecheck.codemodel import Codemodel, latest_index, read_codemodel
from buildtool.cmakecheck.linkline import AsNeededState
from buildtool.errors import InputError, ToolFailed

log = logging.getLogger("buildtool")

PROBE_OBJECT = "buildtool-probe.o"
"""The input file named in the driver dry run: the linker state where it appears is the state
the project's own objects and libraries get."""


def _cache_value(cache: Path, name: str) -> str:
    prefix = f"{name}:"
    for line in cache.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(prefix):
            return line.partition("=")[2]
    return ""


def _cmake_for(cache: Path) -> str:
    """The cmake that configured the folder (any version, any generator); else PyPI's."""
    configured = _cache_value(cache, "CMAKE_COMMAND")
    if configured and Path(configured).is_file():
        return configured
    from buildtool.cmake.run import cmake_executable

    return str(cmake_executable())


def configured_cmake(build_dir: Path) -> str:
    """The cmake that configured ``build_dir`` (a re-run keeps its generator), else PyPI's."""
    return _cmake_for(build_dir / "CMakeCache.txt")


def reply_is_current(build_dir: Path) -> bool:
    """A reply with a code model, written after the last change to CMakeCache.txt."""
    reply_dir = build_dir / ".cmake" / "api" / "v1" / "reply"
    index = latest_index(reply_dir) if reply_dir.is_dir() else None
    if index is None:
        return False
    try:
        document = json.loads(index.read_bytes())
    except ValueError:
        return False
    reply = document.get("reply") if isinstance(document, dict) else None
    if (
        not isinstance(reply, dict) or "codemodel-v2" not in reply
    ):  # another client's query (an IDE's) was answered, not ours
        return False
    return index.stat().st_mtime >= (build_dir / "CMakeCache.txt").stat().st_mtime


def load_codemodel(build_dir: Path) -> Codemodel:
    """The build folder's code model: the query is written and ``cmake BUILD_DIR`` re-run when
    the reply is missing or older than the cache."""
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        raise InputError(f"{build_dir}: not a configured CMake build folder (no CMakeCache.txt)")
    if not reply_is_current(build_dir):
        from buildtool.cmake.run import write_file_api_query

        write_file_api_query(build_dir)
        log.info("asking CMake for its code model: re-running cmake on %s", build_dir)
        process.run([_cmake_for(cache), build_dir])
    return read_codemodel(build_dir / ".cmake" / "api" / "v1" / "reply")


def linker_defaults_as_needed(driver_output: str) -> bool:
    """Whether the linker command of a driver dry run (``g++ -### x.o``) has ``--as-needed`` in
    effect where ``x.o`` appears. Pure."""
    for line in reversed(driver_output.splitlines()):
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        if PROBE_OBJECT not in words:
            continue
        state = AsNeededState(False)
        for word in words[: words.index(PROBE_OBJECT)]:
            state = state.after(word)
        return state.current
    return False


@functools.cache
def toolchain_as_needed(compiler: str) -> bool:
    """Whether ``compiler`` links with ``--as-needed`` by default (Debian's and Ubuntu's gcc
    do), read from its dry run; cached per compiler. False when it cannot be asked."""
    if not compiler:
        return False
    command = [compiler, "-###", PROBE_OBJECT, "-o", "buildtool-probe"]
    try:
        output = process.run(command, stream=False)
    except ToolFailed as failed:
        log.warning("cannot ask %s how it links: %s", compiler, failed)
        return False
    return linker_defaults_as_needed(output)
