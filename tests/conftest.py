"""Shared fixtures: paths into the repository and a CLI runner."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from buildtool.cli import main
from buildtool.cmake.run import cmake_executable, ninja_executable

REPO = Path(__file__).resolve().parent.parent
PACKAGES = REPO / "tests" / "packages"
DEMO_RECIPE = REPO / "recipes" / "demo.toml"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--realwheels",
        action="store_true",
        help="run the tests marked realwheels (they download third-party wheels)",
    )


def _asked_for(config: pytest.Config, marker: str) -> bool:
    if marker == "realwheels":
        return bool(config.getoption("--realwheels"))
    return marker in (config.option.markexpr or "")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that download third-party wheels (``realwheels``: hundreds of MB) or projects
    (``realprojects``: downloaded and built) run only when asked for: ``--realwheels`` (``nox -s
    realwheels``) and ``-m realprojects`` (``nox -s realprojects``)."""
    left_out = [m for m in ("realwheels", "realprojects") if not _asked_for(config, m)]
    kept = [i for i in items if not any(i.get_closest_marker(m) for m in left_out)]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept


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


# --- builds of the example shared by the test modules (each is built once per session) ------


@pytest.fixture(scope="session")
def good_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example, full variant, built with ``buildtool build``."""
    build_dir = tmp_path_factory.mktemp("good") / "build"
    argv = ["-q", "build", "--recipe", str(DEMO_RECIPE), "--build-dir", str(build_dir)]
    assert main(argv) == 0
    return build_dir


DUPLICATE_GEMM = ("compiler/build.cc", "compiler/build.cc\n      $<TARGET_OBJECTS:demo_gemm>")
"""The edit that links gemm into the compiler too: the TVM fpA_intB_gemm bug."""


def edited_example(root: Path, old: str, new: str) -> Path:
    """A copy of the example under ``root`` whose generated CMakeLists.txt has ``old``
    replaced by ``new`` (once)."""
    source = root / "src"
    shutil.copytree(REPO / "src", source, ignore=shutil.ignore_patterns("build", "packaging"))
    cmakelists = source / "CMakeLists.txt"
    text = cmakelists.read_text()
    assert old in text
    cmakelists.write_text(text.replace(old, new, 1))
    return source


def build_with_edited_cmake(tmp_path: Path, old: str, new: str) -> Path:
    """The example built from a hand-edited copy of its generated CMakeLists.txt."""
    source = edited_example(tmp_path, old, new)
    build_dir = tmp_path / "build"
    cmake = cmake_executable()
    subprocess.run(
        [
            cmake,
            "-S",
            source,
            "-B",
            build_dir,
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run([ninja_executable(), "-C", build_dir], check=True, capture_output=True)
    return build_dir


@pytest.fixture(scope="session")
def duplicate_gemm_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gemm linked into the compiler too: the TVM fpA_intB_gemm bug."""
    return build_with_edited_cmake(tmp_path_factory.mktemp("dup"), *DUPLICATE_GEMM)
