"""A library with thousands of initializers has each one walked (``code_walk``'s budget grows
with the initializer count): a copy of a registering object file linked after two thousand
others is still found. Past the fixed budget of before, the walk gave the late initializers no
shape at all, and two stripped libraries that abort when loaded together passed.

The libraries are built here (x86-64): the many initializers come from an assembly file (two
thousand constructors of 61 instructions each, quicker to assemble than to compile from C)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from buildtool.linkage.binaries.code_walk import MAX_LIBRARY_INSTRUCTIONS
from buildtool.linkage.binaries.elf import read_elf_file
from tests.builders import check, ids, lib

FILLERS = 2100
"""Constructors before the registering one: their own code alone is past the old budget."""
STORES = 60

REGISTRY = """
#include <stdlib.h>
#include <string.h>
static const char* names[16];
static int count;
void reg(const char* name) {
    for (int i = 0; i < count; ++i) if (!strcmp(names[i], name)) abort();
    names[count++] = name;
}
"""

REGISTERING = """
void reg(const char*);
__attribute__((constructor)) static void register_flag(void) { reg("verbose_logging"); }
"""


def _fillers(count: int) -> str:
    """Assembly of ``count`` constructors, each storing ``STORES`` numbers (static: local
    symbols, gone once stripped)."""
    lines = ["\t.local fill_cell", "\t.comm fill_cell,256,32", "\t.text"]
    for index in range(count):
        lines += [f"\t.type fill_{index}, @function", f"fill_{index}:"]
        lines += [f"\tmovl ${index + k}, fill_cell+{4 * k}(%rip)" for k in range(STORES)]
        lines += ["\tret", f"\t.size fill_{index}, .-fill_{index}"]
        lines += ['\t.section .init_array,"aw"', "\t.align 8", f"\t.quad fill_{index}", "\t.text"]
    lines.append('\t.section .note.GNU-stack,"",@progbits')
    return "\n".join(lines) + "\n"


def _stripped_library(folder: Path, name: str, *objects: Path) -> Path:
    out = folder / f"lib{name}.so"
    command = ["gcc", "-shared", "-o", str(out), f"-Wl,-soname,lib{name}.so", *map(str, objects)]
    command += [f"-L{folder}", "-lregistry", "-Wl,-rpath,$ORIGIN"]
    subprocess.run(command, check=True, capture_output=True)
    subprocess.run(["strip", "--strip-all", str(out)], check=True)
    return out


def _libraries(folder: Path, big_registers: bool) -> tuple[Path, Path]:
    """``libbig.so``: the fillers, then (``big_registers``) the registering object file;
    ``libsmall.so``: the registering object file alone (both stripped); ``app``, which needs
    both."""
    folder.mkdir()
    lib(folder, "registry", REGISTRY)
    fillers, registering = folder / "fillers.s", folder / "registering.c"
    fillers.write_text(_fillers(FILLERS))
    registering.write_text(REGISTERING)
    objects = []
    for source in (fillers, registering):
        objects.append(source.with_suffix(".o"))
        subprocess.run(["gcc", "-c", "-fPIC", "-O1", "-o", str(objects[-1]), str(source)],
                       check=True, capture_output=True)  # fmt: skip
    big = _stripped_library(folder, "big", *(objects if big_registers else objects[:1]))
    small = _stripped_library(folder, "small", objects[1])
    program = folder / "main.c"
    program.write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-o", str(folder / "app"), str(program), "-Wl,--no-as-needed",
                    f"-L{folder}", "-lbig", "-lsmall", "-Wl,-rpath,$ORIGIN"],
                   check=True, capture_output=True)  # fmt: skip
    return big, small


def _runs(folder: Path) -> bool:
    return subprocess.run([str(folder / "app")], check=False).returncode == 0


@pytest.mark.integration
@pytest.mark.skipif(sys.platform != "linux", reason="builds ELF libraries with gcc")
def test_a_copy_past_two_thousand_initializers_is_found(tmp_path: Path) -> None:
    big, small = _libraries(tmp_path / "pkg", big_registers=True)
    assert not _runs(tmp_path / "pkg")  # the registry aborts on the second "verbose_logging"
    assert ids(check(tmp_path / "pkg")) == {("BT103", small.name)}
    facts = read_elf_file(big, big.name)
    assert facts is not None
    assert facts.initializers is not None
    own = [init.instructions for init in facts.initializers]
    assert len(own) > FILLERS
    assert sum(own) > MAX_LIBRARY_INSTRUCTIONS  # past the old budget, every one walked
    assert all(own), "an initializer was left without a shape"
    assert facts.initializers[-1].strings == ("verbose_logging",)


@pytest.mark.integration
@pytest.mark.skipif(sys.platform != "linux", reason="builds ELF libraries with gcc")
def test_thousands_of_initializers_and_no_copy_stay_clean(tmp_path: Path) -> None:
    _libraries(tmp_path / "pkg", big_registers=False)
    assert _runs(tmp_path / "pkg")
    assert ids(check(tmp_path / "pkg")) == set()
