"""Memory for wheel members' bytes: this process's own, or shared with the processes it forks,
faulted in at once where the system can, and filled less the ranges a sparse read leaves out."""

from __future__ import annotations

import mmap
import sys
from typing import Final

from buildtool.linkage.binaries.elf import Ranges, cut_ranges


def copy_outside(view: memoryview, position: int, chunk: bytes, left_out: Ranges) -> None:
    """Copy ``chunk`` to ``view`` at ``position``, less the parts in ``left_out``."""
    if not left_out:
        view[position : position + len(chunk)] = chunk
        return
    with memoryview(chunk) as source:
        for start, end in cut_ranges(((position, position + len(chunk)),), left_out):
            view[start:end] = source[start - position : end - position]


_MADV_POPULATE_WRITE: Final = getattr(mmap, "MADV_POPULATE_WRITE", None)
_LINUX_MADV_POPULATE_WRITE: Final = 23
"""Linux 5.14 and later; Python names it from 3.12 on."""


def populate(memory: mmap.mmap, ranges: Ranges) -> None:
    """Fault in the pages of ``ranges`` at once where the system can (see ``private_memory``)."""
    option = _MADV_POPULATE_WRITE
    if option is None and sys.platform.startswith("linux"):
        option = _LINUX_MADV_POPULATE_WRITE
    if option is None:
        return
    for start, end in ranges:
        first = start - start % mmap.PAGESIZE
        try:
            memory.madvise(option, first, end - first)
        except (OSError, ValueError):  # an older kernel: the pages come as written
            return


def private_memory(size: int, populate: bool) -> mmap.mmap:
    """Anonymous memory of this process. Private: the first write to a page costs less;
    ``populate``: every page is about to be written, so fault them all in at once where the
    system can: one call instead of a page fault per page (a quarter of a second for 434 MB)."""
    if not (hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS")):
        return mmap.mmap(-1, size)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    if populate:
        flags |= getattr(mmap, "MAP_POPULATE", 0)
    return mmap.mmap(-1, size, flags=flags)


def shared_memory(size: int) -> mmap.mmap:
    """Anonymous memory that forked processes share (pages taken as written)."""
    flags = getattr(mmap, "MAP_SHARED", 1) | getattr(mmap, "MAP_ANONYMOUS", 0x20)
    return mmap.mmap(-1, size, flags=flags)


M_TRIM_THRESHOLD: Final = -1
M_MMAP_THRESHOLD: Final = -3
"""glibc's ``mallopt`` parameters (malloc.h)."""

KEPT_CHUNK_BYTES: Final = 32 << 20
"""Allocations up to this big come from the heap (glibc's own ceiling for its sliding mmap
threshold)."""

KEPT_FREE_BYTES: Final = 128 << 20
"""Free memory the heap keeps at its top rather than giving it back."""


def keep_freed_memory() -> bool:
    """Have glibc's malloc keep what this process frees for its next allocations: for a
    process that inflates a big member in chunks (``inflate.OUTPUT_BYTES``), some of them
    waiting for the hashing thread. By default glibc gives the top of its heap back whenever
    more than twice its mmap threshold is free there, so the heap shrinks and grows again with
    the chunks in flight, and each growth faults its pages in again, zeroed. That happens when
    the CPUs are busy and the hashing thread falls behind: in a whole run on torch's wheel, the
    head start inflating libtorch_cpu.so took 23k page faults, 4k with this. Called in a forked
    child, which ends with its work: the process that forked it keeps glibc's own sliding
    thresholds. True when glibc took both values (musl's ``mallopt`` does nothing; other
    systems have none)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    mmap_taken = mallopt(M_MMAP_THRESHOLD, KEPT_CHUNK_BYTES)
    trim_taken = mallopt(M_TRIM_THRESHOLD, KEPT_FREE_BYTES)
    return bool(mmap_taken and trim_taken)
