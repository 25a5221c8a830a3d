"""The example cross-built with a toolchain, for the platform tests: Windows (run under wine),
Linux aarch64 (run under qemu's user mode) and macOS (linked by lld's Mach-O linker)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from buildtool.cmake.run import cmake_executable, ninja_executable
from tests.conftest import REPO, edited_example

TOOLCHAINS = REPO / "cmake-templates" / "toolchains"
NO_AS_NEEDED_RUNTIME = "NO_AS_NEEDED\n    demo_runtime\n"
ELF_ONLY_FLAGS = ("-z,relro", "-z,now", "--enable-new-dtags", "--push-state", "--no-as-needed")
"""Flags only GNU ld on ELF understands; a PE or Mach-O link line must carry none of them."""


def cross_build(
    source: Path, build_dir: Path, toolchain: Path, *targets: str, defines: Sequence[str] = ()
) -> Path:
    """``source`` configured with ``toolchain`` (and the ``-D`` entries ``defines``), then built
    (``targets``, or everything)."""
    configure = [str(cmake_executable()), "-S", str(source), "-B", str(build_dir), "-G", "Ninja"]
    subprocess.run(
        [*configure, f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}",
         f"-DCMAKE_TOOLCHAIN_FILE={toolchain}", *defines],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run([ninja_executable(), "-C", build_dir, *targets], check=True, capture_output=True)
    return build_dir


def source_without_runtime_anchor(root: Path) -> Path:
    """A copy of the example whose generated CMake links minrpc without ``no-as-needed`` for
    the runtime: the build as it would be without that rule."""
    return edited_example(root, NO_AS_NEEDED_RUNTIME, "NO_AS_NEEDED\n")
