"""The reference PE reader: the loader's facts by pefile, sharing no decoding with ``decoder``
(``--reader pyelftools`` reads PE files with it: a slower cross-check). The import, delay-load
and export directories, the machine and the file type come from pefile; facts that need no
directory (sizes, registration strings) are computed from pefile's section table."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from buildtool.linkage.binaries.bounded import Buffer, find_names
from buildtool.linkage.binaries.facts import NO_NAMES, BinaryFacts
from buildtool.linkage.binaries.magic import DOS_MAGIC
from buildtool.linkage.binaries.pe.decoder import MACHINES, MalformedPE

_CODE = 0x20 | 0x20000000
_UNINITIALIZED = 0x80


def _name(raw: bytes | None) -> str:
    return (raw or b"").decode("utf-8", "replace")


def _imports(pe: Any) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    direct: list[str] = []
    delayed: list[str] = []
    bound: list[tuple[str, str]] = []
    for entries, target in (
        (getattr(pe, "DIRECTORY_ENTRY_IMPORT", []), direct),
        (getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", []), delayed),
    ):
        for entry in entries:
            dll = _name(entry.dll)
            target.append(dll)
            for symbol in entry.imports:
                # pefile names some system DLLs' ordinals from its own table: the file does not
                by_ordinal = getattr(symbol, "import_by_ordinal", False) or not symbol.name
                shown = f"#{symbol.ordinal}" if by_ordinal else _name(symbol.name)
                bound.append((dll, shown))
    return direct, delayed, bound


def _exports(pe: Any) -> tuple[str | None, frozenset[str]]:
    directory = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
    if directory is None:
        return None, frozenset()
    dll = _name(pe.get_string_at_rva(directory.struct.Name)) if directory.struct.Name else None
    return dll, frozenset(_name(symbol.name) for symbol in directory.symbols if symbol.name)


def _facts(pe: Any, data: bytes, path: str, names: Collection[str]) -> BinaryFacts:
    dll_name, exports = _exports(pe)
    direct, delayed, bound = _imports(pe)
    characteristics = pe.FILE_HEADER.Characteristics
    sections = pe.sections
    regions = [
        (s.PointerToRawData, min(s.PointerToRawData + s.SizeOfRawData, len(data)))
        for s in sections
        if not s.Characteristics & (_CODE | _UNINITIALIZED) and s.SizeOfRawData
    ]
    wide = pe.OPTIONAL_HEADER.Magic == 0x20B
    return BinaryFacts(
        path=path,
        elf_class=64 if wide else 32,
        little_endian=True,
        machine=MACHINES.get(pe.FILE_HEADER.Machine, f"unknown({pe.FILE_HEADER.Machine:#x})"),
        file_type="shared"
        if characteristics & 0x2000
        else ("executable" if characteristics & 0x2 else "other"),
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
        init_array_size=sum(
            s.Misc_VirtualSize for s in sections if _name(s.Name).rstrip("\0") == ".CRT"
        ),
        has_symtab=bool(pe.FILE_HEADER.PointerToSymbolTable and pe.FILE_HEADER.NumberOfSymbols),
        static_initializers=(),
        symtab_functions=NO_NAMES,
        registration_strings=find_names(data, regions, names) if names else frozenset(),
        file_size=len(data),
        code_size=sum(s.SizeOfRawData for s in sections if s.Characteristics & _CODE),
        sections=tuple((_name(s.Name).rstrip("\0"), s.Misc_VirtualSize) for s in sections),
        bind_now=False,
        relro=False,
        exec_stack=False,
        textrel=False,
        nodeflib=False,
        format="pe",
        bound_imports=tuple(sorted(set(bound))),
        weak_needed=frozenset(dll for dll in delayed if dll not in direct),
    )


def read_pe_reference(
    data: Buffer, display_path: str, names: Collection[str] = (), size: int | None = None
) -> BinaryFacts | None:
    """The facts by pefile; None when the bytes do not start with ``MZ``; ``MalformedPE`` (at
    offset 0: pefile names no offset) when pefile refuses them."""
    import pefile  # type: ignore[import-untyped]

    raw = bytes(data[: len(data) if size is None else size])
    if raw[:2] != DOS_MAGIC:
        return None
    # pefile stops at 8192 imports or exports and cuts names at 256 bytes by default;
    # torch_cpu.dll exports 59776 names, some of them kilobytes long
    pefile.MAX_IMPORT_SYMBOLS = pefile.MAX_SYMBOL_EXPORT_COUNT = 1 << 20
    pefile.MAX_SYMBOL_NAME_LENGTH = pefile.MAX_IMPORT_NAME_LENGTH = 1 << 16
    try:
        pe = pefile.PE(data=raw, fast_load=False)
    except pefile.PEFormatError as error:
        raise MalformedPE(display_path, 0, f"pefile: {error}") from None
    return _facts(pe, raw, display_path, names)
