"""Symbol tables a column at a time: 0/1 byte masks made with ``bytes.translate`` and combined
as integers, and the columns ``dynsym`` and ``symtab`` both read (st_name, st_shndx)."""

from __future__ import annotations

from array import array
from typing import Final

from buildtool.linkage.binaries.elf.constants import _SHN_ABS, _STB_GNU_UNIQUE, _STB_WEAK
from buildtool.linkage.binaries.elf.decoder import _NATIVE_LITTLE, _Image

_LIVE_MASK: Final = bytes(int(info >= 0x10) for info in range(256))  # not STB_LOCAL
_ZERO_MASK: Final = bytes(int(value == 0) for value in range(256))


def _bind_mask(bind: int) -> bytes:
    return bytes(int(info >> 4 == bind) for info in range(256))


_WEAK_MASK, _UNIQUE_MASK = _bind_mask(_STB_WEAK), _bind_mask(_STB_GNU_UNIQUE)
_EXPORTED_MASK: Final = bytes(int(other & 3 == 0) for other in range(256))  # default visibility


def _mask_and(*masks: bytes) -> bytes:
    """Byte-wise AND of 0/1 masks of one length."""
    value = int.from_bytes(masks[0], "little")
    for mask in masks[1:]:
        value &= int.from_bytes(mask, "little")
    return value.to_bytes(len(masks[0]), "little")


def _mask_not(mask: bytes) -> bytes:
    return mask.translate(_ZERO_MASK)


def _shndx_bytes(img: _Image, raw: memoryview) -> tuple[bytes, bytes]:
    """The low and the high byte of each row's st_shndx."""
    entry = img.layout.sym_size
    at = 6 if img.layout.elf_class == 64 else 14
    first, second = raw[at::entry].tobytes(), raw[at + 1 :: entry].tobytes()
    return (first, second) if img.layout.endian == "<" else (second, first)


def _undefined_mask(low: bytes, high: bytes) -> bytes:
    """1 where st_shndx is SHN_UNDEF."""
    return _mask_and(low.translate(_ZERO_MASK), high.translate(_ZERO_MASK))


def _shndx_masks(img: _Image, raw: memoryview) -> tuple[bytes, bytes]:
    low, high = _shndx_bytes(img, raw)
    absolute = _mask_and(low.translate(_ABS_LOW_MASK), high.translate(_ABS_HIGH_MASK))
    return _undefined_mask(low, high), absolute


def _equal_mask(byte: int) -> bytes:
    return bytes(int(value == byte) for value in range(256))


_ABS_LOW_MASK, _ABS_HIGH_MASK = _equal_mask(_SHN_ABS & 0xFF), _equal_mask(_SHN_ABS >> 8)


def _name_column(img: _Image, raw: memoryview) -> list[int]:
    names = raw.cast("I")[:: img.layout.sym_size // 4].tolist()
    if (img.layout.endian == "<") == _NATIVE_LITTLE:
        return names
    swapped = array("I", names)
    swapped.byteswap()
    return swapped.tolist()
