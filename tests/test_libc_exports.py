"""The stored export lists of glibc and musl are the installed libraries' dynamic symbols.

The lists stand in for a foreign platform's C library (``loaders.glibc_exports``,
``loaders.musl_exports``); a list that drifted from the release it names would pass or fail
foreign wheels on names nobody exports. Each test reads the installed release with pyelftools:
glibc 2.36 is Debian 12's, musl 1.2.3 its ``musl`` package's. Elsewhere the tests skip; under
CI another release fails them, since the machine CI runs on is the one the lists follow.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from buildtool.linkage.loaders.glibc_exports import GLIBC_EXPORTS, GLIBC_FILES, GLIBC_VERSION
from buildtool.linkage.loaders.musl_exports import MUSL_EXPORTS, MUSL_VERSION
from tests.conftest import require
from tests.musl import MUSL_LOADER

GLIBC_DIR = Path("/lib/x86_64-linux-gnu")


def _exports(library: Path) -> set[str]:
    """Every global or weak name ``library`` defines in its dynamic symbol table."""
    with library.open("rb") as stream:
        table = ELFFile(stream).get_section_by_name(".dynsym")
        assert isinstance(table, SymbolTableSection), f"{library}: no .dynsym"
        return {
            symbol.name
            for symbol in table.iter_symbols()
            if symbol.name
            and symbol["st_shndx"] != "SHN_UNDEF"
            and symbol["st_info"]["bind"] in {"STB_GLOBAL", "STB_WEAK"}
        }


def _musl_version() -> str:
    """The version musl's loader prints when run without arguments ('' when absent)."""
    if not MUSL_LOADER.exists():
        return ""
    run = subprocess.run([str(MUSL_LOADER)], capture_output=True, text=True, check=False)
    found = re.search(r"^Version (\S+)$", run.stderr, re.MULTILINE)
    return found.group(1) if found else ""


def _x86_64_glibc() -> str:
    if platform.machine() != "x86_64":
        return ""
    return os.confstr("CS_GNU_LIBC_VERSION") or ""


def test_the_glibc_list_is_the_installed_releases_exports() -> None:
    installed_release = _x86_64_glibc()
    require(installed_release == f"glibc {GLIBC_VERSION}",
            f"x86_64 {installed_release or 'no glibc'} is installed, the list is glibc "
            f"{GLIBC_VERSION}'s (regenerate loaders/glibc_exports.py)")  # fmt: skip
    installed: set[str] = set()
    for name in GLIBC_FILES:
        installed |= _exports(GLIBC_DIR / name)
    assert sorted(installed - GLIBC_EXPORTS) == []
    assert sorted(GLIBC_EXPORTS - installed) == []


def test_the_musl_list_is_the_installed_releases_exports() -> None:
    require(MUSL_LOADER.exists(), "musl is not installed (apt-get install musl)")
    require(_musl_version() == MUSL_VERSION,
            f"musl {_musl_version()} is installed, the list is {MUSL_VERSION}'s "
            "(regenerate loaders/musl_exports.py)")  # fmt: skip
    installed = _exports(MUSL_LOADER)
    assert sorted(installed - MUSL_EXPORTS) == []
    assert sorted(MUSL_EXPORTS - installed) == []


def test_the_lists_hold_what_binaries_reference_and_nothing_of_the_gcc_runtime() -> None:
    for name in ("malloc", "pthread_mutexattr_init", "dlopen", "sqrt", "__libc_start_main"):
        assert name in GLIBC_EXPORTS
        assert name in MUSL_EXPORTS
    assert "__cxa_throw" not in GLIBC_EXPORTS | MUSL_EXPORTS  # libstdc++'s
    assert "crypt" in GLIBC_EXPORTS  # libcrypt.so.1 is among the files
