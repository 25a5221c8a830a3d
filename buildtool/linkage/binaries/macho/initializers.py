"""The ``CodeView`` of a Mach-O file for the initializer walk (``binaries.code_walk``).

The initializers are what dyld runs: the pointers of ``__mod_init_func`` (as the linker stored
them: an address, or a chained-fixup rebase whose low 36 bits are the target) or the offsets of
``__init_offsets``; where neither can be read, the ``__GLOBAL__sub_I_*`` functions the symbol
table keeps. Imports are called through stubs and symbol pointers (``__stubs``, ``__got``,
``__la_symbol_ptr``): the indirect symbol table names the symbol of each entry, from the
section's ``reserved1`` on.
"""

from __future__ import annotations

import bisect
import itertools
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from buildtool.linkage.binaries.bounded import Bounded
from buildtool.linkage.binaries.code_walk import CodeView, no_names

if TYPE_CHECKING:
    from buildtool.linkage.binaries.macho.sections import Section

S_NON_LAZY_SYMBOL_POINTERS: Final = 0x6
S_LAZY_SYMBOL_POINTERS: Final = 0x7
S_SYMBOL_STUBS: Final = 0x8
S_THREAD_LOCAL_VARIABLE_POINTERS: Final = 0x14
_POINTER_TYPES: Final = frozenset(
    {S_NON_LAZY_SYMBOL_POINTERS, S_LAZY_SYMBOL_POINTERS, S_THREAD_LOCAL_VARIABLE_POINTERS}
)
S_MOD_INIT_FUNC_POINTERS: Final = 0x9
S_INIT_FUNC_OFFSETS: Final = 0x16
CHAINED_BIND: Final = 1 << 63
CHAINED_TARGET: Final = (1 << 36) - 1
INDIRECT_SYMBOL_LOCAL: Final = 0x80000000
INDIRECT_SYMBOL_ABS: Final = 0x40000000
POINTER: Final = 8
"""A symbol pointer's size: the walk knows 64-bit machines only."""
WALKED: Final = {"arm64": "aarch64", "x86_64": "x86_64"}
"""Mach-O machines the walk knows, by the name it gives them."""


def _reader(image: Bounded, sections: Sequence[Section]) -> Callable[[int, int], bytes]:
    """Bytes at a virtual address in the file data of ``sections`` (the first that holds it)."""
    placed = sorted((s for s in sections if s.offset and s.size), key=lambda s: s.address)
    starts = [s.address for s in placed]
    apart = all(a.address + a.size <= b.address for a, b in itertools.pairwise(placed))

    def section(address: int) -> Section | None:
        if apart:  # the walk reads thousands of times: a search, not a scan of every section
            at = bisect.bisect_right(starts, address) - 1
            found = placed[at] if at >= 0 else None
            return found if found is not None and address < found.address + found.size else None
        held = (s for s in sections if s.offset and s.address <= address < s.address + s.size)
        return next(held, None)

    def read(address: int, size: int) -> bytes:
        s = section(address)
        if s is None:
            return b""
        start = s.offset + address - s.address
        end = min(s.offset + s.size, image.size, start + size)
        return bytes(image.data[image.base + start : image.base + max(end, start)])

    return read


class _Slots:
    """Stub or symbol-pointer address -> the symbol it binds, by the indirect symbol table."""

    def __init__(
        self,
        image: Bounded,
        order: str,
        sections: Sequence[Section],
        indirect: tuple[int, int],
        symbol_name: Callable[[int], str],
    ) -> None:
        self.image, self.order = image, order
        self.entries = [s for s in sections if s.flags & 0xFF in _POINTER_TYPES | {S_SYMBOL_STUBS}]
        self.indirect = indirect
        self.symbol_name = symbol_name

    def width(self, section: Section) -> int:
        return section.reserved2 if section.flags & 0xFF == S_SYMBOL_STUBS else POINTER

    def __call__(self, address: int) -> tuple[str, int] | None:
        for s in self.entries:
            width = self.width(s)
            if width and s.address <= address < s.address + s.size:
                return self._entry(s.reserved1 + (address - s.address) // width)
        return None

    def _entry(self, number: int) -> tuple[str, int] | None:
        offset, count = self.indirect
        if number >= count:
            return None
        layout = struct.Struct(f"{self.order}I")
        at = offset + 4 * number
        if at + 4 > self.image.size:
            return None
        (index,) = layout.unpack_from(self.image.data, self.image.base + at)
        if index & (INDIRECT_SYMBOL_LOCAL | INDIRECT_SYMBOL_ABS):
            return None
        return self.symbol_name(index), 0


def pointer_target(value: int, base: int, chained: bool) -> int | None:
    """The function a stored initializer pointer names; None for a bind (no own code)."""
    if not chained:
        return value or None
    if value & CHAINED_BIND:
        return None
    target = value & CHAINED_TARGET
    # DYLD_CHAINED_PTR_64_OFFSET stores an offset from the image, DYLD_CHAINED_PTR_64 an address
    return target + base if target < base else target


def initializer_pointers(
    image: Bounded, order: str, sections: Sequence[Section], base: int, chained: bool
) -> tuple[int, ...]:
    """Addresses of the functions ``__mod_init_func`` and ``__init_offsets`` list, in order."""
    starts: list[int] = []
    for s in sections:
        kind = s.flags & 0xFF
        if kind not in (S_MOD_INIT_FUNC_POINTERS, S_INIT_FUNC_OFFSETS) or not s.offset:
            continue
        width = POINTER if kind == S_MOD_INIT_FUNC_POINTERS else 4
        count = min(s.size, max(image.size - s.offset, 0)) // width
        if not count:
            continue  # empty, or past the end of a damaged file
        layout = struct.Struct(f"{order}{count}{'Q' if width == POINTER else 'I'}")
        values = layout.unpack_from(image.data, image.base + s.offset)
        if kind == S_INIT_FUNC_OFFSETS:
            starts += [base + value for value in values]
        else:
            starts += [t for v in values if (t := pointer_target(v, base, chained)) is not None]
    return tuple(starts)


def macho_code_view(
    image: Bounded,
    order: str,
    machine: str,
    *,
    sections: Sequence[Section],
    indirect: tuple[int, int],
    starts: tuple[int, ...],
    symbol_name: Callable[[int], str],
    stored: tuple[int, bool] = (0, False),
    function_names: Callable[[frozenset[int]], Mapping[int, frozenset[str]]] = no_names,
) -> CodeView | None:
    """The walk's view of a thin 64-bit file; None without initializers or for another
    machine. ``stored``: the image's base address and whether its pointers are chained fixups
    (how a pointer stored in its data reads)."""
    if not starts or machine not in WALKED or not indirect[1]:
        return None
    code = [s for s in sections if s.is_code]
    slots = _Slots(image, order, sections, indirect, symbol_name)
    data = _reader(image, sections)
    word = struct.Struct(f"{order}Q")

    def pointer(address: int) -> int | None:
        value = data(address, POINTER)
        return pointer_target(word.unpack(value)[0], *stored) if len(value) == POINTER else None

    return CodeView(
        WALKED[machine],
        _reader(image, code),
        starts,
        slots,
        data,
        pointer,
        read_only=_reader(image, [s for s in sections if _is_read_only(s)]),
        function_names=function_names,
    )


def _is_read_only(section: Section) -> bool:
    """Data of ``__TEXT`` (``__cstring``, ``__const``): dyld writes nothing there, so the
    copies of an object file in two libraries hold the same bytes (pointers it rebinds or
    rebases lie in ``__DATA_CONST`` and ``__DATA``)."""
    return section.name.startswith("__TEXT,") and not section.is_code
