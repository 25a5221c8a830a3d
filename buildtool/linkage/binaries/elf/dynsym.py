"""Dynamic symbols: the keys (see the package doc) of ``.dynsym``, or of ``DT_SYMTAB`` sized by
the hash tables when a file has no section headers."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, repeat
from operator import add, contains
from typing import Final, NamedTuple

from buildtool.linkage.binaries.elf.columns import (
    _EXPORTED_MASK,
    _LIVE_MASK,
    _UNIQUE_MASK,
    _WEAK_MASK,
    _mask_and,
    _mask_not,
    _name_column,
    _shndx_masks,
)
from buildtool.linkage.binaries.elf.constants import (
    _DT_GNU_HASH,
    _DT_HASH,
    _DT_SYMTAB,
    _DT_VERDEF,
    _DT_VERDEFNUM,
    _DT_VERNEED,
    _DT_VERNEEDNUM,
    _DT_VERSYM,
    _SHN_ABS,
    _SHN_UNDEF,
    _SHT_DYNSYM,
    _SHT_GNU_VERDEF,
    _SHT_GNU_VERNEED,
    _SHT_GNU_VERSYM,
    _STB_GNU_UNIQUE,
    _STB_WEAK,
    _STT_OBJECT,
)
from buildtool.linkage.binaries.elf.decoder import (
    _NO_VERSIONS,
    _Bad,
    _Dynamic,
    _file_offset,
    _first,
    _Image,
    _linked_strings,
    _read_versions,
    _read_versym,
    _Section,
    _Segment,
    _StringTable,
    _symbol_count,
    _TableRef,
    _Versions,
)

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
    default_versions: tuple[str, ...] | None
    """``BinaryFacts.default_versions``."""


_NO_SYMBOLS: Final = _DynamicSymbols(
    frozenset(), False, frozenset(), frozenset(), frozenset(), frozenset(), 0, _NO_VERSIONS, ()
)


def _default_versions(
    versions: _Versions, used: Iterable[int], names_have_at: bool
) -> tuple[str, ...] | None:
    """``BinaryFacts.default_versions`` of definitions with the versym values ``used``: the
    versions their keys name as default ones (``_key_suffixes``), None when a name
    (``names_have_at``) or a version holds an "@"."""
    found: set[str] = set()
    for value in used:
        index = value & 0x7FFF
        if index < 2 or index not in versions.by_index:
            continue  # local or base: unversioned
        name, from_definition = versions.by_index[index]
        if "@" in name:
            return None
        if from_definition and not value & 0x8000:
            found.add(name)
    return None if names_have_at else tuple(sorted(found))


def _key_suffixes(versions: _Versions) -> tuple[dict[int, str], dict[int, str]]:
    """Versym value -> key suffix, for definitions and for references (see the package doc)."""
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
    used: set[int] = set()
    names_have_at = False
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
        used.add(ver)
        names_have_at = names_have_at or "@" in name
        if info >> 4 == _STB_GNU_UNIQUE:
            unique.add(key)
        elif info >> 4 == _STB_WEAK:
            weak_defined.add(key)
        exported += other & 3 == 0
    return _DynamicSymbols(
        frozenset(defined), any("@" in key for key in defined), frozenset(undefined),
        frozenset(weak), frozenset(unique), frozenset(weak_defined), exported, source.versions,
        _default_versions(source.versions, used, names_have_at),
    )  # fmt: skip


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
        default_versions=_default_versions(
            source.versions,
            set(compress(cols.versions, defs)),
            any(map(contains, compress(cols.names, defs), repeat("@"))),  # no joined copy
        ),
    )
