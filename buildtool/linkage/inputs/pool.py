"""Reading the facts of many binaries (ELF, Mach-O, PE): each file once, on every CPU when the
input is big.

Files on disk are mapped, and the pages of big tables are dropped from the process once decoded.
Each process maps a wheel once and inflates its members one at a time (see ``inflate``); an ELF
member goes into a buffer that the process reuses, so a wheel never sits in memory whole, and a
big one goes there without its code (no fact comes from it), unless that could change a fact. Small
inputs are read in this process. Big ones go to a pool of forked worker processes, which inherit
the list of sources (tasks name them by position), largest work first, small files in batches;
the ``.symtab`` of a big file on disk (libtorch_cpu.so: half a million symbols) is split into
parts that the workers read at once, while this process reads the rest of that file; the biggest
wheel member is inflated by a worker into memory this process shares, and decoded here
(``_Handoff``). The results are the same whichever way a file was read: a file that a split read
finds corrupt is read again whole, for the exact finding.

The facts come from the fast decoder, or from pyelftools (``Decoder``: a slower cross-check that
shares no decoding with it); pyelftools reads every file whole, never in parts or without its code.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import logging
import mmap
import os
import sys
import threading
import traceback
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple, TypeVar

from buildtool.errors import InputError
from buildtool.linkage.binaries import BinaryFacts, Decoder, InitializerReach
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
    with_symtab,
)
from buildtool.linkage.binaries.facts import MalformedBinary
from buildtool.linkage.binaries.magic import HEAD_BYTES, binary_format
from buildtool.linkage.binaries.read import read_initializers_again, read_other_format
from buildtool.linkage.inputs.memory import copy_outside, populate, private_memory, shared_memory

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

    from buildtool.linkage.inputs.wheel_archive import CheckedMember

PARALLEL_MIN_BYTES: Final = 32 << 20
"""Inputs smaller than this are read in this process: a pool would cost more than it saves."""

SPLIT_MIN_BYTES: Final = 96 << 20
"""Files on disk at least this big have their ``.symtab`` read in parts by several processes."""

PART_BYTES: Final = 64 << 20
"""File bytes per ``.symtab`` part (at most ``MAX_PARTS`` parts)."""

MAX_PARTS: Final = 8


def part_count(size: int) -> int:
    """How many parts a big file's ``.symtab`` is read in: more than there are workers, as rows
    are not equally costly (libtorch_cpu.so's first half takes three times as long as its
    second), and parts handed out one at a time keep every worker busy to the end."""
    return min(MAX_PARTS, max(2, size // PART_BYTES))


SPARSE_MIN_BYTES: Final = 64 << 20
"""Wheel members at least this big are read without their code (see ``elf.code_ranges``): the
buffer of libtorch_cpu.so then holds 100 of its 434 MB."""

KEEP_FRONT_BYTES: Final = 32 << 20
"""Bytes at the start of a member always kept: linkers put the dynamic symbol tables there,
often inside the executable segment."""

BATCH_BYTES: Final = 8 << 20
"""Small files go to a worker together, up to this many bytes (or ``BATCH_FILES`` files)."""

BATCH_FILES: Final = 256

log = logging.getLogger("buildtool")

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


def available_cpus() -> int:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# --- one process's reading --------------------------------------------------------------------


class SourceDecoder:
    """Opens sources in one process: each wheel mapped once, one growing buffer for its members.
    ``registration_names``: the names the facts search for (a sparse read must keep the data
    sections then); ``decoder``: what decodes the facts; ``whole``: never a sparse read."""

    def __init__(
        self,
        registration_names: Collection[str] = (),
        decoder: Decoder = "fast",
        whole: bool = False,
    ) -> None:
        self._names = registration_names
        self._whole = whole
        self.decoder: Decoder = decoder
        self._wheels: dict[str, mmap.mmap] = {}
        self._buffer: mmap.mmap | None = None

    def close(self) -> None:
        for mapping in self._wheels.values():
            mapping.close()
        self._wheels.clear()
        if self._buffer is not None:
            self._buffer.close()
            self._buffer = None

    def decode(
        self, source: Source, decode: Callable[[_Bytes], _T], into: _Handoff | None = None
    ) -> _T | None:
        """``decode`` over the source's bytes; None when the file is not ELF. ``into``: a wheel
        member is inflated there, for another process to read too (``_Handoff``)."""
        if source.member is None:
            return self._decode_file(source, decode)
        kept = _KEPT.get((source.path, source.member.name))
        if kept is not None:  # inflated and checked against RECORD by this read already
            return _released_on_failure(decode, _Bytes(kept[0], kept[1], file_backed=False))
        return self._decode_member(source, source.member, decode, into)

    def _decode_file(self, source: Source, decode: Callable[[_Bytes], _T]) -> _T | None:
        try:
            with Path(source.path).open("rb") as handle:
                if binary_format(handle.read(HEAD_BYTES)) is None:
                    return None
                size = os.fstat(handle.fileno()).st_size
                with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as mapped:
                    return _released_on_failure(decode, _Bytes(mapped, size, file_backed=True))
        except OSError as error:
            raise InputError(f"{source.display}: cannot read: {error.strerror or error}") from None

    def _decode_member(
        self,
        source: Source,
        member: CheckedMember,
        decode: Callable[[_Bytes], _T],
        into: _Handoff | None = None,
    ) -> _T | None:
        """A big member is read without its code first; when a fact may come from what was
        left out (or the file looks corrupt), it is read again whole."""
        read = self._inflate(source, member, sparse=self._sparse(source), into=into)
        if read is None:
            return None
        return self.decode_inflated(source, decode, read, into=into)

    def _sparse(self, source: Source) -> bool:
        # which bytes no fact comes from is the fast decoder's knowledge: pyelftools reads all
        return self.decoder == "fast" and not self._whole and source.size >= SPARSE_MIN_BYTES

    def inflate_only(self, source: Source, into: _Handoff) -> Ranges | None:
        """Inflate a wheel member into ``into`` (checked against RECORD) for another process to
        decode (``decode_inflated``): the ranges left out, or None when it is not ELF."""
        assert source.member is not None
        read = self._inflate(source, source.member, sparse=self._sparse(source), into=into)
        return None if read is None else read[1]

    def decode_inflated(
        self,
        source: Source,
        decode: Callable[[_Bytes], _T],
        read: tuple[_Bytes, Ranges],
        *,
        into: _Handoff | None = None,
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
                and left_out_unused(raw.data, raw.size, left_out, self._names)
            ):
                return _initializers_checked(result, raw, left_out)
            assert source.member is not None
            again = self._inflate(source, source.member, sparse=False, into=into)
            assert again is not None  # the same bytes: still ELF
            raw = again[0]
        return _released_on_failure(decode, raw)

    def _inflate(
        self, source: Source, member: CheckedMember, sparse: bool, into: _Handoff | None = None
    ) -> tuple[_Bytes, Ranges] | None:
        """Inflate the member (hashed and checked against RECORD); an ELF member's bytes go to
        the buffer, taken only once the member shows it is ELF, less its code when ``sparse``.
        None when it is not ELF."""
        from buildtool.linkage.inputs.wheel_archive import read_member

        mapping = self._wheel(source.path)
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
            head, size = read_member(source.path, mapping, member, sink)
        finally:
            if view is not None:
                view.release()
        if binary_format(head) is None or target is None:
            return None
        return _Bytes(target, size, file_backed=False, code_left_out=bool(left_out)), left_out

    def _wheel(self, path: str) -> mmap.mmap:
        mapping = self._wheels.get(path)
        if mapping is None:
            from buildtool.linkage.inputs.wheel_archive import map_wheel

            mapping = self._wheels[path] = map_wheel(Path(path))
        return mapping

    def _buffer_for(
        self, source: Source, size: int, left_out: Ranges, into: _Handoff | None = None
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


def _released_on_failure(decode: Callable[[_Bytes], _T], raw: _Bytes) -> _T:
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


def _initializers_checked(result: _T, raw: _Bytes, left_out: Ranges) -> _T:
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


@dataclasses.dataclass(frozen=True)
class _Bytes:
    """A file's bytes: the first ``size`` bytes of ``data``."""

    data: mmap.mmap
    size: int
    file_backed: bool
    code_left_out: bool = False
    """A sparse read: the code is not in ``data``, so the facts leave the initializers unread."""


def _outcome(
    reader: SourceDecoder,
    source: Source,
    names: Collection[str],
    symtab: bool,
    into: _Handoff | None = None,
) -> Outcome:
    return reader.decode(source, _facts_decoder(reader, source, names, symtab), into)


def _facts_decoder(
    reader: SourceDecoder, source: Source, names: Collection[str], symtab: bool, code: bool = True
) -> Callable[[_Bytes], Outcome]:
    """What reads a source's facts from its bytes (``SourceDecoder.decode``); ``code=False``:
    a Mach-O library's initializers are left unread, for a worker to walk."""

    def decode(raw: _Bytes) -> Outcome:
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
            )
        except MalformedBinary as error:
            return error.with_traceback(None)  # its frames would keep views of the bytes

    return decode


def _part(
    reader: SourceDecoder, source: Source, part: int, parts: int
) -> SymtabPart | MalformedElf:
    def decode(raw: _Bytes) -> SymtabPart | MalformedElf:
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
        return _outcome(reader, source, names, True)
    finally:
        reader.close()


# --- planning and running the work ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Task:
    """Work for one process: whole files, the rest of a big file, or a part of its ``.symtab``."""

    sources: tuple[int, ...]
    """Positions in the list of sources."""
    cost: int
    """Bytes to read: big work is handed out first."""
    part: int | None = None
    """None: read the files (without ``.symtab`` when ``parts`` > 1); else this part."""
    parts: int = 1
    handoff: bool = False
    """A wheel member read into memory this process shares with the worker inflating it
    (``_Handoff``); with ``part``, a part of its ``.symtab`` read from that memory."""


def _batch_tasks(
    sources: Sequence[Source], split: bool = True, handoff: int | None = None
) -> list[_Task]:
    """``split``: big files on disk have their ``.symtab`` read in parts. ``handoff``: the
    position of the wheel member handed off (``_Handoff``)."""
    tasks: list[_Task] = []
    batch: list[int] = []
    batch_bytes = 0
    for index, source in enumerate(sources):
        if index == handoff:
            tasks.append(_Task((index,), source.size, handoff=True))
        elif split and source.member is None and source.size >= SPLIT_MIN_BYTES:
            parts = part_count(source.size)
            share = source.size // (parts + 1)
            tasks.append(_Task((index,), share, None, parts))
            tasks += [_Task((index,), share, part, parts) for part in range(parts)]
        elif source.size >= BATCH_BYTES:
            tasks.append(_Task((index,), source.size))
        else:
            batch.append(index)
            batch_bytes += source.size
            if batch_bytes >= BATCH_BYTES or len(batch) >= BATCH_FILES:
                tasks.append(_Task(tuple(batch), batch_bytes))
                batch, batch_bytes = [], 0
    if batch:
        tasks.append(_Task(tuple(batch), batch_bytes))
    return sorted(tasks, key=lambda task: -task.cost)


@dataclasses.dataclass(frozen=True)
class _Failed:
    """A source that could not be read at all (an unreadable file, a wheel member that fails
    its checks): the error is raised for the first such source, as a serial read would."""

    error: InputError


class _Inflated(NamedTuple):
    """A hand-off inflated by a worker and checked against RECORD, for this process to decode
    (``_read_handed``)."""

    left_out: Ranges
    """The ranges of the member a sparse read left out of the memory."""


class _HandedInitializers(NamedTuple):
    """The initializers of a Mach-O hand-off, walked by a worker (``_handed_part``)."""

    initializers: tuple[InitializerReach, ...]


_Part = SymtabPart | _HandedInitializers | MalformedBinary
"""What a worker reads of a file that another process decodes the rest of."""
_TaskResult = list[Outcome | _Failed] | _Part | _Failed
_WorkerResult = _TaskResult | _Inflated
"""What a worker sends back: an ``_Inflated`` hand-off becomes a ``_TaskResult`` here."""


@dataclasses.dataclass(frozen=True)
class _Worker:
    """A worker process's state: what its tasks refer to, and its reader."""

    sources: Sequence[Source]
    names: tuple[str, ...]
    reader: SourceDecoder


class _Handoff(NamedTuple):
    """Memory that this process and the worker inflating a big wheel member both map (made
    before the workers fork). The worker inflates the member and checks it against RECORD,
    then goes on with other members, while this process decodes it: sending its facts back
    (libtorch_cpu.so's 74k dynamic symbols) would cost the worker about what decoding them
    costs, and this process waits anyway. The workers run out of other members about when the
    hand-off is inflated, so they read what can be read apart from this memory meanwhile
    (``_handed_part``), which would otherwise be the longest part of the tail left to one CPU:
    an ELF member's ``.symtab``, in parts; a Mach-O member's initializers (the code walk). A
    Mach-O member's memory is also kept (``keep``) for the checks that read it again (its
    initializers walked deeper: ``_KEPT``), rather than inflating it a second time."""

    memory: mmap.mmap
    keep: bool = False


_HANDOFFS: dict[int, _Handoff] = {}
"""The hand-offs of the read under way, by the position of their source (inherited by the
workers it forks)."""


_WORKERS: dict[int, _Worker] = {}
"""The state of this process when it is a worker (by process id: a forked child must never use
its parent's)."""


def _start_worker(
    sources: Sequence[Source], names: tuple[str, ...], decoder: Decoder = "fast"
) -> None:
    """A forked worker's first step. Forked, it gets the sources as they are in the parent
    (nothing is pickled: a big wheel has tens of thousands, and pickling them cost more than
    reading them); tasks name sources by position."""
    _WORKERS[os.getpid()] = _Worker(sources, names, SourceDecoder(names, decoder))


_SAME_HASHES: Final = b"names are hashed alike in every process of a run"
"""Hashed by each worker with its results: ``NameDigests`` from processes that hash differently
(not forked from this one) must never be compared."""


def _run_task(task: _Task) -> tuple[int, _WorkerResult]:
    worker = _WORKERS[os.getpid()]
    sources = [worker.sources[index] for index in task.sources]
    return hash(_SAME_HASHES), _task_result(worker.reader, task, sources, worker.names)


def _task_result(
    reader: SourceDecoder, task: _Task, sources: Sequence[Source], names: tuple[str, ...]
) -> _WorkerResult:
    into = _HANDOFFS.get(task.sources[0]) if task.handoff else None
    try:
        if task.part is not None and into is not None:
            return _handed_part(sources[0], into, task.part, task.parts)
        if task.part is not None:
            return _part(reader, sources[0], task.part, task.parts)
        if into is not None:
            left_out = reader.inflate_only(sources[0], into)
            return [None] if left_out is None else _Inflated(left_out)
    except InputError as error:
        return _Failed(error)
    outcomes: list[Outcome | _Failed] = []
    for source in sources:
        try:
            outcomes.append(_outcome(reader, source, names, task.parts == 1, into))
        except InputError as error:
            outcomes.append(_Failed(error))
            break  # the rest of the batch is read by no one: an error is raised anyway
    return outcomes


_RETIRING: list[threading.Thread] = []
"""The threads of pools whose workers are still exiting (they wait for the workers)."""


def wait_for_workers() -> None:
    """Return once the workers of every earlier parallel read have exited."""
    while _RETIRING:
        _RETIRING.pop().join()


def _fork_context() -> BaseContext | None:
    """Fork when it is safe: workers start at once and inherit everything imported (and
    ``NameDigests`` need the hashes of this process). Imported here: a small input never pays
    for the pool's modules."""
    import multiprocessing

    wait_for_workers()  # a process with threads must not fork
    if not sys.platform.startswith("linux") or threading.active_count() > 1:
        return None  # macOS lists fork, but forking there is not safe in general
    return multiprocessing.get_context("fork")


def _read_here(task: _Task) -> bool:
    """The facts of a file split into ``.symtab`` parts (all but the parts) are read in this
    process while the workers read the parts: sending them back would cost about as much as
    reading them (libtorch_cpu.so's 74k dynamic symbols)."""
    return task.part is None and task.parts > 1 and not task.handoff


def _run_here(
    tasks: Sequence[_Task],
    sources: Sequence[Source],
    names: tuple[str, ...],
    decoder: Decoder = "fast",
) -> Iterator[tuple[_Task, _TaskResult]]:
    reader = SourceDecoder(names, decoder)
    try:
        for task in tasks:
            result = _task_result(reader, task, [sources[i] for i in task.sources], names)
            assert not isinstance(result, _Inflated)  # hand-offs go to the workers
            yield task, result
    finally:
        reader.close()


def _run_parallel(
    tasks: Sequence[_Task],
    sources: Sequence[Source],
    names: tuple[str, ...],
    jobs: int,
    context: BaseContext,
    *,
    decoder: Decoder = "fast",
) -> Iterator[tuple[_Task, _TaskResult]]:
    from concurrent.futures import ProcessPoolExecutor

    threads_before = set(threading.enumerate())
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_start_worker,
        initargs=(sources, names, decoder),
    )
    try:
        here = [task for task in tasks if _read_here(task)]
        sent = [task for task in tasks if not _read_here(task)]
        futures = collections.deque((task, pool.submit(_run_task, task)) for task in sent)
        yield from _run_here(here, sources, names, decoder)
        while futures:
            task, future = futures.popleft()
            hashed, result = future.result()
            if hashed != hash(_SAME_HASHES):
                raise RuntimeError("a worker hashes names unlike this process: not forked")
            if isinstance(result, _Inflated):  # the workers read its parts meanwhile
                parts = _handed_parts(sources, task)
                futures += [(part, pool.submit(_run_task, part)) for part in parts]
                result = _read_handed(sources[task.sources[0]], task, result, names, decoder)
            yield task, result
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    # Every result is in: the workers exit (freeing their buffers takes a while) while the
    # checks run; the next parallel read, or the end of verify_paths, waits for them.
    pool.shutdown(wait=False)
    _RETIRING.extend(set(threading.enumerate()) - threads_before)


def _handed_parts(sources: Sequence[Source], task: _Task) -> list[_Task]:
    """The parts of an inflated hand-off for the workers: its ``.symtab`` in parts (ELF), or
    its initializers (Mach-O)."""
    index = task.sources[0]
    count = 1 if _HANDOFFS[index].keep else part_count(sources[index].size)
    return [_Task(task.sources, 0, part, count, handoff=True) for part in range(count)]


def _read_handed(
    source: Source, task: _Task, inflated: _Inflated, names: tuple[str, ...], decoder: Decoder
) -> list[Outcome | _Failed]:
    """The facts of a hand-off, decoded from the memory a worker inflated it into, less what
    the workers read from it meanwhile (``_handed_part``)."""
    assert source.member is not None
    memory = _HANDOFFS[task.sources[0]].memory
    raw = _Bytes(memory, source.size, file_backed=False, code_left_out=bool(inflated.left_out))
    reader = SourceDecoder(names, decoder)
    try:
        decode = _facts_decoder(reader, source, names, symtab=False, code=False)
        return [reader.decode_inflated(source, decode, (raw, inflated.left_out))]
    except InputError as error:
        return [_Failed(error)]
    finally:
        reader.close()


def _handed_part(source: Source, into: _Handoff, part: int, parts: int) -> _Part:
    """A part of a hand-off, read from the memory a worker inflated it into (this one or
    another), while the process that forked them decodes the rest: a part of an ELF file's
    ``.symtab``, or a Mach-O file's initializers."""
    try:
        if into.keep:
            found = read_initializers_again(
                into.memory, source.display, size=source.size, deep=False
            )  # as the facts hold them
            return _HandedInitializers(found)
        return read_symtab_part(into.memory, source.display, part, parts, size=source.size)
    except MalformedBinary as error:
        return error.with_traceback(None)


def _assemble(
    sources: Sequence[Source],
    results: Iterator[tuple[_Task, _TaskResult]],
    names: Collection[str],
) -> list[Outcome]:
    outcomes: list[Outcome] = [None] * len(sources)
    failed: dict[int, InputError] = {}
    parts: dict[int, list[_Part]] = {}
    for task, result in results:
        if isinstance(result, _Failed):
            failed[task.sources[0]] = result.error
            continue
        if not isinstance(result, list):
            parts.setdefault(task.sources[0], []).append(result)
            continue
        for index, outcome in zip(task.sources, result, strict=False):
            if isinstance(outcome, _Failed):
                failed[index] = outcome.error
            else:
                outcomes[index] = outcome
    if failed:
        raise failed[min(failed)]
    for index, found in parts.items():
        outcomes[index] = _joined(sources[index], outcomes[index], found, names)
    return outcomes


def _joined(
    source: Source, main: Outcome, parts: Sequence[_Part], names: Collection[str]
) -> Outcome:
    """A file's facts read apart from its parts, completed with them."""
    if main is None:
        return None
    symtab = [part for part in parts if isinstance(part, SymtabPart)]
    walked = [part for part in parts if isinstance(part, _HandedInitializers)]
    if isinstance(main, BinaryFacts) and main.format == "elf" and len(symtab) == len(parts):
        return with_symtab(main, symtab)
    if isinstance(main, BinaryFacts) and main.format == "macho" and len(walked) == len(parts):
        unread = main.initializers is None  # a library's, not read with the facts
        return dataclasses.replace(main, initializers=walked[0].initializers) if unread else main
    return read_source(source, names)  # corrupt: the finding a whole read gives, exactly


def _hand_off(sources: Sequence[Source]) -> int | None:
    """The position of the biggest wheel member, when it is big enough for its ``.symtab`` to
    be read here while a worker reads the rest (ELF), or for its bytes to be kept for reading
    again (Mach-O; ``_Handoff``), with its memory made."""
    members = [(s.size, index) for index, s in enumerate(sources) if s.member is not None]
    size, index = max(members, default=(0, 0))
    kind = _member_format(sources[index]) if size >= SPLIT_MIN_BYTES else None
    if kind not in ("elf", "macho"):
        return None  # only ELF files are read in parts; only Mach-O files are read again
    try:
        memory = shared_memory(size)
    except (OSError, MemoryError, OverflowError):
        return None  # read it as the others
    _HANDOFFS[index] = _Handoff(memory, keep=kind == "macho")
    return index


def _member_format(source: Source) -> str | None:
    from buildtool.linkage.inputs.inflate import peek_head
    from buildtool.linkage.inputs.wheel_archive import map_wheel

    assert source.member is not None
    mapping = map_wheel(Path(source.path))
    try:
        return binary_format(peek_head(mapping, source.member.span))
    finally:
        mapping.close()


_KEPT: dict[tuple[str, str], tuple[mmap.mmap, int]] = {}
"""Wheel members whose inflated bytes this process keeps, by (wheel, member): (memory, size).
Readers take them from here rather than inflating them again; ``release_kept`` frees them."""


def _keep_handed(sources: Sequence[Source], outcomes: Sequence[Outcome]) -> None:
    """Keep the memory of each hand-off made to be kept whose member was read (its bytes all
    in: a Mach-O file is never read sparse); the others are closed with the read."""
    for index in [i for i, made in _HANDOFFS.items() if made.keep]:
        source, outcome = sources[index], outcomes[index]
        if isinstance(outcome, BinaryFacts) and outcome.format == "macho":
            assert source.member is not None
            memory = _HANDOFFS.pop(index).memory
            _KEPT[(source.path, source.member.name)] = (memory, source.size)


def release_kept() -> None:
    """Free the wheel members kept for reading again (see ``_KEPT``)."""
    while _KEPT:
        _KEPT.popitem()[1][0].close()


def read_sources(
    sources: Sequence[Source],
    names: Collection[str],
    jobs: int | None = None,
    decoder: Decoder = "fast",
) -> list[Outcome]:
    """Every source's outcome, in order. ``jobs``: processes to use (default: every CPU this
    process may use); 1, a small input, or a system other than Linux (workers are forked)
    reads in this process. ``decoder``: what decodes the facts."""
    jobs = available_cpus() if jobs is None else jobs
    tasks = _batch_tasks(sources, split=decoder == "fast")
    big = sum(source.size for source in sources) >= PARALLEL_MIN_BYTES
    context = _fork_context() if jobs > 1 and big and len(tasks) > 1 else None
    if context is not None:
        from concurrent.futures.process import BrokenProcessPool

        handoff = _hand_off(sources) if decoder == "fast" else None
        tasks = _batch_tasks(sources, split=decoder == "fast", handoff=handoff)
        try:
            results = _run_parallel(tasks, sources, tuple(names), jobs, context, decoder=decoder)
            outcomes = _assemble(sources, results, names)
            _keep_handed(sources, outcomes)
            return outcomes
        except BrokenProcessPool:  # a worker died (out of memory?): read in this process instead
            log.warning("a process reading ELF files died; reading them in this one")
        finally:
            for made in _HANDOFFS.values():
                made.memory.close()
            _HANDOFFS.clear()
    reader = SourceDecoder(names, decoder)
    try:
        return [_outcome(reader, source, names, True) for source in sources]
    finally:
        reader.close()
