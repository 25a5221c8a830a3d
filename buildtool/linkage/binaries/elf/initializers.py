"""The ``CodeView`` of an ELF library for the initializer walk (``binaries.code_walk``): the
functions ``DT_INIT_ARRAY`` runs and the GOT slots of its imports, decoded by the fast decoder
(``read_code_view``; pyelftools' is in ``reference_initializers``).
"""

from __future__ import annotations

import bisect
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from typing import Final

from buildtool.linkage.binaries.code_walk import CodeView, Depth, walk_initializers
from buildtool.linkage.binaries.elf.constants import (
    _DF_TEXTREL,
    _DT_FLAGS,
    _DT_TEXTREL,
    _PF_W,
    _PF_X,
    _PT_LOAD,
)
from buildtool.linkage.binaries.elf.decoder import (
    _Bad,
    _Dynamic,
    _file_offset,
    _Image,
    _Segment,
)
from buildtool.linkage.binaries.elf.dynsym import _dynamic_symbol_count
from buildtool.linkage.binaries.elf.symtab import functions_at
from buildtool.linkage.binaries.entry_walk import walk_entry
from buildtool.linkage.binaries.facts import InitializerReach, ModuleInit

_DT_PLTRELSZ, _DT_RELA, _DT_RELASZ, _DT_RELAENT, _DT_JMPREL = 2, 7, 8, 9, 23
_DT_SYMTAB, _DT_INIT_ARRAY, _DT_INIT_ARRAYSZ, _DT_RELR = 6, 25, 27, 36
_DT_RELACOUNT = 0x6FFFFFF9
_RELATIVE: Final = {"x86_64": 8, "aarch64": 1027}
_SLOT_TYPES: Final = {"x86_64": (6, 7), "aarch64": (1025, 1026)}  # GLOB_DAT, JUMP_SLOT
_SYMBOLIC: Final = {"x86_64": (1, 6), "aarch64": (257, 1025)}  # 64-bit absolute, GLOB_DAT
_STT_OBJECT, _STT_FUNC = 1, 2


def init_array_targets(
    words: Sequence[int], base: int, relative: Mapping[int, int], word: int
) -> tuple[int, ...]:
    """Initializer addresses: each slot's ``R_*_RELATIVE`` addend, else its stored value (REL
    and RELR keep it in place); 0 and -1 (terminators some linkers leave) are no functions."""
    found = (relative.get(base + index * word, value) for index, value in enumerate(words))
    return tuple(a for a in found if a not in (0, (1 << (8 * word)) - 1))


# --- the fast decoder's view --------------------------------------------------------------------


def _table(img: _Image, segments: Sequence[_Segment], dyn: _Dynamic, tag: int, size: int) -> bytes:
    if tag not in dyn.values or size not in dyn.values:
        return b""
    offset, end = _file_offset(segments, dyn.values[tag], "relocation table", dyn.offset)
    return bytes(img.span(offset, min(dyn.values[size], end - offset), "relocation table"))


def _relocations(img: _Image, raw: bytes) -> tuple[Sequence[int], Sequence[int], Sequence[int]]:
    """Offsets, infos and addends of RELA entries (64-bit), a column each."""
    usable = len(raw) - len(raw) % 24
    if img.layout.endian == "<" and sys.byteorder == "little":
        words = memoryview(raw[:usable]).cast("Q")
        return words[0::3], words[1::3], memoryview(raw[:usable]).cast("q")[2::3]
    rows = list(struct.iter_unpack(img.layout.endian + "QQq", raw[:usable]))
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


Columns = tuple[Sequence[int], Sequence[int], Sequence[int]]


class _RelaTable:
    """The dynamic relocation table (``DT_RELA``) looked up by address: the rows ``DT_RELACOUNT``
    says lead it are ``R_*_RELATIVE`` sorted by offset (bisected); the rest (a few per cent of
    a big library's rows) indexed on the first lookup that needs them."""

    def __init__(self, raw: bytes, offsets: Sequence[int], relative_count: int) -> None:
        self.raw = raw
        self.offsets = offsets
        self.count = min(relative_count, len(offsets))
        self._rest: dict[int, int] | None = None

    def row(self, address: int) -> int | None:
        """The index of the relocation of ``address``, None when there is none."""
        index = bisect.bisect_left(self.offsets, address, 0, self.count)
        if index < self.count and self.offsets[index] == address:
            return index
        return self.rest_row(address)

    def rest_row(self, address: int) -> int | None:
        """The index of the first relocation of ``address`` past the RELATIVE rows."""
        if self._rest is None:
            self._rest = _first_rows(self.offsets, self.count)
        return self._rest.get(address)


def _first_rows(offsets: Sequence[int], start: int = 0) -> dict[int, int]:
    """Offset -> index of the first row from ``start`` on with that offset (built reversed, so
    the first one is kept, without a Python loop over a big library's rows)."""
    rows = range(start, len(offsets))
    return dict(zip(reversed(offsets[start:]), reversed(rows), strict=True))


class _SlotIndex:
    """GOT slot -> dynamic symbol index, of the GLOB_DAT and JUMP_SLOT relocations: the rows of
    ``DT_RELA`` past its RELATIVE ones (none of which names a symbol), then ``DT_JMPREL``'s,
    each indexed on the first lookup."""

    def __init__(self, rela: _RelaTable, infos: Sequence[int], plt: Columns, machine: str) -> None:
        self._rela = rela
        self._infos = infos
        self._plt = plt
        self._plt_rows: dict[int, int] | None = None
        self._kinds = _SLOT_TYPES[machine]

    def get(self, address: int) -> int | None:
        row = self._rela.rest_row(address)
        if row is not None and self._infos[row] & 0xFFFFFFFF in self._kinds:
            return self._infos[row] >> 32
        if self._plt_rows is None:
            self._plt_rows = _first_rows(self._plt[0])
        row = self._plt_rows.get(address)
        if row is not None and self._plt[1][row] & 0xFFFFFFFF in self._kinds:
            return self._plt[1][row] >> 32
        return None


def _array_relative(
    table: _RelaTable, columns: Columns, machine: str, slots: Sequence[int]
) -> dict[int, int]:
    """The addends of the RELATIVE relocations of the initializer array's slots."""
    _offsets, infos, addends = columns
    found: dict[int, int] = {}
    for address in slots:
        row = table.row(address)
        if row is not None and infos[row] & 0xFFFFFFFF == _RELATIVE[machine]:
            found[address] = addends[row]
    return found


def _pointers(
    img: _Image,
    table: _RelaTable,
    machine: str,
    data_symbol: Callable[[int], int | None],
    stored: Callable[[int, int], bytes] | None,
) -> Callable[[int], int | None]:
    """``CodeView.pointer`` from the RELA table: what the relocation of an address makes of
    it, an ``R_*_RELATIVE`` addend, or the address of the defined data object a GLOB_DAT or
    64-bit absolute relocation names (``data_symbol``: a dynamic symbol's index -> its address,
    None for anything but a defined object), plus its addend. ``stored``: read the value in
    place where no relocation names the address (DT_RELR tables keep the addends there)."""
    relative, symbolic = _RELATIVE[machine], _SYMBOLIC[machine]
    row = struct.Struct(img.layout.endian + "QQq")
    key = struct.Struct(img.layout.endian + "Q")

    def pointer(address: int) -> int | None:
        index = table.row(address)
        if index is not None:
            info: int
            addend: int
            _offset, info, addend = row.unpack_from(table.raw, index * row.size)
            if info & 0xFFFFFFFF == relative:
                return addend
            target = data_symbol(info >> 32) if info & 0xFFFFFFFF in symbolic else None
            return target + addend if target else None
        if stored is None:
            return None
        value = stored(address, 8)
        return key.unpack(value)[0] or None if len(value) == 8 else None

    return pointer


def _symbol_row(
    img: _Image, segments: Sequence[_Segment], dyn: _Dynamic, index: int
) -> tuple[int, int, int, int]:
    """(name offset, st_info, st_shndx, st_value) of a dynamic symbol."""
    offset, _end = _file_offset(segments, dyn.values[_DT_SYMTAB], "DT_SYMTAB", dyn.offset)
    name, info, _other, shndx, value, _size = img.unpack(
        struct.Struct(img.layout.endian + "IBBHQQ"), offset + 24 * index, "dynamic symbol"
    )
    return name, info, shndx, value


def _symbol(
    img: _Image, segments: Sequence[_Segment], dyn: _Dynamic, index: int
) -> tuple[str, int]:
    name, _info, shndx, value = _symbol_row(img, segments, dyn, index)
    assert dyn.strings is not None
    return dyn.strings.get(name), value if shndx else 0


def _object_address(
    img: _Image, segments: Sequence[_Segment], dyn: _Dynamic, index: int
) -> int | None:
    """A dynamic symbol's address when it is a defined data object."""
    if not index or _DT_SYMTAB not in dyn.values:
        return None
    _name, info, shndx, value = _symbol_row(img, segments, dyn, index)
    return value if shndx and info & 0xF == _STT_OBJECT else None


def _loaded(segments: Sequence[_Segment], executable: bool) -> list[_Segment]:
    return [s for s in segments if s.type == _PT_LOAD and (s.flags & _PF_X or not executable)]


def _read_only(segments: Sequence[_Segment], dyn: _Dynamic) -> list[_Segment]:
    """Loaded segments neither writable nor executable; none when relocations may write into
    them (``DT_TEXTREL``, ``DF_TEXTREL``)."""
    if _DT_TEXTREL in dyn.values or dyn.values.get(_DT_FLAGS, 0) & _DF_TEXTREL:
        return []
    return [s for s in segments if s.type == _PT_LOAD and not s.flags & (_PF_X | _PF_W)]


def _segment_reader(
    img: _Image, segments: Sequence[_Segment], executable: bool = True
) -> Callable[[int, int], bytes]:
    code = _loaded(segments, executable)

    def read(address: int, size: int) -> bytes:
        for s in code:
            if s.vaddr <= address < s.vaddr + s.filesz:
                end = min(address + size, s.vaddr + s.filesz, s.vaddr + img.size - s.offset)
                start = address - s.vaddr + s.offset
                return bytes(img.view[start : start + max(end - address, 0)])
        return b""

    return read


def _array(img: _Image, segments: Sequence[_Segment], dyn: _Dynamic) -> tuple[int, tuple[int, ...]]:
    """The initializer array's address and its words as stored."""
    base = dyn.values[_DT_INIT_ARRAY]
    offset, end = _file_offset(segments, base, "DT_INIT_ARRAY", dyn.offset)
    count = min(dyn.values[_DT_INIT_ARRAYSZ], end - offset) // 8
    return base, struct.unpack(f"{img.layout.endian}{count}Q", img.span(offset, 8 * count, "array"))


def read_code_view(
    img: _Image,
    segments: Sequence[_Segment],
    dyn: _Dynamic | None,
    machine: str,
    *,
    entry: bool = False,
) -> CodeView | None:
    """The fast decoder's ``CodeView``; None without initializers (unless ``entry``: for a
    function the caller names) or for another machine."""
    if dyn is None or machine not in _RELATIVE or img.layout.elf_class != 64:
        return None
    has_array = _DT_INIT_ARRAY in dyn.values and bool(dyn.values.get(_DT_INIT_ARRAYSZ))
    if not has_array and not entry:
        return None
    base, words = _array(img, segments, dyn) if has_array else (0, ())
    count = len(words)
    tables = [(_DT_RELA, _DT_RELASZ), (_DT_JMPREL, _DT_PLTRELSZ)]
    raw = [_table(img, segments, dyn, *table) for table in tables]
    columns = [_relocations(img, table) for table in raw]
    table = _RelaTable(raw[0], columns[0][0], dyn.values.get(_DT_RELACOUNT, 0))
    relative = _array_relative(table, columns[0], machine, [base + 8 * i for i in range(count)])
    indexes = _SlotIndex(table, columns[0][1], columns[1], machine)
    names = _DT_SYMTAB in dyn.values and dyn.strings is not None

    def slot(address: int) -> tuple[str, int] | None:
        index = indexes.get(address)
        return _symbol(img, segments, dyn, index) if index and names else None

    targets = init_array_targets(words, base, relative, 8)
    data = _segment_reader(img, segments, False)
    stored = data if _DT_RELR in dyn.values else None

    def data_symbol(index: int) -> int | None:
        return _object_address(img, segments, dyn, index)

    pointer = _pointers(img, table, machine, data_symbol, stored)
    read_only = _segment_reader(img, _read_only(segments, dyn), False)
    code = _segment_reader(img, segments)

    def relocated(address: int) -> bool:
        return table.row(address) is not None

    def function_names(addresses: frozenset[int]) -> Mapping[int, frozenset[str]]:
        try:
            return functions_at(img, addresses) or {}
        except _Bad:
            return {}  # a damaged section table: the functions go unnamed, as in a stripped file

    return CodeView(
        machine, code, targets, slot, data, pointer, read_only, relocated, function_names
    )


class _LeftOut(Exception):
    """Internal: the walk reached bytes a sparse read left out."""


def initializers_unless_left_out(
    img: _Image,
    segments: Sequence[_Segment],
    dyn: _Dynamic | None,
    machine: str,
    left_out: Callable[[int, int], bool],
) -> tuple[InitializerReach, ...] | None:
    """The initializers as a read's facts hold them (each walked in its own code), or None when
    the walk reads a file range for which ``left_out(start, end)`` holds: a sparse read's
    facts then say they were not read. Stops at the first such range."""
    try:
        view = read_code_view(img, segments, dyn, machine)
    except _Bad:
        return ()  # a damaged relocation or array: no reach known, as for a stripped copy
    if view is None:
        return ()

    def checked(read: Callable[[int, int], bytes], executable: bool) -> Callable[[int, int], bytes]:
        loaded = _loaded(segments, executable)

        def read_checked(address: int, size: int) -> bytes:
            data = read(address, size)
            for s in loaded:
                if data and s.vaddr <= address < s.vaddr + s.filesz:
                    start = address - s.vaddr + s.offset
                    if left_out(start, start + len(data)):
                        raise _LeftOut
            return data

        return read_checked

    sparse = view._replace(
        read=checked(view.read, True),
        constant=checked(view.constant, False),
        read_only=checked(view.read_only, False),
        function_names=_names_unless_left_out(img, left_out),
    )
    try:
        return walk_initializers(sparse, deep=False)
    except _LeftOut:
        return None


def _names_unless_left_out(
    img: _Image, left_out: Callable[[int, int], bool]
) -> Callable[[frozenset[int]], Mapping[int, frozenset[str]]]:
    """``CodeView.function_names`` for a sparse read: _LeftOut when the tables it reads were
    left out."""

    def function_names(addresses: frozenset[int]) -> Mapping[int, frozenset[str]]:
        try:
            found = functions_at(img, addresses, left_out)
        except _Bad:
            return {}
        if found is None:
            raise _LeftOut
        return found

    return function_names


MODULE_INIT_PREFIX: Final = "PyInit_"


def walks_module_init(file_type: str, soname: str | None, defined: frozenset[str]) -> bool:
    """Whether a read walks the file's module init function (``BinaryFacts.module_init``): a
    shared library without a SONAME that defines ``PyInit_<name>``, as an extension module is.
    The SONAME is asked first: a library's tens of thousands of names are never scanned."""
    if file_type != "shared" or soname is not None:
        return False
    return any(map(str.startswith, defined, repeat(MODULE_INIT_PREFIX)))


def _module_init_address(img: _Image, segments: Sequence[_Segment], dyn: _Dynamic) -> int | None:
    """Where the defined function ``PyInit_<name>`` starts (the first one), by the dynamic
    symbol table that the hash table sizes."""
    count = _dynamic_symbol_count(img, segments, dyn)
    if not count or _DT_SYMTAB not in dyn.values or dyn.strings is None:
        return None
    for index in range(1, count):
        name, info, shndx, value = _symbol_row(img, segments, dyn, index)
        defined = shndx and info & 0xF == _STT_FUNC and value
        if defined and dyn.strings.get(name).startswith(MODULE_INIT_PREFIX):
            return value
    return None


def read_module_init(
    img: _Image, segments: Sequence[_Segment], dyn: _Dynamic | None, machine: str
) -> ModuleInit | None:
    """A Python extension module's init function, walked (``entry_walk.walk_entry``); None
    when the file defines none (or the tables it needs are damaged)."""
    try:
        view = read_code_view(img, segments, dyn, machine, entry=True)
        address = _module_init_address(img, segments, dyn) if view and dyn else None
    except _Bad:
        return None
    return walk_entry(view, address) if view and address else None


def read_initializers(
    img: _Image,
    segments: Sequence[_Segment],
    dyn: _Dynamic | None,
    machine: str,
    deep: Depth = False,
) -> tuple[InitializerReach, ...]:
    """Each initializer's reach (``code_walk.walk_initializers``; ``deep``: the whole walk, or
    that of the initializers at these positions only; else each initializer's own code, which
    the facts of a read hold)."""
    try:
        view = read_code_view(img, segments, dyn, machine)
    except _Bad:
        return ()  # a damaged relocation or array: no reach known, as for a stripped copy
    return walk_initializers(view, deep) if view else ()
