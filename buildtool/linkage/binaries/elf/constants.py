"""ELF constants (elf.h): only the ones this package reads."""

from __future__ import annotations

from typing import Final

_ET_NAMES: Final = {1: "relocatable", 2: "executable", 4: "core"}
_ET_DYN: Final = 3
_PT_LOAD, _PT_DYNAMIC, _PT_INTERP = 1, 2, 3
_PT_GNU_STACK, _PT_GNU_RELRO = 0x6474E551, 0x6474E552
_PF_X: Final = 1
_PF_W: Final = 2
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_DYNAMIC, _SHT_NOBITS, _SHT_DYNSYM = 1, 2, 6, 8, 11
_SHT_INIT_ARRAY: Final = 14
_SHT_GNU_VERDEF, _SHT_GNU_VERNEED, _SHT_GNU_VERSYM = 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
_SHF_ALLOC, _SHF_EXECINSTR = 0x2, 0x4
_SHN_UNDEF, _SHN_ABS, _SHN_XINDEX = 0, 0xFFF1, 0xFFFF
_PN_XNUM: Final = 0xFFFF
_STB_WEAK, _STB_GNU_UNIQUE = 2, 10
_STT_OBJECT, _STT_FUNC, _STT_GNU_IFUNC = 1, 2, 10
_FUNC_INFOS: Final = frozenset(b << 4 | t for b in range(16) for t in (_STT_FUNC, _STT_GNU_IFUNC))
_VER_FLG_BASE: Final = 0x1
_VER_FLG_WEAK: Final = 0x2
"""A version need ld.so does not insist on: GNU ld marks it so when only weak references use
it."""
_DT_NULL, _DT_NEEDED, _DT_HASH, _DT_STRTAB, _DT_SYMTAB = 0, 1, 4, 5, 6
_DT_STRSZ, _DT_SONAME, _DT_RPATH, _DT_SYMBOLIC = 10, 14, 15, 16
_DT_TEXTREL, _DT_BIND_NOW = 22, 24
_DT_INIT_ARRAYSZ, _DT_RUNPATH, _DT_FLAGS = 27, 29, 30
_DT_GNU_HASH, _DT_VERSYM, _DT_FLAGS_1 = 0x6FFFFEF5, 0x6FFFFFF0, 0x6FFFFFFB
_DT_VERDEF, _DT_VERDEFNUM, _DT_VERNEED, _DT_VERNEEDNUM = (
    0x6FFFFFFC,
    0x6FFFFFFD,
    0x6FFFFFFE,
    0x6FFFFFFF,
)
_DF_SYMBOLIC, _DF_TEXTREL, _DF_BIND_NOW = 0x2, 0x4, 0x8
_DF_1_NOW, _DF_1_NODEFLIB, _DF_1_PIE = 0x1, 0x800, 0x08000000

_MACHINES: Final = {
    3: "i386",
    8: "mips",
    20: "ppc",
    21: "ppc64",
    22: "s390x",
    40: "arm",
    62: "x86_64",
    183: "aarch64",
    243: "riscv",
    258: "loongarch",
}
