"""write_atomic: whole files or nothing, and special files are written to, never replaced."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from buildtool.fsutil import write_atomic


def test_replaces_a_regular_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_a_failure_leaves_the_old_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")

    def broken_fsync(_fd: int) -> None:
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="I/O error"):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_a_fifo_is_written_to_not_replaced(tmp_path: Path) -> None:
    # Like /dev/null or /dev/stdout given as --output: renaming over it would replace the device.
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, "payload")
    reader.join(timeout=10)
    assert received == [b"payload"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stream"]
