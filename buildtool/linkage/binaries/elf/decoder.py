"""The fast decoder's core: struct over a memoryview of the whole file.

The ELF header, the section and program header tables, ``PT_DYNAMIC``, the symbol version tables,
and the boundary where corrupt input (``_Bad``) becomes ``MalformedElf``. The symbol tables are
read in ``dynsym`` and ``symtab``; the facts are put together in ``fast``.
"""

from __future__ import annotations

import mmap
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple, TypeVar

from buildtool.linkage.binaries.elf.constants import (
    _DF_1_NODEFLIB,
    _DF_1_NOW,
    _DF_1_PIE,
    _DF_BIND_NOW,
    _DF_SYMBOLIC,
    _DF_TEXTREL,
    _DT_BIND_NOW,
    _DT_FLAGS,
    _DT_FLAGS_1,
    _DT_NEEDED,
    _DT_NULL,
    _DT_RPATH,
    _DT_RUNPATH,
    _DT_SONAME,
    _DT_STRSZ,
    _DT_STRTAB,
    _DT_SYMBOLIC,
    _DT_TEXTREL,
    _PN_XNUM,
    _PT_DYNAMIC,
    _PT_LOAD,
    _SHN_XINDEX,
    _SHT_NOBITS,
    _VER_FLG_BASE,
    _VER_FLG_WEAK,
)
from buildtool.linkage.binaries.elf.facts import ElfBuffer, MalformedElf

# --------------------------------------------------------------------------------------------
# fast path: struct over a memoryview of the whole file
#
# The decoder's own records are NamedTuples, not dataclasses: defining one costs a seventh as
# much, and twenty dataclasses were most of what importing this package cost (20 ms a run).


class _Bad(Exception):
    """Internal: corrupt input at an offset; becomes MalformedElf at the boundary."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason


class _Layout(NamedTuple):
    """Struct formats of one ELF class and byte order."""

    elf_class: int
    endian: str
    header: struct.Struct
    phdr: struct.Struct
    shdr: struct.Struct
    dyn: struct.Struct
    sym_size: int
    """Bytes of a symbol table entry (its fields are read a column at a time)."""
    word_size: int


def _make_layout(elf_class: int, little: bool) -> _Layout:
    e = "<" if little else ">"
    if elf_class == 64:
        return _Layout(
            64, e, struct.Struct(e + "HHIQQQIHHHHHH"), struct.Struct(e + "IIQQQQQQ"),
            struct.Struct(e + "IIQQQQIIQQ"), struct.Struct(e + "qQ"), 24, 8,
        )  # fmt: skip
    return _Layout(
        32, e, struct.Struct(e + "HHIIIIIHHHHHH"), struct.Struct(e + "IIIIIIII"),
        struct.Struct(e + "IIIIIIIIII"), struct.Struct(e + "iI"), 16, 4,
    )  # fmt: skip


_LAYOUTS: Final = {(c, le): _make_layout(c, le) for c in (32, 64) for le in (True, False)}
_NATIVE_LITTLE: Final = sys.byteorder == "little"
_DONTNEED: Final[int | None] = getattr(mmap, "MADV_DONTNEED", None)


class _Image(NamedTuple):
    """The file's bytes plus what is needed to decode them."""

    view: memoryview
    size: int
    layout: _Layout
    finder: bytes | bytearray | mmap.mmap | None
    """The original object when it supports ``find(sub, start, end)`` without copying."""
    file_backed: bool
    """``finder`` maps a file read-only: pages read can be dropped and read again later."""
    texts: dict[tuple[int, int], str]
    """String tables decoded so far, by (offset, size): ``.dynstr`` is named by the dynamic
    section and linked from ``.dynsym`` and both version tables, and decoded once."""

    def text(self, offset: int, size: int) -> str:
        """Bytes ``[offset, offset + size)`` (a span ``_string_table`` checked) as latin-1,
        decoded once per image."""
        text = self.texts.get((offset, size))
        if text is None:
            text = self.texts[offset, size] = str(self.view[offset : offset + size], "latin-1")
        return text

    def release(self, offset: int, size: int) -> None:
        """Let the kernel drop the mapped pages of ``[offset, offset + size)`` (they stay in the
        page cache): a big table read once need not stay in the process's resident memory."""
        if not self.file_backed or not isinstance(self.finder, mmap.mmap) or _DONTNEED is None:
            return
        start = max(offset - offset % mmap.PAGESIZE, 0)
        end = min(offset + size, len(self.finder))
        if end > start:
            self.finder.madvise(_DONTNEED, start, end - start)

    def span(self, offset: int, size: int, what: str) -> memoryview:
        """Bytes ``[offset, offset + size)``, or _Bad when the file cannot back them."""
        if offset + size > self.size:
            raise _Bad(offset, f"{what} runs past the end of the file")
        return self.view[offset : offset + size]

    def unpack(self, fmt: struct.Struct, offset: int, what: str) -> tuple[Any, ...]:
        if offset + fmt.size > self.size:
            raise _Bad(offset, f"{what} runs past the end of the file")
        return fmt.unpack_from(self.view, offset)


class _Header(NamedTuple):
    e_type: int
    machine: int
    phoff: int
    shoff: int
    phentsize: int
    phnum: int
    shentsize: int
    shnum: int
    shstrndx: int


class _Segment(NamedTuple):
    type: int
    flags: int
    offset: int
    vaddr: int
    filesz: int


class _Section(NamedTuple):
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


class _StringTable:
    """A string table, decoded as latin-1 (so that a character index is a byte offset) when its
    text is first asked for: its extent alone is what some reads need (``sparse``), and a big
    library's ``.dynstr`` is tens of megabytes."""

    __slots__ = ("_image", "_text", "base", "size", "what")

    def __init__(self, image: _Image, base: int, size: int, what: str) -> None:
        self._image = image
        self._text: str | None = None
        self.base = base
        self.size = size
        self.what = what

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self._image.text(self.base, self.size)
        return self._text

    def get(self, offset: int) -> str:
        end = self.text.find("\0", offset)
        if end < 0:
            where = self.base + min(offset, len(self.text))
            raise _Bad(where, f"{self.what}: string at index {offset:#x} is not terminated")
        return _utf8(self.text[offset:end])

    def many(self, offsets: Sequence[int]) -> list[str]:
        """Names at many offsets: validated once, then sliced without per-name calls."""
        text = self.text
        if offsets and (max(offsets) >= len(text) or not text.endswith("\0")):
            return [self.get(offset) for offset in offsets]
        find = text.find  # every offset is inside a NUL-terminated table: find always succeeds
        names = [text[offset : find("\0", offset)] for offset in offsets]
        return names if text.isascii() else [_utf8(name) for name in names]


def _utf8(latin1: str) -> str:
    return latin1 if latin1.isascii() else latin1.encode("latin-1").decode("utf-8", "replace")


def _string_table(img: _Image, offset: int, size: int, what: str) -> _StringTable:
    img.span(offset, size, what)  # checked at once, decoded when read
    return _StringTable(img, offset, size, what)


def _read_header(img: _Image) -> _Header:
    fields = img.unpack(img.layout.header, 16, "ELF header")
    e_type, machine, _version, _entry, phoff, shoff, _flags, _ehsize = fields[:8]
    phentsize, phnum, shentsize, shnum, shstrndx = fields[8:]
    return _Header(e_type, machine, phoff, shoff, phentsize, phnum, shentsize, shnum, shstrndx)


def _section_entry(img: _Image, offset: int, names: _StringTable | None) -> _Section:
    sh = img.unpack(img.layout.shdr, offset, "section header table")
    name_off, sh_type, flags, _addr, sh_offset, size, link, info, _align, entsize = sh
    name = names.get(name_off) if names is not None else ""
    return _Section(name, sh_type, flags, sh_offset, size, link, info, entsize)


def _section_table_shape(img: _Image, hdr: _Header) -> tuple[int, int]:
    """(count, shstrndx), honouring extended numbering kept in section 0."""
    if hdr.shoff == 0:
        return (0, 0)
    if hdr.shentsize < img.layout.shdr.size:
        raise _Bad(hdr.shoff, f"section header size {hdr.shentsize} is too small")
    first = _section_entry(img, hdr.shoff, None)
    count = hdr.shnum or first.size
    shstrndx = first.link if hdr.shstrndx == _SHN_XINDEX else hdr.shstrndx
    if hdr.shoff + count * hdr.shentsize > img.size:
        raise _Bad(
            hdr.shoff, f"section header table ({count} entries) runs past the end of the file"
        )
    return (count, shstrndx)


def _read_sections(img: _Image, hdr: _Header) -> tuple[_Section, ...]:
    count, shstrndx = _section_table_shape(img, hdr)
    offsets = [hdr.shoff + i * hdr.shentsize for i in range(count)]
    names: _StringTable | None = None
    if shstrndx != 0 and count:
        if shstrndx >= count:
            raise _Bad(hdr.shoff, f"section name table index {shstrndx} is out of range")
        table = _section_entry(img, offsets[shstrndx], None)
        names = _string_table(img, table.offset, table.size, "section name table")
    return tuple(_section_entry(img, offset, names) for offset in offsets)


def _check_section_extents(img: _Image, sections: Sequence[_Section]) -> None:
    for index, section in enumerate(sections):
        if section.type in (0, _SHT_NOBITS) or section.size == 0:
            continue
        if section.offset + section.size > img.size:
            label = section.name or f"#{index}"
            raise _Bad(section.offset, f"section {label} runs past the end of the file")


def _segment_count(hdr: _Header, sections: Sequence[_Section]) -> int:
    if hdr.phnum == _PN_XNUM and sections:
        return sections[0].info
    return hdr.phnum


def _read_segments(img: _Image, hdr: _Header, sections: Sequence[_Section]) -> tuple[_Segment, ...]:
    count = _segment_count(hdr, sections) if hdr.phoff else 0
    if count == 0:
        return ()
    if hdr.phentsize < img.layout.phdr.size:
        raise _Bad(hdr.phoff, f"program header size {hdr.phentsize} is too small")
    if hdr.phoff + count * hdr.phentsize > img.size:
        raise _Bad(
            hdr.phoff, f"program header table ({count} entries) runs past the end of the file"
        )
    fmt = img.layout.phdr
    rows = [fmt.unpack_from(img.view, hdr.phoff + i * hdr.phentsize) for i in range(count)]
    if img.layout.elf_class == 64:
        return tuple(_Segment(r[0], r[1], r[2], r[3], r[5]) for r in rows)
    return tuple(_Segment(r[0], r[6], r[1], r[2], r[4]) for r in rows)


def _check_load_extents(img: _Image, segments: Sequence[_Segment]) -> None:
    for segment in segments:
        if segment.type == _PT_LOAD and segment.offset + segment.filesz > img.size:
            raise _Bad(segment.offset, "loadable segment runs past the end of the file")


# --- dynamic section ------------------------------------------------------------------------


class _Dynamic(NamedTuple):
    """``PT_DYNAMIC`` entries: the last value per tag (as ld.so keeps them) and every NEEDED."""

    offset: int
    values: Mapping[int, int]
    needed: tuple[int, ...]
    strings: _StringTable | None


def _file_offset(segments: Sequence[_Segment], addr: int, what: str, where: int) -> tuple[int, int]:
    """Map a virtual address to (file offset, end of its segment's file bytes)."""
    for seg in segments:
        if seg.type == _PT_LOAD and seg.vaddr <= addr < seg.vaddr + seg.filesz:
            return (addr - seg.vaddr + seg.offset, seg.offset + seg.filesz)
    raise _Bad(where, f"{what} address {addr:#x} is not inside any loadable segment")


def _dynamic_entries(img: _Image, seg: _Segment) -> tuple[dict[int, int], tuple[int, ...]]:
    fmt = img.layout.dyn
    raw = img.span(seg.offset, seg.filesz - seg.filesz % fmt.size, "dynamic section")
    values: dict[int, int] = {}
    needed: list[int] = []
    for tag, value in fmt.iter_unpack(raw):
        if tag == _DT_NULL:
            break
        if tag == _DT_NEEDED:
            needed.append(value)
        values[tag] = value
    return values, tuple(needed)


def _dynamic_strings(
    img: _Image, segments: Sequence[_Segment], values: Mapping[int, int], where: int
) -> _StringTable | None:
    addr = values.get(_DT_STRTAB)
    if addr is None:
        return None
    offset, limit = _file_offset(segments, addr, "DT_STRTAB", where)
    size = values.get(_DT_STRSZ, limit - offset)
    if offset + size > img.size:
        raise _Bad(offset, "dynamic string table runs past the end of the file")
    return _string_table(img, offset, size, "dynamic string table")


def _read_dynamic(
    img: _Image, segments: Sequence[_Segment], sections: Sequence[_Section]
) -> _Dynamic | None:
    seg = next((s for s in segments if s.type == _PT_DYNAMIC), None)
    if seg is None or _is_debug_only(sections):
        return None
    values, needed = _dynamic_entries(img, seg)
    strings = _dynamic_strings(img, segments, values, seg.offset)
    uses_strings = needed or any(t in values for t in (_DT_SONAME, _DT_RPATH, _DT_RUNPATH))
    if uses_strings and strings is None:
        raise _Bad(seg.offset, "dynamic section names strings but has no DT_STRTAB")
    return _Dynamic(seg.offset, values, needed, strings)


def _is_debug_only(sections: Sequence[_Section]) -> bool:
    """A separate debug file (objcopy --only-keep-debug): headers kept, dynamic bytes dropped."""
    return any(s.name == ".dynamic" and s.type == _SHT_NOBITS for s in sections)


def _dyn_string(dyn: _Dynamic, tag: int) -> str | None:
    if tag not in dyn.values or dyn.strings is None:
        return None
    return dyn.strings.get(dyn.values[tag])


def _split_path(value: str | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value.split(":"))


# --- symbol versions ------------------------------------------------------------------------


class _Versions(NamedTuple):
    by_index: Mapping[int, tuple[str, bool]]
    """Version index -> (name, comes from a definition)."""
    definitions: tuple[str, ...]
    needs: tuple[tuple[str, tuple[str, ...]], ...]
    weak: tuple[tuple[str, str], ...] = ()
    """(file, version) of the needs marked ``VER_FLG_WEAK``."""


_NO_VERSIONS: Final = _Versions({}, (), ())
_VERDEF = struct.Struct("<HHHHIII")
_VERDEF_BE = struct.Struct(">HHHHIII")
_VERNEED = struct.Struct("<HHIII")
_VERNEED_BE = struct.Struct(">HHIII")
_VERNAUX = struct.Struct("<IHHII")
_VERNAUX_BE = struct.Struct(">IHHII")


def _pick(img: _Image, little: struct.Struct, big: struct.Struct) -> struct.Struct:
    return little if img.layout.endian == "<" else big


def _read_verdefs(
    img: _Image, start: int, end: int, count: int, strings: _StringTable
) -> list[tuple[int, int, str]]:
    """(index, flags, name) for each version definition, following vd_next within [start, end)."""
    fmt = _pick(img, _VERDEF, _VERDEF_BE)
    out: list[tuple[int, int, str]] = []
    pos = start
    for _ in range(min(count, max(end - start, 0) // fmt.size)):
        if pos + fmt.size > end:
            raise _Bad(pos, "version definition runs past its table")
        _ver, flags, index, aux_count, _hash, aux, nxt = fmt.unpack_from(img.view, pos)
        name = ""
        if aux_count:
            if pos + aux + 8 > end:
                raise _Bad(pos, "version definition name runs past its table")
            (name_off,) = struct.unpack_from(img.layout.endian + "I", img.view, pos + aux)
            name = strings.get(name_off)
        out.append((index, flags, name))
        if nxt == 0:
            break
        pos += nxt
    return out


def _read_vernaux(
    img: _Image, pos: int, end: int, count: int, strings: _StringTable
) -> list[tuple[int, str, int]]:
    fmt = _pick(img, _VERNAUX, _VERNAUX_BE)
    out: list[tuple[int, str, int]] = []
    for _ in range(min(count, max(end - pos, 0) // fmt.size + 1)):
        if pos + fmt.size > end:
            raise _Bad(pos, "version requirement runs past its table")
        _hash, flags, index, name_off, nxt = fmt.unpack_from(img.view, pos)
        out.append((index, strings.get(name_off), flags))
        if nxt == 0:
            break
        pos += nxt
    return out


def _read_verneeds(
    img: _Image, start: int, end: int, count: int, strings: _StringTable
) -> list[tuple[str, list[tuple[int, str, int]]]]:
    fmt = _pick(img, _VERNEED, _VERNEED_BE)
    out: list[tuple[str, list[tuple[int, str, int]]]] = []
    pos = start
    for _ in range(min(count, max(end - start, 0) // fmt.size)):
        if pos + fmt.size > end:
            raise _Bad(pos, "version requirement file entry runs past its table")
        _ver, aux_count, file_off, aux, nxt = fmt.unpack_from(img.view, pos)
        out.append((strings.get(file_off), _read_vernaux(img, pos + aux, end, aux_count, strings)))
        if nxt == 0:
            break
        pos += nxt
    return out


def _versions(
    defs: Sequence[tuple[int, int, str]], needs: Sequence[tuple[str, list[tuple[int, str, int]]]]
) -> _Versions:
    by_index: dict[int, tuple[str, bool]] = {}
    for _file, entries in needs:
        for index, name, _flags in entries:
            by_index[index & 0x7FFF] = (name, False)
    for index, _flags, name in defs:
        by_index[index & 0x7FFF] = (name, True)
    definitions = tuple(name for _i, flags, name in defs if not flags & _VER_FLG_BASE)
    need_names = tuple((file, tuple(n for _i, n, _f in entries)) for file, entries in needs)
    weak = tuple(
        sorted((file, n) for file, entries in needs for _i, n, f in entries if f & _VER_FLG_WEAK)
    )
    return _Versions(by_index, definitions, need_names, weak)


class _TableRef(NamedTuple):
    """Where a version table lives: [offset, end) with ``entries`` entries and its strings."""

    offset: int
    end: int
    entries: int
    strings: _StringTable


def _read_versions(img: _Image, verdef: _TableRef | None, verneed: _TableRef | None) -> _Versions:
    defs = (
        _read_verdefs(img, verdef.offset, verdef.end, verdef.entries, verdef.strings)
        if verdef
        else []
    )
    needs = (
        _read_verneeds(img, verneed.offset, verneed.end, verneed.entries, verneed.strings)
        if verneed
        else []
    )
    return _versions(defs, needs)


def _read_versym(img: _Image, offset: int, available: int, count: int) -> Sequence[int]:
    if available < 2 * count:
        raise _Bad(offset, f"symbol version table has fewer than {count} entries")
    raw = img.span(offset, 2 * count, "symbol version table")
    if (img.layout.endian == "<") == _NATIVE_LITTLE:
        return raw.cast("H")  # zero-copy: the file's byte order is the machine's
    return struct.unpack(f"{img.layout.endian}{count}H", raw)


def _linked_strings(img: _Image, sections: Sequence[_Section], section: _Section) -> _StringTable:
    if not 0 < section.link < len(sections):
        raise _Bad(
            section.offset, f"section {section.name} links to missing section {section.link}"
        )
    table = sections[section.link]
    return _string_table(
        img, table.offset, table.size, f"string table {table.name or section.link}"
    )


def _symbol_count(img: _Image, section: _Section) -> int:
    if section.entsize != img.layout.sym_size:
        raise _Bad(section.offset, f"section {section.name} has entry size {section.entsize}")
    return section.size // section.entsize


def _first(sections: Sequence[_Section], sh_type: int) -> _Section | None:
    return next((s for s in sections if s.type == sh_type), None)


class _DynamicFlags(NamedTuple):
    bind_now: bool
    textrel: bool
    nodeflib: bool
    pie: bool
    symbolic: bool


def _dynamic_flags(values: Mapping[int, int]) -> _DynamicFlags:
    flags, flags_1 = values.get(_DT_FLAGS, 0), values.get(_DT_FLAGS_1, 0)
    return _DynamicFlags(
        bind_now=_DT_BIND_NOW in values or bool(flags & _DF_BIND_NOW or flags_1 & _DF_1_NOW),
        textrel=_DT_TEXTREL in values or bool(flags & _DF_TEXTREL),
        nodeflib=bool(flags_1 & _DF_1_NODEFLIB),
        pie=bool(flags_1 & _DF_1_PIE),
        symbolic=_DT_SYMBOLIC in values or bool(flags & _DF_SYMBOLIC),
    )


class _Structure(NamedTuple):
    header: _Header
    sections: tuple[_Section, ...]
    segments: tuple[_Segment, ...]
    dynamic: _Dynamic | None


def _read_structure(img: _Image) -> _Structure:
    header = _read_header(img)
    sections = _read_sections(img, header)
    _check_section_extents(img, sections)
    segments = _read_segments(img, header, sections)
    _check_load_extents(img, segments)
    return _Structure(header, sections, segments, _read_dynamic(img, segments, sections))


def _open_image(data: ElfBuffer, size: int | None, file_backed: bool) -> _Image:
    view = memoryview(data).cast("B")
    if size is not None:
        view = view[:size]
    if len(view) < 6:
        raise _Bad(0, "file is shorter than the ELF identification")
    elf_class = {1: 32, 2: 64}.get(view[4])
    if elf_class is None:
        raise _Bad(4, f"unsupported ELF class {view[4]}")
    if view[5] not in (1, 2):
        raise _Bad(5, f"unsupported ELF data encoding {view[5]}")
    finder = data if isinstance(data, (bytes, bytearray, mmap.mmap)) else None
    layout = _LAYOUTS[(elf_class, view[5] == 1)]
    return _Image(view, len(view), layout, finder, file_backed, {})


_DECODE_ERRORS: Final = (struct.error, IndexError, ValueError, OverflowError, MemoryError)

_T = TypeVar("_T")


def _decode_image(image: _Image, decode: Callable[[_Image], _T]) -> _T:
    try:
        return decode(image)
    finally:
        image.release(0, image.size)


def _decoded(
    data: ElfBuffer,
    display_path: str,
    size: int | None,
    file_backed: bool,
    decode: Callable[[_Image], _T],
) -> _T:
    """``decode`` over the file's image, its problems turned into MalformedElf."""
    try:
        return _decode_image(_open_image(data, size, file_backed), decode)
    except _Bad as bad:
        offset, reason = bad.offset, bad.reason
    except _DECODE_ERRORS as exc:  # belt and braces: every size is checked before use
        offset, reason = 0, f"cannot be decoded ({type(exc).__name__}: {exc})"
    # raised outside the handler so no traceback keeps a view of ``data`` alive
    raise MalformedElf(display_path, offset, reason)


def _sections_only(img: _Image) -> tuple[_Section, ...]:
    sections = _read_sections(img, _read_header(img))
    _check_section_extents(img, sections)
    return sections
