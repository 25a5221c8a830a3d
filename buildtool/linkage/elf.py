"""ELF facts for ``verify-linkage``: a struct/memoryview decoder plus a pyelftools reference.

Supported: ELF classes 32 and 64, little and big endian, any machine (common ones are named:
x86_64, i386, aarch64, arm, ppc, ppc64, s390/s390x, riscv, mips, loongarch; others read as
``unknown(<e_machine>)``). Dynamic facts come from ``PT_DYNAMIC`` and the program headers, as ld.so
reads them; symbol tables from the section headers, falling back to ``DT_SYMTAB`` with the hash
tables when a file has no section headers.

Symbol keys
-----------
Dynamic symbols are kept as strings, one per (name, version), never one object per symbol:

* ``name``            unversioned: the file has no ``.gnu.version``, or the version index is
                      0 (local) or 1 (global/base)
* ``name@@VERSION``   the default definition of ``VERSION`` (``.gnu.version_d``, hidden bit clear)
* ``name@VERSION``    a hidden (non-default) definition, any reference (undefined symbol), or a
                      copy-relocated definition whose index points into ``.gnu.version_r``

A key splits at its first ``@`` (symbol names from compilers never contain one). ld.so's rules in
these terms (``resolve.is_satisfied`` implements them): an undefined ``name@V`` is satisfied by a
definition ``name@V``, ``name@@V`` or an unversioned ``name``; an undefined ``name`` by ``name`` or
a ``name@@V``. Several versions of one name stay apart (``memcpy@GLIBC_2.2.5`` beside
``memcpy@@GLIBC_2.14``). The absolute symbols the linker emits for each version node
(``LIBX_1.0@@LIBX_1.0``, value 0) are left out of ``defined``: ld.so never binds to them.

Strings decode as UTF-8 with replacement, so no name can make decoding fail.

Speed: symbol tables are read a column at a time (strided views of the table, 0/1 masks made
with ``bytes.translate``, ``itertools.compress``), never one Python object per row; the names of
``.symtab``'s functions are kept as ``NameDigests``; a big ``.symtab`` can be read in parts by
several processes (``read_symtab_part``, ``with_symtab``); and the pages of a mapped file are
dropped from the process once decoded, so a 434 MB library costs tens of MB of memory.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
import sys
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import compress, filterfalse, repeat
from operator import add
from pathlib import Path
from typing import IO, Any, Final, NamedTuple, TypeVar

from buildtool.errors import InputError

ELF_MAGIC: Final = b"\x7fELF"

LINKER_GENERATED: Final = frozenset(
    {
        "_end",
        "_edata",
        "__bss_start",
        "_init",
        "_fini",
        "__end__",
        "_etext",
        "etext",
        "edata",
        "end",
        "_DYNAMIC",
        "_GLOBAL_OFFSET_TABLE_",
    }
)
"""Symbols the linker (or crti/crtn) puts in every object: never evidence of duplicated code."""

CRT_FUNCTIONS: Final = frozenset(
    {
        "_init",
        "_fini",
        "_start",
        "deregister_tm_clones",
        "register_tm_clones",
        "__do_global_dtors_aux",
        "frame_dummy",
        "__libc_csu_init",
        "__libc_csu_fini",
        "_dl_relocate_static_pie",
        "__static_initialization_and_destruction_0",
        "_Z41__static_initialization_and_destruction_0v",
        "__tls_init",
        "__x86.get_pc_thunk.bx",
        "__x86.get_pc_thunk.ax",
        "__x86.get_pc_thunk.cx",
        "__x86.get_pc_thunk.dx",
    }
)
"""``.symtab`` functions that toolchain startup files or every C++ TU contribute."""

STATIC_INIT_PREFIX: Final = "_GLOBAL__sub_I_"

ElfBuffer = bytes | bytearray | memoryview | mmap.mmap

# ELF constants (elf.h); only the ones this module reads.
_ET_NAMES: Final = {1: "relocatable", 2: "executable", 4: "core"}
_ET_DYN: Final = 3
_PT_LOAD, _PT_DYNAMIC, _PT_INTERP = 1, 2, 3
_PT_GNU_STACK, _PT_GNU_RELRO = 0x6474E551, 0x6474E552
_PF_X: Final = 1
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_DYNAMIC, _SHT_NOBITS, _SHT_DYNSYM = 1, 2, 6, 8, 11
_SHT_INIT_ARRAY: Final = 14
_SHT_GNU_VERDEF, _SHT_GNU_VERNEED, _SHT_GNU_VERSYM = 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
_SHF_ALLOC, _SHF_EXECINSTR = 0x2, 0x4
_SHN_UNDEF, _SHN_ABS, _SHN_XINDEX = 0, 0xFFF1, 0xFFFF
_PN_XNUM: Final = 0xFFFF
_STB_WEAK, _STB_GNU_UNIQUE = 2, 10
_STT_OBJECT, _STT_FUNC, _STT_GNU_IFUNC = 1, 2, 10
_FUNC_INFOS: Final = frozenset(b << 4 | t for b in range(16) for t in (_STT_FUNC, _STT_GNU_IFUNC))
_VER_FLG_BASE: Final = 0x1
_DT_NULL, _DT_NEEDED, _DT_HASH, _DT_STRTAB, _DT_SYMTAB = 0, 1, 4, 5, 6
_DT_STRSZ, _DT_SONAME, _DT_RPATH, _DT_TEXTREL, _DT_BIND_NOW = 10, 14, 15, 22, 24
_DT_INIT_ARRAYSZ, _DT_RUNPATH, _DT_FLAGS = 27, 29, 30
_DT_GNU_HASH, _DT_VERSYM, _DT_FLAGS_1 = 0x6FFFFEF5, 0x6FFFFFF0, 0x6FFFFFFB
_DT_VERDEF, _DT_VERDEFNUM, _DT_VERNEED, _DT_VERNEEDNUM = (
    0x6FFFFFFC,
    0x6FFFFFFD,
    0x6FFFFFFE,
    0x6FFFFFFF,
)
_DF_TEXTREL, _DF_BIND_NOW = 0x4, 0x8
_DF_1_NOW, _DF_1_NODEFLIB, _DF_1_PIE = 0x1, 0x800, 0x08000000

_MACHINES: Final = {
    3: "i386",
    8: "mips",
    20: "ppc",
    21: "ppc64",
    22: "s390x",
    40: "arm",
    62: "x86_64",
    183: "aarch64",
    243: "riscv",
    258: "loongarch",
}


class MalformedElf(InputError):
    """An ELF file is truncated or corrupt; names the file, the byte offset and the problem."""

    def __init__(self, path: str, offset: int, reason: str) -> None:
        self.path = path
        self.offset = offset
        self.reason = reason
        super().__init__(f"{path}: malformed ELF at offset {offset:#x}: {reason}")

    def __reduce__(self) -> tuple[type[MalformedElf], tuple[str, int, str]]:
        # worker processes send these back to the parent: pickle the constructor arguments
        return (MalformedElf, (self.path, self.offset, self.reason))


def name_digest(name: str) -> int:
    """The digest ``NameDigests`` keeps for a name: Python's 64-bit hash of its UTF-8 bytes.

    The hash is salted per interpreter (``PYTHONHASHSEED``), so digests agree only within one
    process and the workers it forks, which read every file of a run, and are never stored. It
    costs a third of a cryptographic digest, which counts at half a million names a file.
    """
    return hash(name.encode("utf-8"))


@dataclass(frozen=True, eq=False)
class NameDigests:
    """A set of names kept as 64-bit digests (``name_digest``): 8 bytes a name.

    libtorch_cpu.so defines 350k functions whose names take 58 MB; their digests take 3 MB and
    compare without one Python object per name. Two names share a digest with odds of 2**-64.
    The names themselves are read again from the file when a finding has to show them.

    The set is the digests in ``packed`` less those in ``excluded``: several processes read the
    parts of a big symbol table, and putting the parts together is then a concatenation.
    """

    packed: bytes
    """Digests in native byte order, 8 bytes each, in no particular order; one may repeat."""
    excluded: frozenset[int] = frozenset()
    """Digests that are not in the set even where ``packed`` holds them."""

    @property
    def stored(self) -> int:
        """How many digests ``packed`` holds: what comparing the set costs."""
        return len(self.packed) // 8

    def _values(self) -> memoryview:
        return memoryview(self.packed).cast("q")

    def _distinct(self) -> set[int]:
        return set(self._values()) - self.excluded

    def __len__(self) -> int:
        return len(self._distinct())

    def __iter__(self) -> Iterator[int]:
        return iter(self._distinct())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        digest = name_digest(name)
        return digest not in self.excluded and digest in self._values()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NameDigests):
            return NotImplemented
        return self._distinct() == other._distinct()

    def __hash__(self) -> int:
        return hash(frozenset(self._distinct()))

    def __repr__(self) -> str:
        return f"NameDigests(<{self.stored} digests>)"

    def common(self, other: NameDigests) -> frozenset[int]:
        """Digests of the names both sets hold."""
        small, large = (self, other) if self.stored <= other.stored else (other, self)
        both = set(small._values()).intersection(large._values())
        return frozenset(both - self.excluded - other.excluded)


NO_NAMES: Final = NameDigests(b"")


@dataclass(frozen=True)
class ElfFacts:
    """What verify-linkage needs to know about one ELF file (see the module doc for keys)."""

    path: str
    """The display path given by the caller (a tree-relative path or a wheel member)."""
    elf_class: int
    """32 or 64."""
    little_endian: bool
    machine: str
    """``x86_64``, ``aarch64``, ... or ``unknown(<e_machine>)``."""
    file_type: str
    """shared, pie, executable, relocatable, core or other."""
    interpreter: str | None
    """``PT_INTERP`` (the program interpreter), None when absent."""
    soname: str | None
    needed: tuple[str, ...]
    """``DT_NEEDED`` entries in file order."""
    rpath: tuple[str, ...] | None
    """``DT_RPATH`` split on ``:`` (empty entries kept as ""); None when absent."""
    runpath: tuple[str, ...] | None
    """``DT_RUNPATH`` split on ``:`` (empty entries kept as ""); None when absent."""
    defined: frozenset[str]
    """Keys of defined, non-local dynamic symbols."""
    versioned_definitions: bool
    """Whether a key of ``defined`` carries a version (an ``@``): without one, resolving against
    this file needs no version matching."""
    undefined: frozenset[str]
    """Keys of undefined dynamic symbols that are not weak."""
    weak_undefined: frozenset[str]
    unique: frozenset[str]
    """Keys of ``STB_GNU_UNIQUE`` definitions (a subset of ``defined``)."""
    weak_defined: frozenset[str]
    """Keys of weak definitions (a subset of ``defined``): inline functions and template
    instantiations that every library using them may carry, so never evidence of duplication."""
    exported_count: int
    """Defined, non-local, default-visibility dynamic symbol entries."""
    version_definitions: tuple[str, ...]
    """Version nodes this file defines (``.gnu.version_d`` minus the base entry), in order."""
    version_needs: tuple[tuple[str, tuple[str, ...]], ...]
    """``(file, versions)`` this file requires (``.gnu.version_r``), in order."""
    init_array_size: int
    """Bytes of ``DT_INIT_ARRAYSZ`` (or of ``SHT_INIT_ARRAY`` sections without dynamic info)."""
    has_symtab: bool
    """True when a ``.symtab`` is present (the file is not stripped)."""
    static_initializers: tuple[str, ...]
    """``.symtab`` names starting ``_GLOBAL__sub_I_`` (one per C++ TU with static init), sorted."""
    symtab_functions: NameDigests = field(hash=False)
    """The code this file defines, by name: ``.symtab`` defined FUNC/IFUNC names of default
    visibility, less the weak ones (COMDAT code: inline functions, template instances; hidden
    ones the linker made local are left out too), GCC's ``.cold`` split parts, toolchain startup
    code (``CRT_FUNCTIONS``) and static initializers; empty when stripped."""
    registration_strings: frozenset[str]
    """Which of the requested names occur NUL-terminated in allocated non-code data."""
    file_size: int
    code_size: int
    """Sum of ``SHF_EXECINSTR`` section sizes (executable ``PT_LOAD`` bytes without sections)."""
    sections: tuple[tuple[str, int], ...]
    """``(name, size)`` of every section but the null one, in header order."""
    bind_now: bool
    """``DT_BIND_NOW``, ``DF_BIND_NOW`` or ``DF_1_NOW``."""
    relro: bool
    """A ``PT_GNU_RELRO`` segment is present."""
    exec_stack: bool
    """``PT_GNU_STACK`` is missing or executable."""
    textrel: bool
    """``DT_TEXTREL`` or ``DF_TEXTREL``."""
    nodeflib: bool
    """``DF_1_NODEFLIB``: ld.so skips its cache and default directories for this object's needs."""


# --------------------------------------------------------------------------------------------
# fast path: struct over a memoryview of the whole file
#
# The decoder's own records are NamedTuples, not dataclasses: defining one costs a seventh as
# much, and twenty dataclasses were most of what importing this module cost (20 ms a run).


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


class _StringTable(NamedTuple):
    """A string table decoded as latin-1, so that a character index is a byte offset."""

    text: str
    base: int
    what: str

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
    raw = img.span(offset, size, what)
    return _StringTable(str(raw, "latin-1"), offset, what)  # decoded straight from the map


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
) -> list[tuple[int, str]]:
    fmt = _pick(img, _VERNAUX, _VERNAUX_BE)
    out: list[tuple[int, str]] = []
    for _ in range(min(count, max(end - pos, 0) // fmt.size + 1)):
        if pos + fmt.size > end:
            raise _Bad(pos, "version requirement runs past its table")
        _hash, _flags, index, name_off, nxt = fmt.unpack_from(img.view, pos)
        out.append((index, strings.get(name_off)))
        if nxt == 0:
            break
        pos += nxt
    return out


def _read_verneeds(
    img: _Image, start: int, end: int, count: int, strings: _StringTable
) -> list[tuple[str, list[tuple[int, str]]]]:
    fmt = _pick(img, _VERNEED, _VERNEED_BE)
    out: list[tuple[str, list[tuple[int, str]]]] = []
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
    defs: Sequence[tuple[int, int, str]], needs: Sequence[tuple[str, list[tuple[int, str]]]]
) -> _Versions:
    by_index: dict[int, tuple[str, bool]] = {}
    for _file, entries in needs:
        for index, name in entries:
            by_index[index & 0x7FFF] = (name, False)
    for index, _flags, name in defs:
        by_index[index & 0x7FFF] = (name, True)
    definitions = tuple(name for _i, flags, name in defs if not flags & _VER_FLG_BASE)
    need_names = tuple((file, tuple(n for _i, n in entries)) for file, entries in needs)
    return _Versions(by_index, definitions, need_names)


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


# --- symbol tables --------------------------------------------------------------------------


class _SymbolSource(NamedTuple):
    offset: int
    entries: int
    names: Callable[[list[int]], list[str]]
    """st_name values -> names."""
    versym: Sequence[int] | None
    versions: _Versions


class _DynamicSymbols(NamedTuple):
    defined: frozenset[str]
    versioned_definitions: bool
    undefined: frozenset[str]
    weak_undefined: frozenset[str]
    unique: frozenset[str]
    weak_defined: frozenset[str]
    exported_count: int
    versions: _Versions


_NO_SYMBOLS: Final = _DynamicSymbols(
    frozenset(), False, frozenset(), frozenset(), frozenset(), frozenset(), 0, _NO_VERSIONS
)


def _key_suffixes(versions: _Versions) -> tuple[dict[int, str], dict[int, str]]:
    """Versym value -> key suffix, for definitions and for references (see the module doc)."""
    definitions = {value: "" for value in (0, 1, 0x8000, 0x8001)}  # local/base: unversioned
    references = dict(definitions)
    for index, (name, from_definition) in versions.by_index.items():
        if index < 2:
            continue
        hidden = f"@{name}"
        definitions[index] = f"@@{name}" if from_definition else hidden
        definitions[index | 0x8000] = references[index] = references[index | 0x8000] = hidden
    return definitions, references


def _is_version_node(name: str, key: str, info: int, value: int) -> bool:
    return value == 0 and info & 0xF == _STT_OBJECT and key == f"{name}@@{name}"


def _check_version_indexes(used: set[int], known: Mapping[int, str], table: int) -> None:
    unknown = used - known.keys()
    if unknown:
        index = min(unknown) & 0x7FFF
        raise _Bad(table, f"a dynamic symbol has version index {index}, which no table defines")


def _collect_dynamic(
    source: _SymbolSource, rows: Iterable[tuple[int, int, int, int, int]]
) -> _DynamicSymbols:
    defined: set[str] = set()
    undefined: set[str] = set()
    weak: set[str] = set()
    unique: set[str] = set()
    weak_defined: set[str] = set()
    exported = 0
    versym: Iterable[int] = source.versym if source.versym is not None else repeat(0)
    # STB_LOCAL symbols (info < 0x10) are never visible to other objects
    live = [(row, ver) for row, ver in zip(rows, versym, strict=False) if row[1] >= 0x10]
    names = source.names([row[0] for row, _ver in live])
    def_suffix, ref_suffix = _key_suffixes(source.versions)
    _check_version_indexes({ver for _row, ver in live}, def_suffix, source.offset)
    for ((_name, info, other, shndx, value), ver), name in zip(live, names, strict=True):
        if not name:
            continue
        if shndx == _SHN_UNDEF:
            (weak if info >> 4 == _STB_WEAK else undefined).add(name + ref_suffix[ver])
            continue
        key = name + def_suffix[ver]
        if shndx == _SHN_ABS and _is_version_node(name, key, info, value):
            continue  # the linker's marker for a version node, not a symbol anyone binds to
        defined.add(key)
        if info >> 4 == _STB_GNU_UNIQUE:
            unique.add(key)
        elif info >> 4 == _STB_WEAK:
            weak_defined.add(key)
        exported += other & 3 == 0
    return _DynamicSymbols(
        frozenset(defined), any("@" in key for key in defined), frozenset(undefined),
        frozenset(weak), frozenset(unique), frozenset(weak_defined), exported, source.versions,
    )  # fmt: skip


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


def _section_table_ref(img: _Image, sections: Sequence[_Section], sh_type: int) -> _TableRef | None:
    section = _first(sections, sh_type)
    if section is None:
        return None
    strings = _linked_strings(img, sections, section)
    return _TableRef(section.offset, section.offset + section.size, section.info, strings)


def _source_from_sections(
    img: _Image, sections: Sequence[_Section], dynsym: _Section
) -> _SymbolSource:
    count = _symbol_count(img, dynsym)
    strings = _linked_strings(img, sections, dynsym)
    versym_section = _first(sections, _SHT_GNU_VERSYM)
    versym = (
        _read_versym(img, versym_section.offset, versym_section.size, count)
        if versym_section is not None
        else None
    )
    versions = _read_versions(
        img,
        _section_table_ref(img, sections, _SHT_GNU_VERDEF),
        _section_table_ref(img, sections, _SHT_GNU_VERNEED),
    )
    return _SymbolSource(dynsym.offset, count, strings.many, versym, versions)


def _gnu_hash_count(img: _Image, offset: int) -> int:
    """Number of symbols covered by a DT_GNU_HASH table: walk the chain of the last bucket."""
    e = img.layout.endian
    nbuckets, symoffset, bloom_size, _shift = img.unpack(
        struct.Struct(e + "4I"), offset, "GNU hash"
    )
    buckets_at = offset + 16 + bloom_size * img.layout.word_size
    buckets = struct.unpack(f"{e}{nbuckets}I", img.span(buckets_at, 4 * nbuckets, "GNU hash"))
    last = max(buckets, default=0)
    if last == 0:
        return int(symoffset)
    if last < symoffset:
        raise _Bad(buckets_at, "GNU hash bucket points below the first hashed symbol")
    chain_at = buckets_at + 4 * nbuckets + 4 * (last - symoffset)
    words = img.span(chain_at, max(img.size - chain_at, 0) // 4 * 4, "GNU hash chain")
    for position, (word,) in enumerate(struct.iter_unpack(e + "I", words)):
        if word & 1:
            return last + position + 1
    raise _Bad(chain_at, "GNU hash chain is not terminated")


def _dynamic_symbol_count(img: _Image, segments: Sequence[_Segment], dyn: _Dynamic) -> int | None:
    if _DT_HASH in dyn.values:
        offset, _end = _file_offset(segments, dyn.values[_DT_HASH], "DT_HASH", dyn.offset)
        return int(img.unpack(struct.Struct(img.layout.endian + "II"), offset, "hash table")[1])
    if _DT_GNU_HASH in dyn.values:
        offset, _end = _file_offset(segments, dyn.values[_DT_GNU_HASH], "DT_GNU_HASH", dyn.offset)
        return _gnu_hash_count(img, offset)
    return None


def _dynamic_table_ref(
    segments: Sequence[_Segment], dyn: _Dynamic, tags: tuple[int, int], strings: _StringTable
) -> _TableRef | None:
    addr_tag, count_tag = tags
    if addr_tag not in dyn.values:
        return None
    offset, end = _file_offset(segments, dyn.values[addr_tag], "version table", dyn.offset)
    return _TableRef(offset, end, dyn.values.get(count_tag, 0), strings)


def _source_from_dynamic(
    img: _Image, segments: Sequence[_Segment], dyn: _Dynamic
) -> _SymbolSource | None:
    """Without section headers: DT_SYMTAB sized by the hash table, as ld.so sees it."""
    count = _dynamic_symbol_count(img, segments, dyn)
    if count is None or _DT_SYMTAB not in dyn.values or dyn.strings is None:
        return None
    offset, _end = _file_offset(segments, dyn.values[_DT_SYMTAB], "DT_SYMTAB", dyn.offset)
    if count * img.layout.sym_size > img.size - offset:
        raise _Bad(offset, f"dynamic symbol table ({count} entries) runs past the end of the file")
    versym = None
    if _DT_VERSYM in dyn.values:
        at, _end = _file_offset(segments, dyn.values[_DT_VERSYM], "DT_VERSYM", dyn.offset)
        versym = _read_versym(img, at, img.size - at, count)
    versions = _read_versions(
        img,
        _dynamic_table_ref(segments, dyn, (_DT_VERDEF, _DT_VERDEFNUM), dyn.strings),
        _dynamic_table_ref(segments, dyn, (_DT_VERNEED, _DT_VERNEEDNUM), dyn.strings),
    )
    return _SymbolSource(offset, count, dyn.strings.many, versym, versions)


def _read_dynamic_symbols(
    img: _Image, sections: Sequence[_Section], segments: Sequence[_Segment], dyn: _Dynamic | None
) -> _DynamicSymbols:
    dynsym = _first(sections, _SHT_DYNSYM)
    source: _SymbolSource | None = None
    if dynsym is not None:
        source = _source_from_sections(img, sections, dynsym)
    elif dyn is not None and not sections:
        source = _source_from_dynamic(img, segments, dyn)
    if source is None:
        return _NO_SYMBOLS
    return _collect_columns(img, source)


# The fast path reads the table a column at a time; ``_collect_dynamic`` (row by row) is what the
# pyelftools reference uses, so the tests hold each against the other.

_LIVE_MASK: Final = bytes(int(info >= 0x10) for info in range(256))  # not STB_LOCAL
_ZERO_MASK: Final = bytes(int(value == 0) for value in range(256))


def _bind_mask(bind: int) -> bytes:
    return bytes(int(info >> 4 == bind) for info in range(256))


_WEAK_MASK, _UNIQUE_MASK = _bind_mask(_STB_WEAK), _bind_mask(_STB_GNU_UNIQUE)
_EXPORTED_MASK: Final = bytes(int(other & 3 == 0) for other in range(256))  # default visibility


def _mask_and(*masks: bytes) -> bytes:
    """Byte-wise AND of 0/1 masks of one length."""
    value = int.from_bytes(masks[0], "little")
    for mask in masks[1:]:
        value &= int.from_bytes(mask, "little")
    return value.to_bytes(len(masks[0]), "little")


def _mask_not(mask: bytes) -> bytes:
    return mask.translate(_ZERO_MASK)


class _Columns(NamedTuple):
    """The live (non-local) rows of a symbol table, a column at a time: strided views of the
    table, masks of 0/1 bytes made with ``bytes.translate`` and combined as integers, and
    ``compress``; no Python object per row, which matters for half a million symbols."""

    rows: list[int]
    """Row numbers (for the rare per-row look: absolute symbols)."""
    names: list[str]
    versions: list[int]
    info: bytes
    other: bytes
    undefined: bytes
    """1 where st_shndx is SHN_UNDEF."""
    absolute: bytes
    """1 where st_shndx is SHN_ABS."""


def _shndx_bytes(img: _Image, raw: memoryview) -> tuple[bytes, bytes]:
    """The low and the high byte of each row's st_shndx."""
    entry = img.layout.sym_size
    at = 6 if img.layout.elf_class == 64 else 14
    first, second = raw[at::entry].tobytes(), raw[at + 1 :: entry].tobytes()
    return (first, second) if img.layout.endian == "<" else (second, first)


def _undefined_mask(low: bytes, high: bytes) -> bytes:
    """1 where st_shndx is SHN_UNDEF."""
    return _mask_and(low.translate(_ZERO_MASK), high.translate(_ZERO_MASK))


def _shndx_masks(img: _Image, raw: memoryview) -> tuple[bytes, bytes]:
    low, high = _shndx_bytes(img, raw)
    absolute = _mask_and(low.translate(_ABS_LOW_MASK), high.translate(_ABS_HIGH_MASK))
    return _undefined_mask(low, high), absolute


def _equal_mask(byte: int) -> bytes:
    return bytes(int(value == byte) for value in range(256))


_ABS_LOW_MASK, _ABS_HIGH_MASK = _equal_mask(_SHN_ABS & 0xFF), _equal_mask(_SHN_ABS >> 8)


def _name_column(img: _Image, raw: memoryview) -> list[int]:
    names = raw.cast("I")[:: img.layout.sym_size // 4].tolist()
    if (img.layout.endian == "<") == _NATIVE_LITTLE:
        return names
    swapped = array("I", names)
    swapped.byteswap()
    return swapped.tolist()


def _columns(img: _Image, source: _SymbolSource) -> _Columns:
    layout = img.layout
    raw = img.span(source.offset, source.entries * layout.sym_size, "symbol table")
    info_at = 4 if layout.elf_class == 64 else 12
    info = raw[info_at :: layout.sym_size].tobytes()
    live = info.translate(_LIVE_MASK)
    undefined, absolute = _shndx_masks(img, raw)
    versions = source.versym if source.versym is not None else repeat(0, source.entries)
    return _Columns(
        list(compress(range(source.entries), live)),
        source.names(list(compress(_name_column(img, raw), live))),
        list(compress(versions, live)),
        bytes(compress(info, live)),
        bytes(compress(raw[info_at + 1 :: layout.sym_size].tobytes(), live)),
        bytes(compress(undefined, live)),
        bytes(compress(absolute, live)),
    )


def _keys(names: Sequence[str], versions: Sequence[int], suffixes: Mapping[int, str]) -> list[str]:
    if all(suffixes[version] == "" for version in set(versions)):
        return list(names)  # no version among them: the keys are the names
    assert len(names) == len(versions)  # map stops at the shorter
    return list(map(add, names, map(suffixes.__getitem__, versions)))


def _version_nodes(img: _Image, source: _SymbolSource, cols: _Columns, keys: list[str]) -> bytes:
    """1 where a live row is the linker's marker for a version node (absolute, value 0, an
    OBJECT named like its version): not a symbol anyone binds to."""
    marks = bytearray(len(cols.rows))
    value_at = 8 if img.layout.elf_class == 64 else 4
    word = "Q" if img.layout.elf_class == 64 else "I"
    for index in compress(range(len(cols.rows)), cols.absolute):
        row = source.offset + cols.rows[index] * img.layout.sym_size
        (value,) = struct.unpack_from(img.layout.endian + word, img.view, row + value_at)
        name = cols.names[index]
        marks[index] = _is_version_node(name, keys[index], cols.info[index], value)
    return bytes(marks)


def _has_at(cols: _Columns, defs: bytes, def_suffix: Mapping[int, str]) -> bool:
    """Whether a defined key holds an "@": a version suffix, or (never from a compiler) a name
    with one. Joining the list of names costs a seventh of joining the set of keys."""
    if any(map(def_suffix.__getitem__, set(compress(cols.versions, defs)))):
        return True
    return "@" in "".join(cols.names) and any("@" in n for n in compress(cols.names, defs))


def _collect_columns(img: _Image, source: _SymbolSource) -> _DynamicSymbols:
    """``_collect_dynamic`` over the columns of the table: no Python object per row."""
    cols = _columns(img, source)
    def_suffix, ref_suffix = _key_suffixes(source.versions)
    _check_version_indexes(set(cols.versions), def_suffix, source.offset)
    named = bytes(map(bool, cols.names))
    refs = _mask_and(named, cols.undefined)
    ref_keys = _keys(
        list(compress(cols.names, refs)), list(compress(cols.versions, refs)), ref_suffix
    )
    weak_refs = bytes(compress(cols.info.translate(_WEAK_MASK), refs))
    def_keys = _keys(cols.names, cols.versions, def_suffix)
    defs = _mask_and(named, _mask_not(cols.undefined))
    defs = _mask_and(defs, _mask_not(_version_nodes(img, source, cols, def_keys)))
    return _DynamicSymbols(
        defined=frozenset(compress(def_keys, defs)),
        versioned_definitions=_has_at(cols, defs, def_suffix),
        undefined=frozenset(compress(ref_keys, _mask_not(weak_refs))),
        weak_undefined=frozenset(compress(ref_keys, weak_refs)),
        unique=frozenset(compress(def_keys, _mask_and(defs, cols.info.translate(_UNIQUE_MASK)))),
        weak_defined=frozenset(
            compress(def_keys, _mask_and(defs, cols.info.translate(_WEAK_MASK)))
        ),
        exported_count=sum(_mask_and(defs, cols.other.translate(_EXPORTED_MASK))),
        versions=source.versions,
    )


# --- .symtab: static initializers and the functions a file defines ---------------------------


_SYMTAB_CHUNK_ROWS: Final = 1 << 15
"""``.symtab`` rows decoded at a time; a mapped file's pages are dropped after each chunk."""
_INIT_PREFIX_BYTES: Final = STATIC_INIT_PREFIX.encode()
_CRT_BYTES: Final = frozenset(name.encode() for name in CRT_FUNCTIONS)


def _initializers(names: Sequence[bytes]) -> Iterator[bytes]:
    # name tests as method descriptors called by map: no Python-level step per name, which
    # counts at half a million names (methodcaller costs three times as much)
    return compress(names, map(bytes.startswith, names, repeat(_INIT_PREFIX_BYTES)))


_FIND_DOT: Final = re.compile(rb"\.").search


def _without_dot(names: Sequence[bytes]) -> Iterator[bytes]:
    return filterfalse(_FIND_DOT, names)


@dataclass(frozen=True, slots=True)
class SymtabPart:
    """What some rows of ``.symtab`` hold; ``with_symtab`` puts the parts of a table together."""

    initializers: tuple[str, ...]
    """Names starting ``_GLOBAL__sub_I_``, as found."""
    functions: bytes
    """Packed digests of the defined FUNC/IFUNC names without a "." (see
    ``ElfFacts.symtab_functions``), repeats and the ones in ``excluded`` not yet taken out."""
    excluded: bytes
    """Packed digests of the names that are not code of the file alone: weak ones, static
    initializers, toolchain startup code, ""."""


class _FunctionSets(NamedTuple):
    """Collects a ``SymtabPart`` chunk by chunk."""

    initializers: list[bytes]
    functions: array[int]
    """Digests of every name without a "." (GCC's clones and parts): an array, not a set, as
    filling a set of half a million digests costs more than hashing the names."""
    excluded: set[int]
    """Digests of the weak names, then (in ``part``) of the other names that are not code of
    the file alone."""

    def add(self, names: Sequence[bytes], infos: bytes) -> None:
        """``names`` (UTF-8 as pyelftools decodes them) of defined functions, and their st_info."""
        self.initializers.extend(_initializers(names))
        # A "." never occurs in a mangled name: names with one are GCC's clones and split parts
        # (.cold, .isra.0, .constprop.0, .part.0) of code, often of inline functions.
        self.functions.extend(map(hash, _without_dot(names)))
        self.excluded.update(map(hash, compress(names, infos.translate(_WEAK_MASK))))

    def part(self) -> SymtabPart:
        """The part; the sets are spent."""
        self.excluded.update(hash(name) for name in (*self.initializers, *_CRT_BYTES, b""))
        initializers = tuple(name.decode("utf-8") for name in self.initializers)
        excluded = array("q", self.excluded).tobytes()
        return SymtabPart(initializers, self.functions.tobytes(), excluded)


def _new_sets() -> _FunctionSets:
    return _FunctionSets([], array("q"), set())


def _join_parts(parts: Iterable[SymtabPart]) -> tuple[tuple[str, ...], NameDigests]:
    """The facts of a whole ``.symtab`` from its parts: concatenated, exclusions applied."""
    initializers: list[str] = []
    functions: list[bytes] = []
    excluded: set[int] = set()
    for part in parts:
        initializers += part.initializers
        functions.append(part.functions)
        excluded.update(memoryview(part.excluded).cast("q"))
    return tuple(sorted(initializers)), NameDigests(b"".join(functions), frozenset(excluded))


class _RawStrings(NamedTuple):
    """A string table read in place: names come out as bytes, as UTF-8 the way pyelftools
    decodes them (invalid sequences replaced), without copying the table."""

    source: bytes | mmap.mmap
    start: int
    size: int
    what: str

    def one(self, offset: int) -> bytes:
        at = self.start + offset
        end = self.source.find(b"\0", at, self.start + self.size) if offset < self.size else -1
        if end < 0:
            where = self.start + min(offset, self.size)
            raise _Bad(where, f"{self.what}: string at index {offset:#x} is not terminated")
        return _utf8_bytes(self.source[at:end])

    def many(self, offsets: Sequence[int]) -> list[bytes]:
        """Names at many offsets: validated once, then sliced without per-name checks."""
        source, start = self.source, self.start
        if not offsets or max(offsets) >= self.size or source[start + self.size - 1] != 0:
            return [self.one(offset) for offset in offsets]
        find = source.find  # the table ends with a NUL: every search stops inside it
        names = [source[at : find(b"\0", at)] for at in [start + o for o in offsets]]
        return names if all(map(bytes.isascii, names)) else [_utf8_bytes(n) for n in names]


def _utf8_bytes(raw: bytes) -> bytes:
    return raw if raw.isascii() else raw.decode("utf-8", "replace").encode("utf-8")


def _raw_strings(img: _Image, sections: Sequence[_Section], section: _Section) -> _RawStrings:
    if not 0 < section.link < len(sections):
        raise _Bad(
            section.offset, f"section {section.name} links to missing section {section.link}"
        )
    table = sections[section.link]
    what = f"string table {table.name or section.link}"
    raw = img.span(table.offset, table.size, what)
    if isinstance(img.finder, (bytes, mmap.mmap)):
        return _RawStrings(img.finder, table.offset, table.size, what)
    return _RawStrings(bytes(raw), 0, table.size, what)


_FUNCTION_INFO_MASK: Final = bytes(int(info in _FUNC_INFOS) for info in range(256))


def _defined_functions(img: _Image, rows: memoryview) -> tuple[list[int], bytes]:
    """(st_name, st_info) of the defined FUNC/IFUNC symbols among ``rows`` of a symbol table,
    read a column at a time (see ``_columns``)."""
    info = rows[4 if img.layout.elf_class == 64 else 12 :: img.layout.sym_size].tobytes()
    other = rows[5 if img.layout.elf_class == 64 else 13 :: img.layout.sym_size].tobytes()
    undefined = _undefined_mask(*_shndx_bytes(img, rows))
    keep = _mask_and(info.translate(_FUNCTION_INFO_MASK), _mask_not(undefined))
    # Hidden (or internal/protected) functions are inline and template code the linker made
    # local: every library that uses them has a copy, so they are no evidence of shared objects.
    keep = _mask_and(keep, other.translate(_EXPORTED_MASK))
    return list(compress(_name_column(img, rows), keep)), bytes(compress(info, keep))


def _symtab_chunks(
    img: _Image, sections: Sequence[_Section], symtab: _Section, part: int = 0, parts: int = 1
) -> Iterator[tuple[list[bytes], bytes]]:
    """(names, st_info) of the defined FUNC/IFUNC symbols in part ``part`` of ``parts`` of
    ``.symtab``'s rows, a chunk at a time; a mapped file's pages are dropped after each chunk."""
    strings = _raw_strings(img, sections, symtab)
    layout = img.layout
    count = _symbol_count(img, symtab)
    img.span(symtab.offset, count * layout.sym_size, "symbol table")
    rows = range(count * part // parts, count * (part + 1) // parts)
    for first in range(rows.start, rows.stop, _SYMTAB_CHUNK_ROWS):
        offset = symtab.offset + first * layout.sym_size
        size = min(_SYMTAB_CHUNK_ROWS, rows.stop - first) * layout.sym_size
        offsets, infos = _defined_functions(img, img.view[offset : offset + size])
        yield strings.many(offsets), infos
        img.release(offset, size)
        img.release(strings.start, strings.size)


def _read_symtab_rows(
    img: _Image, sections: Sequence[_Section], symtab: _Section, part: int = 0, parts: int = 1
) -> SymtabPart:
    sets = _new_sets()
    for names, infos in _symtab_chunks(img, sections, symtab, part, parts):
        sets.add(names, infos)
    return sets.part()


def _read_static_symbols(
    img: _Image, sections: Sequence[_Section]
) -> tuple[tuple[str, ...], NameDigests]:
    symtab = _first(sections, _SHT_SYMTAB)
    if symtab is None:
        return (), NO_NAMES
    return _join_parts([_read_symtab_rows(img, sections, symtab)])


# --- data regions and sizes -----------------------------------------------------------------


def _data_regions(
    sections: Sequence[_Section], segments: Sequence[_Segment]
) -> list[tuple[int, int]]:
    """File ranges of allocated, non-executable data (where string constants live)."""
    if sections:
        return [
            (s.offset, s.offset + s.size)
            for s in sections
            if s.type == _SHT_PROGBITS and s.flags & _SHF_ALLOC and not s.flags & _SHF_EXECINSTR
        ]
    return [
        (s.offset, s.offset + s.filesz)
        for s in segments
        if s.type == _PT_LOAD and not s.flags & _PF_X
    ]


def _find_names(
    haystacks: Sequence[tuple[bytes | bytearray | mmap.mmap, int, int]], names: Collection[str]
) -> frozenset[str]:
    found: set[str] = set()
    for name in names:
        needle = name.encode("utf-8") + b"\0"
        if len(needle) == 1 or b"\0" in needle[:-1]:
            continue  # "" or an embedded NUL can never be one NUL-terminated string
        if any(hay.find(needle, start, end) >= 0 for hay, start, end in haystacks):
            found.add(name)
    return frozenset(found)


def _registration_strings(
    img: _Image, regions: Sequence[tuple[int, int]], names: Collection[str]
) -> frozenset[str]:
    if not names or not regions:
        return frozenset()
    if img.finder is not None:
        finder = img.finder
        return _find_names([(finder, start, end) for start, end in regions], names)
    copies = [bytes(img.span(start, end - start, "data section")) for start, end in regions]
    return _find_names([(c, 0, len(c)) for c in copies], names)


def _code_size(sections: Sequence[_Section], segments: Sequence[_Segment]) -> int:
    if sections:
        return sum(s.size for s in sections if s.flags & _SHF_EXECINSTR)
    return sum(s.filesz for s in segments if s.type == _PT_LOAD and s.flags & _PF_X)


def _init_array_size(dyn: _Dynamic | None, sections: Sequence[_Section]) -> int:
    if dyn is not None and _DT_INIT_ARRAYSZ in dyn.values:
        return dyn.values[_DT_INIT_ARRAYSZ]
    return sum(s.size for s in sections if s.type == _SHT_INIT_ARRAY)


# --- assembling the facts -------------------------------------------------------------------


def machine_name(e_machine: int, elf_class: int) -> str:
    """A short name for ``e_machine`` (``unknown(<n>)`` for machines without one)."""
    if e_machine == 22 and elf_class == 32:
        return "s390"
    return _MACHINES.get(e_machine, f"unknown({e_machine})")


class _DynamicFlags(NamedTuple):
    bind_now: bool
    textrel: bool
    nodeflib: bool
    pie: bool


def _dynamic_flags(values: Mapping[int, int]) -> _DynamicFlags:
    flags, flags_1 = values.get(_DT_FLAGS, 0), values.get(_DT_FLAGS_1, 0)
    return _DynamicFlags(
        bind_now=_DT_BIND_NOW in values or bool(flags & _DF_BIND_NOW or flags_1 & _DF_1_NOW),
        textrel=_DT_TEXTREL in values or bool(flags & _DF_TEXTREL),
        nodeflib=bool(flags_1 & _DF_1_NODEFLIB),
        pie=bool(flags_1 & _DF_1_PIE),
    )


def file_type_name(e_type: int, pie_flag: bool, interpreter: str | None, soname: str | None) -> str:
    """ET_DYN is "pie" with DF_1_PIE, or with an interpreter and no SONAME (libc.so.6 has both)."""
    if e_type != _ET_DYN:
        return _ET_NAMES.get(e_type, "other")
    return "pie" if pie_flag or (interpreter is not None and soname is None) else "shared"


def _interpreter(img: _Image, segments: Sequence[_Segment]) -> str | None:
    seg = next((s for s in segments if s.type == _PT_INTERP), None)
    if seg is None:
        return None
    raw = bytes(img.span(seg.offset, seg.filesz, "program interpreter"))
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


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


def _facts(img: _Image, path: str, names: Collection[str], read_symtab: bool) -> ElfFacts:
    st = _read_structure(img)
    dyn, sections, segments = st.dynamic, st.sections, st.segments
    values: Mapping[int, int] = dyn.values if dyn else {}
    symbols = _read_dynamic_symbols(img, sections, segments, dyn)
    initializers, functions = _read_static_symbols(img, sections) if read_symtab else ((), NO_NAMES)
    flags = _dynamic_flags(values)
    interpreter = _interpreter(img, segments)
    soname = _dyn_string(dyn, _DT_SONAME) if dyn else None
    seg_types = {s.type for s in segments}
    return ElfFacts(
        path=path,
        elf_class=img.layout.elf_class,
        little_endian=img.layout.endian == "<",
        machine=machine_name(st.header.machine, img.layout.elf_class),
        file_type=file_type_name(st.header.e_type, flags.pie, interpreter, soname),
        interpreter=interpreter,
        soname=soname,
        needed=tuple(dyn.strings.get(n) for n in dyn.needed) if dyn and dyn.strings else (),
        rpath=_split_path(_dyn_string(dyn, _DT_RPATH)) if dyn else None,
        runpath=_split_path(_dyn_string(dyn, _DT_RUNPATH)) if dyn else None,
        defined=symbols.defined,
        versioned_definitions=symbols.versioned_definitions,
        undefined=symbols.undefined,
        weak_undefined=symbols.weak_undefined,
        unique=symbols.unique,
        weak_defined=symbols.weak_defined,
        exported_count=symbols.exported_count,
        version_definitions=symbols.versions.definitions,
        version_needs=symbols.versions.needs,
        init_array_size=_init_array_size(dyn, sections),
        has_symtab=_first(sections, _SHT_SYMTAB) is not None,
        static_initializers=initializers,
        symtab_functions=functions,
        registration_strings=_registration_strings(img, _data_regions(sections, segments), names),
        file_size=img.size,
        code_size=_code_size(sections, segments),
        sections=tuple((s.name, s.size) for s in sections[1:]),
        bind_now=flags.bind_now,
        relro=_PT_GNU_RELRO in seg_types,
        exec_stack=not any(s.type == _PT_GNU_STACK and not s.flags & _PF_X for s in segments),
        textrel=flags.textrel,
        nodeflib=flags.nodeflib,
    )


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
    return _Image(view, len(view), layout, finder, file_backed)


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


def is_elf(data: ElfBuffer) -> bool:
    return bytes(memoryview(data)[:4]) == ELF_MAGIC


def read_elf_facts(
    data: ElfBuffer,
    display_path: str,
    registration_names: Collection[str] = (),
    *,
    size: int | None = None,
    file_backed: bool = False,
    read_symtab: bool = True,
) -> ElfFacts | None:
    """Facts about one file's bytes; None when it is not ELF; MalformedElf when it is corrupt.

    ``data`` may be an mmap: nothing keeps a view of it after return, so it can be closed.
    ``size``: only the first ``size`` bytes of ``data`` are the file (a buffer reused for many
    files). ``file_backed``: ``data`` maps a file read-only, so pages already decoded may be
    dropped from the process's resident memory. ``read_symtab=False`` leaves
    ``static_initializers`` and ``symtab_functions`` empty, for ``with_symtab`` to fill in from
    parts of the table read elsewhere (``read_symtab_part``).
    """
    if not is_elf(data):
        return None
    return _decoded(
        data,
        display_path,
        size,
        file_backed,
        lambda image: _facts(image, display_path, registration_names, read_symtab),
    )


def _sections_only(img: _Image) -> tuple[_Section, ...]:
    sections = _read_sections(img, _read_header(img))
    _check_section_extents(img, sections)
    return sections


def _symtab_part(img: _Image, part: int, parts: int) -> SymtabPart:
    sections = _sections_only(img)
    symtab = _first(sections, _SHT_SYMTAB)
    if symtab is None:
        return SymtabPart((), b"", b"")
    return _read_symtab_rows(img, sections, symtab, part, parts)


def read_symtab_part(
    data: ElfBuffer,
    display_path: str,
    part: int,
    parts: int,
    *,
    size: int | None = None,
    file_backed: bool = False,
) -> SymtabPart:
    """Part ``part`` (from 0) of ``parts`` of the rows of ``.symtab``: big tables are read by
    several processes at once. A corrupt file raises MalformedElf, possibly with another offset
    than ``read_elf_facts`` reports: read it whole for the finding."""
    return _decoded(
        data, display_path, size, file_backed, lambda img: _symtab_part(img, part, parts)
    )


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
data sections. Reading another section's bytes in ``_facts`` must add its type here."""

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


def left_out_unused(
    data: ElfBuffer, size: int, left_out: Ranges, registration_names: Collection[str]
) -> bool:
    """Whether the facts of ``data`` (the file's bytes, less ``left_out``) are those of the
    whole file: no section facts are read from lies in ``left_out``."""
    try:
        structure = _read_structure(_open_image(data, size, False))
    except (_Bad, *_DECODE_ERRORS):
        return False
    strings = structure.dynamic.strings if structure.dynamic else None
    # found by its address (DT_STRTAB), not as a section: a hostile file may put it anywhere
    if strings and _overlaps(strings.base, strings.base + len(strings.text), left_out):
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


def with_symtab(facts: ElfFacts, parts: Iterable[SymtabPart]) -> ElfFacts:
    """Facts read with ``read_symtab=False``, completed with every part of their ``.symtab``."""
    initializers, functions = _join_parts(parts)
    return replace(facts, static_initializers=initializers, symtab_functions=functions)


def _function_names(img: _Image, wanted: Collection[int]) -> dict[int, str]:
    sections = _sections_only(img)
    symtab = _first(sections, _SHT_SYMTAB)
    found: dict[int, bytes] = {}
    if symtab is None or not wanted:
        return {}
    for names, _infos in _symtab_chunks(img, sections, symtab):
        found.update({digest: name for name in names if (digest := hash(name)) in wanted})
    return {digest: name.decode("utf-8") for digest, name in found.items()}


def read_function_names(
    data: ElfBuffer,
    display_path: str,
    wanted: Collection[int],
    *,
    size: int | None = None,
    file_backed: bool = False,
) -> dict[int, str]:
    """The ``.symtab`` function names whose digests (``name_digest``) are in ``wanted``, by
    digest."""
    return _decoded(data, display_path, size, file_backed, lambda img: _function_names(img, wanted))


def read_elf_file(
    path: str | os.PathLike[str],
    display_path: str | None = None,
    registration_names: Collection[str] = (),
) -> ElfFacts | None:
    """Map a file and read its facts; None for a non-ELF or empty file."""
    shown = display_path if display_path is not None else os.fspath(path)
    with Path(path).open("rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        if size < len(ELF_MAGIC):
            return None
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return read_elf_facts(mapped, shown, registration_names, file_backed=True)


# --------------------------------------------------------------------------------------------
# reference path: pyelftools, slow but independent; the tests prove both give the same facts


def read_elf_facts_pyelftools(
    source: str | os.PathLike[str] | IO[bytes],
    display_path: str,
    registration_names: Collection[str] = (),
) -> ElfFacts | None:
    """The same facts as read_elf_facts, decoded by pyelftools (section headers required)."""
    if isinstance(source, (str, os.PathLike)):
        with Path(source).open("rb") as stream:
            return _reference_guarded(stream, display_path, registration_names)
    return _reference_guarded(source, display_path, registration_names)


def _reference_guarded(stream: IO[bytes], path: str, names: Collection[str]) -> ElfFacts | None:
    stream.seek(0)
    if stream.read(4) != ELF_MAGIC:
        return None
    stream.seek(0)
    try:
        return _reference_facts(stream, path, names)
    except Exception as exc:  # pyelftools raises anything from ELFError to AssertionError
        reason = f"pyelftools: {type(exc).__name__}: {exc}"
    raise MalformedElf(path, 0, reason)


def _enum_value(value: Any, table: Mapping[str, int]) -> int:
    return table[value] if isinstance(value, str) else int(value)


class _RefTables(NamedTuple):
    """pyelftools enum tables, imported lazily so the fast path never loads pyelftools."""

    machine: Mapping[str, int]
    e_type: Mapping[str, int]
    sh_type: Mapping[str, int]
    p_type: Mapping[str, int]
    d_tag: Mapping[str, int]
    bind: Mapping[str, int]
    sym_type: Mapping[str, int]
    visibility: Mapping[str, int]
    shndx: Mapping[str, int]
    versym: Mapping[str, int]


def _ref_tables() -> _RefTables:
    from elftools.elf import enums as en

    def merged(prefix: str) -> dict[str, int]:
        # machine-specific tables add names; pyelftools picks one per file
        out: dict[str, int] = {}
        for attr in dir(en):
            if attr.startswith(prefix):
                out.update(getattr(en, attr))
        return out

    return _RefTables(
        en.ENUM_E_MACHINE, en.ENUM_E_TYPE, merged("ENUM_SH_TYPE"), merged("ENUM_P_TYPE"),
        merged("ENUM_D_TAG"), en.ENUM_ST_INFO_BIND, en.ENUM_ST_INFO_TYPE,
        en.ENUM_ST_VISIBILITY, en.ENUM_ST_SHNDX, en.ENUM_VERSYM,
    )  # fmt: skip


_STRING_TAGS: Final = {
    _DT_NEEDED: "needed", _DT_SONAME: "soname", _DT_RPATH: "rpath", _DT_RUNPATH: "runpath",
}  # fmt: skip


def _ref_dynamic(elf: Any, t: _RefTables) -> tuple[dict[int, Any], list[str]]:
    """Tag -> last entry (string tags resolved) and the NEEDED names, from PT_DYNAMIC."""
    values: dict[int, Any] = {}
    needed: list[str] = []
    for seg in elf.iter_segments():
        if _enum_value(seg["p_type"], t.p_type) != _PT_DYNAMIC:
            continue
        for tag in seg.iter_tags():
            code = _enum_value(tag.entry.d_tag, t.d_tag)
            if code == _DT_NULL:
                break
            value = tag.entry.d_val
            if code in _STRING_TAGS:
                value = getattr(tag, _STRING_TAGS[code])
            values[code] = value
            if code == _DT_NEEDED:
                needed.append(value)
        break
    return values, needed


def _ref_versions(elf: Any, t: _RefTables) -> _Versions:
    defs: list[tuple[int, int, str]] = []
    needs: list[tuple[str, list[tuple[int, str]]]] = []
    for section in elf.iter_sections():
        kind = _enum_value(section["sh_type"], t.sh_type)
        if kind == _SHT_GNU_VERDEF and not defs:
            for verdef, aux in section.iter_versions():
                first = next(iter(aux), None)
                name = first.name if first is not None else ""
                defs.append((verdef["vd_ndx"], verdef["vd_flags"], name))
        elif kind == _SHT_GNU_VERNEED and not needs:
            for verneed, aux in section.iter_versions():
                needs.append((verneed.name, [(a["vna_other"], a.name) for a in aux]))
    return _versions(defs, needs)


def _ref_first(elf: Any, t: _RefTables, kind: int) -> Any:
    for section in elf.iter_sections():
        if _enum_value(section["sh_type"], t.sh_type) == kind:
            return section
    return None


def _ref_symbol(sym: Any, t: _RefTables) -> tuple[int, int, int, int]:
    """(info, visibility, shndx, value) as numbers."""
    bind = _enum_value(sym["st_info"]["bind"], t.bind)
    kind = _enum_value(sym["st_info"]["type"], t.sym_type)
    visibility = _enum_value(sym["st_other"]["visibility"], t.visibility)
    return (bind << 4 | kind, visibility, _enum_value(sym["st_shndx"], t.shndx), sym["st_value"])


def _ref_dynamic_symbols(elf: Any, t: _RefTables) -> _DynamicSymbols:
    dynsym = _ref_first(elf, t, _SHT_DYNSYM)
    if dynsym is None:
        return _NO_SYMBOLS
    versym_section = _ref_first(elf, t, _SHT_GNU_VERSYM)
    versions = _ref_versions(elf, t)
    rows: list[tuple[int, int, int, int, int]] = []
    vers: list[int] = []
    names: list[str] = []
    for index, sym in enumerate(dynsym.iter_symbols()):
        info, visibility, shndx, value = _ref_symbol(sym, t)
        rows.append((index, info, visibility, shndx, value))
        names.append(sym.name)
        ndx = versym_section.get_symbol(index)["ndx"] if versym_section is not None else 0
        vers.append(_enum_value(ndx, t.versym))
    # rows carry the symbol index as st_name, so the shared collector looks names up by index
    source = _SymbolSource(0, len(rows), lambda idx: [names[i] for i in idx], vers, versions)
    return _collect_dynamic(source, rows)


def _ref_static_symbols(elf: Any, t: _RefTables) -> tuple[tuple[str, ...], NameDigests]:
    symtab = _ref_first(elf, t, _SHT_SYMTAB)
    if symtab is None:
        return (), NO_NAMES
    names: list[bytes] = []
    infos: list[int] = []
    for sym in symtab.iter_symbols():
        info, visibility, shndx, _value = _ref_symbol(sym, t)
        is_function = info & 0xF in (_STT_FUNC, _STT_GNU_IFUNC)
        if shndx != _SHN_UNDEF and is_function and visibility == 0:
            names.append(sym.name.encode("utf-8"))
            infos.append(info)
    sets = _new_sets()
    sets.add(names, bytes(infos))
    return _join_parts([sets.part()])


class _RefSection(NamedTuple):
    name: str
    type: int
    flags: int
    size: int
    data: Callable[[], bytes]


def _ref_sections(elf: Any, t: _RefTables) -> list[_RefSection]:
    return [
        _RefSection(
            s.name, _enum_value(s["sh_type"], t.sh_type), s["sh_flags"], s["sh_size"], s.data
        )
        for s in elf.iter_sections()
    ]


def _ref_registration(sections: Sequence[_RefSection], names: Collection[str]) -> frozenset[str]:
    blobs = [
        s.data()
        for s in sections
        if s.type == _SHT_PROGBITS and s.flags & _SHF_ALLOC and not s.flags & _SHF_EXECINSTR
    ]
    return _find_names([(b, 0, len(b)) for b in blobs], names) if names else frozenset()


class _RefSegments(NamedTuple):
    interpreter: str | None
    relro: bool
    exec_stack: bool
    exec_bytes: int


def _ref_segments(elf: Any, t: _RefTables) -> _RefSegments:
    interpreter, relro, stack_ok, exec_bytes = None, False, False, 0
    for seg in elf.iter_segments():
        kind = _enum_value(seg["p_type"], t.p_type)
        if kind == _PT_INTERP:
            interpreter = seg.get_interp_name()
        relro = relro or kind == _PT_GNU_RELRO
        stack_ok = stack_ok or (kind == _PT_GNU_STACK and not seg["p_flags"] & _PF_X)
        if kind == _PT_LOAD and seg["p_flags"] & _PF_X:
            exec_bytes += seg["p_filesz"]
    return _RefSegments(interpreter, relro, not stack_ok, exec_bytes)


def _ref_size(stream: IO[bytes]) -> int:
    stream.seek(0, os.SEEK_END)
    return stream.tell()


def _reference_facts(stream: IO[bytes], path: str, names: Collection[str]) -> ElfFacts:
    from elftools.elf.elffile import ELFFile

    elf, t = ELFFile(stream), _ref_tables()
    values, needed = _ref_dynamic(elf, t)
    sections = _ref_sections(elf, t)
    segs = _ref_segments(elf, t)
    symbols = _ref_dynamic_symbols(elf, t)
    initializers, functions = _ref_static_symbols(elf, t)
    flags = _dynamic_flags({k: v for k, v in values.items() if isinstance(v, int)})
    soname = values.get(_DT_SONAME)
    elf_class = int(elf.elfclass)
    init_array = values.get(_DT_INIT_ARRAYSZ)
    return ElfFacts(
        path=path,
        elf_class=elf_class,
        little_endian=bool(elf.little_endian),
        machine=machine_name(_enum_value(elf["e_machine"], t.machine), elf_class),
        file_type=file_type_name(
            _enum_value(elf["e_type"], t.e_type), flags.pie, segs.interpreter, soname
        ),
        interpreter=segs.interpreter,
        soname=soname,
        needed=tuple(needed),
        rpath=_split_path(values.get(_DT_RPATH)),
        runpath=_split_path(values.get(_DT_RUNPATH)),
        defined=symbols.defined,
        versioned_definitions=symbols.versioned_definitions,
        undefined=symbols.undefined,
        weak_undefined=symbols.weak_undefined,
        unique=symbols.unique,
        weak_defined=symbols.weak_defined,
        exported_count=symbols.exported_count,
        version_definitions=symbols.versions.definitions,
        version_needs=symbols.versions.needs,
        init_array_size=init_array
        if init_array is not None
        else sum(s.size for s in sections if s.type == _SHT_INIT_ARRAY),
        has_symtab=any(s.type == _SHT_SYMTAB for s in sections),
        static_initializers=initializers,
        symtab_functions=functions,
        registration_strings=_ref_registration(sections, names),
        file_size=_ref_size(stream),
        code_size=sum(s.size for s in sections if s.flags & _SHF_EXECINSTR)
        if sections
        else segs.exec_bytes,
        sections=tuple((s.name, s.size) for s in sections[1:]),
        bind_now=flags.bind_now,
        relro=segs.relro,
        exec_stack=segs.exec_stack,
        textrel=flags.textrel,
        nodeflib=flags.nodeflib,
    )
