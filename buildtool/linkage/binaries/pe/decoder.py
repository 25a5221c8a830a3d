"""The fast PE/COFF reader: a struct decoder of the headers, the section table, the export
directory, the import directory and the delay-load import directory (PE32 and PE32+), over
bytes or a mapped file.

What the Windows loader reads is what the facts hold: the DLLs a file imports (``needed``, in
import-directory order, delay-loaded ones after them and in ``weak_needed``: they load at their
first call), what it imports from each (``bound_imports``: ``(dll, name)``, ``#<n>`` for an
import by ordinal; ``undefined`` holds the names), its export table (``defined``; the export
directory's name is the ``soname``) and its machine. A COFF symbol table (mingw-w64 keeps one
unless stripped) gives the static initializers (``_GLOBAL__sub_I_`` functions); MSVC images
carry none, and their ``.CRT$XCU`` initializer pointers are merged into ``.rdata`` by the linker,
past finding without symbols: ``init_array_size`` counts the bytes of a ``.CRT`` section
(mingw-w64's) only.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Final

from buildtool.linkage.binaries.bounded import Bounded, Buffer, find_names
from buildtool.linkage.binaries.code_walk import (
    WALKED_MACHINES,
    CodeView,
    Depth,
    walk_initializers,
)
from buildtool.linkage.binaries.facts import (
    NO_NAMES,
    STATIC_INIT_PREFIX,
    BinaryFacts,
    InitializerReach,
    MalformedBinary,
)
from buildtool.linkage.binaries.magic import DOS_MAGIC
from buildtool.linkage.binaries.pe.relocations import (
    BASE_RELOCATION_DIRECTORY,
    BaseRelocations,
    parse_blocks,
    string_before,
)


class MalformedPE(MalformedBinary):
    """A PE file is truncated or corrupt; names the file, the byte offset and the problem."""

    format_name = "PE"


PE_SIGNATURE: Final = b"PE\0\0"
MACHINES: Final = {
    0x8664: "x86_64",
    0x14C: "i386",
    0xAA64: "arm64",
    0x1C4: "arm",
    0xA641: "arm64ec",
}
PE32: Final = 0x10B
PE32_PLUS: Final = 0x20B
IMAGE_FILE_DLL: Final = 0x2000
IMAGE_FILE_EXECUTABLE: Final = 0x0002
SCN_CODE: Final = 0x20
SCN_EXECUTE: Final = 0x20000000
SCN_UNINITIALIZED: Final = 0x80
SCN_WRITE: Final = 0x80000000
EXPORT_DIRECTORY: Final = 0
IMPORT_DIRECTORY: Final = 1
DELAY_IMPORT_DIRECTORY: Final = 13
MAX_SECTIONS: Final = 96
"""The PE format's own limit on sections."""
MAX_DESCRIPTORS: Final = 1 << 16
MAX_THUNKS: Final = 1 << 20
_U16: Final = struct.Struct("<H")
_U32: Final = struct.Struct("<I")
_U64: Final = struct.Struct("<Q")


def is_pe(head: bytes) -> bool:
    return head[:2] == DOS_MAGIC


@dataclass(frozen=True)
class Section:
    name: str
    virtual_address: int
    virtual_size: int
    raw_size: int
    raw_offset: int
    flags: int

    @property
    def is_code(self) -> bool:
        return bool(self.flags & (SCN_CODE | SCN_EXECUTE))


@dataclass(frozen=True)
class Image:
    """A PE file's headers, and reads of it by RVA."""

    data: Bounded
    machine: int
    characteristics: int
    wide: bool
    """PE32+ (64-bit pointers)."""
    image_base: int
    directories: tuple[tuple[int, int], ...]
    sections: tuple[Section, ...]
    symbols: tuple[int, int]
    """PointerToSymbolTable, NumberOfSymbols (COFF)."""

    def offset(self, rva: int, what: str) -> int:
        """The file offset of ``rva``."""
        for section in self.sections:
            span = max(section.virtual_size, section.raw_size)
            if section.virtual_address <= rva < section.virtual_address + span:
                inside = rva - section.virtual_address
                if inside >= section.raw_size:
                    break
                return section.raw_offset + inside
        raise self.data.fail(0, f"{what} (RVA {rva:#x}) lies in no section's file data")

    def u32(self, rva: int, what: str) -> int:
        value: int = self.data.unpack(_U32, self.offset(rva, what), what)[0]
        return value

    def string(self, rva: int, what: str) -> str:
        return self.data.cstring(self.offset(rva, what), what)

    def directory(self, index: int) -> tuple[int, int]:
        return self.directories[index] if index < len(self.directories) else (0, 0)


def _sections(data: Bounded, start: int, count: int) -> tuple[Section, ...]:
    layout = struct.Struct("<8sIIIIIIHHI")
    sections = []
    for number in range(count):
        name, vsize, vaddr, rsize, roffset, *_rest, flags = data.unpack(
            layout, start + number * layout.size, f"section header {number}"
        )
        text = name.split(b"\0", 1)[0].decode("utf-8", "replace")
        sections.append(Section(text, vaddr, vsize, rsize, roffset, flags))
    return tuple(sections)


def parse_image(data: Bounded) -> Image:
    (lfanew,) = data.unpack(_U32, 0x3C, "DOS header's e_lfanew")
    if data.bytes_at(lfanew, 4, "PE signature") != PE_SIGNATURE:
        raise data.fail(lfanew, "no PE signature where the DOS header points")
    coff = struct.Struct("<HHIIIHH")
    machine, nsections, _time, symptr, nsyms, optsize, characteristics = data.unpack(
        coff, lfanew + 4, "COFF header"
    )
    if nsections > MAX_SECTIONS:
        raise data.fail(lfanew + 6, f"COFF header claims {nsections} sections")
    optional = lfanew + 4 + coff.size
    (magic,) = data.unpack(_U16, optional, "optional header")
    if magic not in (PE32, PE32_PLUS):
        raise data.fail(optional, f"optional header magic {magic:#x} is neither PE32 nor PE32+")
    wide = magic == PE32_PLUS
    image_base = (
        data.unpack(_U64, optional + 24, "ImageBase")[0]
        if wide
        else data.unpack(_U32, optional + 28, "ImageBase")[0]
    )
    count_at = optional + (108 if wide else 92)
    (count,) = data.unpack(_U32, count_at, "NumberOfRvaAndSizes")
    count = min(count, 16, max(0, (optsize - (count_at + 4 - optional)) // 8))
    directories = tuple(
        data.unpack(struct.Struct("<II"), count_at + 4 + 8 * i, f"data directory {i}")
        for i in range(count)
    )
    sections = _sections(data, optional + optsize, nsections)
    return Image(
        data, machine, characteristics, wide, image_base, directories, sections, (symptr, nsyms)
    )


def _exports(image: Image) -> tuple[str | None, frozenset[str]]:
    rva, size = image.directory(EXPORT_DIRECTORY)
    if not rva or not size:
        return None, frozenset()
    at = image.offset(rva, "export directory")
    fields = image.data.unpack(struct.Struct("<IIHHIIIIII"), at, "export directory")
    name_rva, _base, _nfunctions, nnames, _functions, names_rva = fields[4:10]
    if nnames > MAX_THUNKS:
        raise image.data.fail(at + 24, f"export directory claims {nnames} names")
    dll = image.string(name_rva, "export directory's DLL name") if name_rva else None
    if not nnames:
        return dll, frozenset()
    table = image.offset(names_rva, "export name table")
    raw = image.data.bytes_at(table, 4 * nnames, "export name table")
    names = [image.string(name, "exported name") for (name,) in _U32.iter_unpack(raw)]
    return dll, frozenset(names)


def _thunks(image: Image, rva: int, what: str) -> Iterator[str]:
    """The names an import name table lists (``#<n>`` for an ordinal)."""
    layout, flag = (_U64, 1 << 63) if image.wide else (_U32, 1 << 31)
    at = image.offset(rva, what)
    for number in range(MAX_THUNKS):
        (value,) = image.data.unpack(layout, at + number * layout.size, what)
        if not value:
            return
        if value & flag:
            yield f"#{value & 0xFFFF}"
        else:
            yield image.string((value & 0x7FFFFFFF) + 2, f"{what}'s name")
    raise image.data.fail(at, f"{what} does not end")


def _descriptors(
    image: Image, index: int, layout: struct.Struct, what: str
) -> Iterator[tuple[int, ...]]:
    rva, _size = image.directory(index)
    if not rva:
        return
    at = image.offset(rva, what)
    for number in range(MAX_DESCRIPTORS):
        fields = image.data.unpack(layout, at + number * layout.size, what)
        if not any(fields):
            return
        yield fields
    raise image.data.fail(at, f"{what} does not end")


@dataclass
class _Imports:
    direct: list[str] = field(default_factory=list)
    """Imported DLLs, in import-directory order."""
    delayed: list[str] = field(default_factory=list)
    bound: list[tuple[str, str]] = field(default_factory=list)
    """(dll, name) of every import, delay-loaded ones included."""
    slots: dict[int, str] = field(default_factory=dict)
    """Import address table slot (RVA) -> the name it imports: what code calls through."""

    def add(self, image: Image, dll: str, names: Iterator[str], table: int) -> None:
        width = 8 if image.wide else 4
        for index, name in enumerate(names):
            self.bound.append((dll, name))
            self.slots[table + index * width] = name


def _imports(image: Image) -> _Imports:
    found = _Imports()
    for lookup, _time, _chain, name_rva, first in _descriptors(
        image, IMPORT_DIRECTORY, struct.Struct("<IIIII"), "import directory"
    ):
        dll = image.string(name_rva, "imported DLL's name")
        found.direct.append(dll)
        found.add(image, dll, _thunks(image, lookup or first, f"{dll}'s import table"), first)
    for fields in _descriptors(
        image, DELAY_IMPORT_DIRECTORY, struct.Struct("<8I"), "delay-load import directory"
    ):
        attributes, name_rva, _handle, iat, names_rva = fields[:5]
        shift = 0 if attributes & 1 else image.image_base  # version 1 holds VAs, not RVAs
        dll = image.string(name_rva - shift, "delay-loaded DLL's name")
        found.delayed.append(dll)
        names = _thunks(image, names_rva - shift, f"{dll}'s delay-load table")
        found.add(image, dll, names, iat - shift)
    return found


@dataclass(frozen=True)
class CoffSymbols:
    initializers: tuple[str, ...] = ()
    present: bool = False
    initializer_rvas: tuple[int, ...] = ()
    """Where the static initializers' code starts, in symbol-table order."""


def _coff_symbols(image: Image) -> CoffSymbols:
    """Functions and initializers from a COFF symbol table (mingw-w64 images unless stripped)."""
    pointer, count = image.symbols
    if not pointer or not count:
        return CoffSymbols()
    data = image.data
    layout = struct.Struct("<8sIhHBB")
    data.check(pointer, count * layout.size, "COFF symbol table")
    strings = pointer + count * layout.size
    code = {number + 1 for number, s in enumerate(image.sections) if s.is_code}
    initializers: list[str] = []
    rvas: list[int] = []
    skip = 0
    for raw_name, value, section, kind, _storage, aux in layout.iter_unpack(
        data.bytes_at(pointer, count * layout.size, "COFF symbol table")
    ):
        if skip:
            skip -= 1
            continue
        skip = aux
        if section not in code or kind >> 4 != 2:  # DTYPE_FUNCTION
            continue
        if raw_name[:4] == b"\0\0\0\0":
            name = data.cstring(
                strings + int.from_bytes(raw_name[4:], "little"), "COFF symbol name"
            )
        else:
            name = raw_name.split(b"\0", 1)[0].decode("utf-8", "replace")
        if name.startswith(STATIC_INIT_PREFIX):
            initializers.append(name)
            rvas.append(image.sections[section - 1].virtual_address + value)
    return CoffSymbols(tuple(sorted(initializers)), True, tuple(rvas))


def _reader(image: Image, keep: Callable[[Section], bool]) -> Callable[[int, int], bytes]:
    """Bytes at a virtual address in the file data of the sections ``keep`` takes."""
    sections = [s for s in image.sections if s.raw_size and keep(s)]
    data = image.data

    def read(address: int, size: int) -> bytes:
        rva = address - image.image_base
        for s in sections:
            if s.virtual_address <= rva < s.virtual_address + s.raw_size:
                start = s.raw_offset + rva - s.virtual_address
                end = min(s.raw_offset + s.raw_size, data.size, start + size)
                return bytes(data.data[data.base + start : data.base + max(end, start)])
        return b""

    return read


def _is_code(section: Section) -> bool:
    return section.is_code


def _any(_section: Section) -> bool:
    return True


def _is_read_only(section: Section) -> bool:
    return not section.is_code and not section.flags & SCN_WRITE


def _base_relocations(image: Image) -> BaseRelocations | None:
    """The image's base relocations; None when its table cannot be read (a damaged table
    leaves the facts as they were: only what the walk compares of its data is unknown)."""
    rva, size = image.directory(BASE_RELOCATION_DIRECTORY)
    if not rva or not size:
        return parse_blocks(b"")
    try:
        table = image.data.bytes_at(image.offset(rva, "base relocations"), size, "base relocations")
    except MalformedPE:
        return None
    return parse_blocks(table)


def _read_only(image: Image) -> Callable[[int, int], bytes]:
    """``CodeView.read_only``: bytes of a section neither writable nor executable, short of the
    first pointer the loader relocates (``relocations``), whose table is read when first asked."""
    read = _reader(image, _is_read_only)
    width = 8 if image.wide else 4
    relocations = functools.cache(functools.partial(_base_relocations, image))

    def read_only(address: int, size: int) -> bytes:
        known = relocations()
        if known is None:
            return b""
        data = read(address, size)
        rva = address - image.image_base
        cut = known.first_within(rva - width + 1, rva + len(data))
        return data if cut is None else string_before(data, cut - rva)

    return read_only


def _code_view(image: Image, symbols: CoffSymbols, imports: _Imports) -> CodeView | None:
    """What the initializer walk reads: the static initializers the COFF symbol table names
    (mingw-w64; MSVC images keep none), calls through the import address table, and the
    read-only data the code hands on."""
    machine = MACHINES.get(image.machine, "")
    if not symbols.initializer_rvas or machine not in WALKED_MACHINES:
        return None
    base = image.image_base

    def slot(address: int) -> tuple[str, int] | None:
        name = imports.slots.get(address - base)
        return (name, 0) if name is not None else None

    starts = tuple(base + rva for rva in symbols.initializer_rvas)
    data = _reader(image, _any)

    def pointer(address: int) -> int | None:
        # a PE file stores absolute addresses (the base relocations move them when rebased)
        value = data(address, 8)
        return int.from_bytes(value, "little") or None if len(value) == 8 else None

    code = _reader(image, _is_code)
    return CodeView(machine, code, starts, slot, data, pointer, read_only=_read_only(image))


def _data_regions(image: Image) -> list[tuple[int, int]]:
    base, size = image.data.base, image.data.size
    return [
        (base + s.raw_offset, base + min(s.raw_offset + s.raw_size, size))
        for s in image.sections
        if not s.is_code and not s.flags & SCN_UNINITIALIZED and s.raw_size
    ]


def _file_type(characteristics: int) -> str:
    if characteristics & IMAGE_FILE_DLL:
        return "shared"
    return "executable" if characteristics & IMAGE_FILE_EXECUTABLE else "other"


def pe_facts(image: Image, names: Collection[str]) -> BinaryFacts:
    dll_name, exports = _exports(image)
    imports = _imports(image)
    direct, delayed, bound = imports.direct, imports.delayed, imports.bound
    symbols = _coff_symbols(image)
    view = _code_view(image, symbols, imports)
    crt = sum(s.virtual_size for s in image.sections if s.name == ".CRT")
    # A PE image marks no export, nor COFF symbol, as COMDAT: the inline members of an exported
    # class are exported by every DLL whose code uses them (torch_cpu.dll and torch_python.dll
    # share hundreds), so names are no evidence of duplicated object code. Every export counts
    # as weak; the duplicate checks see the static initializers and registration strings.
    return BinaryFacts(
        path=image.data.path,
        elf_class=64 if image.wide else 32,
        little_endian=True,
        machine=MACHINES.get(image.machine, f"unknown({image.machine:#x})"),
        file_type=_file_type(image.characteristics),
        interpreter=None,
        soname=dll_name,
        needed=tuple(direct + [dll for dll in delayed if dll not in direct]),
        rpath=None,
        runpath=None,
        defined=exports,
        versioned_definitions=False,
        undefined=frozenset(name for _dll, name in bound),
        weak_undefined=frozenset(),
        unique=frozenset(),
        weak_defined=exports,
        exported_count=len(exports),
        version_definitions=(),
        version_needs=(),
        init_array_size=crt,
        has_symtab=symbols.present,
        static_initializers=symbols.initializers,
        symtab_functions=NO_NAMES,
        registration_strings=find_names(image.data.data, _data_regions(image), names)
        if names
        else frozenset(),
        file_size=image.data.size,
        code_size=sum(s.raw_size for s in image.sections if s.is_code),
        sections=tuple((s.name, s.virtual_size) for s in image.sections),
        # ELF hardening facts: the hardening checks skip PE files
        bind_now=False,
        relro=False,
        exec_stack=False,
        textrel=False,
        nodeflib=False,
        format="pe",
        bound_imports=tuple(sorted(set(bound))),
        # only shared libraries are paired as copies: an executable's are read by no check
        initializers=walk_initializers(view, deep=False)
        if view and _file_type(image.characteristics) == "shared"
        else (),
        weak_needed=frozenset(dll for dll in delayed if dll not in direct),
    )


def _image(data: Buffer, display_path: str, size: int | None) -> Image | None:
    """The image of a PE file's bytes (the first ``size`` of ``data``); None without ``MZ``."""
    if not is_pe(bytes(data[:2])):
        return None
    return parse_image(
        Bounded(data, display_path, MalformedPE, 0, len(data) if size is None else size)
    )


def read_pe_facts(
    data: Buffer, display_path: str, names: Collection[str] = (), size: int | None = None
) -> BinaryFacts | None:
    """Facts of a PE file's bytes (the first ``size`` of ``data``); None when it does not start
    with ``MZ``; ``MalformedPE`` naming the offset when it is corrupt."""
    image = _image(data, display_path, size)
    return None if image is None else pe_facts(image, names)


def read_pe_initializers(
    data: Buffer, display_path: str, *, size: int | None = None, deep: Depth = True
) -> tuple[InitializerReach, ...]:
    """Only a PE library's initializers (``BinaryFacts.initializers``), read again: ``deep``
    as ``code_walk.walk_initializers`` takes it (a read holds each walked in its own code)."""
    image = _image(data, display_path, size)
    if image is None or _file_type(image.characteristics) != "shared":
        return ()
    view = _code_view(image, _coff_symbols(image), _imports(image))
    return walk_initializers(view, deep) if view else ()
