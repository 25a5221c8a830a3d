"""The biggest member of a big wheel, inflated from the start by a forked process.

Before any member is read, this process reads the central directory (``zipfile``), checks the
wheel's names and sizes and reads RECORD: work for one CPU (for torch's 12k members, a tenth of
the whole read) while the other CPUs wait. The biggest member's inflation is the longest single
piece of the read that follows (libtorch_cpu.so: 414 MB), so a child forked before all that
(the member found by ``central_directory``) inflates it meanwhile, into memory the workers
forked later share (``Handoff``), and hashes it. Its RECORD row is not read yet: the pool
checks the digest against it, and the CRC-32 against the central directory's (``checks_out``),
where a worker would have inflated the member. Anything else (the child failed, the row or the
CRC-32 disagrees, the row names another hash, ``zipfile`` places the member elsewhere) leaves
the member to a worker as if there had been no head start, so a broken member gets exactly the
finding it always did.

Only where workers are forked (Linux, several CPUs, no threads yet), for a member that the
bounds of ``check_sizes`` allow, that the pool would hand off (``pool.SPLIT_MIN_BYTES``, ELF or
Mach-O) and whose facts the fast decoder reads.
"""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Final, NamedTuple

from buildtool.linkage.binaries import Decoder
from buildtool.linkage.binaries.elf import Ranges
from buildtool.linkage.binaries.magic import binary_format
from buildtool.linkage.inputs import forked
from buildtool.linkage.inputs.central_directory import Directory, read_directory
from buildtool.linkage.inputs.decoding import Handoff, Source, SourceDecoder
from buildtool.linkage.inputs.forked import Forked
from buildtool.linkage.inputs.inflate import MemberSpan, peek_head
from buildtool.linkage.inputs.memory import keep_freed_memory, shared_memory
from buildtool.linkage.inputs.wheel_archive import (
    CheckedMember,
    WheelLimits,
    member_size_problem,
    record_digest,
)

ALGORITHM: Final = "sha256"
"""The hash the child computes: what RECORD uses in every wheel seen (others fall back)."""


class Inflated(NamedTuple):
    """What the child found: the member's size, digest (urlsafe base64 without padding, as
    RECORD writes it) and CRC-32, and the ranges a sparse read left out of the memory."""

    size: int
    digest: str
    crc: int
    left_out: Ranges

    def checks_out(self, member: CheckedMember) -> bool:
        """Whether the member's RECORD row holds exactly this, and its central directory this
        CRC-32 (else a worker reads it again, for the exact finding)."""
        entry = member.record
        if entry is None or entry.algorithm != ALGORITHM or entry.digest != self.digest:
            return False
        return (entry.size is None or entry.size == self.size) and self.crc == member.span.crc


class HeadStart:
    """A child inflating one member into ``handoff``'s memory. Not a value: it owns a process
    and memory, which ``end`` gives back (the memory unless ``take`` handed it on)."""

    def __init__(self, span: MemberSpan, handoff: Handoff, child: Forked[Inflated]) -> None:
        self.span = span
        """Where the member lies in the wheel, as the central directory says."""
        self.handoff = handoff
        self._child = child
        self._taken = False

    def take(self) -> Handoff:
        """The memory, now the caller's to close (or keep)."""
        self._taken = True
        return self.handoff

    def result(self) -> Inflated | None:
        """Wait for the child: what it inflated, or None when it failed."""
        return self._child.result()

    def end(self) -> None:
        """Stop the child if it still runs; free the memory unless it was taken."""
        self._child.end()
        if not self._taken:
            self.handoff.memory.close()


def candidate(wheel: Path, limits: WheelLimits, min_bytes: int) -> CheckedMember | None:
    """The member worth a head start: the biggest, within the bounds ``check_sizes`` sets, ELF
    or Mach-O by its first bytes, of ``min_bytes`` at least (what the pool hands off); found
    from the central directory before ``zipfile`` reads it, its RECORD row not read yet."""
    try:
        with (
            wheel.open("rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
        ):
            directory = read_directory(data)
            if directory is None or not _within_bounds(directory, limits, min_bytes):
                return None
            assert directory.biggest is not None
            span = MemberSpan.of(directory.biggest)
            head = peek_head(data, span)
    except (OSError, ValueError):
        return None  # the wheel is read again, and its problem reported, the usual way
    if binary_format(head) not in ("elf", "macho"):
        return None
    return CheckedMember(span.name, span, None)


def _within_bounds(directory: Directory, limits: WheelLimits, min_bytes: int) -> bool:
    """A member big enough, and nothing ``check_sizes`` will refuse."""
    biggest = directory.biggest
    if biggest is None or biggest.file_size < min_bytes:
        return False
    if directory.entries > limits.max_members:
        return False
    if member_size_problem(biggest, limits) is not None:
        return False
    return directory.total_bytes <= limits.max_total_bytes


def can_fork(jobs: int, decoder: Decoder) -> bool:
    """Whether a head start may be forked: as ``pool`` forks its workers."""
    return forked.can_fork(jobs) and decoder == "fast"


def start(wheel: Path, member: CheckedMember) -> HeadStart | None:
    """Fork the child inflating ``member`` (see ``candidate``); None when no memory or process
    can be had."""
    source = Source(str(wheel), member.name, member.span.file_size, member)
    try:
        handoff = Handoff(shared_memory(source.size), keep=False)
    except (OSError, MemoryError, OverflowError):
        return None
    child = Forked.start(lambda: _inflate(source, handoff), Inflated)
    if child is None:
        handoff.memory.close()
        return None
    return HeadStart(member.span, handoff, child)


def _inflate(source: Source, handoff: Handoff) -> Inflated:
    """The child's work: when it fails, nothing is sent, and a worker reads the member the
    usual way."""
    keep_freed_memory()
    reader = SourceDecoder()
    content, left_out = reader.inflate_unchecked(source, handoff, ALGORITHM)
    return Inflated(content.size, record_digest(content.digest), content.crc, left_out)
