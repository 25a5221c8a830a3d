"""Reading the facts of many binaries (ELF, Mach-O, PE): each file once, on every CPU when the
input is big.

Each process reads as ``decoding`` does. Small inputs are read in this process. Big ones go to a
pool of forked worker processes, which inherit the list of sources (tasks name them by
position), largest work first, small files in batches; the ``.symtab`` of a big file on disk
(libtorch_cpu.so: half a million symbols) is split into parts that the workers read at once,
while this process reads the rest of that file; the biggest wheel member is inflated by a worker
into memory this process shares, and decoded here (``decoding.Handoff``). The results are the
same whichever way a file was read: a file that a split read finds corrupt is read again whole,
for the exact finding.

The facts come from the fast decoder, or from pyelftools (``Decoder``: a slower cross-check that
shares no decoding with it); pyelftools reads every file whole, never in parts or without its code.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import sys
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from buildtool.errors import InputError
from buildtool.linkage.binaries import BinaryFacts, Decoder, InitializerReach
from buildtool.linkage.binaries.code_walk import load_disassembler
from buildtool.linkage.binaries.elf import Ranges, SymtabPart, read_symtab_part, with_symtab
from buildtool.linkage.binaries.facts import MalformedBinary, named_as_library
from buildtool.linkage.binaries.magic import binary_format
from buildtool.linkage.binaries.read import read_initializers_again
from buildtool.linkage.inputs.decoding import (
    KEPT,
    Handoff,
    Outcome,
    Source,
    SourceBytes,
    SourceDecoder,
    facts_decoder,
    read_outcome,
    read_source,
    source_symtab_part,
)
from buildtool.linkage.inputs.memory import shared_memory

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor
    from multiprocessing.context import BaseContext

    from buildtool.linkage.inputs.head_start import HeadStart


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


BATCH_BYTES: Final = 8 << 20
"""Small files go to a worker together, up to this many bytes (or ``BATCH_FILES`` files)."""

BATCH_FILES: Final = 256

log = logging.getLogger("buildtool")


def available_cpus() -> int:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


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
    (``Handoff``); with ``part``, a part of its ``.symtab`` read from that memory."""


def _batch_tasks(
    sources: Sequence[Source], split: bool = True, handoff: int | None = None
) -> list[_Task]:
    """``split``: big files on disk have their ``.symtab`` read in parts. ``handoff``: the
    position of the wheel member handed off (``Handoff``)."""
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


_HANDOFFS: dict[int, Handoff] = {}
"""The hand-offs of the read under way, by the position of their source (inherited by the
workers it forks)."""


_HEAD_STARTS: dict[int, HeadStart] = {}
"""The hand-offs of the read under way whose inflation a child forked before the wheel's
checks is doing (``head_start``), by the position of their source."""


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
            return source_symtab_part(reader, sources[0], task.part, task.parts)
        if into is not None:
            left_out = reader.inflate_only(sources[0], into)
            return [None] if left_out is None else _Inflated(left_out)
    except InputError as error:
        return _Failed(error)
    outcomes: list[Outcome | _Failed] = []
    for source in sources:
        try:
            outcomes.append(read_outcome(reader, source, names, task.parts == 1, into))
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


def nothing() -> None:
    """No work (``meanwhile``'s default)."""


def _run_parallel(
    tasks: Sequence[_Task],
    sources: Sequence[Source],
    names: tuple[str, ...],
    jobs: int,
    context: BaseContext,
    *,
    decoder: Decoder = "fast",
    meanwhile: Callable[[], object] = nothing,
) -> Iterator[tuple[_Task, _TaskResult]]:
    from concurrent.futures import ProcessPoolExecutor

    if decoder == "fast" and any(named_as_library(source.display) for source in sources):
        load_disassembler()  # for the workers' initializer walks: imported once, not in each
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
        futures: collections.deque[tuple[_Task, Future[tuple[int, _WorkerResult]] | None]]
        futures = collections.deque((task, _submitted(pool, task)) for task in sent)
        yield from _run_here(here, sources, names, decoder)
        meanwhile()  # the workers are busy: this process would only wait for them
        while futures:
            task, future = futures.popleft()
            result: _WorkerResult | None = None
            if future is None:
                result = _head_started(sources[task.sources[0]], task)
            if result is None:  # no head start, or a worker must read the member again
                hashed, result = (future or pool.submit(_run_task, task)).result()
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


def _submitted(pool: ProcessPoolExecutor, task: _Task) -> Future[tuple[int, _WorkerResult]] | None:
    """The task sent to a worker; None for the hand-off a head start inflates."""
    head_started = task.handoff and task.part is None and task.sources[0] in _HEAD_STARTS
    return None if head_started else pool.submit(_run_task, task)


def _head_started(source: Source, task: _Task) -> _Inflated | None:
    """The hand-off as its head start inflated it, once the child is done and its digest and
    size agree with RECORD, its CRC-32 with the central directory; None: a worker inflates it
    again (for the exact finding)."""
    assert source.member is not None
    inflated = _HEAD_STARTS[task.sources[0]].result()
    if inflated is None or not inflated.checks_out(source.member):
        return None
    return _Inflated(inflated.left_out)


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
    raw = SourceBytes(memory, source.size, file_backed=False, code_left_out=bool(inflated.left_out))
    reader = SourceDecoder(names, decoder)
    try:
        decode = facts_decoder(reader, source, names, symtab=False, code=False)
        return [reader.decode_inflated(source, decode, (raw, inflated.left_out))]
    except InputError as error:
        return [_Failed(error)]
    finally:
        reader.close()


def _handed_part(source: Source, into: Handoff, part: int, parts: int) -> _Part:
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


def _hand_off(sources: Sequence[Source], head: HeadStart | None = None) -> int | None:
    """The position of the biggest wheel member, when it is big enough for its ``.symtab`` to
    be read here while a worker reads the rest (ELF), or for its bytes to be kept for reading
    again (Mach-O; ``Handoff``), with its memory made: ``head``'s, when it is inflating that
    member already."""
    members = [(s.size, index) for index, s in enumerate(sources) if s.member is not None]
    size, index = max(members, default=(0, 0))
    kind = _member_format(sources[index]) if size >= SPLIT_MIN_BYTES else None
    if kind not in ("elf", "macho"):
        return None  # only ELF files are read in parts; only Mach-O files are read again
    member = sources[index].member
    if head is not None and member is not None and head.span == member.span:
        _HANDOFFS[index] = Handoff(head.take().memory, keep=kind == "macho")
        _HEAD_STARTS[index] = head
        return index
    try:
        memory = shared_memory(size)
    except (OSError, MemoryError, OverflowError):
        return None  # read it as the others
    _HANDOFFS[index] = Handoff(memory, keep=kind == "macho")
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


def _keep_handed(sources: Sequence[Source], outcomes: Sequence[Outcome]) -> None:
    """Keep the memory of each hand-off made to be kept whose member was read (its bytes all
    in: a Mach-O file is never read sparse); the others are closed with the read."""
    for index in [i for i, made in _HANDOFFS.items() if made.keep]:
        source, outcome = sources[index], outcomes[index]
        if isinstance(outcome, BinaryFacts) and outcome.format == "macho":
            assert source.member is not None
            memory = _HANDOFFS.pop(index).memory
            KEPT[(source.path, source.member.name)] = (memory, source.size)


def read_sources(
    sources: Sequence[Source],
    names: Collection[str],
    jobs: int | None = None,
    decoder: Decoder = "fast",
    head: HeadStart | None = None,
    *,
    meanwhile: Callable[[], object] = nothing,
) -> list[Outcome]:
    """Every source's outcome, in order. ``jobs``: processes to use (default: every CPU this
    process may use); 1, a small input, or a system other than Linux (workers are forked)
    reads in this process. ``decoder``: what decodes the facts. ``head``: the biggest
    member's inflation, under way (the caller ends it). ``meanwhile``: the caller's work for
    this process while workers read, called once they are busy (never without workers)."""
    jobs = available_cpus() if jobs is None else jobs
    tasks = _batch_tasks(sources, split=decoder == "fast")
    big = sum(source.size for source in sources) >= PARALLEL_MIN_BYTES
    context = _fork_context() if jobs > 1 and big and len(tasks) > 1 else None
    if context is not None:
        from concurrent.futures.process import BrokenProcessPool

        handoff = _hand_off(sources, head) if decoder == "fast" else None
        tasks = _batch_tasks(sources, split=decoder == "fast", handoff=handoff)
        try:
            results = _run_parallel(
                tasks, sources, tuple(names), jobs, context, decoder=decoder, meanwhile=meanwhile
            )
            outcomes = _assemble(sources, results, names)
            _keep_handed(sources, outcomes)
            return outcomes
        except BrokenProcessPool:  # a worker died (out of memory?): read in this process instead
            log.warning("a process reading ELF files died; reading them in this one")
        finally:
            for made in _HANDOFFS.values():
                made.memory.close()
            _HANDOFFS.clear()
            _HEAD_STARTS.clear()
    reader = SourceDecoder(names, decoder)
    try:
        return [read_outcome(reader, source, names, True) for source in sources]
    finally:
        reader.close()
