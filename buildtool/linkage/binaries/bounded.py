"""Bounds-checked reads of a binary's bytes, shared by the Mach-O and PE decoders: every read
names what it reads, and a read past the end raises the format's ``MalformedBinary`` with the
file offset, so no corrupt count or offset can make decoding fail any other way."""

from __future__ import annotations

import mmap
import struct
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from buildtool.linkage.binaries.facts import MalformedBinary

Buffer = bytes | bytearray | mmap.mmap


@dataclass(frozen=True)
class Bounded:
    """``size`` bytes of ``data`` from ``base`` (a fat file's slice, or the whole file)."""

    data: Buffer
    path: str
    error: type[MalformedBinary]
    """What a failed read raises."""
    base: int = 0
    """Where these bytes start in the file: errors name file offsets."""
    size: int = -1
    """Bytes readable from ``base``; -1: to the end of ``data``."""

    def __post_init__(self) -> None:
        if self.size < 0:
            object.__setattr__(self, "size", len(self.data) - self.base)

    def fail(self, offset: int, reason: str) -> MalformedBinary:
        return self.error(self.path, self.base + offset, reason)

    def check(self, offset: int, length: int, what: str) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            end = self.base + self.size
            raise self.fail(
                offset, f"{what} ({length} bytes) runs past the end of the file ({end:#x})"
            )

    def unpack(self, layout: struct.Struct, offset: int, what: str) -> tuple[Any, ...]:
        self.check(offset, layout.size, what)
        return layout.unpack_from(self.data, self.base + offset)

    def bytes_at(self, offset: int, length: int, what: str) -> bytes:
        self.check(offset, length, what)
        return bytes(self.data[self.base + offset : self.base + offset + length])

    def cstring(self, offset: int, what: str, limit: int | None = None) -> str:
        """The NUL-terminated string at ``offset``, ending by ``limit`` (default: the end)."""
        end = self.size if limit is None else min(limit, self.size)
        if offset < 0 or offset >= end:
            raise self.fail(max(offset, 0), f"{what} starts outside the file")
        stop = self.data.find(b"\0", self.base + offset, self.base + end)
        if stop < 0:
            raise self.fail(offset, f"{what} has no terminating NUL")
        return bytes(self.data[self.base + offset : stop]).decode("utf-8", "replace")


def find_names(
    data: Buffer, regions: Sequence[tuple[int, int]], names: Collection[str]
) -> frozenset[str]:
    """Which of ``names`` occur NUL-terminated inside one of the file ranges ``regions``."""
    found: set[str] = set()
    for name in names:
        needle = name.encode("utf-8") + b"\0"
        if len(needle) == 1 or b"\0" in needle[:-1]:
            continue  # "" or an embedded NUL can never be one NUL-terminated string
        if any(data.find(needle, start, end) >= 0 for start, end in regions):
            found.add(name)
    return frozenset(found)
