"""ELF files are untrusted: mutated real binaries through ``verify_paths``, never a crash.

A seeded hypothesis run of a few thousand cases lives here; ``nox -s fuzz`` runs the same
mutations 100k times (tests/fuzz/run_elf_fuzz.py) and records its summary in tests/fuzz/SUMMARY.md.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import subprocess
import threading
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buildtool.errors import InputError
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs.pool import wait_for_workers
from buildtool.linkage.loaders.glibc import load_ld_so_cache
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from tests.conftest import require
from tests.fuzz.elf_mutations import Chooser, Field, SeedMap, T, mutate, put_field, read_seed
from tests.fuzz.harness import prepare_case_folder, run_case
from tests.fuzz.seeds import SKIP_REASON, build_good, build_seeds, toolchain_available

SEEDED_CASES = 2500
"""Enough to cover every mutation on every seed many times over in well under 30 s."""


@dataclasses.dataclass(frozen=True)
class World:
    seeds: tuple[SeedMap, ...]
    good: bytes
    folder: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    require(toolchain_available(), SKIP_REASON)
    root = tmp_path_factory.mktemp("fuzz")
    seeds = tuple(read_seed(name, data) for name, data in build_seeds(root / "seeds").items())
    good = build_good(root / "good")
    prepare_case_folder(root / "case", good)
    return World(seeds, good, root / "case")


class DrawChooser:
    """Choices drawn from hypothesis, so a failing case shrinks to its smallest form."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def integer(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(low, high))

    def choice(self, options: Sequence[T]) -> T:
        return self.data.draw(st.sampled_from(options))


@pytest.mark.integration
@settings(
    max_examples=SEEDED_CASES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_mutated_files_are_findings_and_neighbours_are_checked(
    world: World, data: st.DataObject
) -> None:
    chooser: Chooser = DrawChooser(data)
    seed = chooser.choice(world.seeds)
    mutant = mutate(seed, chooser)
    try:
        run_case(world.folder, mutant)
    except Exception as error:
        raise AssertionError(f"case: {' / '.join(mutant.steps)}") from error


# --- memory: no allocation driven by a size the file cannot back --------------------------------

CLAIMED_BYTES = 1 << 40


def _claims(seed: SeedMap) -> list[tuple[Field, int]]:
    """Every size or count field, set to 2**40 (or the largest value its width holds)."""
    sizes = ("sh_size", "p_filesz", "p_memsz", "DT_STRSZ.d_val", "NUM.d_val")
    counts = [f for f in seed.fields if "+" in f.name and int(f.name.rsplit("+", 1)[1]) <= 12]
    chosen = [f for f in seed.fields if f.name.endswith(sizes)] + counts
    return [(f, min(CLAIMED_BYTES, (1 << (8 * f.size)) - 1)) for f in chosen]


def _peak(folder: Path, data: bytes, over: int | None = None) -> tuple[int, str]:
    """Peak bytes Python allocated while verifying ``data`` in ``folder``; when it is above
    ``over``, also where the memory still held at the end was allocated (for the failure).

    Garbage of earlier tests is collected first: its finalizers must not run, and allocate,
    inside the measurement (tracing counts every thread's allocations)."""
    (folder / "claims.so").write_bytes(data)
    wait_for_workers()
    gc.collect()
    tracemalloc.start(8)
    try:
        verify_paths([folder], LinkagePolicy.empty())
        peak = tracemalloc.get_traced_memory()[1]
        if over is None or peak <= over:
            return peak, ""
        top = tracemalloc.take_snapshot().statistics("traceback")[:3]
        return peak, "\n".join("\n".join(stat.traceback.format()) for stat in top)
    finally:
        tracemalloc.stop()


@pytest.mark.integration
@pytest.mark.parametrize("name", ["libgnuhash.so", "libheaderless_sysv.so"])
def test_huge_size_claims_allocate_nothing(
    world: World, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = load_ld_so_cache()  # read once, outside tracing: it is not the file's doing
    monkeypatch.setattr("buildtool.linkage.checking.load_ld_so_cache", lambda: cache)
    seed = next(s for s in world.seeds if s.name == name)
    allowed = _peak(tmp_path, seed.data)[0] + 4 * len(seed.data)
    for field, value in _claims(seed):
        mutant = bytearray(seed.data)
        put_field(mutant, seed.endian, field, value)
        # measured after a first read, which may import a module or fill a cache once per
        # process (a path the seed did not take), as the least of two reads: an allocation the
        # claim drives recurs on every read, while a one-off of the process (about 5 MB, on
        # one claim or another, in a few full-suite runs) falls on one read at most
        _peak(tmp_path, bytes(mutant))
        first, _ = _peak(tmp_path, bytes(mutant))
        peak, where = _peak(tmp_path, bytes(mutant), over=allowed if first > allowed else None)
        peak = min(first, peak)
        assert peak <= allowed, f"{field.name} = {value:#x}: {peak} bytes allocated\n{where}"


# --- hostile neighbours and names: what a folder or a NEEDED entry can point at -----------------


def _verify_within(seconds: float, *paths: Path) -> Report:
    """verify_paths in a thread, so a read that blocks forever fails the test instead of hanging."""
    outcome: list[Report | BaseException] = []

    def work() -> None:
        try:
            outcome.append(verify_paths(list(paths), LinkagePolicy.empty()))
        except BaseException as error:  # handed to the test below
            outcome.append(error)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"verify-linkage still runs after {seconds} s (blocked on a read?)"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _gcc(folder: Path, *args: str) -> None:
    subprocess.run(["gcc", *args], cwd=folder, check=True, capture_output=True)


@pytest.mark.integration
def test_links_loops_and_fifos_in_a_folder(world: World, tmp_path: Path) -> None:
    folder = tmp_path / "lib"
    prepare_case_folder(folder, world.good)
    (folder / "loop_a.so").symlink_to("loop_b.so")
    (folder / "loop_b.so").symlink_to("loop_a.so")
    (folder / "dangling.so").symlink_to(tmp_path / "nowhere.so")
    os.mkfifo(folder / "pipe.so")
    (folder / "to_pipe.so").symlink_to("pipe.so")
    report = _verify_within(60, folder)
    assert report.files_checked == 1
    assert {f.check_id for f in report.findings} == {"BT113", "BT111"}  # the good file's
    with pytest.raises(InputError, match="not a regular file"):
        _verify_within(60, folder / "pipe.so")


@pytest.mark.integration
def test_needed_entries_naming_unreadable_paths(tmp_path: Path) -> None:
    """NEEDED names too long for the file system, a FIFO, a symlink loop: not found, no hang.
    The FIFO and the loop are absolute paths (BT119), the long name a name (BT109)."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "dep.c").write_text("int dep(void) { return 1; }\n")
    (tmp_path / "user.c").write_text("int dep(void);\nint user(void) { return dep(); }\n")
    folder = tmp_path / "inputs"
    folder.mkdir()
    sonames = {"long": "lib" + "x" * 300 + ".so", "fifo": str(tmp_path / "fifo"),
               "loop": str(tmp_path / "loop" / "libx.so")}  # fmt: skip
    for name, soname in sonames.items():
        dep, user = f"libdep_{name}.so", str(folder / f"libuser_{name}.so")
        _gcc(tmp_path, "-shared", "-fPIC", "dep.c", "-o", dep, f"-Wl,-soname,{soname}")
        _gcc(tmp_path, "-shared", "-fPIC", "user.c", "-o", user, "-Wl,--no-as-needed", f"./{dep}")
    report = _verify_within(60, folder)
    missing = {(f.check_id, Path(f.path).name) for f in report.findings}
    paths = {"fifo", "loop"}
    assert missing == {("BT119" if name in paths else "BT109", f"libuser_{name}.so")
                       for name in sonames}  # fmt: skip
