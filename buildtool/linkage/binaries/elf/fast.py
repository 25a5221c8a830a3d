"""The fast reader: ``BinaryFacts`` from the decoder, over bytes or a mapped file."""

from __future__ import annotations

import mmap
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from buildtool.linkage.binaries.code_walk import Depth
from buildtool.linkage.binaries.elf.constants import (
    _DT_INIT_ARRAYSZ,
    _DT_RPATH,
    _DT_RUNPATH,
    _DT_SONAME,
    _PF_X,
    _PT_GNU_RELRO,
    _PT_GNU_STACK,
    _PT_INTERP,
    _PT_LOAD,
    _SHF_ALLOC,
    _SHF_EXECINSTR,
    _SHT_INIT_ARRAY,
    _SHT_PROGBITS,
    _SHT_SYMTAB,
)
from buildtool.linkage.binaries.elf.decoder import (
    _decoded,
    _dyn_string,
    _Dynamic,
    _dynamic_flags,
    _first,
    _Image,
    _read_structure,
    _Section,
    _Segment,
    _split_path,
    _Structure,
)
from buildtool.linkage.binaries.elf.dynsym import _read_dynamic_symbols
from buildtool.linkage.binaries.elf.facts import (
    ELF_MAGIC,
    PROGRAMS,
    ElfBuffer,
    file_type_name,
    machine_name,
)
from buildtool.linkage.binaries.elf.initializers import (
    read_initializers,
    read_module_init,
    walks_module_init,
)
from buildtool.linkage.binaries.elf.symtab import NO_STATIC_SYMBOLS, _read_static_symbols
from buildtool.linkage.binaries.facts import BinaryFacts, InitializerReach

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


def _interpreter(img: _Image, segments: Sequence[_Segment]) -> str | None:
    seg = next((s for s in segments if s.type == _PT_INTERP), None)
    if seg is None:
        return None
    raw = bytes(img.span(seg.offset, seg.filesz, "program interpreter"))
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _facts(
    img: _Image,
    path: str,
    names: Collection[str],
    read_symtab: bool,
    *,
    read_code: bool,
    stripped_walk_only: bool,
) -> BinaryFacts:
    st = _read_structure(img)
    dyn, sections, segments = st.dynamic, st.sections, st.segments
    values: Mapping[int, int] = dyn.values if dyn else {}
    symbols = _read_dynamic_symbols(img, sections, segments, dyn)
    flags = _dynamic_flags(values)
    interpreter = _interpreter(img, segments)
    soname = _dyn_string(dyn, _DT_SONAME) if dyn else None
    seg_types = {s.type for s in segments}
    machine = machine_name(st.header.machine, img.layout.elf_class)
    file_type = file_type_name(st.header.e_type, flags.pie, interpreter, soname)
    read_names = read_symtab and file_type not in PROGRAMS
    static = _read_static_symbols(img, sections) if read_names else NO_STATIC_SYMBOLS
    has_symtab = _first(sections, _SHT_SYMTAB) is not None
    walk = read_code and not (stripped_walk_only and has_symtab)
    return BinaryFacts(
        path=path,
        elf_class=img.layout.elf_class,
        little_endian=img.layout.endian == "<",
        machine=machine,
        file_type=file_type,
        interpreter=interpreter,
        soname=soname,
        needed=tuple(dyn.strings.get(n) for n in dyn.needed) if dyn and dyn.strings else (),
        rpath=_split_path(_dyn_string(dyn, _DT_RPATH)) if dyn else None,
        runpath=_split_path(_dyn_string(dyn, _DT_RUNPATH)) if dyn else None,
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
        init_array_size=_init_array_size(dyn, sections),
        has_symtab=has_symtab,
        static_initializers=static.initializers,
        static_initializer_addresses=static.addresses,
        symtab_functions=static.functions,
        registration_strings=_registration_strings(img, _data_regions(sections, segments), names),
        file_size=img.size,
        code_size=_code_size(sections, segments),
        sections=tuple((s.name, s.size) for s in sections[1:]),
        bind_now=flags.bind_now,
        relro=_PT_GNU_RELRO in seg_types,
        exec_stack=not any(s.type == _PT_GNU_STACK and not s.flags & _PF_X for s in segments),
        textrel=flags.textrel,
        nodeflib=flags.nodeflib,
        symbolic=flags.symbolic,
        initializers=_initializers(img, st, machine, file_type, walk),
        module_init=(
            read_module_init(img, segments, dyn, machine)
            if read_code and walks_module_init(file_type, soname, symbols.defined)
            else None
        ),
    )


def _initializers(
    img: _Image, st: _Structure, machine: str, file_type: str, read_code: bool
) -> tuple[InitializerReach, ...] | None:
    """A shared library's initializers, each walked in its own code (``read_initializers``);
    None when the code was left out. Others have none the checks read: only shared libraries
    are paired as copies."""
    if file_type != "shared":
        return ()
    return read_initializers(img, st.segments, st.dynamic, machine) if read_code else None


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
    read_code: bool = True,
    stripped_walk_only: bool = False,
) -> BinaryFacts | None:
    """Facts about one file's bytes; None when it is not ELF; MalformedElf when it is corrupt.

    ``data`` may be an mmap: nothing keeps a view of it after return, so it can be closed.
    ``size``: only the first ``size`` bytes of ``data`` are the file (a buffer reused for many
    files). ``file_backed``: ``data`` maps a file read-only, so pages already decoded may be
    dropped from the process's resident memory. ``read_symtab=False`` leaves
    ``static_initializers`` and ``symtab_functions`` empty, for ``with_symtab`` to fill in from
    parts of the table read elsewhere (``read_symtab_part``). ``read_code=False`` leaves the
    initializers unread (None): ``data`` lacks the code (a sparse read). ``stripped_walk_only``
    leaves them unread when the file has a ``.symtab`` (a big file: its initializers' names
    pair it first, and they are read again if a check needs them: ``InitializerLookup``).
    """
    if not is_elf(data):
        return None
    return _decoded(
        data,
        display_path,
        size,
        file_backed,
        lambda image: _facts(
            image,
            display_path,
            registration_names,
            read_symtab,
            read_code=read_code,
            stripped_walk_only=stripped_walk_only,
        ),
    )


def read_elf_file(
    path: str | os.PathLike[str],
    display_path: str | None = None,
    registration_names: Collection[str] = (),
    *,
    loader_facts_only: bool = False,
) -> BinaryFacts | None:
    """Map a file and read its facts; None for a non-ELF or empty file. ``loader_facts_only``:
    a file read to resolve a closure (a system library): neither its ``.symtab`` names nor
    its initializers, which the checks read of the inputs only."""
    shown = display_path if display_path is not None else os.fspath(path)
    with Path(path).open("rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        if size < len(ELF_MAGIC):
            return None
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            whole = not loader_facts_only
            return read_elf_facts(mapped, shown, registration_names, file_backed=True,
                                  read_symtab=whole, read_code=whole)  # fmt: skip


def read_elf_initializers(
    data: ElfBuffer,
    display_path: str,
    *,
    size: int | None = None,
    file_backed: bool = False,
    deep: Depth = True,
) -> tuple[InitializerReach, ...]:
    """Only the initializers' reach (``BinaryFacts.initializers``), read from the whole file;
    ``deep``: the whole walk, or that of the initializers at these positions of the array (what
    the checks ask for when a shape matters), else as a read's facts hold them."""

    def decode(img: _Image) -> tuple[InitializerReach, ...]:
        st = _read_structure(img)
        machine = machine_name(st.header.machine, img.layout.elf_class)
        return read_initializers(img, st.segments, st.dynamic, machine, deep)

    return _decoded(data, display_path, size, file_backed, decode)
