"""The head start's child keeps the memory it frees (``memory.keep_freed_memory``): glibc's
malloc, left to itself, gives the top of its heap back whenever the chunks in flight are freed,
and faults the same pages in again, zeroed, for the next ones."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from buildtool.linkage.inputs import head_start
from buildtool.linkage.inputs.inflate import HASH_QUEUE_CHUNKS, OUTPUT_BYTES, MemberSpan
from buildtool.linkage.inputs.wheel_archive import CheckedMember

glibc_only = pytest.mark.skipif(
    "CS_GNU_LIBC_VERSION" not in os.confstr_names or not os.confstr("CS_GNU_LIBC_VERSION"),
    reason="glibc's malloc",
)

ROUNDS = 200

CHURN = f"""
import resource, sys
from buildtool.linkage.inputs.memory import keep_freed_memory
taken = keep_freed_memory() if sys.argv[1] == "keep" else None
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({ROUNDS}):  # chunks made and freed a queue's worth at a time, as a hashing thread
    in_flight = [bytes({OUTPUT_BYTES}) for _ in range({HASH_QUEUE_CHUNKS})]  # drains a queue
    del in_flight
print(taken, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _churn(mode: str) -> tuple[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", CHURN, mode], capture_output=True, text=True, check=True
    )
    taken, faults = done.stdout.split()
    return taken, int(faults)


@glibc_only
def test_freed_chunks_are_reused_without_faulting_again() -> None:
    queue_pages = HASH_QUEUE_CHUNKS * OUTPUT_BYTES // os.sysconf("SC_PAGE_SIZE")
    taken, kept = _churn("keep")
    assert taken == "True"
    assert kept < 2 * queue_pages  # the first queue's pages, faulted in once
    _, default = _churn("default")
    assert default > ROUNDS * queue_pages // 4  # glibc's own thresholds: again and again


def _member_wheel(tmp_path: Path) -> tuple[Path, CheckedMember]:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    name = "pkg/libbig.so"
    content = Path(sys.executable).resolve().read_bytes()[:64] + bytes(12 << 20)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, content)
    with zipfile.ZipFile(wheel) as archive:
        span = MemberSpan.of(archive.getinfo(name))
    return wheel, CheckedMember(name, span, None)


def test_the_head_start_child_keeps_freed_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    called = tmp_path / "kept"
    monkeypatch.setattr(head_start, "keep_freed_memory", called.touch)  # runs in the child
    wheel, member = _member_wheel(tmp_path)
    started = head_start.start(wheel, member)
    assert started is not None
    try:
        inflated = started.result()
    finally:
        started.end()
    assert inflated is not None
    assert inflated.size == member.span.file_size
    assert called.exists()
