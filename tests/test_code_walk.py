"""The initializer walk's table of instruction texts (``x86_text.KNOWN``): a memo, so a
walk reads the same whether its texts were worked out before, now, or thrown away midway."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.binaries import x86_text as walk
from buildtool.linkage.binaries.elf import read_elf_file
from tests.conftest import require

PROTOBUF = Path("/usr/lib/x86_64-linux-gnu/libprotobuf.so")
"""A hundred initializers registering ``.proto`` files (libprotobuf-dev)."""


def _walked(path: Path) -> BinaryFacts:
    facts = read_elf_file(path, path.name)
    assert facts is not None
    return facts


def test_the_walk_reads_the_same_with_a_cold_a_restarted_and_a_warm_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require(PROTOBUF.exists(), f"{PROTOBUF} is missing (libprotobuf-dev)")
    walk.KNOWN.clear()
    cold = _walked(PROTOBUF)
    texts = len(walk.KNOWN)
    assert cold.initializers
    assert texts > 100  # the walk went through the table
    warm = _walked(PROTOBUF)
    assert len(walk.KNOWN) == texts  # nothing new: every text was known
    monkeypatch.setattr(walk, "KNOWN_MAX", 7)
    walk.KNOWN.clear()
    restarted = _walked(PROTOBUF)
    assert len(walk.KNOWN) <= 7
    assert warm.initializers == cold.initializers == restarted.initializers
    assert any(reach.strings for reach in cold.initializers)  # what a registration names
    assert any(reach.reaches for reach in cold.initializers)  # the imports it calls


def test_an_instruction_is_told_by_its_text_wherever_it_is() -> None:
    """What follows an address (a ``lea``'s data, a call's slot) is kept as a distance from the
    next instruction, so one text stands for every place it occurs."""
    lea = walk.instruction("lea", "rdi, [rip + 0x10]")
    assert (lea.line, lea.kind, lea.written, lea.number) == ("lea rdi, [rip]", walk.ADDRESSES,
                                                             "rdi", 0x10)  # fmt: skip
    load = walk.instruction("mov", "rax, qword ptr [rip - 0x20]")
    assert (load.kind, load.number) == (walk.LOADS, -0x20)
    call = walk.instruction("call", "qword ptr [rip + 0x30]")
    assert (call.line, call.kind, call.number, call.out) == (
        "call ",
        walk.THROUGH_SLOT,
        0x30,
        True,
    )
    tail = walk.instruction("bnd jmp", "0x1234")
    assert (tail.line, tail.kind, tail.number, tail.stop) == ("jmp ", walk.BRANCHES, 0x1234, True)
    copy = walk.instruction("mov", "rsi, rdi")
    assert (copy.kind, copy.written, copy.copied) == (walk.COPY, "rsi", "rdi")
    flag = walk.instruction("or", "byte ptr [rsp + 0x8], 0x4")
    assert (flag.kind, flag.number, flag.written) == (walk.PLAIN, 4, "")
    assert walk.instruction("repz ret", "").stop is False  # as the shape's first word says
