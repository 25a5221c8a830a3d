"""A tiny Mach-O writer for tests: 64-bit little-endian (arm64) thin files, and fat files of
them, built byte by byte with ``struct`` (there is no Mach-O toolchain on Linux).

A file is a ``mach_header_64``, then its load commands: ``LC_SEGMENT_64`` ``__TEXT`` with one
``__text`` section, ``LC_ID_DYLIB`` (a dylib's install name), ``LC_LOAD_DYLIB`` /
``LC_LOAD_WEAK_DYLIB`` (each dependency), ``LC_RPATH``, ``LC_BUILD_VERSION`` (platform macOS,
``minos``), ``LC_SYMTAB`` and ``LC_DYSYMTAB``; then the ``__text`` bytes, the ``nlist_64``
table (locals, external definitions, undefined symbols with their two-level library ordinal in
``n_desc``'s high byte) and the string table. dyld would not run it (no code, no linkedit
signature); it holds exactly what the readers and the checks look at.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

CPU_ARM64 = 0x0100000C
CPU_X86_64 = 0x01000007
MH_DYLIB = 6
MH_BUNDLE = 8
MH_EXECUTE = 2
MH_TWOLEVEL = 0x80
LC_SEGMENT_64 = 0x19
LC_SYMTAB = 0x2
LC_DYSYMTAB = 0xB
LC_LOAD_DYLIB = 0xC
LC_ID_DYLIB = 0xD
LC_LOAD_WEAK_DYLIB = 0x80000018
LC_RPATH = 0x8000001C
LC_BUILD_VERSION = 0x32


def _padded(text: str) -> bytes:
    raw = text.encode() + b"\0"
    return raw + b"\0" * (-len(raw) % 8)


def _dylib_command(cmd: int, name: str) -> bytes:
    body = _padded(name)
    return struct.pack("<IIIIII", cmd, 24 + len(body), 24, 2, 0x10000, 0x10000) + body


def _rpath_command(entry: str) -> bytes:
    body = _padded(entry)
    return struct.pack("<III", LC_RPATH, 12 + len(body), 12) + body


def _version(text: str) -> int:
    major, minor = (int(part) for part in text.split("."))
    return major << 16 | minor << 8


@dataclass
class MachO:
    """What to write; ``imports``: (dependency index into ``dylibs``, symbol)."""

    install_name: str | None = None
    filetype: int = MH_DYLIB
    cputype: int = CPU_ARM64
    dylibs: Sequence[str] = ()
    weak_dylibs: Sequence[str] = ()
    rpaths: Sequence[str] = ()
    minos: str = "11.0"
    exports: Sequence[str] = ()
    imports: Sequence[tuple[int, str]] = ()
    locals: Sequence[str] = field(default_factory=tuple)
    strings: Sequence[str] = ()
    """NUL-terminated strings put into ``__text``'s neighbour: registration names."""

    def commands(
        self,
        *,
        text_offset: int,
        text_size: int,
        symoff: int,
        nsyms: int,
        stroff: int,
        strsize: int,
    ) -> list[bytes]:
        segment = struct.pack(
            "<II16sQQQQiiII", LC_SEGMENT_64, 72 + 80, b"__TEXT", 0, 0x4000, 0, 0x4000, 5, 5, 1, 0
        )
        section = struct.pack(
            "<16s16sQQIIIIIIII", b"__cstring", b"__TEXT", text_offset, text_size, text_offset,
            0, 0, 0, 0x2, 0, 0, 0,
        )  # fmt: skip
        commands = [segment + section]
        if self.install_name is not None:
            commands.append(_dylib_command(LC_ID_DYLIB, self.install_name))
        commands += [_dylib_command(LC_LOAD_DYLIB, name) for name in self.dylibs]
        commands += [_dylib_command(LC_LOAD_WEAK_DYLIB, name) for name in self.weak_dylibs]
        commands += [_rpath_command(entry) for entry in self.rpaths]
        commands.append(struct.pack("<IIIIII", LC_BUILD_VERSION, 24, 1, _version(self.minos), 0, 0))
        commands.append(struct.pack("<IIIIII", LC_SYMTAB, 24, symoff, nsyms, stroff, strsize))
        nlocal, nexport = len(self.locals), len(self.exports)
        dysymtab = [0, nlocal, nlocal, nexport, nlocal + nexport, len(self.imports)] + [0] * 12
        commands.append(struct.pack("<II18I", LC_DYSYMTAB, 80, *dysymtab))
        return commands

    def build(self) -> bytes:
        strings = b"\0" + b"".join(s.encode() + b"\0" for s in self.strings)
        names = b" \0"
        symbols = []
        for name in self.locals:
            symbols.append((len(names), 0x0E, 1, 0))
            names += name.encode() + b"\0"
        for name in self.exports:
            symbols.append((len(names), 0x0F, 1, 0))
            names += name.encode() + b"\0"
        for ordinal, name in self.imports:
            symbols.append((len(names), 0x01, 0, (ordinal + 1) << 8))
            names += name.encode() + b"\0"
        # two passes: the command sizes do not depend on the offsets
        size = sum(
            len(c)
            for c in self.commands(
                text_offset=0, text_size=0, symoff=0, nsyms=0, stroff=0, strsize=0
            )
        )
        text_offset = 32 + size
        symoff = text_offset + len(strings) + (-(text_offset + len(strings)) % 8)
        stroff = symoff + 16 * len(symbols)
        commands = self.commands(
            text_offset=text_offset,
            text_size=len(strings),
            symoff=symoff,
            nsyms=len(symbols),
            stroff=stroff,
            strsize=len(names),
        )
        header = struct.pack(
            "<IiiIIIII", 0xFEEDFACF, self.cputype, 0, self.filetype, len(commands), size,
            MH_TWOLEVEL, 0,
        )  # fmt: skip
        body = header + b"".join(commands) + strings
        body += b"\0" * (symoff - len(body))
        body += b"".join(
            struct.pack("<IBBHQ", strx, kind, sect, desc, 0) for strx, kind, sect, desc in symbols
        )
        return body + names


def fat(slices: Sequence[tuple[int, bytes]]) -> bytes:
    """A fat file of (cputype, thin file) slices, each at a 16 KiB boundary."""
    offset = 0x4000
    header = struct.pack(">II", 0xCAFEBABE, len(slices))
    body = b""
    for cputype, data in slices:
        header += struct.pack(">iiIII", cputype, 0, offset + len(body), len(data), 14)
        body += data + b"\0" * (-len(data) % 0x4000)
    return header + b"\0" * (offset - len(header)) + body
