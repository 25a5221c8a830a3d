"""Reading ELF facts on several processes gives exactly what reading them in this one gives.

The pool's thresholds are lowered so that the example's small binaries take every parallel path
a big input takes: files split into ``.symtab`` parts, batches, wheel members in workers. The
facts, the findings (with the function names a duplicate-code finding reads again) and the
errors must not differ from a read in this process.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from elftools.elf.elffile import ELFFile

from buildtool.errors import InputError
from buildtool.linkage.binaries import BinaryFacts, Decoder, NameDigests, name_digest
from buildtool.linkage.binaries.elf import MalformedElf
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs import decoding, head_start, pool, wheel_archive
from buildtool.linkage.inputs.collect import read_wheel
from buildtool.linkage.inputs.decoding import Outcome, Source
from buildtool.linkage.inputs.lookups import InitializerLookup
from buildtool.linkage.inputs.pool import read_sources
from buildtool.linkage.inputs.wheel_archive import record_line
from buildtool.linkage.verify import verify_paths
from buildtool.recipe.load import load_recipe
from buildtool.verification import policy_for_recipe
from tests.conftest import DEMO_RECIPE
from tests.macho_builder import MachO
from tests.test_hostile_wheels import RECORD, Member, write_wheel
from tests.test_member_crc import flip_crc
from tests.test_verify import system_libraries

REGISTRATIONS = ("demo.gemm_fp16_int", "rpc.testing.GetShapeElem", "no.such.name")


@pytest.fixture
def pool_for_everything(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Send every input to the pool and split every file on disk into 8 ``.symtab`` parts;
    the list grows by one each time the pool runs."""
    monkeypatch.setattr(pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(pool, "SPLIT_MIN_BYTES", 1)
    monkeypatch.setattr(pool, "PART_BYTES", 1)
    monkeypatch.setattr(pool, "BATCH_BYTES", 4096)
    runs: list[int] = []
    run_parallel = pool._run_parallel

    def counted(*args: object, **kwargs: object) -> Iterator[object]:
        runs.append(1)
        return run_parallel(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pool, "_run_parallel", counted)
    return runs


def binaries(build_dir: Path) -> list[Path]:
    return sorted(p for folder in ("lib", "bin") for p in (build_dir / folder).iterdir())


def sources_of(paths: list[Path]) -> list[Source]:
    return [Source(str(path), path.name, path.stat().st_size) for path in paths]


T = TypeVar("T")


def both_ways(read: Callable[[int], T], runs: list[int]) -> tuple[T, T]:
    serial = read(1)
    assert runs == []
    parallel = read(2)
    assert runs, "the pool did not run"
    return serial, parallel


@pytest.mark.integration
def test_facts_of_example_and_system_libraries(
    duplicate_gemm_build: Path, pool_for_everything: list[int]
) -> None:
    sources = sources_of([*binaries(duplicate_gemm_build), *system_libraries()])

    def read(jobs: int) -> list[Outcome]:
        return read_sources(sources, REGISTRATIONS, jobs)

    serial, parallel = both_ways(read, pool_for_everything)
    assert parallel == serial
    facts = [outcome for outcome in read(1) if isinstance(outcome, BinaryFacts)]
    assert len(facts) == len(sources)
    unstripped = [f for f in facts if f.has_symtab and f.file_type == "shared"]
    assert unstripped
    assert all(len(f.symtab_functions) > 0 for f in unstripped)  # the parts held them
    assert any(f.registration_strings for f in facts)


def elf_wheel(build_dir: Path, folder: Path) -> Path:
    """The build's libraries and executables as a wheel (RECORD truthful)."""
    members: list[Member] = [
        (f"demo/{p.parent.name}/{p.name}", p.read_bytes()) for p in binaries(build_dir)
    ]
    members.append(("demo/__init__.py", b"# not ELF\n"))
    return write_wheel(folder / "demo-0.1.0-py3-none-any.whl", members)


@pytest.mark.integration
def test_findings_from_trees_wheels_and_system_libraries(
    duplicate_gemm_build: Path, good_build: Path, tmp_path: Path, pool_for_everything: list[int]
) -> None:
    wheel = elf_wheel(good_build, tmp_path)
    paths = [duplicate_gemm_build, wheel, *system_libraries()]
    policy = policy_for_recipe(load_recipe(DEMO_RECIPE))

    serial, parallel = both_ways(
        lambda jobs: verify_paths(paths, policy, jobs=jobs), pool_for_everything
    )
    assert parallel == serial
    evidence = [f.evidence for f in verify_paths(paths, policy, jobs=1).findings]
    shared = [text for text in evidence if "defined functions in both" in text]
    assert shared, evidence
    # the shared functions are named (read again from the file), not shown as digests
    assert not any(re.search(r"#[0-9a-f]{16}", text) for text in shared)


def sources_passed(monkeypatch: pytest.MonkeyPatch, function: str) -> list[str]:
    """The sources that this process passes to ``pool.<function>`` (its first argument), as it
    passes them."""
    passed: list[str] = []
    original = getattr(pool, function)

    def counted(source: Source, *args: Any) -> object:
        passed.append(source.display)
        return original(source, *args)

    monkeypatch.setattr(pool, function, counted)
    return passed


def hand_offs_decoded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources whose hand-off this process decodes, as it does (``pool._read_handed``)."""
    return sources_passed(monkeypatch, "_read_handed")


@pytest.mark.integration
@pytest.mark.parametrize("sparse", [False, True], ids=["whole", "without-code"])
def test_the_biggest_wheel_member_is_decoded_here(
    sparse: bool,
    good_build: Path,
    tmp_path: Path,
    pool_for_everything: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The biggest ELF member is inflated by a worker into memory this process shares with
    it, and decoded here, once, while the workers read its ``.symtab`` in parts from that
    memory: the facts are those of a serial read, also when the worker left its code out."""
    if sparse:
        monkeypatch.setattr(decoding, "SPARSE_MIN_BYTES", 0)
        monkeypatch.setattr(decoding, "KEEP_FRONT_BYTES", 0)
    # libraries only: the biggest member then has a .symtab worth reading (a program's is not)
    libraries = sorted((good_build / "lib").iterdir())
    members: list[Member] = [(f"demo/lib/{p.name}", p.read_bytes()) for p in libraries]
    wheel = write_wheel(tmp_path / "demo-0.1.0-py3-none-any.whl", members)
    decoded_here = hand_offs_decoded(monkeypatch)
    outcome = decoding.read_outcome

    def never_handed(*args: Any) -> object:
        # a worker only inflates a hand-off: its facts are read by no worker
        into = (*args, None)[4]
        assert into is None, args[1].display
        return outcome(*args)

    monkeypatch.setattr(pool, "read_outcome", never_handed)
    here = os.getpid()
    handed_part = pool._handed_part
    read_part = decoding.source_symtab_part
    parts_read = tmp_path / "parts read"  # by the workers: a file, across processes

    def in_a_worker(*args: Any) -> object:
        assert os.getpid() != here
        with parts_read.open("a") as log:
            log.write(f"{args[2]} of {args[3]}\n")
        return handed_part(*args)

    def never_inflated_again(*args: Any) -> object:
        source: Source = args[1]
        assert source.member is None or source.member.name != biggest_member, "inflated again"
        return read_part(*args)

    biggest_member, biggest_bytes = max(members, key=lambda member: len(member[1]))
    # three parts for two workers: the count follows the member's size, as a file's on disk
    monkeypatch.setattr(pool, "PART_BYTES", len(biggest_bytes) // 3)
    monkeypatch.setattr(pool, "_handed_part", in_a_worker)
    monkeypatch.setattr(pool, "source_symtab_part", never_inflated_again)
    serial, parallel = both_ways(
        lambda jobs: read_wheel(wheel, REGISTRATIONS, jobs=jobs).files, pool_for_everything
    )
    assert parallel == serial
    assert sorted(parts_read.read_text().splitlines()) == ["0 of 3", "1 of 3", "2 of 3"]
    biggest = max(parallel, key=lambda binary: binary.source.size if binary.source else 0)
    assert biggest.source is not None
    assert decoded_here == [biggest.source.display]
    assert biggest.facts is not None
    assert biggest.facts.static_initializers
    assert biggest.facts.symtab_functions


def test_the_biggest_mach_o_member_is_kept_for_reading_again(
    tmp_path: Path, pool_for_everything: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The biggest member, a Mach-O file, is inflated into memory this process shares with the
    worker and kept after the read: reading it again (its initializers, for the checks) takes
    its bytes from there, not from the wheel; verify-linkage frees it."""
    core = MachO(install_name="@rpath/libcore.dylib", exports=["_core_answer"],
                 locals=["__GLOBAL__sub_I_core.cc"], strings=("x" * 4096,))  # fmt: skip
    small = MachO(install_name="@rpath/libsmall.dylib", exports=["_small"])
    members: list[Member] = [
        ("demo/lib/libcore.dylib", core.build()),
        ("demo/lib/libsmall.dylib", small.build()),
        ("demo/__init__.py", b"# not Mach-O\n"),
    ]
    wheel = write_wheel(tmp_path / "demo-0.1.0-py3-none-macosx_11_0_arm64.whl", members)
    serial, parallel = both_ways(
        lambda jobs: read_wheel(wheel, REGISTRATIONS, jobs=jobs).files, pool_for_everything
    )
    assert parallel == serial
    assert list(decoding.KEPT) == [(str(wheel), "demo/lib/libcore.dylib")]
    inflated: list[str] = []
    inflate = decoding.SourceDecoder._inflate

    def counted(self: decoding.SourceDecoder, source: Source, *args: Any, **kwargs: Any) -> object:
        inflated.append(source.display)
        return inflate(self, source, *args, **kwargs)

    monkeypatch.setattr(decoding.SourceDecoder, "_inflate", counted)
    lookup = InitializerLookup()
    try:
        for binary in parallel:
            assert binary.source is not None
            assert lookup(binary.source) == (binary.facts.initializers if binary.facts else ())
    finally:
        lookup.close()
    assert inflated == [b.display for b in parallel if b.location.name == "libsmall.dylib"]
    verify_paths([wheel], LinkagePolicy.empty())
    assert decoding.KEPT == {}


@pytest.mark.integration
def test_findings_without_a_recipe(
    duplicate_gemm_build: Path, pool_for_everything: list[int]
) -> None:
    serial, parallel = both_ways(
        lambda jobs: verify_paths([duplicate_gemm_build], LinkagePolicy.empty(), jobs=jobs),
        pool_for_everything,
    )
    assert parallel == serial


def corrupt_symtab_strings(library: Path, copy: Path) -> Path:
    """A copy whose ``.strtab`` is cut to one byte: the dynamic facts read, ``.symtab`` not."""
    shutil.copy2(library, copy)
    with copy.open("rb") as stream:
        elf = ELFFile(stream)
        index = next(i for i, s in enumerate(elf.iter_sections()) if s.name == ".strtab")
        header = elf["e_shoff"] + index * elf["e_shentsize"]
    data = bytearray(copy.read_bytes())
    struct.pack_into("<Q", data, header + 32, 1)  # Elf64_Shdr.sh_size
    copy.write_bytes(bytes(data))
    return copy


@pytest.mark.integration
def test_a_corrupt_part_gives_the_finding_a_whole_read_gives(
    good_build: Path, tmp_path: Path, pool_for_everything: list[int]
) -> None:
    broken = corrupt_symtab_strings(good_build / "lib" / "libdemo_runtime.so", tmp_path / "x.so")
    sources = sources_of([broken])

    serial, parallel = both_ways(lambda jobs: read_sources(sources, (), jobs), pool_for_everything)
    assert isinstance(serial, list)
    assert isinstance(serial[0], MalformedElf)
    assert "string table .strtab" in serial[0].reason
    assert isinstance(parallel, list)
    assert isinstance(parallel[0], MalformedElf)
    assert (parallel[0].path, parallel[0].offset, parallel[0].reason) == (
        serial[0].path,
        serial[0].offset,
        serial[0].reason,
    )


@pytest.mark.integration
def test_a_corrupt_hand_off_gives_the_finding_a_whole_read_gives(
    good_build: Path,
    tmp_path: Path,
    pool_for_everything: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The biggest wheel member's ``.symtab`` fails in the workers' parts: the finding is the
    one a serial read gives, not the parts' own."""
    broken = corrupt_symtab_strings(good_build / "lib" / "libdemo_runtime.so", tmp_path / "x.so")
    small = good_build / "lib" / "libdemo_ffi.so"
    assert small.stat().st_size < broken.stat().st_size
    members: list[Member] = [
        ("demo/lib/libdemo_runtime.so", broken.read_bytes()),
        ("demo/lib/libdemo_ffi.so", small.read_bytes()),
    ]
    wheel = write_wheel(tmp_path / "demo-0.1.0-py3-none-any.whl", members)
    handed = hand_offs_decoded(monkeypatch)
    serial, parallel = both_ways(
        lambda jobs: read_wheel(wheel, REGISTRATIONS, jobs=jobs).files, pool_for_everything
    )
    assert [binary.display for binary in parallel] == [binary.display for binary in serial]
    assert [display.rpartition("/")[2] for display in handed] == ["libdemo_runtime.so"]
    found = {binary.display: repr(binary.malformed) for binary in parallel}
    expected = {binary.display: repr(binary.malformed) for binary in serial}
    assert found == expected
    assert "string table .strtab" in expected[handed[0]]


@pytest.mark.integration
def test_the_first_bad_member_is_reported_either_way(
    good_build: Path, tmp_path: Path, pool_for_everything: list[int]
) -> None:
    library = (good_build / "lib" / "libdemo_runtime.so").read_bytes()
    names = [f"demo/lib/lib{n}.so" for n in range(6)]
    members: list[Member] = [(name, library) for name in names]
    wheel = write_wheel(tmp_path / "bad-0.1.0-py3-none-any.whl", members, record=None)
    with zipfile.ZipFile(wheel, "a") as archive:  # RECORD's hashes are wrong from lib2 on
        good = [record_line(name, library) for name in names[:2]]
        wrong = [f"{name},sha256=AAAA,{len(library)}" for name in names[2:]]
        archive.writestr(RECORD, "\n".join([*good, *wrong, f"{RECORD},,"]) + "\n")

    def read(jobs: int) -> str:
        with pytest.raises(InputError) as raised:
            verify_paths([wheel], LinkagePolicy.empty(), jobs=jobs)
        return str(raised.value)

    serial, parallel = both_ways(read, pool_for_everything)
    assert parallel == serial
    assert "demo/lib/lib2.so" in str(serial)


def _not_for_pyelftools(*_args: object, **_kwargs: object) -> object:
    raise AssertionError("the fast decoder was asked while pyelftools reads")


@pytest.mark.integration
def test_pyelftools_reads_files_whole_and_alike(
    duplicate_gemm_build: Path,
    tmp_path: Path,
    pool_for_everything: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reader choice reaches the workers; pyelftools reads each file whole (no ``.symtab``
    parts, no wheel member without its code) and gives the facts the fast decoder gives."""
    monkeypatch.setattr(decoding, "SPARSE_MIN_BYTES", 0)
    files = sources_of(binaries(duplicate_gemm_build))
    wheel = elf_wheel(duplicate_gemm_build, tmp_path)

    def read(jobs: int, decoder: Decoder) -> list[Outcome]:
        members = read_wheel(wheel, REGISTRATIONS, jobs=jobs, decoder=decoder).files
        on_disk = read_sources(files, REGISTRATIONS, jobs, decoder)
        return [*on_disk, *(member.facts for member in members)]

    expected = read(1, "fast")
    pool_for_everything.clear()
    for name in ("read_elf_facts", "read_symtab_part", "code_ranges", "left_out_unused"):
        monkeypatch.setattr(decoding, name, _not_for_pyelftools)
    monkeypatch.setattr(pool, "read_symtab_part", _not_for_pyelftools)  # a hand-off's parts
    serial, parallel = both_ways(lambda jobs: read(jobs, "pyelftools"), pool_for_everything)
    assert serial == parallel == expected
    assert all(isinstance(outcome, BinaryFacts) for outcome in expected)


def test_name_digests_as_a_set() -> None:
    def packed(*names: str) -> bytes:
        return b"".join(name_digest(n).to_bytes(8, sys.byteorder, signed=True) for n in names)

    digests = NameDigests(
        packed("_Z1av", "_Z1bv", "_Z1cv", "_Z1av"), frozenset({name_digest("_Z1cv")})
    )
    assert len(digests) == 2  # the repeat counts once, the excluded one not at all
    assert "_Z1av" in digests
    assert "_Z1cv" not in digests
    assert "_Z1dv" not in digests
    other = NameDigests(packed("_Z1bv"))
    assert digests.common(other) == {name_digest("_Z1bv")}
    assert digests == NameDigests(packed("_Z1bv", "_Z1av"))
    assert digests != other


def _die(*_args: object) -> object:
    os._exit(3)  # a worker killed mid-task, as by the out-of-memory killer


@pytest.mark.integration
def test_a_dying_worker_leaves_the_reading_to_this_process(
    good_build: Path,
    pool_for_everything: list[int],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sources = sources_of(binaries(good_build))
    expected = read_sources(sources, REGISTRATIONS, 1)
    monkeypatch.setattr(pool, "_run_task", _die)
    assert read_sources(sources, REGISTRATIONS, 2) == expected
    assert pool_for_everything
    assert "reading them in this one" in caplog.text


@pytest.mark.integration
def test_reads_one_after_another_each_use_the_pool(
    good_build: Path, pool_for_everything: list[int]
) -> None:
    """A pool's workers exit in the background; the next read waits for them, then forks."""
    sources = sources_of(binaries(good_build))
    first = read_sources(sources, REGISTRATIONS, 2)
    assert read_sources(sources, REGISTRATIONS, 2) == first
    assert len(pool_for_everything) == 2


# --- the biggest member inflated from the start (head_start) ----------------------------------


class HeadStartLog:
    """What the reads of a test did with head starts: the events in order, in this process
    (a head start forked, the wheel's checks run), and what each hand-off's head start gave."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[str] = []
        self.results: list[object] = []
        started, checked, given = (
            head_start.start,
            wheel_archive.checked_members,
            pool._head_started,
        )

        def start(wheel: Path, member: Any) -> object:
            self.events.append(f"head start {member.name}")
            return started(wheel, member)

        def checked_members(*args: Any) -> object:
            self.events.append("checks")
            return checked(*args)

        def head_started(*args: Any) -> object:
            self.results.append(given(*args))
            return self.results[-1]

        monkeypatch.setattr(head_start, "start", start)
        monkeypatch.setattr(wheel_archive, "checked_members", checked_members)
        monkeypatch.setattr(pool, "_head_started", head_started)


def no_child_left() -> bool:
    """Whether this process has no child (the pool's workers waited for first)."""
    pool.wait_for_workers()
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def library_wheel(build: Path, folder: Path, record: str | None = "auto") -> tuple[Path, str]:
    """The build's libraries as a wheel, and the name of its biggest member."""
    libraries = sorted((build / "lib").iterdir())
    members: list[Member] = [(f"demo/lib/{p.name}", p.read_bytes()) for p in libraries]
    wheel = write_wheel(folder / "demo-0.1.0-py3-none-any.whl", members, record)
    return wheel, f"demo/lib/{max(libraries, key=lambda path: path.stat().st_size).name}"


@pytest.mark.integration
def test_the_biggest_member_is_inflated_while_the_wheel_is_checked(
    good_build: Path,
    tmp_path: Path,
    pool_for_everything: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A child forked before the wheel's checks inflates the biggest member; its digest agrees
    with RECORD, so no worker inflates it again, and the facts are a serial read's."""
    wheel, biggest = library_wheel(good_build, tmp_path)
    log = HeadStartLog(monkeypatch)
    serial = read_wheel(wheel, REGISTRATIONS, jobs=1).files
    assert log.events == ["checks"]  # one process: no head start
    log.events.clear()
    parallel = read_wheel(wheel, REGISTRATIONS, jobs=2).files
    assert pool_for_everything
    assert log.events == [f"head start {biggest}", "checks"]
    assert [type(result).__name__ for result in log.results] == ["_Inflated"]
    assert parallel == serial
    assert no_child_left()


def _wrong_record_hash(wheel: Path, biggest: str) -> None:
    """RECORD's hash of ``biggest`` made wrong (its other rows right)."""
    with zipfile.ZipFile(wheel, "a") as archive:
        rows = [
            f"{name},sha256=AAAA,{info.file_size}"
            if name == biggest
            else record_line(name, archive.read(name))
            for info in archive.infolist()
            if (name := info.filename)
        ]
        archive.writestr(RECORD, "\n".join([*rows, f"{RECORD},,"]) + "\n")


HEAD_START_REFUSALS: dict[str, tuple[Callable[[Path, str], None], str | None, str]] = {
    "RECORD's hash": (_wrong_record_hash, None, "member's sha256 hash differs from RECORD's"),
    "the zip's CRC-32": (flip_crc, "auto", "member's CRC-32 is "),  # RECORD right: pip refuses
}
"""How the biggest member is made wrong: (the change, ``library_wheel``'s RECORD, the error)."""


@pytest.mark.integration
@pytest.mark.parametrize("wrong", sorted(HEAD_START_REFUSALS))
def test_a_head_start_that_disagrees_leaves_the_member_to_a_worker(
    good_build: Path,
    tmp_path: Path,
    pool_for_everything: list[int],
    monkeypatch: pytest.MonkeyPatch,
    wrong: str,
) -> None:
    """The biggest member disagrees with RECORD's hash, or with its headers' CRC-32: the head
    start's inflation is not taken, and a worker reads the member again for the error a serial
    read gives."""
    change, record, error = HEAD_START_REFUSALS[wrong]
    wheel, biggest = library_wheel(good_build, tmp_path, record=record)
    change(wheel, biggest)
    log = HeadStartLog(monkeypatch)

    def read(jobs: int) -> str:
        with pytest.raises(InputError) as raised:
            read_wheel(wheel, REGISTRATIONS, jobs=jobs)
        return str(raised.value)

    serial, parallel = both_ways(read, pool_for_everything)
    assert parallel == serial
    assert f"{biggest}: {error}" in serial
    assert log.results == [None]
    assert no_child_left()


@pytest.mark.integration
@pytest.mark.usefixtures("pool_for_everything")
def test_a_wheel_its_checks_refuse_stops_its_head_start(
    good_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks refuse a member's name after the head start forked: the error is the one a
    serial read gives, and the child is stopped and waited for."""
    wheel, biggest = library_wheel(good_build, tmp_path)
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("demo/../../escape.py", b"")
    log = HeadStartLog(monkeypatch)
    ended: list[str] = []
    end = head_start.HeadStart.end

    def counted_end(self: head_start.HeadStart) -> None:
        ended.append(self.span.name)
        end(self)

    monkeypatch.setattr(head_start.HeadStart, "end", counted_end)
    with pytest.raises(InputError, match=r"escape\.py: .*'\.\.' component"):
        read_wheel(wheel, REGISTRATIONS, jobs=2)
    assert log.events == [f"head start {biggest}", "checks"]
    assert ended == [biggest]
    assert no_child_left()


@pytest.mark.integration
@pytest.mark.usefixtures("pool_for_everything")
def test_each_wheel_of_a_run_gets_its_head_start(
    good_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first wheel's workers are still exiting when the second is read: its head start
    waits for them rather than forking beside their threads, or going without."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, biggest = library_wheel(good_build, tmp_path / "a")
    second, _ = library_wheel(good_build, tmp_path / "b")
    log = HeadStartLog(monkeypatch)
    verify_paths([first, second], LinkagePolicy.empty(), jobs=2)
    assert log.events == [f"head start {biggest}", "checks"] * 2
    assert [type(result).__name__ for result in log.results] == ["_Inflated"] * 2
    assert no_child_left()


@pytest.mark.integration
def test_a_head_start_ends_quietly_where_the_host_reaps_children(
    good_build: Path, tmp_path: Path
) -> None:
    """With SIGCHLD ignored (a host that reaps its children itself), the child is gone before
    it is waited for: its result still arrives, and ending it raises nothing."""
    wheel, biggest = library_wheel(good_build, tmp_path)
    member = head_start.candidate(wheel, wheel_archive.DEFAULT_LIMITS, 1)
    assert member is not None
    assert member.name == biggest
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        started = head_start.start(wheel, member)
        assert started is not None
        assert started.result() is not None
        started.end()
        waiting = head_start.start(wheel, member)
        assert waiting is not None
        waiting.end()  # killed while it may still run
    finally:
        signal.signal(signal.SIGCHLD, previous)
    assert no_child_left()
