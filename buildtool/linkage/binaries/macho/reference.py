"""The reference Mach-O reader: the loader's facts by macholib, sharing no decoding with
``decoder`` (``--reader pyelftools`` reads Mach-O files with it: a cross-check). The load
commands, the slice chosen from a fat file and the symbol table (``LC_DYSYMTAB``'s external
definitions and undefined symbols) come from macholib; the facts no load command holds
(sizes, sections, initializers, registration strings) are left out of the comparison and
taken from the struct decoder."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Collection
from typing import Any

from buildtool.linkage.binaries.bounded import Buffer
from buildtool.linkage.binaries.facts import BinaryFacts
from buildtool.linkage.binaries.macho.decoder import (
    CPU_TYPES,
    DYLIB_COMMANDS,
    FILE_TYPES,
    LC_BUILD_VERSION,
    LC_ID_DYLIB,
    LC_LOAD_WEAK_DYLIB,
    LC_REEXPORT_DYLIB,
    LC_RPATH,
    LC_VERSION_MIN_MACOSX,
    PLATFORM_MACOS,
    MalformedMachO,
    read_macho_facts,
    version_text,
)

COMPARED = (
    "machine", "file_type", "soname", "needed", "rpath", "minos", "defined", "undefined",
    "weak_undefined", "bound_imports", "weak_needed", "reexported", "architectures",
)  # fmt: skip
"""The facts this reader decodes itself; the rest are the struct decoder's."""


def _text(data: bytes) -> str:
    return data.split(b"\0", 1)[0].decode("utf-8", "replace")


def _header(macho: Any) -> Any:
    by_machine = {CPU_TYPES.get(h.header.cputype, ""): h for h in macho.headers}
    for preferred in ("arm64", "x86_64"):
        if preferred in by_machine:
            return by_machine[preferred]
    return macho.headers[0]


def _commands(header: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"dylibs": [], "rpaths": [], "install": None, "minos": None}
    for command, fields, data in header.commands:
        cmd = command.cmd
        if cmd in DYLIB_COMMANDS:
            found["dylibs"].append((cmd, _text(data)))
        elif cmd == LC_ID_DYLIB:
            found["install"] = _text(data)
        elif cmd == LC_RPATH:
            found["rpaths"].append(_text(data))
        elif cmd == LC_BUILD_VERSION and fields.platform == PLATFORM_MACOS:
            found["minos"] = version_text(fields.minos)
        elif cmd == LC_VERSION_MIN_MACOSX:
            found["minos"] = version_text(fields.version)
    return found


def _symbols(macho: Any, header: Any, raw: bytes, dylibs: list[tuple[int, str]]) -> dict[str, Any]:
    from macholib.SymbolTable import SymbolTable  # type: ignore[import-untyped]

    table = SymbolTable(macho, header, openfile=lambda _name, _mode: io.BytesIO(raw))
    defined = {_text(name) for entry, name in getattr(table, "extdefsyms", [])}
    undefined: set[str] = set()
    weak: set[str] = set()
    bound: list[tuple[str, str]] = []
    twolevel = bool(header.header.flags & 0x80)
    for entry, name in getattr(table, "undefsyms", []):
        symbol = _text(name)
        (weak if entry.n_desc & 0x40 else undefined).add(symbol)
        ordinal = entry.n_desc >> 8
        library = ""
        if twolevel and 0 < ordinal < 0xFE:
            library = dylibs[ordinal - 1][1] if ordinal <= len(dylibs) else f"#{ordinal}"
        bound.append((library, symbol))
    return {"defined": defined, "undefined": undefined, "weak": weak, "bound": bound}


def read_macho_reference(
    data: Buffer, display_path: str, names: Collection[str] = (), size: int | None = None
) -> BinaryFacts | None:
    """The facts by macholib; None when the bytes are not Mach-O; ``MalformedMachO`` when the
    struct decoder or macholib refuses them."""
    from macholib.MachO import MachO  # type: ignore[import-untyped]

    base = read_macho_facts(data, display_path, names, size)
    if base is None:
        return None
    raw = bytes(data[: len(data) if size is None else size])
    macho = MachO.__new__(MachO)  # MachO() opens a path; these bytes have none
    macho.graphident = macho.filename = display_path
    macho.loader_path, macho.fat, macho.headers = "", None, []
    macho.allow_unknown_load_commands = True
    try:
        macho.load(io.BytesIO(raw))
        header = _header(macho)
        commands = _commands(header)
        symbols = _symbols(macho, header, raw, commands["dylibs"])
    except Exception as error:  # macholib raises whatever its struct reads raise
        raise MalformedMachO(display_path, 0, f"macholib: {error}") from None
    dylibs = commands["dylibs"]
    return dataclasses.replace(
        base,
        machine=CPU_TYPES.get(header.header.cputype, f"unknown({header.header.cputype})"),
        file_type=FILE_TYPES.get(header.header.filetype, "other"),
        soname=commands["install"],
        needed=tuple(name for _cmd, name in dylibs),
        rpath=tuple(commands["rpaths"]),
        minos=commands["minos"],
        defined=frozenset(symbols["defined"]),
        undefined=frozenset(symbols["undefined"]),
        weak_undefined=frozenset(symbols["weak"]),
        bound_imports=tuple(sorted(symbols["bound"])),
        weak_needed=frozenset(name for cmd, name in dylibs if cmd == LC_LOAD_WEAK_DYLIB),
        reexported=tuple(name for cmd, name in dylibs if cmd == LC_REEXPORT_DYLIB),
        architectures=tuple(CPU_TYPES.get(h.header.cputype, "") for h in macho.headers)
        if macho.fat
        else (),
    )
