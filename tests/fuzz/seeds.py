"""Real ELF files for the fuzz harness to mutate, built with the system's gcc, g++ and ld.

Each seed exercises a different reading path: GNU and SysV hash tables, symbol versions (both
definitions and requirements), C++ unique and weak symbols, a PIE executable with an interpreter,
a 32-bit library, a stripped file, and copies without section headers (symbols found through
``PT_DYNAMIC`` alone).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

VERSIONED_C = r"""
#include <stdio.h>
extern void optional_hook(void) __attribute__((weak));
__asm__(".symver greet_v1, greet@LIBFUZZ_1.0");
__asm__(".symver greet_v2, greet@@LIBFUZZ_2.0");
int greet_v1(void) { return 1; }
int greet_v2(void) { if (optional_hook) optional_hook(); return puts("fuzz.registered"); }
"""

VERSION_MAP = """
LIBFUZZ_1.0 { global: greet; local: *; };
LIBFUZZ_2.0 { global: greet; } LIBFUZZ_1.0;
"""

CXX_SOURCE = r"""
#include <cstdio>
template <typename T> struct Registry { static int count; };
template <typename T> int Registry<T>::count = 0;
inline int& counter() { static int c = 0; return c; }
int bump() { return ++counter() + ++Registry<int>::count; }
struct Registrar { explicit Registrar(const char* n) { std::puts(n); } };
static Registrar registrar("fuzz.static_init");
"""

APP_C = "int greet(void);\nint main(void) { return greet() - 2; }\n"

GOOD_C = "int good_one(void) { return 1; }\n"

GOOD_NAME = "libgood.so"
"""The well-formed neighbour every case puts beside its mutant."""

GOOD_RPATH = "/opt/fuzz-sentinel"
"""An absolute DT_RPATH that resolves nothing: its two findings (BT113, BT111) prove the good
file was checked."""

SKIP_REASON = "the fuzz seeds need gcc, g++, ld and strip"


def toolchain_available() -> bool:
    return all(shutil.which(tool) for tool in ("gcc", "g++", "ld", "strip"))


def _run(folder: Path, *command: str) -> None:
    subprocess.run(command, cwd=folder, check=True, capture_output=True)


def _without_section_headers(data: bytes) -> bytes:
    """The same file with e_shoff, e_shnum and e_shstrndx zeroed (64-bit little endian)."""
    out = bytearray(data)
    struct.pack_into("<Q", out, 0x28, 0)
    struct.pack_into("<HH", out, 0x3C, 0, 0)
    return bytes(out)


def _build_c(folder: Path) -> None:
    (folder / "versioned.c").write_text(VERSIONED_C, encoding="utf-8")
    (folder / "versioned.map").write_text(VERSION_MAP, encoding="utf-8")
    common = ("-shared", "-fPIC", "-O1", "versioned.c", "-Wl,--version-script=versioned.map")
    _run(folder, "gcc", *common, "-o", "libgnuhash.so", "-Wl,-soname,libgnuhash.so.1",
         "-Wl,-z,now", "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    _run(folder, "gcc", *common, "-o", "libsysv.so", "-Wl,--hash-style=sysv")
    _run(folder, "gcc", "-fPIE", "-pie", "app.c", "-o", "app", "-L.", "-lgnuhash",
         "-Wl,-rpath,$ORIGIN")  # fmt: skip
    _run(folder, "strip", "-o", "libstripped.so", "libgnuhash.so")


def _build_other(folder: Path) -> None:
    (folder / "registry.cc").write_text(CXX_SOURCE, encoding="utf-8")
    _run(folder, "g++", "-shared", "-fPIC", "-O1", "registry.cc", "-o", "libregistry.so")
    (folder / "small32.c").write_text(GOOD_C.replace("good_one", "small"), encoding="utf-8")
    _run(folder, "gcc", "-m32", "-c", "-fPIC", "small32.c", "-o", "small32.o")
    _run(folder, "ld", "-m", "elf_i386", "-shared", "-soname", "libsmall32.so", "small32.o",
         "-o", "libsmall32.so")  # fmt: skip


def build_seeds(folder: Path) -> dict[str, bytes]:
    """Every seed by name (its file name in a mutant's folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "app.c").write_text(APP_C, encoding="utf-8")
    _build_c(folder)
    _build_other(folder)
    names = ("libgnuhash.so", "libsysv.so", "app", "libstripped.so", "libregistry.so",
             "libsmall32.so")  # fmt: skip
    seeds = {name: (folder / name).read_bytes() for name in names}
    seeds["libheaderless.so"] = _without_section_headers(seeds["libgnuhash.so"])
    seeds["libheaderless_sysv.so"] = _without_section_headers(seeds["libsysv.so"])
    return seeds


def build_good(folder: Path) -> bytes:
    """The neighbour: a small library that is always read and always gives BT113 and BT111."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "good.c").write_text(GOOD_C, encoding="utf-8")
    _run(folder, "gcc", "-shared", "-fPIC", "good.c", "-o", GOOD_NAME,
         f"-Wl,--disable-new-dtags,-rpath,{GOOD_RPATH}")  # fmt: skip
    return (folder / GOOD_NAME).read_bytes()
