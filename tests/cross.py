"""The example cross-built with a toolchain, for the platform tests: Windows (run under wine),
Linux aarch64 (run under qemu's user mode) and macOS (linked by lld's Mach-O linker)."""

from __future__ import annotations

import random
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from buildtool.cli import main
from buildtool.cmake.run import cmake_executable, ninja_executable
from tests.conftest import DEMO_RECIPE, REPO, edited_example

TOOLCHAINS = REPO / "cmake-templates" / "toolchains"
NO_AS_NEEDED_RUNTIME = "NO_AS_NEEDED\n    demo_runtime\n"
ELF_ONLY_FLAGS = ("-z,relro", "-z,now", "--enable-new-dtags", "--push-state", "--no-as-needed")
"""Flags only GNU ld on ELF understands; a PE or Mach-O link line must carry none of them."""


def elf_only_link_flags(build_dir: Path) -> list[tuple[str, str]]:
    """(flag, link line) of every ELF-only flag (or ``$ORIGIN``) on a link line of the build's
    ``build.ninja``; the build must have link lines."""
    lines = [
        line
        for line in (build_dir / "build.ninja").read_text().splitlines()
        if line.strip().startswith(("LINK_FLAGS", "LINK_LIBRARIES", "LINK_PATH"))
    ]
    assert lines
    return [(flag, line) for line in lines for flag in (*ELF_ONLY_FLAGS, "$ORIGIN") if flag in line]


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


def buildtool_cross_build(build_dir: Path, toolchain: str) -> Path:
    """The example, full variant, built by ``buildtool build --toolchain`` into ``build_dir``."""
    argv = ["-q", "build", "--recipe", str(DEMO_RECIPE), "--build-dir", str(build_dir)]
    assert main([*argv, "--toolchain", toolchain]) == 0
    return build_dir


def damaged_copies(data: bytes, count: int = 300, seed: int = 20261204) -> Iterator[bytes]:
    """``count`` copies of a binary with a few bytes changed at random (a fixed seed): in its
    headers and load commands (the first 4 KiB), or in the tables at its end that readers walk
    (symbols, strings, imports)."""
    rng = random.Random(seed)
    for _ in range(count):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            near_end = rng.random() < 0.3
            at = len(data) - 1 - rng.randrange(8192) if near_end else rng.randrange(4096)
            damaged[at] = rng.randrange(256)
        yield bytes(damaged)
