"""``forked``: a value a forked child works out, and what comes back when it fails."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from buildtool.linkage.inputs.forked import Forked, can_fork

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")


def test_the_childs_value_comes_back_once_and_is_kept() -> None:
    parent = os.getpid()
    child = Forked.start(lambda: {"pid": os.getpid(), "rows": (1, 2)}, dict)
    assert child is not None
    found = child.result()
    assert found is not None
    assert found["rows"] == (1, 2)
    assert found["pid"] != parent  # worked out in the child
    assert child.result() is found
    child.end()


def _fail() -> dict[str, int]:
    raise RuntimeError("the child's work fails")


def _a_list() -> Any:
    return ["a list"]


def test_a_failing_child_or_a_value_of_another_type_gives_none() -> None:
    failing = Forked.start(_fail, dict)
    wrong = Forked.start(_a_list, dict)
    assert failing is not None
    assert wrong is not None
    assert failing.result() is None
    assert wrong.result() is None


def test_end_stops_a_child_still_at_work(tmp_path: Path) -> None:
    started = tmp_path / "pid"

    def work() -> dict[str, int]:
        started.write_text(str(os.getpid()))
        time.sleep(600)
        return {}

    child = Forked.start(work, dict)
    assert child is not None
    while not started.exists() or not started.read_text():
        time.sleep(0.01)
    pid = int(started.read_text())
    assert Path(f"/proc/{pid}").exists()
    child.end()
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped
    assert child.result() is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks only on Linux")
def test_no_child_is_forked_with_one_job_or_from_a_process_with_threads() -> None:
    assert can_fork(2)
    assert not can_fork(1)
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert not can_fork(2)
    finally:
        release.set()
        thread.join()
    assert can_fork(2)
