"""Which format a file is, by its first bytes: the one place that maps magic to a reader.

The magic numbers live here, not in the readers: telling a file's format must not import the
Mach-O and PE readers (an ELF wheel never needs them, and every run starts by asking).
"""

from __future__ import annotations

from typing import Final

from buildtool.linkage.binaries.elf.facts import ELF_MAGIC

THIN_MAGICS: Final = {
    b"\xce\xfa\xed\xfe": ("<", 32),
    b"\xcf\xfa\xed\xfe": ("<", 64),
    b"\xfe\xed\xfa\xce": (">", 32),
    b"\xfe\xed\xfa\xcf": (">", 64),
}
"""The first four bytes of a thin Mach-O file -> (byte order, class)."""
FAT_MAGIC: Final = b"\xca\xfe\xba\xbe"
FAT_MAGIC_64: Final = b"\xca\xfe\xba\xbf"
DOS_MAGIC: Final = b"MZ"
"""A PE file starts as an MS-DOS program."""
HEAD_BYTES: Final = 4
"""Bytes of a file's start that ``binary_format`` needs."""


def binary_format(head: bytes) -> str | None:
    """``elf``, ``macho`` or ``pe`` when ``head`` (a file's first bytes) starts like one; None
    otherwise. A fat Mach-O magic is also a Java class file's: its reader tells them apart."""
    start = head[:HEAD_BYTES]
    if start == ELF_MAGIC:
        return "elf"
    if start in THIN_MAGICS or start in (FAT_MAGIC, FAT_MAGIC_64):
        return "macho"
    if start[:2] == DOS_MAGIC:
        return "pe"
    return None
