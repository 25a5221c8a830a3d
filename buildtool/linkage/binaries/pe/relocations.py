"""A PE image's base relocations: where the loader rewrites a pointer when it maps the image
elsewhere than at its preferred base. Those bytes hold addresses of the one link, so the copies
of an object file in two DLLs differ there: what the initializer walk compares of a DLL's
read-only data (``CodeView.read_only``) stops short of them, as ELF keeps such pointers out of
its read-only segments altogether."""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Mapping
from typing import Final

BASE_RELOCATION_DIRECTORY: Final = 5
PAGE_BYTES: Final = 0x1000
_BLOCK: Final = struct.Struct("<II")
"""A block's page RVA and size (its 8 bytes of header included), then 16-bit entries."""
_ENTRY: Final = struct.Struct("<H")


class BaseRelocations:
    """The relocated RVAs of an image, a block (one page) at a time, each decoded when first
    asked about: the initializer walk asks about a few strings of a big DLL."""

    def __init__(self, pages: Mapping[int, bytes]) -> None:
        self._pages = pages
        self._decoded: dict[int, list[int]] = {}

    def first_within(self, start: int, end: int) -> int | None:
        """The lowest relocated RVA in [start, end); None when there is none."""
        for page in range(start - start % PAGE_BYTES, end, PAGE_BYTES):
            rvas = self._page(page)
            index = bisect_left(rvas, start)
            if index < len(rvas) and rvas[index] < end:
                return rvas[index]
        return None

    def _page(self, page: int) -> list[int]:
        if page not in self._decoded:
            entries = self._pages.get(page, b"")
            # type 0 (IMAGE_REL_BASED_ABSOLUTE) pads a block: nothing is relocated there
            found = (
                page + (entry & 0xFFF) for (entry,) in _ENTRY.iter_unpack(entries) if entry >> 12
            )
            self._decoded[page] = sorted(found)
        return self._decoded[page]


def parse_blocks(table: bytes) -> BaseRelocations | None:
    """The relocations of a base relocation table's bytes; None when a block runs past its end
    or is shorter than its header (nothing is known of the image's pointers then)."""
    pages: dict[int, bytes] = {}
    position = 0
    while position + _BLOCK.size <= len(table):
        page, size = _BLOCK.unpack_from(table, position)
        if size < _BLOCK.size or position + size > len(table):
            return None
        entries = table[position + _BLOCK.size : position + size]
        pages[page] = pages.get(page, b"") + entries[: len(entries) // 2 * 2]
        position += size
    return BaseRelocations(pages)


def string_before(data: bytes, cut: int) -> bytes:
    """What of ``data`` may be compared when a relocated pointer starts at ``cut``: a printable
    string ended before it; nothing else (the bytes before a pointer in a structure tell two
    registrations apart no better than none)."""
    end = data.find(b"\0", 0, max(cut, 0))
    if end <= 0 or not all(0x20 <= byte < 0x7F for byte in data[:end]):
        return b""
    return data[: end + 1]
