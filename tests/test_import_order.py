"""The read starts before the checks are imported (``verify``): the workers (and a wheel's
head start) fork first, and ``checking`` (the checks, loaders and reports) is imported while
they read (``meanwhile``), where this process would otherwise wait for them."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from buildtool.linkage.inputs import pool
from buildtool.linkage.inputs.decoding import Source
from tests.test_verify import system_libraries

CHECKING = "buildtool.linkage.checking"

PROGRAM = """
import sys
from pathlib import Path

from buildtool.linkage import verify
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs import pool

print("with verify:", "{checking}" in sys.modules)
forked = []
fork_context = pool._fork_context


def recorded():
    forked.append("{checking}" in sys.modules)
    return fork_context()


pool._fork_context = recorded
pool.PARALLEL_MIN_BYTES = 0  # three small libraries, each a task: a pool of workers
pool.BATCH_FILES = 1
report = verify.verify_paths([Path({folder!r})], LinkagePolicy.empty(), jobs={jobs})
print("at the fork:", forked)
print("after:", "{checking}" in sys.modules, report.files_checked)
"""


def _folder(tmp_path: Path) -> Path:
    library = next(system_libraries()).read_bytes()
    for copy in range(3):
        (tmp_path / f"lib{copy}.so").write_bytes(library)
    return tmp_path


def _run(folder: Path, jobs: int) -> list[str]:
    program = PROGRAM.format(checking=CHECKING, folder=str(folder), jobs=jobs)
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    return result.stdout.splitlines()


def test_the_workers_fork_before_the_checks_are_imported(tmp_path: Path) -> None:
    lines = _run(_folder(tmp_path), jobs=2)
    assert lines == ["with verify: False", "at the fork: [False]", "after: True 3"]


def test_a_read_in_this_process_imports_the_checks_after_it(tmp_path: Path) -> None:
    lines = _run(_folder(tmp_path), jobs=1)
    assert lines == ["with verify: False", "at the fork: []", "after: True 3"]


def test_meanwhile_runs_once_while_the_workers_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Called after the workers got their tasks, before this process waits for them; never
    for a read without workers."""
    folder = _folder(tmp_path)
    sources = [Source(str(f), str(f), f.stat().st_size) for f in sorted(folder.iterdir())]
    monkeypatch.setattr(pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(pool, "BATCH_FILES", 1)
    pool.wait_for_workers()
    assert threading.active_count() == 1, "a thread left by another test stops every fork"
    calls: list[str] = []
    parallel = pool.read_sources(sources, (), 2, meanwhile=lambda: calls.append("workers"))
    assert calls == ["workers"]
    alone = pool.read_sources(sources, (), 1, meanwhile=lambda: calls.append("alone"))
    pool.wait_for_workers()
    assert calls == ["workers"]
    assert parallel == alone
    assert all(outcome is not None for outcome in alone)


DISASSEMBLER_PROGRAM = """
import os
import sys
from pathlib import Path

from buildtool.linkage import verify
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs import pool

forks = []
os.register_at_fork(before=lambda: forks.append("capstone" in sys.modules))
pool.PARALLEL_MIN_BYTES = 0
pool.BATCH_FILES = 1
report = verify.verify_paths([Path({folder!r})], LinkagePolicy.empty(), jobs=2)
print(sorted(set(forks)), report.files_checked)
"""


@pytest.mark.parametrize(("name", "imported"), [("lib{}.so", True), ("blob{}.bin", False)])
def test_the_disassembler_is_imported_once_before_workers_fork_for_libraries(
    tmp_path: Path, name: str, imported: bool
) -> None:
    """Named like libraries, the files are walked by the workers: capstone is imported before
    they fork (each would import it); named otherwise, it is not imported for them."""
    library = next(system_libraries()).read_bytes()
    for copy in range(3):
        (tmp_path / name.format(copy)).write_bytes(library)
    program = DISASSEMBLER_PROGRAM.format(folder=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == [f"[{imported}]", "3"]
