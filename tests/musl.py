"""musl's own loader as ground truth for musllinux verdicts (Debian's ``musl`` package)."""

from __future__ import annotations

import subprocess
from pathlib import Path

MUSL_LOADER = Path("/lib/ld-musl-x86_64.so.1")


def musl_load_error(library: Path) -> str:
    """What musl's loader says loading and relocating ``library`` ('': it loads). musl's libc
    is its loader, offered under the SONAME musllinux binaries need."""
    system = library.parent / "musl-system"
    system.mkdir(exist_ok=True)
    if not (system / "libc.musl-x86_64.so.1").exists():
        (system / "libc.musl-x86_64.so.1").symlink_to(MUSL_LOADER)
    run = subprocess.run([str(MUSL_LOADER), "--list", str(library)], capture_output=True,
                         text=True, check=False, env={"LD_LIBRARY_PATH": str(system)})  # fmt: skip
    return "" if run.returncode == 0 else (run.stderr.strip() or f"exit {run.returncode}")
