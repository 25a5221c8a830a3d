"""Reading sources (files on disk, wheel members) in one process: each wheel mapped once, a
member inflated into a buffer the process reuses (or into memory it shares with the process
that forked it: ``Handoff``), the facts decoded from there; the members a read keeps for
reading again (``KEPT``). ``pool`` spreads this work over several processes.

Files on disk are mapped, and the pages of big tables are dropped from the process once decoded.
A big file's initializers are walked as it is read only when it is stripped, as a sparse read
leaves them: an unstripped one is paired by their names first (``InitializerLookup`` reads them
when a check needs them). Walking libtorch_cpu.so's 377 took longer than the rest of its reading.
A big ELF member goes into the buffer without its code (no fact comes from it), unless that
could change a fact; then it is read again whole. An extension module's init function is code a
fact comes from: a member named like a module is read whole at once.
"""

from __future__ import annotations

import dataclasses
import io
import mmap
import os
import traceback
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Final, Generic, NamedTuple, TypeVar

from buildtool.errors import InputError
from buildtool.linkage.binaries import BinaryFacts, Decoder, named_as_extension_module
from buildtool.linkage.binaries.elf import (
    ELF_MAGIC,
    MalformedElf,
    Ranges,
    SymtabPart,
    code_ranges,
    cut_ranges,
    left_out_unused,
    read_elf_facts,
    read_elf_facts_pyelftools,
    read_symtab_part,
    sparse_initializers,
    walks_module_init,
)
from buildtool.linkage.binaries.facts import MalformedBinary
from buildtool.linkage.binaries.magic import HEAD_BYTES, binary_format
from buildtool.linkage.binaries.read import read_other_format
from buildtool.linkage.inputs.memory import copy_outside, populate, private_memory

if TYPE_CHECKING:
    from buildtool.linkage.inputs.inflate import MemberContent
    from buildtool.linkage.inputs.wheel_archive import CheckedMember

SPARSE_MIN_BYTES: Final = 64 << 20
"""Wheel members at least this big are read without their code (see ``elf.code_ranges``): the
buffer of libtorch_cpu.so then holds 100 of its 434 MB."""

LATE_WALK_MIN_BYTES: Final = 64 << 20
"""Files at least this big have their initializers walked as they are read only when they are
stripped (as a sparse read leaves them); an unstripped one's are walked later if a check needs
them, as its initializers' names pair it first."""

KEEP_FRONT_BYTES: Final = 32 << 20
"""Bytes at the start of a member always kept: linkers put the dynamic symbol tables there,
often inside the executable segment."""


Outcome = BinaryFacts | MalformedBinary | None
"""One file's facts, the reason it is malformed, or None when no reader knows its format."""


# One per wheel member (tens of thousands): a NamedTuple is made in a third of the time a
# frozen dataclass takes.
class Source(NamedTuple):
    """Where one file's bytes are: a file on disk, or a member of a wheel."""

    path: str
    """The file on disk, or the wheel."""
    display: str
    """How findings name the file."""
    size: int
    """Bytes of the file (a member's uncompressed size): what its reading costs."""
    member: CheckedMember | None = None
    """The wheel member; None for a file on disk."""


class Handoff(NamedTuple):
    """Memory that this process and the worker inflating a big wheel member both map (made
    before the workers fork). The worker inflates the member and checks it against RECORD,
    then goes on with other members, while this process decodes it: sending its facts back
    (libtorch_cpu.so's 74k dynamic symbols) would cost the worker about what decoding them
    costs, and this process waits anyway. The workers run out of other members about when the
    hand-off is inflated, so they read what can be read apart from this memory meanwhile
    (``pool._handed_part``), which would otherwise be the longest part of the tail left to one CPU:
    an ELF member's ``.symtab``, in parts; a Mach-O member's initializers (the code walk). A
    Mach-O member's memory is also kept (``keep``) for the checks that read it again (its
    initializers walked deeper: ``KEPT``), rather than inflating it a second time."""

    memory: mmap.mmap
    keep: bool = False


KEPT: dict[tuple[str, str], tuple[mmap.mmap, int]] = {}
"""Wheel members whose inflated bytes this process keeps, by (wheel, member): (memory, size).
Readers take them from here rather than inflating them again; ``release_kept`` frees them."""


def release_kept() -> None:
    """Free the wheel members kept for reading again (see ``KEPT``)."""
    while KEPT:
        KEPT.popitem()[1][0].close()


class SourceDecoder:
    """Opens sources in one process: each wheel mapped once, one growing buffer for its members.
    ``registration_names``: the names the facts search for (a sparse read must keep the data
    sections then); ``decoder``: what decodes the facts; ``whole``: never a sparse read;
    ``again``: the members were checked against RECORD by an earlier read
    (``wheel_archive.read_member_again``)."""

    def __init__(
        self,
        registration_names: Collection[str] = (),
        decoder: Decoder = "fast",
        whole: bool = False,
        again: bool = False,
    ) -> None:
        self._names = registration_names
        self._whole = whole
        self._again = again
        self.decoder: Decoder = decoder
        self._wheels: dict[str, mmap.mmap] = {}
        self._buffer: mmap.mmap | None = None
        self._plain_member: Callable[[mmap.mmap, CheckedMember], bool] | None = None
        """``wheel_archive.plain_member``, imported at the first wheel member: an import
        statement costs 2 µs, once per member of tens of thousands."""

    def close(self) -> None:
        for mapping in self._wheels.values():
            mapping.close()
        self._wheels.clear()
        if self._buffer is not None:
            self._buffer.close()
            self._buffer = None

    def decode(
        self,
        source: Source,
        decode: Callable[[SourceBytes], _T],
        into: Handoff | None = None,
    ) -> _T | None:
        """``decode`` over the source's bytes; None when the file is not ELF. ``into``: a wheel
        member is inflated there, for another process to read too (``Handoff``)."""
        if source.member is None:
            return self._decode_file(source, decode)
        kept = KEPT.get((source.path, source.member.name)) if KEPT else None
        if kept is not None:  # inflated and checked against RECORD by this read already
            return _released_on_failure(decode, SourceBytes(kept[0], kept[1], file_backed=False))
        if into is None and self.plain(source):
            return None  # no binary, and it checks out against RECORD: read the short way
        # a big member is read without its code first; when a fact may come from what was
        # left out (or the file looks corrupt), it is read again whole
        read = self._inflate(source, source.member, sparse=self._sparse(source), into=into)
        if read is None:
            return None
        return self.decode_inflated(source, decode, read, into=into)

    def plain(self, source: Source) -> bool:
        """Whether ``source`` is a wheel member that is small, no binary, and checks out against
        RECORD (``wheel_archive.plain_member``): nothing to decode. Most of a wheel's tens of
        thousands of members (headers, sources, data files)."""
        member = source.member
        if member is None or (KEPT and (source.path, member.name) in KEPT):
            return False
        if self._plain_member is None:
            from buildtool.linkage.inputs.wheel_archive import plain_member

            self._plain_member = plain_member
        return self._plain_member(self._wheel(source.path), member)

    def _decode_file(self, source: Source, decode: Callable[[SourceBytes], _T]) -> _T | None:
        try:
            with Path(source.path).open("rb") as handle:
                if binary_format(handle.read(HEAD_BYTES)) is None:
                    return None
                size = os.fstat(handle.fileno()).st_size
                with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as mapped:
                    return _released_on_failure(decode, SourceBytes(mapped, size, file_backed=True))
        except OSError as error:
            raise InputError(f"{source.display}: cannot read: {error.strerror or error}") from None

    def _sparse(self, source: Source) -> bool:
        """Whether to read the source without its code. Not pyelftools: which bytes no fact
        comes from is the fast decoder's knowledge. Not a member named like an extension
        module: its init function is code a fact comes from (``module_init``), and a module
        found only once inflated is inflated again whole (``_walks_left_out_code``)."""
        if self.decoder != "fast" or self._whole or source.size < SPARSE_MIN_BYTES:
            return False
        return source.member is None or not named_as_extension_module(source.member.name)

    def inflate_only(self, source: Source, into: Handoff) -> Ranges | None:
        """Inflate a wheel member into ``into`` (checked against RECORD) for another process to
        decode (``decode_inflated``): the ranges left out, or None when it is not ELF."""
        assert source.member is not None
        read = self._inflate(source, source.member, sparse=self._sparse(source), into=into)
        return None if read is None else read[1]

    def decode_inflated(
        self,
        source: Source,
        decode: Callable[[SourceBytes], _T],
        read: tuple[SourceBytes, Ranges],
        *,
        into: Handoff | None = None,
    ) -> _T:
        """``decode`` over a member's inflated bytes (``read``: them and the ranges left out):
        read again whole when a fact may come from what was left out."""
        raw, left_out = read
        if left_out:
            try:
                result: _T | None = _released_on_failure(decode, raw)
            except MalformedBinary:
                result = None
            if (
                result is not None
                and not isinstance(result, MalformedBinary)
                and not _walks_left_out_code(result)
                and left_out_unused(raw.data, raw.size, left_out, self._names)
            ):
                return _initializers_checked(result, raw, left_out)
            assert source.member is not None
            again = self._inflate(source, source.member, sparse=False, into=into)
            assert again is not None  # the same bytes: still ELF
            raw = again[0]
        return _released_on_failure(decode, raw)

    def _inflate(
        self, source: Source, member: CheckedMember, sparse: bool, into: Handoff | None = None
    ) -> tuple[SourceBytes, Ranges] | None:
        """Inflate the member (checked: ``read_member``, or ``read_member_again``); an ELF
        member's bytes go to the buffer, taken only once the member shows it is ELF, less its
        code when ``sparse``. None when it is not ELF."""
        from buildtool.linkage.inputs.wheel_archive import read_member, read_member_again

        mapping = self._wheel(source.path)
        read = read_member_again if self._again else read_member
        filled = self._fill(
            source, sparse, into, lambda sink: read(source.path, mapping, member, sink)
        )
        head, size = filled.read
        if binary_format(head) is None or filled.target is None:
            return None
        target, left_out = filled.target, filled.left_out
        return SourceBytes(target, size, file_backed=False, code_left_out=bool(left_out)), left_out

    def inflate_unchecked(
        self, source: Source, into: Handoff, algorithm: str
    ) -> tuple[MemberContent, Ranges]:
        """Inflate a wheel member into ``into`` as ``inflate_only`` does, hashed with
        ``algorithm`` but not checked: for a member whose RECORD row is not read yet
        (``head_start``). Its content (head, size, digest) and the ranges left out."""
        from buildtool.linkage.inputs.inflate import read_span

        assert source.member is not None
        span, mapping = source.member.span, self._wheel(source.path)
        filled = self._fill(
            source,
            self._sparse(source),
            into,
            lambda sink: read_span(mapping, span, algorithm, sink),
        )
        return filled.read, filled.left_out

    def _fill(
        self,
        source: Source,
        sparse: bool,
        into: Handoff | None,
        read: Callable[[Callable[[bytes], None]], _R],
    ) -> _Filled[_R]:
        """``read`` a member chunk by chunk into the buffer (or ``into``), taken once the first
        chunk shows whether it is ELF, less its code when ``sparse``."""
        target: mmap.mmap | None = None
        view: memoryview | None = None
        left_out: Ranges = ()
        filled = 0

        def sink(chunk: bytes) -> None:  # never past file_size: read_span checks
            nonlocal target, view, left_out, filled
            if view is None:  # the first chunk: the ELF header and the program headers
                sparse_elf = sparse and chunk[: len(ELF_MAGIC)] == ELF_MAGIC
                left_out = code_ranges(chunk, source.size, KEEP_FRONT_BYTES) if sparse_elf else ()
                target = self._buffer_for(source, source.size, left_out, into)
                view = memoryview(target)
            copy_outside(view, filled, chunk, left_out)
            filled += len(chunk)

        try:
            result = read(sink)
        finally:
            if view is not None:
                view.release()
        return _Filled(result, target, left_out)

    def _wheel(self, path: str) -> mmap.mmap:
        mapping = self._wheels.get(path)
        if mapping is None:
            from buildtool.linkage.inputs.wheel_archive import map_wheel

            mapping = self._wheels[path] = map_wheel(Path(path))
        return mapping

    def _buffer_for(
        self, source: Source, size: int, left_out: Ranges, into: Handoff | None = None
    ) -> mmap.mmap:
        """The reused buffer, at least ``size`` bytes (or ``into``'s shared memory); its pages
        outside ``left_out`` are about to be written."""
        if into is not None:
            populate(into.memory, cut_ranges(((0, size),), left_out))
            return into.memory
        if self._buffer is None or len(self._buffer) < size:
            if self._buffer is not None:
                self._buffer.close()
                self._buffer = None
            try:
                self._buffer = private_memory(max(size, mmap.PAGESIZE), populate=not left_out)
            except (OSError, MemoryError, OverflowError) as error:
                problem = f"no memory for its {size} bytes: {error}"
                raise InputError(f"{source.display}: {problem}") from None
            if left_out:
                populate(self._buffer, cut_ranges(((0, size),), left_out))
        return self._buffer


def _released_on_failure(decode: Callable[[SourceBytes], _T], raw: SourceBytes) -> _T:
    """``decode(raw)``; when it raises, the frames it leaves in the error's traceback are
    cleared first: they hold views of ``raw``'s map, and closing a map with views alive raises
    BufferError in place of the error (and leaves the map, or the reused buffer, pinned)."""
    try:
        return decode(raw)
    except BaseException as error:
        failure: BaseException | None = error
        while failure is not None:  # the errors it was raised during hold frames too
            traceback.clear_frames(failure.__traceback__)
            failure = failure.__context__
        raise


def _walks_left_out_code(result: object) -> bool:
    """Whether a whole read would walk code for a fact that nothing reads again later: an
    extension module's init function (``BinaryFacts.module_init``, the pybind11 type records
    BT127 compares). A big module is then read again whole; initializers are read again only
    when a check needs them (``_initializers_checked``)."""
    return isinstance(result, BinaryFacts) and walks_module_init(
        result.file_type, result.soname, result.defined
    )


def _initializers_checked(result: _T, raw: SourceBytes, left_out: Ranges) -> _T:
    """A sparse read's facts (initializers unread) with their initializers read when the walk
    needs none of the bytes left out, for a stripped shared library (pairs of others are found
    by names first; the checks read no program's); unread (None) otherwise:
    ``InitializerLookup`` reads them again when a check needs them."""
    facts = result if isinstance(result, BinaryFacts) else None
    if facts is None or facts.initializers is not None or facts.has_symtab:
        return result  # an unstripped file's initializer names pair it first: read when needed
    found = sparse_initializers(raw.data, raw.size, left_out)
    return result if found is None else dataclasses.replace(facts, initializers=found)


_T = TypeVar("_T")
_R = TypeVar("_R")


@dataclasses.dataclass(frozen=True)
class _Filled(Generic[_R]):
    """What reading a member into memory gave: ``read``'s result, the memory (None when the
    member had no bytes), and the ranges left out of it."""

    read: _R
    target: mmap.mmap | None
    left_out: Ranges


@dataclasses.dataclass(frozen=True)
class SourceBytes:
    """A file's bytes: the first ``size`` bytes of ``data``."""

    data: mmap.mmap
    size: int
    file_backed: bool
    code_left_out: bool = False
    """A sparse read: the code is not in ``data``, so the facts leave the initializers unread."""


def read_outcome(
    reader: SourceDecoder,
    source: Source,
    names: Collection[str],
    symtab: bool,
    into: Handoff | None = None,
) -> Outcome:
    return reader.decode(source, facts_decoder(reader, source, names, symtab), into)


def facts_decoder(
    reader: SourceDecoder, source: Source, names: Collection[str], symtab: bool, code: bool = True
) -> Callable[[SourceBytes], Outcome]:
    """What reads a source's facts from its bytes (``SourceDecoder.decode``); ``code=False``:
    a Mach-O library's initializers are left unread, for a worker to walk."""

    def decode(raw: SourceBytes) -> Outcome:
        try:
            if raw.data[: len(ELF_MAGIC)] != ELF_MAGIC:
                return read_other_format(
                    raw.data,
                    source.display,
                    names,
                    size=raw.size,
                    decoder=reader.decoder,
                    read_code=code,
                )
            if reader.decoder == "pyelftools":
                stream = io.BytesIO(raw.data[: raw.size])
                return read_elf_facts_pyelftools(stream, source.display, names)
            return read_elf_facts(
                raw.data,
                source.display,
                names,
                size=raw.size,
                file_backed=raw.file_backed,
                read_symtab=symtab,
                read_code=not raw.code_left_out,
                stripped_walk_only=raw.size >= LATE_WALK_MIN_BYTES,
            )
        except MalformedBinary as error:
            return error.with_traceback(None)  # its frames would keep views of the bytes

    return decode


def source_symtab_part(
    reader: SourceDecoder, source: Source, part: int, parts: int
) -> SymtabPart | MalformedElf:
    def decode(raw: SourceBytes) -> SymtabPart | MalformedElf:
        try:
            return read_symtab_part(
                raw.data, source.display, part, parts, size=raw.size, file_backed=raw.file_backed
            )
        except MalformedElf as error:
            return error.with_traceback(None)

    return reader.decode(source, decode) or MalformedElf(source.display, 0, "not ELF")


def read_source(source: Source, names: Collection[str], decoder: Decoder = "fast") -> Outcome:
    """One file's facts, read in this process."""
    reader = SourceDecoder(names, decoder)
    try:
        return read_outcome(reader, source, names, True)
    finally:
        reader.close()
