"""A library with thousands of initializers has each one walked (``code_walk``'s budget grows
with the initializer count): a copy of a registering object file linked after two thousand
others is still found. Past the fixed budget of before, the walk gave the late initializers no
shape at all, and two stripped libraries that abort when loaded together passed. The walk of a
big file's initializers read ahead is split between two processes (``OwnCodePart``), which
give the walk one process gives.

The libraries are built here (x86-64): the many initializers come from an assembly file (two
thousand constructors of 61 instructions each, quicker to assemble than to compile from C)."""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from buildtool.linkage.binaries import InitializerReach, code_walk
from buildtool.linkage.binaries.code_walk import (
    MAX_LIBRARY_INSTRUCTIONS,
    Depth,
    OwnCodePart,
    joined_parts,
)
from buildtool.linkage.binaries.elf import read_elf_file
from buildtool.linkage.binaries.read import read_initializers_again
from buildtool.linkage.inputs import lookups
from buildtool.linkage.inputs.decoding import Source
from buildtool.linkage.inputs.forked import Forked
from tests.builders import check, constructor_fillers, gcc, ids, refusing_registry

X86_64_LINUX = pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() != "x86_64",
    reason="builds x86-64 ELF libraries with gcc (the fillers are x86-64 assembly)",
)

FILLERS = 2100
"""Constructors before the registering one: their own code alone is past the old budget."""
STORES = 60

REGISTERING = """
void reg(const char*);
__attribute__((constructor)) static void register_flag(void) { reg("verbose_logging"); }
"""


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
    gcc(folder, folder / "libregistry.so", refusing_registry("reg"), cxx=True)
    fillers, registering = folder / "fillers.s", folder / "registering.c"
    fillers.write_text(constructor_fillers(FILLERS, STORES))
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


@pytest.fixture(scope="module")
def copied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``libbig.so`` with the registering object file last, and ``libsmall.so``, built once
    (read only by the tests)."""
    return _libraries(tmp_path_factory.mktemp("copied") / "pkg", big_registers=True)


@pytest.mark.integration
@X86_64_LINUX
def test_a_copy_past_two_thousand_initializers_is_found(copied: tuple[Path, Path]) -> None:
    big, small = copied
    assert not _runs(big.parent)  # the registry aborts on the second "verbose_logging"
    assert ids(check(big.parent)) == {("BT103", small.name)}
    facts = read_elf_file(big, big.name)
    assert facts is not None
    assert facts.initializers is not None
    own = [init.instructions for init in facts.initializers]
    assert len(own) > FILLERS
    assert sum(own) > MAX_LIBRARY_INSTRUCTIONS  # past the old budget, every one walked
    assert all(own), "an initializer was left without a shape"
    assert facts.initializers[-1].strings == ("verbose_logging",)


@pytest.mark.integration
@X86_64_LINUX
def test_thousands_of_initializers_and_no_copy_stay_clean(tmp_path: Path) -> None:
    _libraries(tmp_path / "pkg", big_registers=False)
    assert _runs(tmp_path / "pkg")
    assert ids(check(tmp_path / "pkg")) == set()


def _own_code(path: Path, deep: Depth) -> tuple[InitializerReach, ...]:
    return read_initializers_again(path.read_bytes(), path.name, deep=deep)


@pytest.mark.integration
@X86_64_LINUX
@pytest.mark.parametrize("parts", [2, 3])
def test_a_walk_in_parts_is_the_whole_walk(copied: tuple[Path, Path], parts: int) -> None:
    big = copied[0]
    whole = _own_code(big, False)
    walked = [_own_code(big, OwnCodePart(part, parts)) for part in range(parts)]
    assert [len(part) for part in walked] == [
        len(range(p, len(whole), parts)) for p in range(parts)
    ]
    assert joined_parts(walked) == whole


@pytest.mark.integration
@X86_64_LINUX
def test_a_part_past_its_share_leaves_the_whole_walk_to_one_process(
    copied: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a budget the whole walk spends (its last initializers then have no shape), a part
    runs out of its share: the split read gives the whole walk, as one process reads it."""
    big = copied[0]
    monkeypatch.setattr(code_walk, "MAX_LIBRARY_INSTRUCTIONS", 20_000)
    monkeypatch.setattr(code_walk, "OWN_CODE_INSTRUCTIONS", 8)
    whole = _own_code(big, False)
    assert not whole[-1].instructions  # the budget ran out
    with pytest.raises(code_walk.OverBudget):
        _own_code(big, OwnCodePart(0, 2))
    monkeypatch.setattr(lookups, "SPLIT_WALK_MIN_BYTES", 0)
    source = Source(str(big), big.name, big.stat().st_size)
    lookup = lookups.InitializerLookup(split=True)
    try:
        assert lookup(source) == whole
    finally:
        lookup.close()


@pytest.mark.integration
@X86_64_LINUX
def test_a_big_files_initializers_read_ahead_are_walked_in_two_processes(
    copied: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    big = copied[0]
    source = Source(str(big), big.name, big.stat().st_size)
    alone = lookups.InitializerLookup()
    try:
        whole = alone(source)
    finally:
        alone.close()
    monkeypatch.setattr(lookups, "SPLIT_WALK_MIN_BYTES", 0)
    forks: list[object] = []
    start = Forked.start

    def counted(work: Callable[[], Any], kind: type[Any]) -> Any:
        forks.append(kind)
        return start(work, kind)

    monkeypatch.setattr(Forked, "start", counted)
    split = lookups.InitializerLookup(split=True)
    try:
        assert split(source) == whole
    finally:
        split.close()
    assert forks == [tuple]  # the second half's child
