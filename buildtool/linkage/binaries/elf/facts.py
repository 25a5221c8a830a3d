"""What only ELF knows: the magic, the decoders, the error a corrupt file raises, machine and
file type names. No decoding here."""

from __future__ import annotations

import mmap
from typing import Final

from buildtool.linkage.binaries.elf.constants import _ET_DYN, _ET_NAMES, _MACHINES
from buildtool.linkage.binaries.facts import MalformedBinary

ELF_MAGIC: Final = b"\x7fELF"

ElfBuffer = bytes | bytearray | memoryview | mmap.mmap


class MalformedElf(MalformedBinary):
    """An ELF file is truncated or corrupt; names the file, the byte offset and the problem."""

    format_name = "ELF"


def machine_name(e_machine: int, elf_class: int) -> str:
    """A short name for ``e_machine`` (``unknown(<n>)`` for machines without one)."""
    if e_machine == 22 and elf_class == 32:
        return "s390"
    return _MACHINES.get(e_machine, f"unknown({e_machine})")


PROGRAMS: Final = frozenset({"executable", "pie"})
"""File types whose ``.symtab`` names no check reads (only libraries are compared as copies of
one another): their ``static_initializers`` and ``symtab_functions`` stay empty."""


def file_type_name(e_type: int, pie_flag: bool, interpreter: str | None, soname: str | None) -> str:
    """ET_DYN is "pie" with DF_1_PIE, or with an interpreter and no SONAME (libc.so.6 has both)."""
    if e_type != _ET_DYN:
        return _ET_NAMES.get(e_type, "other")
    return "pie" if pie_flag or (interpreter is not None and soname is None) else "shared"
