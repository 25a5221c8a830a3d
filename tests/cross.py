"""The example cross-built with a toolchain buildtool ships, for the platform tests that run the
result under an emulator (wine for Windows, qemu's user mode for aarch64)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from buildtool.cmake.run import cmake_executable, ninja_executable
from tests.conftest import REPO

TOOLCHAINS = REPO / "cmake-templates" / "toolchains"
NO_AS_NEEDED_RUNTIME = "NO_AS_NEEDED\n    demo_runtime\n"


def cross_build(source: Path, build_dir: Path, toolchain: Path, *targets: str) -> Path:
    """``source`` configured with ``toolchain`` and built (``targets``, or all of them)."""
    configure: list[str | Path] = [
        cmake_executable(),
        "-S",
        str(source),
        "-B",
        str(build_dir),
        "-G",
        "Ninja",
    ]
    subprocess.run(
        [*configure, f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}",
         f"-DCMAKE_TOOLCHAIN_FILE={toolchain}"],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run([ninja_executable(), "-C", build_dir, *targets], check=True, capture_output=True)
    return build_dir


def source_without_runtime_anchor(root: Path) -> Path:
    """A copy of the example whose generated CMake links minrpc without ``no-as-needed`` for
    the runtime: the build as it would be without that rule."""
    source = root / "src"
    shutil.copytree(REPO / "src", source, ignore=shutil.ignore_patterns("build", "packaging"))
    cmakelists = source / "CMakeLists.txt"
    text = cmakelists.read_text()
    assert NO_AS_NEEDED_RUNTIME in text
    cmakelists.write_text(text.replace(NO_AS_NEEDED_RUNTIME, "NO_AS_NEEDED\n", 1))
    return source
