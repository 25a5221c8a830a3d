"""Find DT_NEEDED libraries the way glibc's ld.so does, over any source of ELF facts.

For a NEEDED name without ``/`` requested by object X (glibc ``elf/dl-load.c``, ``_dl_map_object``):

1. ``DT_RPATH`` of X, then of the object that loaded X, and so on up to the root (the
   executable), but only when X has no ``DT_RUNPATH``; an object that has both has its
   ``DT_RPATH`` ignored altogether;
2. ``LD_LIBRARY_PATH``, only when the caller passes one;
3. ``DT_RUNPATH`` of X (X's own direct needs only, never inherited);
4. ``/etc/ld.so.cache``;
5. the default directories.

With ``DF_1_NODEFLIB`` on X, steps 4 and 5 skip the default directories. ``$ORIGIN`` is the
directory of the object whose RPATH/RUNPATH it is; ``$LIB`` and ``$PLATFORM`` are best effort.
An empty entry means the current directory, as in ld.so, and is kept as ``.``. A NEEDED name with
a ``/`` is a path. Before searching, a name matches an already loaded object by the names it was
requested as or by its SONAME; candidates of another class, byte order or machine are skipped.
The closure is breadth-first, in ld.so's load order. Files are told apart by path only (ld.so also
compares device and inode, so two symlinked paths to one file count twice here).

All functions are pure except ``load_ld_so_cache`` and ``filesystem_lookup``, which read files.
"""

from __future__ import annotations

import posixpath
import re
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from buildtool.linkage.binaries import BinaryFacts

LD_SO_CACHE: Final = "\0ld.so.cache"
"""Marks the cache's place in a search order; no ELF string holds a NUL, so no directory is it."""

FactsLookup = Callable[[str], "BinaryFacts | None"]
"""Path -> facts; None when nothing (or nothing ELF) is there. Wheels map members to paths."""

_TRIPLETS: Final = {
    ("x86_64", 64): "x86_64-linux-gnu",
    ("x86_64", 32): "x86_64-linux-gnux32",
    ("i386", 32): "i386-linux-gnu",
    ("aarch64", 64): "aarch64-linux-gnu",
    ("arm", 32): "arm-linux-gnueabihf",
    ("ppc64", 64): "powerpc64le-linux-gnu",
    ("ppc", 32): "powerpc-linux-gnu",
    ("s390x", 64): "s390x-linux-gnu",
    ("riscv", 64): "riscv64-linux-gnu",
    ("loongarch", 64): "loongarch64-linux-gnu",
}
_LIB64_MACHINES: Final = frozenset({"x86_64", "aarch64", "ppc64", "s390x", "riscv", "loongarch"})
_PLATFORMS: Final = {"i386": "i686"}

# ldconfig's entry flags (glibc sysdeps/generic/ldconfig.h): FLAG_ELF_LIBC6 plus an ABI marker
_CACHE_FLAGS: Final = {
    ("x86_64", 64): frozenset({0x0303}),
    ("x86_64", 32): frozenset({0x0803}),
    ("i386", 32): frozenset({0x0003}),
    ("aarch64", 64): frozenset({0x0A03}),
    ("arm", 32): frozenset({0x0903, 0x0B03}),
    ("ppc64", 64): frozenset({0x0503}),
    ("ppc", 32): frozenset({0x0003}),
    ("s390x", 64): frozenset({0x0403}),
    ("s390", 32): frozenset({0x0003}),
    ("riscv", 64): frozenset({0x0F03, 0x1003}),
    ("loongarch", 64): frozenset({0x1103, 0x1203}),
}
_FLAG_ELF_LIBC6: Final = 0x0003
_DST = re.compile(r"\$(?:\{(ORIGIN|LIB|PLATFORM)\}|(ORIGIN|LIB|PLATFORM)(?![A-Za-z0-9_]))")


# --- search order ---------------------------------------------------------------------------


def default_system_dirs(elf_class: int, machine: str) -> tuple[str, ...]:
    """ld.so's built-in directories, best effort: multiarch (Debian), lib64 (Fedora), lib."""
    dirs: list[str] = []
    triplet = _TRIPLETS.get((machine, elf_class))
    if triplet:
        dirs += [f"/lib/{triplet}", f"/usr/lib/{triplet}"]
    if elf_class == 64 and machine in _LIB64_MACHINES:
        dirs += ["/lib64", "/usr/lib64"]
    return (*dirs, "/lib", "/usr/lib")


def expand_dst(entry: str, origin_dir: str, lib: str = "lib", platform: str = "") -> str:
    """Expand ``$ORIGIN``/``${ORIGIN}``, ``$LIB`` and ``$PLATFORM`` in one path entry."""
    values = {"ORIGIN": origin_dir, "LIB": lib, "PLATFORM": platform}
    return _DST.sub(lambda m: values[m.group(1) or m.group(2)], entry)


NeededPath = Literal["absolute", "relative"]


def needed_path(name: str) -> NeededPath | None:
    """How ld.so opens a DT_NEEDED entry holding a "/": as that very path, never searched for;
    absolute, or relative to the process's working directory (a ``$LIB`` at its start expands
    to a relative folder too). None for a name it searches for, and for a path from the file's
    own folder (``$ORIGIN``), which goes where the file goes."""
    if "/" not in name or name.startswith(("$ORIGIN/", "${ORIGIN}/")):
        return None
    return "absolute" if name.startswith("/") else "relative"


def _lib_token(facts: BinaryFacts) -> str:
    triplet = _TRIPLETS.get((facts.machine, facts.elf_class))
    if triplet:
        return f"lib/{triplet}"
    return "lib64" if facts.elf_class == 64 and facts.machine in _LIB64_MACHINES else "lib"


def expand_entries(entries: Sequence[str], facts: BinaryFacts, origin_dir: str) -> tuple[str, ...]:
    """One RPATH/RUNPATH list of ``facts`` expanded; "" becomes "." (the current directory)."""
    platform = _PLATFORMS.get(facts.machine, facts.machine)
    expanded = (expand_dst(e, origin_dir, _lib_token(facts), platform) for e in entries)
    return tuple(_clean_dir(e) for e in expanded)


def _clean_dir(entry: str) -> str:
    return posixpath.normpath(entry) if entry else "."


def effective_rpath(facts: BinaryFacts, origin_dir: str) -> tuple[str, ...]:
    """The DT_RPATH ld.so uses for ``facts``: none at all when it also has a DT_RUNPATH."""
    if facts.runpath is not None or facts.rpath is None:
        return ()
    return expand_entries(facts.rpath, facts, origin_dir)


def search_steps(
    facts: BinaryFacts,
    origin_dir: str,
    loader_chain_rpaths: Sequence[Sequence[str]] = (),
    ld_library_path: Sequence[str] | None = None,
    system_dirs: Sequence[str] = (),
) -> tuple[tuple[str, str], ...]:
    """``(step, directory)`` pairs in ld.so's order for the NEEDED entries of ``facts``.

    ``loader_chain_rpaths`` holds the expanded effective DT_RPATH (see effective_rpath) of the
    object that loaded this one, then of its loader, and so on up to the root. Steps are
    ``rpath``, ``ld_library_path``, ``runpath``, ``cache`` (directory ``LD_SO_CACHE``) and
    ``default``.
    """
    steps: list[tuple[str, str]] = []
    if facts.runpath is None:
        own = effective_rpath(facts, origin_dir)
        steps += [("rpath", d) for chain in (own, *loader_chain_rpaths) for d in chain]
    if ld_library_path is not None:
        steps += [("ld_library_path", _clean_dir(d)) for d in ld_library_path]
    if facts.runpath is not None:
        steps += [("runpath", d) for d in expand_entries(facts.runpath, facts, origin_dir)]
    steps.append(("cache", LD_SO_CACHE))
    if not facts.nodeflib:
        steps += [("default", d) for d in system_dirs]
    return tuple(_unique(steps))


def _unique(steps: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop repeated directories, as ld.so searches each one once per lookup."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for step in steps:
        if step[1] not in seen:
            seen.add(step[1])
            out.append(step)
    return out


def search_dirs(
    facts: BinaryFacts,
    origin_dir: str,
    loader_chain_rpaths: Sequence[Sequence[str]] = (),
    ld_library_path: Sequence[str] | None = None,
    system_dirs: Sequence[str] = (),
) -> tuple[str, ...]:
    """The directories of search_steps in order, with ``LD_SO_CACHE`` where the cache is asked."""
    steps = search_steps(facts, origin_dir, loader_chain_rpaths, ld_library_path, system_dirs)
    return tuple(directory for _step, directory in steps)


# --- /etc/ld.so.cache -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One line of ``ldconfig -p``."""

    soname: str
    path: str
    flags: int
    hwcap: int


@dataclass(frozen=True)
class LdSoCache:
    """The new-format (``glibc-ld.so.cache1.1``) cache: soname -> entries in file order."""

    entries: Mapping[str, tuple[CacheEntry, ...]] = field(default_factory=dict)

    def paths(self, soname: str, elf_class: int, machine: str) -> tuple[str, ...]:
        """Paths ld.so may use for ``soname`` in an object of this class and machine."""
        accepted = _CACHE_FLAGS.get((machine, elf_class))
        matching = [
            e
            for e in self.entries.get(soname, ())
            if (e.flags in accepted if accepted else e.flags & 0xFF == _FLAG_ELF_LIBC6)
        ]
        # entries for glibc-hwcaps subdirectories first need a CPU check; plain ones never do
        matching.sort(key=lambda e: e.hwcap != 0)
        return tuple(e.path for e in matching)


_NEW_MAGIC: Final = b"glibc-ld.so.cache1.1"
_OLD_MAGIC: Final = b"ld.so-1.7.0"
_NEW_HEADER_SIZE: Final = 48  # magic+version 20, nlibs, len_strings, flags+pad, extension, 12
_NEW_ENTRY_SIZE: Final = 24


def _new_format_start(data: bytes) -> int | None:
    if data.startswith(_NEW_MAGIC):
        return 0
    if not data.startswith(_OLD_MAGIC) or len(data) < 16:
        return None
    (nlibs,) = struct.unpack_from("<I", data, 12)
    start = (16 + 12 * nlibs + 7) & ~7  # the new table follows the old one, 8-byte aligned
    return start if data.startswith(_NEW_MAGIC, start) else None


def _cache_string(data: bytes, offset: int) -> str | None:
    end = data.find(b"\0", offset)
    if offset >= len(data) or end < 0:
        return None
    return data[offset:end].decode("utf-8", "surrogateescape")


def _cache_entry(data: bytes, base: int, row: tuple[int, int, int, int, int]) -> CacheEntry | None:
    flags, key, value, _osversion, hwcap = row
    soname, path = _cache_string(data, base + key), _cache_string(data, base + value)
    if soname is None or path is None:
        return None
    return CacheEntry(soname, path, flags, hwcap)


def parse_ld_so_cache(data: bytes) -> LdSoCache | None:
    """Decode a cache file; None when it is not a new-format cache or does not hold together."""
    base = _new_format_start(data)
    if base is None or len(data) < base + _NEW_HEADER_SIZE:
        return None
    # flags byte: 2 little endian, 3 big endian, 0 written before the flag existed (assume little)
    endian = ">" if data[base + 28] == 3 else "<"
    nlibs, _strings_len = struct.unpack_from(endian + "II", data, base + 20)
    first = base + _NEW_HEADER_SIZE
    if nlibs * _NEW_ENTRY_SIZE > len(data) - first:
        return None
    entries: dict[str, list[CacheEntry]] = {}
    raw = memoryview(data)[first : first + nlibs * _NEW_ENTRY_SIZE]
    for row in struct.iter_unpack(endian + "iIIIQ", raw):
        entry = _cache_entry(data, base, row)
        if entry is None:
            return None
        entries.setdefault(entry.soname, []).append(entry)
    return LdSoCache({name: tuple(found) for name, found in entries.items()})


def load_ld_so_cache(path: str = "/etc/ld.so.cache", limit: int = 64 << 20) -> LdSoCache:
    """The system cache, or an empty one when it is missing, unreadable or garbage."""
    try:
        with Path(path).open("rb") as stream:
            data = stream.read(limit)
    except OSError:
        return LdSoCache()
    return parse_ld_so_cache(data) or LdSoCache()
