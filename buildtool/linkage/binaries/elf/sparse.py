"""Sparse reads: which bytes of a file no fact comes from (the code), so a big wheel member can
be read without them, and whether a read that left them out may keep its facts."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final

from buildtool.linkage.binaries.elf.constants import (
    _PF_X,
    _PN_XNUM,
    _PT_LOAD,
    _SHF_ALLOC,
    _SHF_EXECINSTR,
    _SHT_DYNAMIC,
    _SHT_DYNSYM,
    _SHT_GNU_VERDEF,
    _SHT_GNU_VERNEED,
    _SHT_GNU_VERSYM,
    _SHT_NOBITS,
    _SHT_PROGBITS,
    _SHT_SYMTAB,
)
from buildtool.linkage.binaries.elf.decoder import (
    _DECODE_ERRORS,
    _Bad,
    _open_image,
    _read_header,
    _read_segments,
    _read_structure,
)
from buildtool.linkage.binaries.elf.facts import ElfBuffer, machine_name
from buildtool.linkage.binaries.elf.initializers import initializers_unless_left_out
from buildtool.linkage.binaries.facts import InitializerReach

# --- sparse reads: bytes no fact comes from -----------------------------------------------

_SHT_STRTAB, _SHT_SYMTAB_SHNDX = 3, 18
_FACT_SECTION_TYPES: Final = frozenset(
    {
        _SHT_SYMTAB, _SHT_STRTAB, _SHT_DYNAMIC, _SHT_DYNSYM, _SHT_SYMTAB_SHNDX,
        _SHT_GNU_VERDEF, _SHT_GNU_VERNEED, _SHT_GNU_VERSYM,
    }
)  # fmt: skip
"""Sections whose bytes facts are read from, besides the ELF header, the program and section
header tables, the segments other than PT_LOAD, and (when registration names are searched) the
data sections. The code the initializers' walk reads is the one fact from code: a sparse read
asks ``sparse_initializers``, which says they were not read when the walk needs code left out.
Reading another section's bytes in ``fast._facts`` must add its type here."""

Ranges = tuple[tuple[int, int], ...]


def cut_ranges(ranges: Sequence[tuple[int, int]], holes: Sequence[tuple[int, int]]) -> Ranges:
    """``ranges`` with ``holes`` cut out of them."""
    pieces = list(ranges)
    for hole_start, hole_end in holes:
        cut: list[tuple[int, int]] = []
        for start, end in pieces:
            cut += [(start, min(end, hole_start)), (max(start, hole_end), end)]
        pieces = [(start, end) for start, end in cut if end > start]
    return tuple(pieces)


def code_ranges(head: ElfBuffer, file_size: int, keep_front: int) -> Ranges:
    """The bytes of the executable PT_LOAD segments past ``keep_front``, by the headers in
    ``head`` (the file's first bytes), less every header table and every other segment: where
    code is, which no fact is read from. A read may leave them out, then ask
    ``left_out_unused`` whether it may keep its facts. () when the headers are not all in
    ``head``, or the file has no section headers (facts would then come from the segments)."""
    try:
        img = _open_image(head, None, False)
        header = _read_header(img)
        if header.shnum == 0 or header.phnum == _PN_XNUM:
            return ()
        segments = _read_segments(img, header, ())
    except (_Bad, *_DECODE_ERRORS):
        return ()
    code = [
        (max(s.offset, keep_front), min(s.offset + s.filesz, file_size))
        for s in segments
        if s.type == _PT_LOAD and s.flags & _PF_X
    ]
    kept = [
        (0, img.layout.header.size),
        (header.phoff, header.phoff + header.phnum * header.phentsize),
        (header.shoff, header.shoff + header.shnum * header.shentsize),
        *((s.offset, s.offset + s.filesz) for s in segments if s.type != _PT_LOAD),
    ]
    return cut_ranges([(start, end) for start, end in code if end > start], kept)


def _overlaps(start: int, end: int, ranges: Ranges) -> bool:
    return any(start < range_end and range_start < end for range_start, range_end in ranges)


def sparse_initializers(
    data: ElfBuffer, size: int, left_out: Ranges
) -> tuple[InitializerReach, ...] | None:
    """The initializers as a whole read's facts hold them, read from ``data`` (the file less
    ``left_out``); None when their walk reads code in ``left_out``: the facts of such a read
    must then say the initializers were not read."""
    try:
        img = _open_image(data, size, False)
        structure = _read_structure(img)
    except (_Bad, *_DECODE_ERRORS):
        return None
    machine = machine_name(structure.header.machine, img.layout.elf_class)
    return initializers_unless_left_out(
        img,
        structure.segments,
        structure.dynamic,
        machine,
        lambda start, end: _overlaps(start, end, left_out),
    )


def left_out_unused(
    data: ElfBuffer, size: int, left_out: Ranges, registration_names: Collection[str]
) -> bool:
    """Whether the facts of ``data`` (the file's bytes, less ``left_out``) are those of the
    whole file: no section facts are read from lies in ``left_out``."""
    try:
        img = _open_image(data, size, False)
        structure = _read_structure(img)
    except (_Bad, *_DECODE_ERRORS):
        return False
    strings = structure.dynamic.strings if structure.dynamic else None
    # found by its address (DT_STRTAB), not as a section: a hostile file may put it anywhere
    if strings and _overlaps(strings.base, strings.base + strings.size, left_out):
        return False
    sections = structure.sections
    needed = {index for index, s in enumerate(sections) if s.type in _FACT_SECTION_TYPES}
    needed |= {sections[i].link for i in needed if 0 < sections[i].link < len(sections)}
    if registration_names:  # searched in the data sections (see _data_regions)
        wanted = (_SHT_PROGBITS, _SHF_ALLOC)
        needed |= {
            i
            for i, s in enumerate(sections)
            if (s.type, s.flags & (_SHF_ALLOC | _SHF_EXECINSTR)) == wanted
        }
    return not any(
        _overlaps(sections[i].offset, sections[i].offset + sections[i].size, left_out)
        for i in needed
        if sections[i].type != _SHT_NOBITS
    )
