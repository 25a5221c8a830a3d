"""The reference reader: the same ``BinaryFacts``, decoded by pyelftools.

pyelftools is imported inside the functions that use it: importing this module (the package does)
never loads it, so verify-linkage's start-up does not pay for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Final, NamedTuple

from buildtool.linkage.binaries.elf.constants import (
    _DT_INIT_ARRAYSZ,
    _DT_NEEDED,
    _DT_NULL,
    _DT_RPATH,
    _DT_RUNPATH,
    _DT_SONAME,
    _PF_X,
    _PT_DYNAMIC,
    _PT_GNU_RELRO,
    _PT_GNU_STACK,
    _PT_INTERP,
    _PT_LOAD,
    _SHF_ALLOC,
    _SHF_EXECINSTR,
    _SHN_UNDEF,
    _SHT_DYNSYM,
    _SHT_GNU_VERDEF,
    _SHT_GNU_VERNEED,
    _SHT_GNU_VERSYM,
    _SHT_INIT_ARRAY,
    _SHT_PROGBITS,
    _SHT_SYMTAB,
    _STT_FUNC,
    _STT_GNU_IFUNC,
)
from buildtool.linkage.binaries.elf.decoder import _dynamic_flags, _split_path, _Versions, _versions
from buildtool.linkage.binaries.elf.dynsym import (
    _NO_SYMBOLS,
    _collect_dynamic,
    _DynamicSymbols,
    _SymbolSource,
)
from buildtool.linkage.binaries.elf.facts import (
    ELF_MAGIC,
    PROGRAMS,
    MalformedElf,
    file_type_name,
    machine_name,
)
from buildtool.linkage.binaries.elf.fast import _find_names
from buildtool.linkage.binaries.elf.initializers import walks_module_init
from buildtool.linkage.binaries.elf.reference_initializers import (
    reference_initializers,
    reference_module_init,
)
from buildtool.linkage.binaries.elf.symtab import (
    NO_STATIC_SYMBOLS,
    StaticSymbols,
    _Initializers,
    _join_parts,
    _new_sets,
)
from buildtool.linkage.binaries.facts import STATIC_INIT_PREFIX, BinaryFacts

# --------------------------------------------------------------------------------------------
# reference path: pyelftools, slow but independent; the tests prove both give the same facts


def read_elf_facts_pyelftools(
    source: str | os.PathLike[str] | IO[bytes],
    display_path: str,
    registration_names: Collection[str] = (),
) -> BinaryFacts | None:
    """The same facts as read_elf_facts, decoded by pyelftools (section headers required)."""
    if isinstance(source, (str, os.PathLike)):
        with Path(source).open("rb") as stream:
            return _reference_guarded(stream, display_path, registration_names)
    return _reference_guarded(source, display_path, registration_names)


def _reference_guarded(stream: IO[bytes], path: str, names: Collection[str]) -> BinaryFacts | None:
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
    needs: list[tuple[str, list[tuple[int, str, int]]]] = []
    for section in elf.iter_sections():
        kind = _enum_value(section["sh_type"], t.sh_type)
        if kind == _SHT_GNU_VERDEF and not defs:
            for verdef, aux in section.iter_versions():
                first = next(iter(aux), None)
                name = first.name if first is not None else ""
                defs.append((verdef["vd_ndx"], verdef["vd_flags"], name))
        elif kind == _SHT_GNU_VERNEED and not needs:
            for verneed, aux in section.iter_versions():
                entries = [(a["vna_other"], a.name, a["vna_flags"]) for a in aux]
                needs.append((verneed.name, entries))
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


def _ref_static_symbols(elf: Any, t: _RefTables) -> StaticSymbols:
    symtab = _ref_first(elf, t, _SHT_SYMTAB)
    if symtab is None:
        return NO_STATIC_SYMBOLS
    names: list[bytes] = []
    infos: list[int] = []
    initializers = _Initializers([], [])
    for sym in symtab.iter_symbols():
        info, visibility, shndx, value = _ref_symbol(sym, t)
        is_function = info & 0xF in (_STT_FUNC, _STT_GNU_IFUNC)
        if shndx != _SHN_UNDEF and is_function and visibility == 0:
            names.append(sym.name.encode("utf-8"))
            infos.append(info)
            if sym.name.startswith(STATIC_INIT_PREFIX):
                initializers.names.append(names[-1])
                initializers.addresses.append(value)
    sets = _new_sets()
    sets.add(names, bytes(infos), initializers)
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


def _reference_facts(stream: IO[bytes], path: str, names: Collection[str]) -> BinaryFacts:
    from elftools.elf.elffile import ELFFile

    elf, t = ELFFile(stream), _ref_tables()
    values, needed = _ref_dynamic(elf, t)
    sections = _ref_sections(elf, t)
    segs = _ref_segments(elf, t)
    symbols = _ref_dynamic_symbols(elf, t)
    flags = _dynamic_flags({k: v for k, v in values.items() if isinstance(v, int)})
    soname = values.get(_DT_SONAME)
    elf_class = int(elf.elfclass)
    init_array = values.get(_DT_INIT_ARRAYSZ)
    machine = machine_name(_enum_value(elf["e_machine"], t.machine), elf_class)
    file_type = file_type_name(
        _enum_value(elf["e_type"], t.e_type), flags.pie, segs.interpreter, soname
    )
    programs = file_type in PROGRAMS
    static = NO_STATIC_SYMBOLS if programs else _ref_static_symbols(elf, t)
    return BinaryFacts(
        path=path,
        elf_class=elf_class,
        little_endian=bool(elf.little_endian),
        machine=machine,
        file_type=file_type,
        interpreter=segs.interpreter,
        soname=soname,
        needed=tuple(needed),
        rpath=_split_path(values.get(_DT_RPATH)),
        runpath=_split_path(values.get(_DT_RUNPATH)),
        defined=symbols.defined,
        versioned_definitions=symbols.versioned_definitions,
        default_versions=symbols.default_versions,
        undefined=symbols.undefined,
        weak_undefined=symbols.weak_undefined,
        unique=symbols.unique,
        weak_defined=symbols.weak_defined,
        exported_count=symbols.exported_count,
        version_definitions=symbols.versions.definitions,
        version_needs=symbols.versions.needs,
        weak_version_needs=symbols.versions.weak,
        init_array_size=init_array
        if init_array is not None
        else sum(s.size for s in sections if s.type == _SHT_INIT_ARRAY),
        has_symtab=any(s.type == _SHT_SYMTAB for s in sections),
        static_initializers=static.initializers,
        static_initializer_addresses=static.addresses,
        symtab_functions=static.functions,
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
        symbolic=flags.symbolic,
        initializers=reference_initializers(elf, stream, values, machine, file_type),
        module_init=(
            reference_module_init(elf, stream, values, machine)
            if walks_module_init(file_type, soname, symbols.defined)
            else None
        ),
    )
