"""Which format a file is, by its first bytes: the one place that maps magic to a reader."""

from __future__ import annotations

from typing import Final

from buildtool.linkage.binaries.elf.facts import ELF_MAGIC
from buildtool.linkage.binaries.macho.decoder import FAT_MAGIC, FAT_MAGIC_64, THIN_MAGICS
from buildtool.linkage.binaries.pe.decoder import DOS_MAGIC

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
