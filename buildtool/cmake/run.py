"""Running the PyPI cmake and ninja, and reading CMake's File API reply."""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from buildtool.errors import InputError, UsageError
from buildtool.plan import CMAKE_TRUE


def cmake_executable() -> Path:
    """The cmake from the ``cmake`` package on PyPI (never the system's)."""
    try:
        import cmake
    except ImportError:
        raise UsageError("the 'cmake' package is not installed: pip install cmake") from None
    return Path(cmake.CMAKE_BIN_DIR) / "cmake"


def ctest_executable() -> Path:
    """The ctest beside the PyPI cmake."""
    return cmake_executable().with_name("ctest")


def ctest_command(build_dir: Path, tests_expected: bool = True) -> list[str | Path]:
    """Run every test of a configured and built folder, showing a failing test's output.

    With ``tests_expected``, a folder without tests is an error (a test lost by the build);
    without, it passes (a recipe that declares no tests, whose CMake may still add some).
    """
    no_tests = "--no-tests=error" if tests_expected else "--no-tests=ignore"
    return [ctest_executable(), "--test-dir", build_dir, "--output-on-failure", no_tests]


def ninja_executable() -> Path:
    """The ninja from the ``ninja`` package on PyPI (never the system's)."""
    try:
        import ninja
    except ImportError:
        raise UsageError("the 'ninja' package is not installed: pip install ninja") from None
    return Path(ninja.BIN_DIR) / "ninja"


@dataclasses.dataclass(frozen=True)
class Target:
    """A target as CMake's File API reports it."""

    name: str
    type: str
    """``SHARED_LIBRARY``, ``EXECUTABLE``, ``OBJECT_LIBRARY``, ..."""
    artifacts: tuple[str, ...]
    """Paths of what it builds, relative to the build folder."""


def configure_command(
    source_dir: Path,
    build_dir: Path,
    defines: Mapping[str, str],
    extra_args: Sequence[str] = (),
) -> list[str | Path]:
    """The ``cmake`` configure command line, with PyPI's ninja as the generator's program.

    ``extra_args`` (``CMAKE_ARGS``) come before the ``defines``, so buildtool's and the command
    line's ``-D`` win over the environment's.
    """
    command: list[str | Path] = [
        cmake_executable(),
        "-S",
        source_dir,
        "-B",
        build_dir,
        "-G",
        "Ninja",
        f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}",
        *extra_args,
    ]
    command += [f"-D{name}={value}" for name, value in sorted(defines.items())]
    return command


WHEEL_BUILD_UNSET: tuple[str, ...] = ("-USKBUILD*",)
"""A plain configure of a folder that scikit-build-core built a wheel in removes the cache entries
it left (``SKBUILD=2`` and the rest, which switch the install rules to the wheel's layout).
Compiles do not read them: the compile commands stay the same, so ninja compiles nothing again."""


def environment_cmake_args(environ: Mapping[str, str]) -> list[str]:
    """``CMAKE_ARGS`` split as a shell would (scikit-build-core reads it the same way for wheels).

    A value a shell could not split (an unclosed quote) is a usage error naming the variable.
    """
    value = environ.get("CMAKE_ARGS", "")
    try:
        return [arg for arg in shlex.split(value) if arg]
    except ValueError as error:
        raise UsageError(f"CMAKE_ARGS: cannot split {value!r} as a shell would: {error}") from None


def write_file_api_query(build_dir: Path) -> None:
    """Ask CMake for its code model; it answers under ``.cmake/api/v1/reply`` on configure."""
    from scikit_build_core.file_api.query import stateless_query

    stateless_query(build_dir)


def read_targets(build_dir: Path) -> tuple[Target, ...]:
    """Targets of the last configure, from the File API reply (not from scraping output)."""
    from scikit_build_core.file_api.reply import load_reply_dir

    reply_dir = build_dir / ".cmake" / "api" / "v1" / "reply"
    if not any(reply_dir.glob("index-*.json")):
        raise InputError(f"{reply_dir}: no File API reply; configure the build folder first")
    try:
        codemodel = load_reply_dir(reply_dir).reply.codemodel_v2
    except Exception as error:
        raise InputError(f"{reply_dir}: cannot read CMake's File API reply: {error}") from None
    if codemodel is None or not codemodel.configurations:
        raise InputError(f"{reply_dir}: the File API reply has no code model; configure again")
    return tuple(
        Target(
            name=target.name,
            type=target.type,
            artifacts=tuple(str(item.path) for item in target.artifacts),
        )
        for target in codemodel.configurations[0].targets
    )


PARALLEL_LEVEL = "CMAKE_BUILD_PARALLEL_LEVEL"
"""CMake's variable for how many jobs ``cmake --build`` runs; buildtool honours it too."""


def parallel_jobs(flag: int | None, environ: Mapping[str, str]) -> int | None:
    """How many compile jobs to run: ``-j/--jobs`` when given, else ``CMAKE_BUILD_PARALLEL_LEVEL``,
    else None (ninja's own choice: the number of cores plus two)."""
    if flag is not None:
        return flag
    text = environ.get(PARALLEL_LEVEL, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"{PARALLEL_LEVEL}={text!r}: expected a whole number of jobs >= 1")
    return int(text)


def build_command(
    build_dir: Path, targets: Sequence[str] = (), jobs: int | None = None
) -> list[str | Path]:
    """ninja with its own progress lines (``[3/12] Building CXX object ...``), running ``jobs``
    compiles at once (None: ninja's default)."""
    limit: list[str | Path] = [] if jobs is None else ["-j", str(jobs)]
    return [ninja_executable(), "-C", build_dir, *limit, *targets]


def cached_values(build_dir: Path, names: Sequence[str]) -> dict[str, str]:
    """The values ``names`` have in a configured folder's ``CMakeCache.txt`` (those it holds);
    nothing when the folder was never configured."""
    try:
        lines = (build_dir / "CMakeCache.txt").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    wanted = set(names)
    values: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition("=")
        name = key.split(":", 1)[0]
        if sep and name in wanted:
            values[name] = value.strip()
    return values


def cached_option_values(build_dir: Path, names: Sequence[str]) -> dict[str, bool]:
    """The boolean values ``names`` have in a configured folder's ``CMakeCache.txt`` (those it
    holds); nothing when the folder was never configured."""
    cached = cached_values(build_dir, names)
    return {name: value.upper() in CMAKE_TRUE for name, value in cached.items()}
