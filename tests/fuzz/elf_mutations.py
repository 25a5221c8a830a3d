"""Mutations of real ELF files: every structure a reader trusts, broken on purpose.

A ``SeedMap`` is read once from a pristine file (with pyelftools, independent of the reader under
test) and names every field worth breaking: header counts and offsets, each program and section
header's offset, size, link and count fields, dynamic entries, hash and version table words, and
the string tables. Each mutation draws its choices from a ``Chooser``, so the same code serves
hypothesis (which shrinks a failure to its smallest form) and a seeded ``random.Random`` (the long
run, where a case is reproduced from its number alone).
"""

from __future__ import annotations

import dataclasses
import io
import random
import struct
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from elftools.elf.dynamic import DynamicSegment
from elftools.elf.elffile import ELFFile

T = TypeVar("T")


class Chooser(Protocol):
    """Where a mutation gets its choices from."""

    def integer(self, low: int, high: int) -> int:
        """A number in ``[low, high]``."""
        ...

    def choice(self, options: Sequence[T]) -> T:
        """One of ``options`` (never empty)."""
        ...


class RandomChooser:
    """Choices from a seeded ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]


@dataclasses.dataclass(frozen=True)
class Field:
    """An integer field of the file: where it is, how wide, and what it is called."""

    offset: int
    size: int
    """1, 2, 4 or 8 bytes."""
    name: str


@dataclasses.dataclass(frozen=True)
class SectionHeader:
    index: int
    name: str
    link: Field
    size: Field
    info: Field
    offset: Field


@dataclasses.dataclass(frozen=True, repr=False)
class SeedMap:
    """What the mutations know about one pristine file."""

    name: str
    data: bytes
    endian: str
    """``<`` or ``>``."""
    word: int
    """4 (ELFCLASS32) or 8 (ELFCLASS64)."""
    fields: tuple[Field, ...]
    sections: tuple[SectionHeader, ...]
    string_tables: tuple[tuple[int, int, str], ...]
    """(offset, size, name) of every string table."""
    boundaries: tuple[int, ...]
    """Offsets where a structure starts or ends: where truncation hurts most."""
    structure: tuple[tuple[int, int], ...]
    """[start, end) ranges that hold structure rather than code or data."""

    def __repr__(self) -> str:
        return f"SeedMap({self.name!r}, {len(self.data)} bytes)"


@dataclasses.dataclass(frozen=True)
class Mutant:
    data: bytes
    steps: tuple[str, ...]
    """What was done, for the failure message and the long run's record."""


# --- reading the map of a pristine file -----------------------------------------------------


HEADER_FIELDS = (
    "e_type", "e_machine", "e_version", "e_entry", "e_phoff", "e_shoff", "e_flags", "e_ehsize",
    "e_phentsize", "e_phnum", "e_shentsize", "e_shnum", "e_shstrndx",
)  # fmt: skip


def _header_fields(word: int) -> list[Field]:
    names = HEADER_FIELDS
    sizes = [2, 2, 4, word, word, word, 4, 2, 2, 2, 2, 2, 2]
    fields, offset = [Field(4, 1, "EI_CLASS"), Field(5, 1, "EI_DATA")], 16
    for name, size in zip(names, sizes, strict=True):
        fields.append(Field(offset, size, name))
        offset += size
    return fields


def _segment_fields(elf: ELFFile, word: int) -> list[Field]:
    fields = []
    # (name, offset within the header) for the 64-bit and the 32-bit layouts
    layout = (
        [("p_type", 0, 4), ("p_flags", 4, 4), ("p_offset", 8, 8), ("p_vaddr", 16, 8),
         ("p_filesz", 32, 8), ("p_memsz", 40, 8)]
        if word == 8
        else [("p_type", 0, 4), ("p_offset", 4, 4), ("p_vaddr", 8, 4), ("p_filesz", 16, 4),
              ("p_memsz", 20, 4), ("p_flags", 24, 4)]
    )  # fmt: skip
    for index in range(elf["e_phnum"]):
        base = elf["e_phoff"] + index * elf["e_phentsize"]
        kind = elf.get_segment(index)["p_type"]
        fields += [Field(base + at, size, f"{kind}[{index}].{n}") for n, at, size in layout]
    return fields


def _section_header(elf: ELFFile, index: int, word: int) -> SectionHeader:
    base = elf["e_shoff"] + index * elf["e_shentsize"]
    if word == 8:
        at = {"type": 4, "offset": 24, "size": 32, "link": 40, "info": 44, "entsize": 56}
        width = {"type": 4, "offset": 8, "size": 8, "link": 4, "info": 4, "entsize": 8}
    else:
        at = {"type": 4, "offset": 16, "size": 20, "link": 24, "info": 28, "entsize": 36}
        width = {"type": 4, "offset": 4, "size": 4, "link": 4, "info": 4, "entsize": 4}
    name = elf.get_section(index).name or f"#{index}"

    def field(key: str) -> Field:
        return Field(base + at[key], width[key], f"{name}.sh_{key}")

    return SectionHeader(index, name, field("link"), field("size"), field("info"), field("offset"))


def _section_fields(header: SectionHeader, word: int) -> list[Field]:
    type_field = Field(header.link.offset - (36 if word == 8 else 20), 4, f"{header.name}.sh_type")
    return [type_field, header.link, header.size, header.info, header.offset]


_TABLE_TAGS = ("DT_HASH", "DT_GNU_HASH", "DT_VERDEF", "DT_VERNEED", "DT_VERSYM")
"""Dynamic tags of the tables whose counts and links a reader follows."""


def _dynamic_values(elf: ELFFile) -> dict[str, int]:
    for segment in elf.iter_segments():
        if isinstance(segment, DynamicSegment):
            return {str(t.entry.d_tag): int(t.entry.d_val) for t in segment.iter_tags()}
    return {}


def _table_words(elf: ELFFile) -> list[Field]:
    """The first 4-byte words of the hash and version tables (counts, offsets, next links),
    found through PT_DYNAMIC, as ld.so finds them, so files without section headers have them."""
    fields = []
    for tag, address in _dynamic_values(elf).items():
        if tag not in _TABLE_TAGS:
            continue
        for start in list(elf.address_offsets(address))[:1]:
            fields += [Field(start + i, 4, f"{tag}+{i}") for i in range(0, 64, 4)]
    return fields


def _dynamic_fields(elf: ELFFile, word: int) -> list[Field]:
    fields = []
    for segment in elf.iter_segments():
        if not isinstance(segment, DynamicSegment):
            continue
        for index, tag in enumerate(segment.iter_tags()):
            at = segment["p_offset"] + index * 2 * word
            fields += [Field(at, word, f"{tag.entry.d_tag}.d_tag"),
                       Field(at + word, word, f"{tag.entry.d_tag}.d_val")]  # fmt: skip
    return fields


def _ranges(elf: ELFFile, size: int) -> tuple[list[int], list[tuple[int, int]]]:
    cuts = {0, 4, 5, 6, 16, elf["e_ehsize"], elf["e_phoff"], elf["e_shoff"]}
    structure = [(0, elf["e_ehsize"])]
    structure.append((elf["e_phoff"], elf["e_phoff"] + elf["e_phnum"] * elf["e_phentsize"]))
    if elf["e_shoff"]:
        structure.append((elf["e_shoff"], size))
    for segment in elf.iter_segments():
        cuts |= {segment["p_offset"], segment["p_offset"] + segment["p_filesz"]}
        if segment["p_type"] in ("PT_DYNAMIC", "PT_INTERP"):
            structure.append((segment["p_offset"], segment["p_offset"] + segment["p_filesz"]))
    for index, section in enumerate(elf.iter_sections()):
        cuts |= {section["sh_offset"], section["sh_offset"] + section["sh_size"]}
        cuts.add(elf["e_shoff"] + index * elf["e_shentsize"])
        if section["sh_type"] not in ("SHT_PROGBITS", "SHT_NOBITS", "SHT_NULL"):
            structure.append((section["sh_offset"], section["sh_offset"] + section["sh_size"]))
    boundaries = sorted(c for c in cuts if 0 < c < size)
    return boundaries, [(a, b) for a, b in structure if a < b <= size]


def _string_tables(elf: ELFFile, size: int) -> list[tuple[int, int, str]]:
    tables = [
        (s["sh_offset"], s["sh_size"], s.name)
        for s in elf.iter_sections()
        if s["sh_type"] == "SHT_STRTAB" and s["sh_size"] and s["sh_offset"] + s["sh_size"] <= size
    ]
    if tables or not elf.num_segments():
        return tables
    # no section headers: find .dynstr through DT_STRTAB/DT_STRSZ
    values = _dynamic_values(elf)
    offsets = list(elf.address_offsets(values.get("DT_STRTAB", 0)))
    if offsets and "DT_STRSZ" in values:
        tables.append((offsets[0], values["DT_STRSZ"], "DT_STRTAB"))
    return tables


def read_seed(name: str, data: bytes) -> SeedMap:
    """The map of a pristine file (fields, sections, string tables, boundaries)."""
    elf = ELFFile(io.BytesIO(data))
    word = 8 if elf.elfclass == 64 else 4
    sections = tuple(_section_header(elf, i, word) for i in range(elf.num_sections()))
    fields = _header_fields(word) + _segment_fields(elf, word) + _dynamic_fields(elf, word)
    fields += [f for header in sections for f in _section_fields(header, word)]
    fields += _table_words(elf)
    boundaries, structure = _ranges(elf, len(data))
    return SeedMap(
        name=name,
        data=data,
        endian="<" if elf.little_endian else ">",
        word=word,
        fields=tuple(fields),
        sections=sections,
        string_tables=tuple(_string_tables(elf, len(data))),
        boundaries=tuple(boundaries),
        structure=tuple(structure),
    )


# --- mutations ------------------------------------------------------------------------------

_FORMATS = {1: "B", 2: "H", 4: "I", 8: "Q"}


def put_field(data: bytearray, endian: str, field: Field, value: int) -> None:
    if field.offset + field.size <= len(data):
        struct.pack_into(endian + _FORMATS[field.size], data, field.offset, value)


def _largest(field: Field) -> int:
    return (1 << (8 * field.size)) - 1


def _bogus_values(field: Field, file_size: int) -> list[int]:
    top = _largest(field)
    values = [0, 1, 2, 3, 0x10, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 40, 1 << 63, top]
    values += [top - 1, file_size - 1, file_size, file_size + 1, file_size // 2, file_size - 8]
    return [v for v in values if 0 <= v <= top]


def _value_of(seed: SeedMap, data: bytes | bytearray, field: Field) -> int:
    if field.offset + field.size > len(data):
        return 0
    (value,) = struct.unpack_from(seed.endian + _FORMATS[field.size], data, field.offset)
    return int(value)


def bogus_field(seed: SeedMap, data: bytearray, chooser: Chooser) -> str:
    """One field set to a value the file cannot back (or a random one)."""
    field = chooser.choice(seed.fields)
    values = _bogus_values(field, len(seed.data))
    if chooser.integer(0, 3) == 0:
        value = chooser.integer(0, _largest(field))
    elif chooser.integer(0, 1) == 0:
        delta = chooser.choice([-16, -8, -4, -1, 1, 4, 8, 16])
        value = (_value_of(seed, data, field) + delta) & _largest(field)
    else:
        value = chooser.choice(values)
    put_field(data, seed.endian, field, value)
    return f"{field.name} = {value:#x}"


def flip_bits(seed: SeedMap, data: bytearray, chooser: Chooser) -> str:
    """Up to 8 bit flips where structure lies."""
    flips = []
    for _ in range(chooser.integer(1, 8)):
        start, end = chooser.choice(seed.structure)
        position, bit = chooser.integer(start, end - 1), chooser.integer(0, 7)
        data[position] ^= 1 << bit
        flips.append(f"{position:#x}.{bit}")
    return "bit flips at " + ", ".join(flips)


def overwrite(seed: SeedMap, data: bytearray, chooser: Chooser) -> str:
    """A few random bytes anywhere."""
    position = chooser.integer(0, len(seed.data) - 1)
    junk = bytes(chooser.integer(0, 255) for _ in range(chooser.integer(1, 8)))
    data[position : position + len(junk)] = junk
    return f"{len(junk)} random bytes at {position:#x}"


def unterminated_strings(seed: SeedMap, data: bytearray, chooser: Chooser) -> str:
    """A string table whose last (or every) NUL is gone."""
    if not seed.string_tables:
        return overwrite(seed, data, chooser)
    offset, size, name = chooser.choice(seed.string_tables)
    if chooser.integer(0, 1):
        data[offset + size - 1] = ord("A")
        return f"{name}: last NUL replaced"
    data[offset : offset + size] = bytes(b or ord("A") for b in data[offset : offset + size])
    return f"{name}: every NUL replaced"


def _first_section(seed: SeedMap) -> SectionHeader | None:
    return seed.sections[0] if seed.sections else None


def count_overflow(seed: SeedMap, data: bytearray, chooser: Chooser) -> str:
    """Section and program header counts that overflow, directly or by extended numbering."""
    fields = {f.name: f for f in seed.fields}
    first = _first_section(seed)
    kind = chooser.integer(0, 3)
    if kind == 0 or first is None:
        put_field(data, seed.endian, fields["e_shnum"], 0xFFFF)
        return "e_shnum = 0xffff"
    huge = chooser.choice([0xFFFF_FFFF, (1 << (8 * first.size.size)) - 1, len(seed.data)])
    if kind == 1:
        put_field(data, seed.endian, fields["e_shnum"], 0)
        put_field(data, seed.endian, first.size, huge)
        return f"e_shnum = 0, section 0 sh_size = {huge:#x}"
    if kind == 2:
        put_field(data, seed.endian, fields["e_shstrndx"], 0xFFFF)
        put_field(data, seed.endian, first.link, chooser.choice([0xFFFF_FFFF, 0x10000, 0]))
        return "e_shstrndx = SHN_XINDEX, section 0 sh_link bogus"
    put_field(data, seed.endian, fields["e_phnum"], 0xFFFF)
    put_field(data, seed.endian, first.info, chooser.choice([0xFFFF_FFFF, 0x10000, 0]))
    return "e_phnum = PN_XNUM, section 0 sh_info bogus"


def link_loop(seed: SeedMap, data: bytearray, chooser: Chooser) -> str:
    """``sh_link`` pointing at itself, at each other, at nothing, or at the null section."""
    if len(seed.sections) < 3:
        return bogus_field(seed, data, chooser)
    a = chooser.choice(seed.sections[1:])
    b = chooser.choice(seed.sections[1:])
    kind = chooser.integer(0, 3)
    if kind == 0:
        put_field(data, seed.endian, a.link, a.index)
        return f"{a.name}.sh_link -> itself"
    if kind == 1:
        put_field(data, seed.endian, a.link, b.index)
        put_field(data, seed.endian, b.link, a.index)
        return f"{a.name} <-> {b.name} sh_link loop"
    target = len(seed.sections) + chooser.integer(0, 3) if kind == 2 else 0
    put_field(data, seed.endian, a.link, target)
    return f"{a.name}.sh_link -> {target}"


def huge_size(seed: SeedMap, data: bytearray, chooser: Chooser) -> str:
    """A section or segment claiming far more bytes than the file has (up to 2**64 - 1)."""
    sizes = [f for f in seed.fields if f.name.endswith(("sh_size", "p_filesz", "p_memsz"))]
    if not sizes:
        return bogus_field(seed, data, chooser)
    field = chooser.choice(sizes)
    value = chooser.choice([v for v in (1 << 40, 1 << 32, _largest(field), 1 << 31)
                            if v <= _largest(field)])  # fmt: skip
    put_field(data, seed.endian, field, value)
    return f"{field.name} = {value:#x}"


MUTATIONS: tuple[Callable[[SeedMap, bytearray, Chooser], str], ...] = (
    bogus_field,
    bogus_field,
    flip_bits,
    flip_bits,
    overwrite,
    unterminated_strings,
    count_overflow,
    link_loop,
    huge_size,
)
"""Weighted by repetition: field and bit-level damage is the most varied."""


def truncate(seed: SeedMap, data: bytes, chooser: Chooser) -> tuple[bytes, str]:
    """Cut at (or one byte around) a structure boundary, or anywhere."""
    if seed.boundaries and chooser.integer(0, 3):
        cut = chooser.choice(seed.boundaries) + chooser.integer(-1, 1)
    else:
        cut = chooser.integer(0, len(data))
    cut = max(0, min(cut, len(data)))
    return data[:cut], f"truncated to {cut:#x} bytes"


def mutate(seed: SeedMap, chooser: Chooser) -> Mutant:
    """One to three mutations, then (one time in four) a truncation."""
    data = bytearray(seed.data)
    steps = [chooser.choice(MUTATIONS)(seed, data, chooser) for _ in range(chooser.integer(1, 3))]
    result = bytes(data)
    if chooser.integer(0, 3) == 0:
        result, step = truncate(seed, result, chooser)
        steps.append(step)
    return Mutant(result, (seed.name, *steps))
