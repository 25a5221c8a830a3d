"""The initializers' ``CodeView`` decoded by pyelftools: the initializer array, relocations
and dynamic symbols read independently of the fast decoder, then the same walk."""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from buildtool.linkage.binaries.code_walk import CodeView, no_bytes, walk_initializers
from buildtool.linkage.binaries.elf.initializers import init_array_targets
from buildtool.linkage.binaries.entry_walk import walk_entry
from buildtool.linkage.binaries.facts import InitializerReach, ModuleInit

_DT_INIT_ARRAY, _DT_INIT_ARRAYSZ, _DT_RELR = 25, 27, 36
_DT_TEXTREL, _DT_FLAGS, _DF_TEXTREL = 22, 30, 0x4
_RELATIVE = {"x86_64": 8, "aarch64": 1027}
_SLOTS = {"x86_64": (6, 7), "aarch64": (1025, 1026)}
_SYMBOLIC = {"x86_64": (1, 6), "aarch64": (257, 1025)}


def _code_reader(elf: Any, stream: Any, executable: bool = True, read_only: bool = False) -> Any:
    """Bytes of loaded segments: executable ones, any (not ``executable``), or those neither
    writable nor executable (``read_only``)."""
    code = [
        s
        for s in elf.iter_segments()
        if s["p_type"] == "PT_LOAD"
        and (s["p_flags"] & 3 == 0 if read_only else s["p_flags"] & 1 or not executable)
    ]

    def read(address: int, size: int) -> bytes:
        for s in code:
            if s["p_vaddr"] <= address < s["p_vaddr"] + s["p_filesz"]:
                size = min(size, s["p_vaddr"] + s["p_filesz"] - address)
                stream.seek(address - s["p_vaddr"] + s["p_offset"])
                return bytes(stream.read(size))
        return b""

    return read


def _relocations(elf: Any) -> list[Any]:
    from elftools.elf.relocation import RelocationSection

    found: list[Any] = []
    for section in elf.iter_sections():
        # SHF_ALLOC: the dynamic relocations
        if isinstance(section, RelocationSection) and section.is_RELA() and section["sh_flags"] & 2:
            found.extend(section.iter_relocations())
    return found


def _slots(elf: Any, relocations: list[Any], machine: str) -> Mapping[int, tuple[str, int]]:
    dynsym = elf.get_section_by_name(".dynsym")
    slots: dict[int, tuple[str, int]] = {}
    for rel in relocations:
        if rel["r_info_type"] in _SLOTS[machine] and rel["r_info_sym"] and dynsym is not None:
            symbol = dynsym.get_symbol(rel["r_info_sym"])
            defined = symbol["st_shndx"] != "SHN_UNDEF"
            slots[rel["r_offset"]] = (symbol.name, symbol["st_value"] if defined else 0)
    return slots


def _data_pointers(elf: Any, relocations: list[Any], machine: str) -> dict[int, int]:
    """Address -> what the pointer relocated there points to: a RELATIVE addend, or a defined
    data object's address (GLOB_DAT, 64-bit absolute) plus the addend. The dynamic relocation
    table's only (``.rela.dyn``), as the fast decoder's ``DT_RELA``."""
    dynsym = elf.get_section_by_name(".dynsym")
    pointers: dict[int, int] = {}
    for rel in relocations:
        kind = rel["r_info_type"]
        if kind == _RELATIVE[machine]:
            pointers.setdefault(rel["r_offset"], rel["r_addend"])
        elif kind in _SYMBOLIC[machine] and rel["r_info_sym"] and dynsym is not None:
            symbol = dynsym.get_symbol(rel["r_info_sym"])
            defined = (
                symbol["st_shndx"] != "SHN_UNDEF" and symbol["st_info"]["type"] == "STT_OBJECT"
            )
            if defined and symbol["st_value"]:
                pointers.setdefault(rel["r_offset"], symbol["st_value"] + rel["r_addend"])
    return pointers


def _array(elf: Any, stream: Any, values: Mapping[int, Any]) -> tuple[int, list[int]]:
    base, size = values[_DT_INIT_ARRAY], values[_DT_INIT_ARRAYSZ]
    offset = next(iter(elf.address_offsets(base)))
    stream.seek(offset)
    raw = stream.read(size - size % 8)
    fmt = "<Q" if elf.little_endian else ">Q"
    return base, [value for (value,) in struct.iter_unpack(fmt, raw)]


def _view(
    elf: Any, stream: Any, values: Mapping[int, Any], machine: str, entry: bool = False
) -> CodeView | None:
    """The walk's view, as ``initializers.read_code_view`` makes it."""
    if machine not in _RELATIVE or elf.elfclass != 64:
        return None
    has_array = bool(values.get(_DT_INIT_ARRAYSZ)) and _DT_INIT_ARRAY in values
    if not has_array and not entry:
        return None
    base, words = _array(elf, stream, values) if has_array else (0, [])
    relocations = _relocations(elf)
    end = base + 8 * len(words)
    every = _data_pointers(elf, relocations, machine)
    relative = {
        r["r_offset"]: r["r_addend"]
        for r in relocations
        if r["r_info_type"] == _RELATIVE[machine] and base <= r["r_offset"] < end
    }
    slots = _slots(elf, relocations, machine)
    targets = init_array_targets(words, base, relative, 8)
    constant = _code_reader(elf, stream, executable=False)
    pointer = _pointer(every, constant if _DT_RELR in values else None, elf.little_endian)
    textrel = _DT_TEXTREL in values or values.get(_DT_FLAGS, 0) & _DF_TEXTREL
    read_only = _code_reader(elf, stream, read_only=True) if not textrel else no_bytes
    code = _code_reader(elf, stream)
    jump_slot = _SLOTS[machine][1]
    rows = {r["r_offset"] for r in relocations if r["r_info_type"] != jump_slot}
    return CodeView(
        machine,
        code,
        targets,
        slots.get,
        constant,
        pointer,
        read_only,
        rows.__contains__,
        _function_names(elf),
    )


def _function_names(elf: Any) -> Callable[[frozenset[int]], dict[int, frozenset[str]]]:
    """``CodeView.function_names`` by pyelftools: every defined function of ``.symtab``."""

    def named(addresses: frozenset[int]) -> dict[int, frozenset[str]]:
        table = elf.get_section_by_name(".symtab")
        found: dict[int, set[str]] = {}
        for symbol in table.iter_symbols() if table is not None else ():
            function = symbol["st_info"]["type"] in ("STT_FUNC", "STT_LOOS")
            if function and symbol["st_shndx"] != "SHN_UNDEF" and symbol["st_value"] in addresses:
                found.setdefault(symbol["st_value"], set()).add(symbol.name)
        return {address: frozenset(names) for address, names in found.items()}

    return named


def reference_initializers(
    elf: Any, stream: Any, values: Mapping[int, Any], machine: str, file_type: str
) -> tuple[InitializerReach, ...]:
    """Each initializer's reach, as the fast decoder's facts hold it (a shared library's, each
    walked in its own code)."""
    view = _view(elf, stream, values, machine) if file_type == "shared" else None
    return walk_initializers(view, deep=False) if view else ()


def reference_module_init(
    elf: Any, stream: Any, values: Mapping[int, Any], machine: str
) -> ModuleInit | None:
    """A Python extension module's init function walked, as ``read_module_init`` finds it."""
    dynsym = elf.get_section_by_name(".dynsym")
    starts = [
        symbol["st_value"]
        for symbol in (dynsym.iter_symbols() if dynsym is not None else ())
        if symbol.name.startswith("PyInit_")
        and symbol["st_info"]["type"] == "STT_FUNC"
        and symbol["st_shndx"] != "SHN_UNDEF"
        and symbol["st_value"]
    ]
    view = _view(elf, stream, values, machine, entry=True) if starts else None
    return walk_entry(view, starts[0]) if view else None


def _pointer(
    relative: Mapping[int, int], stored: Any, little_endian: bool
) -> Callable[[int], int | None]:
    """What a pointer at an address points to: its RELATIVE relocation's addend, else (with a
    DT_RELR table, which keeps addends in place) the value stored there."""
    fmt = "<Q" if little_endian else ">Q"

    def pointer(address: int) -> int | None:
        if address in relative:
            return relative[address]
        value = stored(address, 8) if stored is not None else b""
        return struct.unpack(fmt, value)[0] or None if len(value) == 8 else None

    return pointer
