"""A Mach-O section as the decoder reads it and the initializers' view walks it: the one
structure both know, apart from either."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

S_ATTR_CODE: Final = 0x80000000 | 0x400
"""S_ATTR_PURE_INSTRUCTIONS | S_ATTR_SOME_INSTRUCTIONS."""


@dataclass(frozen=True)
class Section:
    """One section of a segment (``__TEXT,__text``)."""

    name: str
    index: int
    """1-based over the whole file, as ``n_sect`` counts."""
    size: int
    offset: int
    flags: int
    address: int = 0
    reserved1: int = 0
    """For symbol pointers and stubs: their first entry's index in the indirect symbol table."""
    reserved2: int = 0
    """For stubs: the size of one stub."""

    @property
    def is_code(self) -> bool:
        return bool(self.flags & S_ATTR_CODE)
