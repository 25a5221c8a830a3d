"""``.symtab``: static initializers and the functions a file defines (kept as ``NameDigests``).

A big table can be read in parts by several processes (``read_symtab_part``) and put together
(``with_symtab``); the names are read again only for the findings that show them
(``read_function_names``).
"""

from __future__ import annotations

import mmap
import re
import struct
import sys
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import compress, filterfalse, repeat
from typing import Final, NamedTuple

from buildtool.linkage.binaries.elf.columns import (
    _EXPORTED_MASK,
    _WEAK_MASK,
    _mask_and,
    _mask_not,
    _name_column,
    _shndx_bytes,
    _undefined_mask,
)
from buildtool.linkage.binaries.elf.constants import _FUNC_INFOS, _SHT_SYMTAB
from buildtool.linkage.binaries.elf.decoder import (
    _Bad,
    _decoded,
    _first,
    _Image,
    _read_header,
    _Section,
    _sections_only,
    _symbol_count,
)
from buildtool.linkage.binaries.elf.facts import PROGRAMS, ElfBuffer
from buildtool.linkage.binaries.facts import (
    CRT_FUNCTIONS,
    NO_NAMES,
    STATIC_INIT_PREFIX,
    BinaryFacts,
    NameDigests,
)

# --- .symtab: static initializers and the functions a file defines ---------------------------


_SYMTAB_CHUNK_ROWS: Final = 1 << 15
"""``.symtab`` rows decoded at a time; a mapped file's pages are dropped after each chunk."""
_INIT_PREFIX_BYTES: Final = STATIC_INIT_PREFIX.encode()
_CRT_BYTES: Final = frozenset(name.encode() for name in CRT_FUNCTIONS)


def _initializer_mask(names: Sequence[bytes]) -> Iterator[bool]:
    # name tests as method descriptors called by map: no Python-level step per name, which
    # counts at half a million names (methodcaller costs three times as much)
    return map(bytes.startswith, names, repeat(_INIT_PREFIX_BYTES))


_FIND_DOT: Final = re.compile(rb"\.").search


def _without_dot(names: Sequence[bytes]) -> Iterator[bytes]:
    return filterfalse(_FIND_DOT, names)


@dataclass(frozen=True, slots=True)
class SymtabPart:
    """What some rows of ``.symtab`` hold; ``with_symtab`` puts the parts of a table together."""

    initializers: tuple[str, ...]
    """Names starting ``_GLOBAL__sub_I_``, as found."""
    initializer_addresses: tuple[int, ...]
    """Their values (where their code starts), in the same order."""
    functions: bytes
    """Packed digests of the defined FUNC/IFUNC names without a "." (see
    ``BinaryFacts.symtab_functions``), repeats and the ones in ``excluded`` not yet taken out."""
    excluded: bytes
    """Packed digests of the names that are not code of the file alone: weak ones, static
    initializers, toolchain startup code, ""."""


class _FunctionSets(NamedTuple):
    """Collects a ``SymtabPart`` chunk by chunk."""

    initializers: list[bytes]
    initializer_addresses: list[int]
    functions: array[int]
    """Digests of every name without a "." (GCC's clones and parts): an array, not a set, as
    filling a set of half a million digests costs more than hashing the names."""
    excluded: set[int]
    """Digests of the weak names, then (in ``part``) of the other names that are not code of
    the file alone."""

    def add(self, names: Sequence[bytes], infos: bytes, initializers: _Initializers) -> None:
        """``names`` (UTF-8 as pyelftools decodes them) of defined functions, their st_info, and
        the static initializers among them."""
        self.initializers.extend(initializers.names)
        self.initializer_addresses.extend(initializers.addresses)
        # A "." never occurs in a mangled name: names with one are GCC's clones and split parts
        # (.cold, .isra.0, .constprop.0, .part.0) of code, often of inline functions.
        self.functions.extend(map(hash, _without_dot(names)))
        self.excluded.update(map(hash, compress(names, infos.translate(_WEAK_MASK))))

    def part(self) -> SymtabPart:
        """The part; the sets are spent."""
        self.excluded.update(hash(name) for name in (*self.initializers, *_CRT_BYTES, b""))
        initializers = tuple(name.decode("utf-8") for name in self.initializers)
        excluded = array("q", self.excluded).tobytes()
        addresses = tuple(self.initializer_addresses)
        return SymtabPart(initializers, addresses, self.functions.tobytes(), excluded)


def _new_sets() -> _FunctionSets:
    return _FunctionSets([], [], array("q"), set())


class StaticSymbols(NamedTuple):
    """What the facts keep of ``.symtab``."""

    initializers: tuple[str, ...]
    """``BinaryFacts.static_initializers``."""
    addresses: tuple[tuple[str, int], ...]
    """``BinaryFacts.static_initializer_addresses``."""
    functions: NameDigests


NO_STATIC_SYMBOLS: Final = StaticSymbols((), (), NO_NAMES)


def _join_parts(parts: Iterable[SymtabPart]) -> StaticSymbols:
    """The facts of a whole ``.symtab`` from its parts: concatenated, exclusions applied."""
    initializers: list[str] = []
    addresses: list[tuple[str, int]] = []
    functions: list[bytes] = []
    excluded: set[int] = set()
    for part in parts:
        initializers += part.initializers
        addresses += zip(part.initializers, part.initializer_addresses, strict=True)
        functions.append(part.functions)
        excluded.update(memoryview(part.excluded).cast("q"))
    digests = NameDigests(b"".join(functions), frozenset(excluded))
    return StaticSymbols(tuple(sorted(initializers)), tuple(sorted(addresses)), digests)


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


def _defined_functions(img: _Image, rows: memoryview) -> tuple[list[int], bytes, bytes]:
    """(st_name, st_info) of the defined FUNC/IFUNC symbols among ``rows`` of a symbol table,
    read a column at a time (see ``_columns``), and the mask of the rows kept."""
    info = rows[4 if img.layout.elf_class == 64 else 12 :: img.layout.sym_size].tobytes()
    other = rows[5 if img.layout.elf_class == 64 else 13 :: img.layout.sym_size].tobytes()
    undefined = _undefined_mask(*_shndx_bytes(img, rows))
    keep = _mask_and(info.translate(_FUNCTION_INFO_MASK), _mask_not(undefined))
    # Hidden (or internal/protected) functions are inline and template code the linker made
    # local: every library that uses them has a copy, so they are no evidence of shared objects.
    keep = _mask_and(keep, other.translate(_EXPORTED_MASK))
    return list(compress(_name_column(img, rows), keep)), bytes(compress(info, keep)), keep


class _Initializers(NamedTuple):
    """The static initializers among a chunk's defined functions."""

    names: list[bytes]
    addresses: list[int]


def _chunk_initializers(
    img: _Image, rows: memoryview, keep: bytes, names: list[bytes]
) -> _Initializers:
    """The static initializers among ``names`` (the kept rows' names) and their values: only
    their rows are unpacked (a chunk holds a few among thousands)."""
    found = list(compress(range(len(names)), _initializer_mask(names)))
    if not found:
        return _Initializers([], [])
    kept = list(compress(range(len(keep)), keep))
    size, at = img.layout.sym_size, 8 if img.layout.elf_class == 64 else 4
    value = struct.Struct(img.layout.endian + ("Q" if img.layout.elf_class == 64 else "I"))
    addresses = [value.unpack_from(rows, kept[index] * size + at)[0] for index in found]
    return _Initializers([names[index] for index in found], addresses)


def _symtab_chunks(
    img: _Image, sections: Sequence[_Section], symtab: _Section, part: int = 0, parts: int = 1
) -> Iterator[tuple[list[bytes], bytes, _Initializers]]:
    """(names, st_info) of the defined FUNC/IFUNC symbols in part ``part`` of ``parts`` of
    ``.symtab``'s rows, and the values of the static initializers among them, a chunk at a
    time; a mapped file's pages are dropped after each chunk."""
    strings = _raw_strings(img, sections, symtab)
    layout = img.layout
    count = _symbol_count(img, symtab)
    img.span(symtab.offset, count * layout.sym_size, "symbol table")
    rows = range(count * part // parts, count * (part + 1) // parts)
    for first in range(rows.start, rows.stop, _SYMTAB_CHUNK_ROWS):
        offset = symtab.offset + first * layout.sym_size
        size = min(_SYMTAB_CHUNK_ROWS, rows.stop - first) * layout.sym_size
        chunk = img.view[offset : offset + size]
        offsets, infos, keep = _defined_functions(img, chunk)
        names = strings.many(offsets)
        yield names, infos, _chunk_initializers(img, chunk, keep, names)
        img.release(offset, size)
        img.release(strings.start, strings.size)


def _read_symtab_rows(
    img: _Image, sections: Sequence[_Section], symtab: _Section, part: int = 0, parts: int = 1
) -> SymtabPart:
    sets = _new_sets()
    for names, infos, initializers in _symtab_chunks(img, sections, symtab, part, parts):
        sets.add(names, infos, initializers)
    return sets.part()


def _read_static_symbols(img: _Image, sections: Sequence[_Section]) -> StaticSymbols:
    symtab = _first(sections, _SHT_SYMTAB)
    if symtab is None:
        return NO_STATIC_SYMBOLS
    return _join_parts([_read_symtab_rows(img, sections, symtab)])


def _symtab_part(img: _Image, part: int, parts: int) -> SymtabPart:
    sections = _sections_only(img)
    symtab = _first(sections, _SHT_SYMTAB)
    if symtab is None:
        return SymtabPart((), (), b"", b"")
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


def with_symtab(facts: BinaryFacts, parts: Iterable[SymtabPart]) -> BinaryFacts:
    """Facts read with ``read_symtab=False``, completed with every part of their ``.symtab``
    (a program's stay empty, as a whole read leaves them: ``PROGRAMS``)."""
    if facts.file_type in PROGRAMS:
        return facts
    static = _join_parts(parts)
    return replace(
        facts,
        static_initializers=static.initializers,
        static_initializer_addresses=static.addresses,
        symtab_functions=static.functions,
    )


def _function_names(img: _Image, wanted: Collection[int]) -> dict[int, str]:
    sections = _sections_only(img)
    symtab = _first(sections, _SHT_SYMTAB)
    found: dict[int, bytes] = {}
    if symtab is None or not wanted:
        return {}
    for names, _infos, _initializers in _symtab_chunks(img, sections, symtab):
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


def _nowhere(_start: int, _end: int) -> bool:
    return False


_SYM64: Final = struct.Struct("<IBBHQQ")


def functions_at(
    img: _Image, addresses: frozenset[int], left_out: Callable[[int, int], bool] = _nowhere
) -> dict[int, frozenset[str]] | None:
    """``CodeView.function_names``: the names of the functions ``.symtab`` defines at each of
    ``addresses``, by one pass over the table's values; {} without a table, None when
    ``left_out(start, end)`` holds for the table or its strings (a sparse read)."""
    header = _read_header(img)
    if left_out(header.shoff, header.shoff + header.shnum * header.shentsize):
        return None
    sections = _sections_only(img)
    symtab = _first(sections, _SHT_SYMTAB)
    if symtab is None or img.layout.elf_class != 64:
        return {}
    strings = _raw_strings(img, sections, symtab)
    count = _symbol_count(img, symtab)
    rows = img.span(symtab.offset, count * _SYM64.size, "symbol table")
    if left_out(symtab.offset, symtab.offset + len(rows)) or left_out(
        strings.start, strings.start + strings.size
    ):
        return None
    layout = _SYM64 if img.layout.endian == "<" else struct.Struct(">IBBHQQ")
    if layout is _SYM64 and sys.byteorder == "little":
        values: Iterable[int] = rows.cast("Q")[1::3]
    else:
        values = (row[4] for row in layout.iter_unpack(rows))
    found: dict[int, set[str]] = {}
    for index in compress(range(count), map(addresses.__contains__, values)):
        name, info, _other, shndx, value, _size = layout.unpack_from(rows, index * layout.size)
        if shndx and info in _FUNC_INFOS:
            found.setdefault(value, set()).add(strings.one(name).decode())
    return {address: frozenset(names) for address, names in found.items()}
