"""x86-64 instruction texts, as capstone writes them, read for the initializer walk
(``code_walk``): an instruction's shape and what the walk follows of it, worked out once per
text (``instruction``) wherever the text occurs: an address it uses is kept as a distance
from the next instruction."""

from __future__ import annotations

import re
from typing import Final, NamedTuple

IMMEDIATE = re.compile(r"#?(0x[0-9a-f]+)$")
"""A branch's target as capstone writes it (aarch64's with its "#")."""

RIP_SLOT = re.compile(r"\[rip \+ (0x[0-9a-f]+)\]")
RIP_OFFSET = re.compile(r"\[rip ([+-]) (0x[0-9a-f]+)\]")
RIP_ANY = re.compile(r"rip [+-] 0x[0-9a-f]+")
LOADS_POINTER: Final = tuple(
    f"{register}, qword ptr [rip"
    for register in (
        "rax",
        "rbx",
        "rcx",
        "rdx",
        "rsi",
        "rdi",
        "rbp",
        *(f"r{n}" for n in range(8, 16)),
    )
)
"""``mov`` forms that load a pointer (a GOT entry's: the address of data another library, or
this one's export, defines)."""
STACK_BYTE = re.compile(r"byte ptr \[rsp(?: \+ 0x[0-9a-f]+)?\], (0x[0-9a-f]+|[0-9]+)")
STOPS: Final = frozenset({"ret", "hlt", "ud2", "int3", "jmp"})
"""Where a function's linear sweep ends."""

PLAIN: Final = 0
"""Neither branches nor addresses data: may write a register (which then holds no address) and
store a byte into a stack slot (``number``: a bit field of a record built on the stack)."""
COPY: Final = 1
"""``mov`` from one register to another: ``written`` holds what ``copied`` held."""
ADDRESSES: Final = 2
"""Addresses data relative to itself; ``number``: the address's distance from the next
instruction when the walk keeps it (``lea``), else None."""
LOADS: Final = 3
"""A ``mov`` loading the pointer stored at data addressed relative to itself (``number``)."""
BRANCHES: Final = 4
"""A call or jump to an address (``number``; None through a register)."""
THROUGH_SLOT: Final = 5
"""A call or jump through a slot (``number``: its distance from the next instruction)."""


class X86Instruction(NamedTuple):
    """What an instruction's text says, wherever it is (``code_walk._x86_function``)."""

    line: str
    """Its shape (addresses left out)."""
    kind: int
    stop: bool
    """Whether the sweep ends with it."""
    written: str = ""
    """The register it writes, by its 64-bit name ("" for none)."""
    copied: str = ""
    number: int | None = None
    out: bool = False
    """A call or ``jmp``: the callee may change every register."""


KNOWN: dict[tuple[str, str], X86Instruction] = {}
"""Instruction texts already worked out in this process (``instruction``)."""
KNOWN_MAX: Final = 1 << 16
"""Texts kept at most (about 24 MB: tensorflow's 70 extension modules hold 69k, 25 MB); the
table starts again past it."""


def instruction(prefixed: str, operands: str) -> X86Instruction:
    """An instruction's text worked out, and kept: its shape and what the walk follows."""
    mnemonic = prefixed.removeprefix("notrack ").removeprefix("bnd ")
    stop = mnemonic.partition(" ")[0] in STOPS
    first = operands.split(", ", 1)
    written = REGISTERS.get(first[0], "") if mnemonic not in READS_ITS_OPERANDS else ""
    if mnemonic == "call" or mnemonic[0] == "j":
        found = _branch(mnemonic, operands, stop)
    elif "rip" in operands:  # an address relative to the instruction: not the shape
        found = _addressing(mnemonic, operands, stop, written)
    else:
        copied = REGISTERS.get(first[-1], "") if mnemonic == "mov" and len(first) == 2 else ""
        line = f"{mnemonic} {operands}"
        if copied and written:
            found = X86Instruction(line, COPY, stop, written, copied)
        else:
            byte = STACK_BYTE.fullmatch(operands) if mnemonic in ("or", "mov") else None
            flag = int(byte.group(1), 0) if byte else None
            found = X86Instruction(line, PLAIN, stop, written, number=flag)
    if len(KNOWN) >= KNOWN_MAX:
        KNOWN.clear()
    KNOWN[(prefixed, operands)] = found
    return found


def _addressing(mnemonic: str, operands: str, stop: bool, written: str) -> X86Instruction:
    line = f"{mnemonic} {RIP_ANY.sub('rip', operands)}"
    offset = RIP_OFFSET.search(operands) if mnemonic in ("lea", "mov") else None
    if offset and (mnemonic == "lea" or operands.startswith(LOADS_POINTER)):
        distance = (-1 if offset.group(1) == "-" else 1) * int(offset.group(2), 16)
        kind = LOADS if mnemonic == "mov" else ADDRESSES
        return X86Instruction(line, kind, stop, written, number=distance)
    return X86Instruction(line, ADDRESSES, stop, written)


def _branch(mnemonic: str, operands: str, stop: bool) -> X86Instruction:
    line, out = f"{mnemonic} ", mnemonic in ("call", "jmp")
    if rip := RIP_SLOT.search(operands):
        return X86Instruction(line, THROUGH_SLOT, stop, number=int(rip.group(1), 16), out=out)
    target = int(immediate.group(1), 16) if (immediate := IMMEDIATE.fullmatch(operands)) else None
    return X86Instruction(line, BRANCHES, stop, number=target, out=out)


def _aliases() -> dict[str, str]:
    """Every name of a general-purpose register's parts -> the register's 64-bit name."""
    found: dict[str, str] = {}
    for letter in "abcd":
        legacy = (f"r{letter}x", f"e{letter}x", f"{letter}x", f"{letter}l", f"{letter}h")
        found.update(dict.fromkeys(legacy, f"r{letter}x"))
    for name in ("si", "di", "bp"):
        found.update(dict.fromkeys((f"r{name}", f"e{name}", name, f"{name}l"), f"r{name}"))
    for number in range(8, 16):
        numbered = (f"r{number}", f"r{number}d", f"r{number}w", f"r{number}b")
        found.update(dict.fromkeys(numbered, f"r{number}"))
    return found


REGISTERS: Final = _aliases()
READS_ITS_OPERANDS: Final = frozenset({"cmp", "test", "push", "bt"})
"""Instructions whose first operand is no destination."""
