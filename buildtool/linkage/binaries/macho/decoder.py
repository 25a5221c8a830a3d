"""The fast Mach-O reader: a struct decoder of the header, the load commands and the symbol
table, over bytes or a mapped file (the way ``elf/`` reads ELF).

What dyld reads is what the facts hold: the install name (``LC_ID_DYLIB``), the libraries a
file loads (``LC_LOAD_DYLIB``, ``LC_LOAD_WEAK_DYLIB``, ``LC_REEXPORT_DYLIB``,
``LC_LOAD_UPWARD_DYLIB``, ``LC_LAZY_LOAD_DYLIB``, in load-command order: a two-level library
ordinal counts them so), ``LC_RPATH``, the deployment target and the initializers. Exports and
imports come from the symbol table (``LC_SYMTAB`` with ``LC_DYSYMTAB``'s ranges): the external
definitions are what the export trie lists for every linker-produced file (the reference reader
walks the trie and a test compares the two), and an undefined symbol's library ordinal
(``n_desc``'s high byte) is the library it is bound to. The symbol table is read in one pass of
``struct.iter_unpack``; libtorch_cpu.dylib's takes a fraction of a second.

A fat (universal) file holds one thin file per architecture. Its facts are one slice's: the
arm64 one when present (what a current Mac loads), else x86_64, else the first; the slices'
machines are kept in ``architectures``. The other slices are not checked.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import compress
from typing import Final

from buildtool.linkage.binaries.bounded import Bounded, Buffer, find_names
from buildtool.linkage.binaries.code_walk import Depth, walk_initializers
from buildtool.linkage.binaries.facts import (
    NO_NAMES,
    STATIC_INIT_PREFIX,
    BinaryFacts,
    InitializerReach,
    MalformedBinary,
    NameDigests,
    name_digest,
)
from buildtool.linkage.binaries.macho.initializers import (
    S_INIT_FUNC_OFFSETS,
    S_MOD_INIT_FUNC_POINTERS,
    initializer_pointers,
    macho_code_view,
)
from buildtool.linkage.binaries.macho.sections import Section
from buildtool.linkage.binaries.magic import FAT_MAGIC, FAT_MAGIC_64, THIN_MAGICS


class MalformedMachO(MalformedBinary):
    """A Mach-O file is truncated or corrupt; names the file, the byte offset and the problem."""

    format_name = "Mach-O"


MAX_FAT_SLICES: Final = 32
"""More slices than this is a Java class file (same magic: its version follows), not Mach-O."""

CPU_TYPES: Final = {
    7: "i386",
    0x01000007: "x86_64",
    12: "arm",
    0x0100000C: "arm64",
    0x0200000C: "arm64_32",
    18: "ppc",
    0x01000012: "ppc64",
}
FILE_TYPES: Final = {1: "relocatable", 2: "executable", 6: "shared", 8: "shared", 9: "shared"}
"""MH_OBJECT, MH_EXECUTE, MH_DYLIB, MH_BUNDLE (a Python extension module), MH_DYLIB_STUB."""
PREFERRED_SLICES: Final = ("arm64", "x86_64")

_LC_REQ_DYLD: Final = 0x80000000
LC_SEGMENT: Final = 0x1
LC_SYMTAB: Final = 0x2
LC_DYSYMTAB: Final = 0xB
LC_LOAD_DYLIB: Final = 0xC
LC_ID_DYLIB: Final = 0xD
LC_LOAD_DYLINKER: Final = 0xE
LC_SEGMENT_64: Final = 0x19
LC_LAZY_LOAD_DYLIB: Final = 0x20
LC_VERSION_MIN_MACOSX: Final = 0x24
LC_BUILD_VERSION: Final = 0x32
LC_DYLD_CHAINED_FIXUPS: Final = 0x34 | _LC_REQ_DYLD
LC_LOAD_WEAK_DYLIB: Final = 0x18 | _LC_REQ_DYLD
LC_RPATH: Final = 0x1C | _LC_REQ_DYLD
LC_REEXPORT_DYLIB: Final = 0x1F | _LC_REQ_DYLD
LC_LOAD_UPWARD_DYLIB: Final = 0x23 | _LC_REQ_DYLD
DYLIB_COMMANDS: Final = frozenset(
    {LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB, LC_LOAD_UPWARD_DYLIB, LC_LAZY_LOAD_DYLIB}
)
"""The load commands a two-level library ordinal counts (1 is the first of them)."""
PLATFORM_MACOS: Final = 1

MH_TWOLEVEL: Final = 0x80
N_STAB: Final = 0xE0
N_PEXT: Final = 0x10
N_TYPE: Final = 0x0E
N_EXT: Final = 0x01
N_UNDF: Final = 0x0
N_SECT: Final = 0xE
N_WEAK_REF: Final = 0x40
N_WEAK_DEF: Final = 0x80
SELF_LIBRARY_ORDINAL: Final = 0
DYNAMIC_LOOKUP_ORDINAL: Final = 0xFE
EXECUTABLE_ORDINAL: Final = 0xFF
S_ZEROFILL_TYPES: Final = frozenset({0x1, 0xC, 0x12})
MAX_COMMANDS: Final = 1 << 16


def macho_slices(head: bytes) -> bool:
    """Whether the first eight bytes are a Mach-O file's (thin, or fat with a sane count)."""
    if head[:4] in THIN_MAGICS:
        return True
    if head[:4] in (FAT_MAGIC, FAT_MAGIC_64) and len(head) >= 8:
        return 0 < int.from_bytes(head[4:8], "big") <= MAX_FAT_SLICES
    return False


@dataclass
class LoadCommands:
    """What the load commands say (filled in command order)."""

    install_name: str | None = None
    dylibs: list[tuple[int, str]] = field(default_factory=list)
    """(command, name) of every library command, in order."""
    rpaths: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    symtab: tuple[int, ...] | None = None
    """symoff, nsyms, stroff, strsize."""
    dysymtab: tuple[int, ...] | None = None
    """ilocalsym, nlocalsym, iextdefsym, nextdefsym, iundefsym, nundefsym."""
    text_address: int = 0
    """The ``__TEXT`` segment's address: where the header lies, the base of ``__init_offsets``."""
    chained_fixups: bool = False
    """``LC_DYLD_CHAINED_FIXUPS``: pointers in the file are encoded (``macho.initializers``)."""
    indirect: tuple[int, int] = (0, 0)
    """indirectsymoff, nindirectsyms (``LC_DYSYMTAB``): the symbols of the stubs and pointers."""
    minos: str | None = None
    interpreter: str | None = None


@dataclass(frozen=True)
class Header:
    order: str
    bits: int
    cputype: int
    filetype: int
    ncmds: int
    sizeofcmds: int
    flags: int

    @property
    def size(self) -> int:
        return 32 if self.bits == 64 else 28


def version_text(packed: int) -> str:
    """``X.Y`` (``X.Y.Z`` when Z is set) of a Mach-O version ``xxxx.yy.zz`` in nibbles."""
    major, minor, patch = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    return f"{major}.{minor}.{patch}" if patch else f"{major}.{minor}"


def _header(image: Bounded) -> Header:
    order, bits = THIN_MAGICS[image.bytes_at(0, 4, "Mach-O magic")]
    fields = image.unpack(struct.Struct(f"{order}iiIIII"), 4, "Mach-O header")
    cputype, _sub, filetype, ncmds, sizeofcmds, flags = fields
    header = Header(order, bits, cputype, filetype, ncmds, sizeofcmds, flags)
    if ncmds > MAX_COMMANDS:
        raise image.fail(16, f"header claims {ncmds} load commands")
    image.check(header.size, sizeofcmds, "load commands")
    return header


def _lc_string(image: Bounded, start: int, size: int, at: int, what: str) -> str:
    (offset,) = image.unpack(struct.Struct(f"{_order(image)}I"), start + at, what)
    if offset >= size:
        raise image.fail(start + at, f"{what}'s string offset {offset} is outside its command")
    return image.cstring(start + offset, what, limit=start + size)


def _order(image: Bounded) -> str:
    return THIN_MAGICS[image.bytes_at(0, 4, "Mach-O magic")][0]


def _segment(image: Bounded, header: Header, start: int, found: LoadCommands) -> None:
    wide = header.bits == 64
    layout = struct.Struct(f"{header.order}16s" + ("QQQQ" if wide else "IIII") + "iiII")
    segname, vmaddr, *_fields, nsects, _flags = image.unpack(layout, start + 8, "segment command")
    if _text(segname) == "__TEXT":
        found.text_address = vmaddr
    section = struct.Struct(
        f"{header.order}16s16s" + ("QQ" if wide else "II") + "IIIII" + ("III" if wide else "II")
    )
    first = start + 8 + layout.size
    for number in range(nsects):
        at = first + number * section.size
        sect, seg, addr, size, offset, _align, _reloff, _nreloc, flags, first_index, stub, *_ = (
            image.unpack(section, at, f"section header {number}")
        )
        name = f"{_text(seg)},{_text(sect)}"
        index = len(found.sections) + 1
        found.sections.append(Section(name, index, size, offset, flags, addr, first_index, stub))


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _string_command(image: Bounded, start: int, cmd: int, size: int, found: LoadCommands) -> bool:
    """Commands that hold one string; False for any other command."""
    if cmd in DYLIB_COMMANDS:
        found.dylibs.append((cmd, _lc_string(image, start, size, 8, "dylib command")))
    elif cmd == LC_ID_DYLIB:
        found.install_name = _lc_string(image, start, size, 8, "LC_ID_DYLIB")
    elif cmd == LC_RPATH:
        found.rpaths.append(_lc_string(image, start, size, 8, "LC_RPATH"))
    elif cmd == LC_LOAD_DYLINKER:
        found.interpreter = _lc_string(image, start, size, 8, "LC_LOAD_DYLINKER")
    else:
        return False
    return True


def _command(
    image: Bounded, header: Header, start: int, command: tuple[int, int], found: LoadCommands
) -> None:
    cmd, size = command
    if _string_command(image, start, cmd, size, found):
        return
    if cmd in (LC_SEGMENT, LC_SEGMENT_64):
        _segment(image, header, start, found)
    elif cmd == LC_SYMTAB:
        found.symtab = image.unpack(struct.Struct(f"{header.order}IIII"), start + 8, "LC_SYMTAB")
    elif cmd == LC_DYSYMTAB:
        found.dysymtab = image.unpack(struct.Struct(f"{header.order}6I"), start + 8, "LC_DYSYMTAB")
        if size >= 8 + 18 * 4:
            found.indirect = image.unpack(
                struct.Struct(f"{header.order}II"), start + 8 + 12 * 4, "LC_DYSYMTAB"
            )
    elif cmd == LC_DYLD_CHAINED_FIXUPS:
        found.chained_fixups = True
    elif cmd == LC_BUILD_VERSION:
        platform, minos = image.unpack(
            struct.Struct(f"{header.order}II"), start + 8, "LC_BUILD_VERSION"
        )
        if platform == PLATFORM_MACOS:
            found.minos = version_text(minos)
    elif cmd == LC_VERSION_MIN_MACOSX:
        (minos,) = image.unpack(
            struct.Struct(f"{header.order}I"), start + 8, "LC_VERSION_MIN_MACOSX"
        )
        found.minos = version_text(minos)


def load_commands(image: Bounded, header: Header) -> LoadCommands:
    found = LoadCommands()
    layout = struct.Struct(f"{header.order}II")
    start, end = header.size, header.size + header.sizeofcmds
    for number in range(header.ncmds):
        if start + layout.size > end:
            raise image.fail(
                start, f"load command {number} starts past sizeofcmds ({header.sizeofcmds})"
            )
        cmd, size = image.unpack(layout, start, f"load command {number}")
        if size < layout.size or start + size > end:
            raise image.fail(start, f"load command {number} has size {size}")
        _command(image, header, start, (cmd, size), found)
        start += size
    return found


@dataclass(frozen=True)
class Symbols:
    """The symbol table as the facts need it."""

    defined: frozenset[str] = frozenset()
    weak_defined: frozenset[str] = frozenset()
    undefined: frozenset[str] = frozenset()
    weak_undefined: frozenset[str] = frozenset()
    bound: tuple[tuple[str, str], ...] = ()
    functions: NameDigests = NO_NAMES
    initializers: tuple[str, ...] = ()
    has_locals: bool = False
    initializer_starts: tuple[int, ...] = ()
    """Addresses of the static initializers' code (their local symbols' values)."""
    initializer_addresses: tuple[tuple[str, int], ...] = ()
    """``(name, address)`` of each static initializer, sorted."""


def _nlist(header: Header) -> struct.Struct:
    return struct.Struct(f"{header.order}IBBH" + ("Q" if header.bits == 64 else "I"))


@contextmanager
def _table(image: Bounded, layout: struct.Struct, symtab: tuple[int, ...]) -> Iterator[memoryview]:
    """The symbol table's bytes (checked to lie in the file, as its strings' are)."""
    symoff, nsyms, stroff, strsize = symtab
    image.check(symoff, nsyms * layout.size, "symbol table")
    image.check(stroff, strsize, "string table")
    start = image.base + symoff
    raw = memoryview(image.data)[start : start + nsyms * layout.size]
    try:
        yield raw
    finally:
        raw.release()


_CLASSES: Final = bytes(
    0 if n_type & N_STAB else 1 if n_type & N_EXT and not n_type & N_PEXT else 2
    for n_type in range(256)
)
"""Each ``n_type`` byte's kind of entry: 0 a debugging entry, 1 an external symbol, 2 a local
one."""


class _Names:
    """Strings of the string table by offset, decoded once each."""

    def __init__(self, image: Bounded, stroff: int, strsize: int) -> None:
        self._image = image
        self._start = image.base + stroff
        self._end = self._start + strsize
        self._stroff = stroff

    def offsets_of(self, prefix: bytes) -> frozenset[int]:
        """The string indexes of every name that starts with ``prefix`` (found by searching
        the table, not by reading each symbol's name)."""
        data, found = self._image.data, []
        at = data.find(prefix, self._start, self._end)
        while at >= 0:  # within a longer name too: an index may point into one
            found.append(at - self._start)
            at = data.find(prefix, at + 1, self._end)
        return frozenset(found)

    def many(self, indexes: Iterable[int]) -> list[str]:
        """The strings at ``indexes``, as ``__call__`` reads each (without a call per name:
        a big library's symbol table names tens of thousands)."""
        data, start, end = self._image.data, self._start, self._end
        found: list[str] = []
        for strx in indexes:
            at = start + strx
            stop = data.find(b"\0", at, end) if at < end else -1
            found.append(
                bytes(data[at:stop]).decode("utf-8", "replace") if stop >= 0 else self(strx)
            )
        return found

    def __call__(self, strx: int) -> str:
        at = self._start + strx
        stop = self._image.data.find(b"\0", at, self._end) if at < self._end else -1
        if stop < 0:
            raise self._image.fail(
                self._stroff + strx,
                f"symbol name at string index {strx} is outside the string table",
            )
        return bytes(self._image.data[at:stop]).decode("utf-8", "replace")


def _library(ordinal: int, dylibs: Sequence[tuple[int, str]], twolevel: bool) -> str:
    """The library an undefined symbol is bound to ("" for a flat or dynamic lookup)."""
    if not twolevel or ordinal in (
        SELF_LIBRARY_ORDINAL,
        DYNAMIC_LOOKUP_ORDINAL,
        EXECUTABLE_ORDINAL,
    ):
        return ""
    return dylibs[ordinal - 1][1] if ordinal <= len(dylibs) else f"#{ordinal}"


_MACHO_INIT_PREFIX: Final = ("_" + STATIC_INIT_PREFIX).encode()
"""A static initializer's name as Mach-O spells it (a leading underscore)."""


def read_symbols(image: Bounded, header: Header, found: LoadCommands) -> Symbols:
    if found.symtab is None:
        return Symbols()
    names = _Names(image, found.symtab[2], found.symtab[3])
    code = {s.index for s in found.sections if s.is_code}
    twolevel = bool(header.flags & MH_TWOLEVEL)
    defined: set[str] = set()
    weak_defined: set[str] = set()
    undefined: set[str] = set()
    weak_undefined: set[str] = set()
    bound: list[tuple[str, str]] = []
    functions: list[int] = []
    layout = _nlist(header)
    with _table(image, layout, found.symtab) as raw:
        classes = raw[4 :: layout.size].tobytes().translate(_CLASSES)
        externals = compress(range(len(classes)), classes.replace(b"\2", b"\0"))
        entries = [layout.unpack_from(raw, index * layout.size) for index in externals]
        for (_strx, n_type, n_sect, n_desc, _value), name in zip(
            entries, names.many(entry[0] for entry in entries), strict=True
        ):
            kind = n_type & N_TYPE
            if kind == N_UNDF:
                (weak_undefined if n_desc & N_WEAK_REF else undefined).add(name)
                bound.append((_library(n_desc >> 8, found.dylibs, twolevel), name))
                continue
            defined.add(name)
            if n_desc & N_WEAK_DEF:
                weak_defined.add(name)
            elif kind == N_SECT and n_sect in code:
                functions.append(name_digest(name))
        initializers, starts = _static_initializers(raw, layout, classes, names)
    return Symbols(
        frozenset(defined),
        frozenset(weak_defined),
        frozenset(undefined),
        frozenset(weak_undefined),
        tuple(sorted(bound)),
        NameDigests(array("q", functions).tobytes()),
        tuple(sorted(initializers)),
        2 in classes,
        tuple(starts),
        tuple(sorted(zip(initializers, starts, strict=True))),
    )


def _static_initializers(
    raw: memoryview, layout: struct.Struct, classes: bytes, names: _Names
) -> tuple[list[str], list[int]]:
    """The static initializers' local symbols: names and addresses, in the table's order. Their
    names are found in the string table first, and only the entries naming one are unpacked
    (a big library's hundreds of thousands of local symbols are not decoded one by one)."""
    offsets = names.offsets_of(_MACHO_INIT_PREFIX)
    initializers: list[str] = []
    starts: list[int] = []
    if not offsets:
        return initializers, starts
    if layout.format[0] == "<" and sys.byteorder == "little":
        strx_column: Iterable[int] = raw.cast("I")[:: layout.size // 4]
    else:
        strx_column = (entry[0] for entry in layout.iter_unpack(raw))
    for index in compress(range(len(classes)), map(offsets.__contains__, strx_column)):
        strx, n_type, _sect, _desc, value = layout.unpack_from(raw, index * layout.size)
        if classes[index] == 2 and n_type & N_TYPE == N_SECT:
            initializers.append(names(strx)[1:])
            starts.append(value)
    return initializers, starts


def read_initializers(
    image: Bounded,
    header: Header,
    found: LoadCommands,
    starts: tuple[int, ...],
    deep: Depth = False,
) -> tuple[InitializerReach, ...]:
    """Each static initializer's reach (``binaries.code_walk``; ``deep`` as there: a read's
    facts hold each walked in its own code); none for a 32-bit file, one without a symbol
    table, or when a table the walk reads is damaged."""
    if found.symtab is None or header.bits != 64:
        return ()
    symoff, nsyms, stroff, strsize = found.symtab
    names = _Names(image, stroff, strsize)
    layout = struct.Struct(f"{header.order}IBBHQ")

    def symbol_name(index: int) -> str:
        if index >= nsyms:
            raise image.fail(symoff, f"indirect symbol {index} is past the symbol table")
        (strx,) = image.unpack(layout, symoff + index * layout.size, "symbol")[:1]
        return names(strx)

    machine = CPU_TYPES.get(header.cputype, "")
    pointers = initializer_pointers(
        image, header.order, found.sections, found.text_address, found.chained_fixups
    )
    view = macho_code_view(
        image, header.order, machine, sections=found.sections, indirect=found.indirect,
        starts=pointers or starts, symbol_name=symbol_name,
        stored=(found.text_address, found.chained_fixups),
        function_names=_function_names(image, layout, found.symtab, names),
    )  # fmt: skip
    try:
        return walk_initializers(view, deep) if view else ()
    except MalformedMachO:
        return ()  # a damaged table: no reach known, as for a stripped file


def _function_names(
    image: Bounded, layout: struct.Struct, symtab: tuple[int, ...], names: _Names
) -> Callable[[frozenset[int]], dict[int, frozenset[str]]]:
    """``CodeView.function_names`` for a thin 64-bit file: one pass over the symbol table's
    values (libtorch_cpu.dylib's hold 460k), unpacking only the entries at an address asked
    for; none when the table is damaged."""

    def named(addresses: frozenset[int]) -> dict[int, frozenset[str]]:
        try:
            with _table(image, layout, symtab) as raw:
                return _names_at(raw, layout, addresses, names)
        except MalformedMachO:
            return {}

    return named


def _names_at(
    raw: memoryview, layout: struct.Struct, addresses: frozenset[int], names: _Names
) -> dict[int, frozenset[str]]:
    """The names of the symbols defined in a section at each of ``addresses``."""
    count = len(raw) // layout.size
    if layout.format[0] == "<" and sys.byteorder == "little" and layout.size == 16:
        values: Iterable[int] = raw.cast("Q")[1::2]
    else:
        values = (entry[4] for entry in layout.iter_unpack(raw))
    found: dict[int, set[str]] = {}
    for index in compress(range(count), map(addresses.__contains__, values)):
        strx, n_type, _sect, _desc, value = layout.unpack_from(raw, index * layout.size)
        if n_type & N_TYPE == N_SECT and not n_type & N_STAB:
            found.setdefault(value, set()).add(names(strx))
    return {address: frozenset(known) for address, known in found.items()}


def initializer_bytes(sections: Sequence[Section], bits: int) -> int:
    """Bytes of initializer pointers, as ELF's ``DT_INIT_ARRAYSZ`` counts them: an
    ``__init_offsets`` entry (4 bytes) counts as one pointer."""
    total = 0
    for section in sections:
        kind = section.flags & 0xFF
        if kind == S_MOD_INIT_FUNC_POINTERS:
            total += section.size
        elif kind == S_INIT_FUNC_OFFSETS:
            total += section.size // 4 * (bits // 8)
    return total


def _data_regions(image: Bounded, sections: Sequence[Section]) -> list[tuple[int, int]]:
    regions = []
    for section in sections:
        if section.is_code or section.flags & 0xFF in S_ZEROFILL_TYPES or not section.offset:
            continue
        end = min(section.offset + section.size, image.size)
        regions.append((image.base + section.offset, image.base + end))
    return regions


def thin_facts(
    image: Bounded,
    names: Collection[str],
    architectures: tuple[str, ...] = (),
    read_code: bool = True,
) -> BinaryFacts:
    """The facts of one thin Mach-O file (or one slice of a fat one); ``read_code=False``
    leaves a shared library's initializers unread (None) for ``read_macho_initializers``."""
    header = _header(image)
    found = load_commands(image, header)
    symbols = read_symbols(image, header, found)
    weak = {name for cmd, name in found.dylibs if cmd == LC_LOAD_WEAK_DYLIB}
    # only shared libraries are paired as copies: an executable's are read by no check
    initializers: tuple[InitializerReach, ...] | None = ()
    if FILE_TYPES.get(header.filetype) == "shared":
        initializers = None
        if read_code:
            initializers = read_initializers(image, header, found, symbols.initializer_starts)
    return BinaryFacts(
        path=image.path,
        elf_class=header.bits,
        little_endian=header.order == "<",
        machine=CPU_TYPES.get(header.cputype, f"unknown({header.cputype})"),
        file_type=FILE_TYPES.get(header.filetype, "other"),
        interpreter=found.interpreter,
        soname=found.install_name,
        needed=tuple(name for _cmd, name in found.dylibs),
        rpath=tuple(found.rpaths),
        runpath=None,
        defined=symbols.defined,
        versioned_definitions=False,
        undefined=symbols.undefined,
        weak_undefined=symbols.weak_undefined,
        unique=frozenset(),
        weak_defined=symbols.weak_defined,
        exported_count=len(symbols.defined),
        version_definitions=(),
        version_needs=(),
        init_array_size=initializer_bytes(found.sections, header.bits),
        has_symtab=symbols.has_locals,
        static_initializers=symbols.initializers,
        symtab_functions=symbols.functions,
        registration_strings=find_names(image.data, _data_regions(image, found.sections), names)
        if names
        else frozenset(),
        file_size=image.size,
        code_size=sum(s.size for s in found.sections if s.is_code),
        sections=tuple((s.name, s.size) for s in found.sections),
        # dyld binds lazily unless told otherwise, and its other protections are no load
        # commands: the ELF hardening facts do not apply (the hardening checks skip Mach-O)
        bind_now=False,
        relro=False,
        exec_stack=False,
        textrel=False,
        nodeflib=False,
        format="macho",
        bound_imports=symbols.bound,
        initializers=initializers,
        weak_needed=frozenset(weak),
        reexported=tuple(name for cmd, name in found.dylibs if cmd == LC_REEXPORT_DYLIB),
        minos=found.minos,
        architectures=architectures,
        static_initializer_addresses=symbols.initializer_addresses,
    )


def fat_slices(image: Bounded) -> list[tuple[str, int, int]]:
    """(machine, offset, size) of every slice of a fat file."""
    wide = image.bytes_at(0, 4, "fat magic") == FAT_MAGIC_64
    (count,) = image.unpack(struct.Struct(">I"), 4, "fat header")
    layout = struct.Struct(">iiQQII" if wide else ">iiIII")
    slices = []
    for number in range(count):
        cputype, _sub, offset, size, *_ = image.unpack(
            layout, 8 + number * layout.size, f"fat slice {number}"
        )
        image.check(offset, size, f"fat slice {number}")
        slices.append((CPU_TYPES.get(cputype, f"unknown({cputype})"), offset, size))
    return slices


def chosen_slice(slices: Sequence[tuple[str, int, int]]) -> tuple[str, int, int]:
    for preferred in PREFERRED_SLICES:
        for chosen in slices:
            if chosen[0] == preferred:
                return chosen
    return slices[0]


def _thin_image(data: Buffer, display_path: str, size: int | None) -> Bounded | None:
    """The thin file, or the slice the facts are those of; None when it is not Mach-O."""
    image = Bounded(data, display_path, MalformedMachO, 0, len(data) if size is None else size)
    head = bytes(data[:8])
    if not macho_slices(head):
        return None
    if head[:4] in THIN_MAGICS:
        return image
    machine, offset, length = chosen_slice(fat_slices(image))
    inner = Bounded(data, display_path, MalformedMachO, offset, length)
    if inner.bytes_at(0, 4, f"{machine} slice's magic") not in THIN_MAGICS:
        raise inner.fail(0, f"the {machine} slice is not a thin Mach-O file")
    return inner


def read_macho_initializers(
    data: Buffer, display_path: str, *, size: int | None = None, deep: Depth = True
) -> tuple[InitializerReach, ...]:
    """Only a Mach-O file's initializers (``BinaryFacts.initializers``), read again: ``deep``
    as ``code_walk.walk_initializers`` takes it."""
    image = _thin_image(data, display_path, size)
    if image is None:
        return ()
    header = _header(image)
    if FILE_TYPES.get(header.filetype) != "shared":
        return ()
    found = load_commands(image, header)
    pointers = initializer_pointers(
        image, header.order, found.sections, found.text_address, found.chained_fixups
    )  # what dyld runs: the symbol table is read only when they say nothing
    starts = pointers or read_symbols(image, header, found).initializer_starts
    return read_initializers(image, header, found, starts, deep)


def read_macho_function_names(
    data: Buffer, display_path: str, digests: Collection[int], *, size: int | None = None
) -> dict[int, str]:
    """The external code symbols' names (as ``BinaryFacts.symtab_functions`` keeps them) whose
    digests are in ``digests``, by digest: only the external entries' names are read."""
    image = _thin_image(data, display_path, size)
    if image is None:
        return {}
    found = load_commands(image, _header(image))
    if found.symtab is None or not digests:
        return {}
    names = _Names(image, found.symtab[2], found.symtab[3])
    layout = _nlist(_header(image))
    with _table(image, layout, found.symtab) as raw:
        classes = raw[4 :: layout.size].tobytes().translate(_CLASSES)
        externals = compress(range(len(classes)), classes.replace(b"\2", b"\0"))
        indexes = [layout.unpack_from(raw, index * layout.size)[0] for index in externals]
    return {
        digest: name for name in names.many(indexes) if (digest := name_digest(name)) in digests
    }


def read_macho_facts(
    data: Buffer,
    display_path: str,
    names: Collection[str] = (),
    size: int | None = None,
    *,
    read_code: bool = True,
) -> BinaryFacts | None:
    """Facts of a Mach-O file's bytes (the first ``size`` of ``data``); None when it is not
    Mach-O; ``MalformedMachO`` naming the offset when it is corrupt. ``read_code=False``: a
    shared library's initializers are left unread (None), for another process to walk them
    meanwhile (``read_macho_initializers``)."""
    image = Bounded(data, display_path, MalformedMachO, 0, len(data) if size is None else size)
    head = bytes(data[:8])
    if not macho_slices(head):
        return None
    if head[:4] in THIN_MAGICS:
        return thin_facts(image, names, read_code=read_code)
    slices = fat_slices(image)
    machine, offset, length = chosen_slice(slices)
    inner = Bounded(data, display_path, MalformedMachO, offset, length)
    if inner.bytes_at(0, 4, f"{machine} slice's magic") not in THIN_MAGICS:
        raise inner.fail(0, f"the {machine} slice is not a thin Mach-O file")
    facts = thin_facts(inner, names, tuple(s[0] for s in slices), read_code)
    # a slice's facts, but the file's size: the sizes checks weigh what a wheel ships
    from dataclasses import replace

    return replace(facts, file_size=image.size)
