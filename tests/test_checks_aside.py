"""The checks set aside (``suite.ASIDE``: undefined symbols) run in a child forked while this
process runs the others, when they cost enough; the findings are those of a run without the
child, whether the child gave them or failed and left them to this process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from buildtool.linkage import checking
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs.forked import Forked
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from tests.builders import gcc

pytestmark = pytest.mark.integration

USES_MISSING = "int missing_fn(void);\nint uses(void) { return missing_fn(); }\n"
CLEAN = "int clean(void) { return 1; }\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A library calling a function nothing defines, beside a clean one."""
    root = tmp_path_factory.mktemp("aside")
    gcc(root, root / "pkg" / "libuses.so", USES_MISSING, "-Wl,-soname,libuses.so")
    gcc(root, root / "pkg" / "libclean.so", CLEAN, "-Wl,-soname,libclean.so")
    return root / "pkg"


def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Children forked for the checks set aside (their findings come back as a dict)."""
    started: list[int] = []
    original = Forked.start

    def start(work: Callable[[], object], kind: type) -> object:
        if kind is dict:
            started.append(os.getpid())
        return original(work, kind)

    monkeypatch.setattr(Forked, "start", staticmethod(start))
    return started


def checked(folder: Path, jobs: int) -> Report:
    return verify_paths([folder], LinkagePolicy.empty(), jobs=jobs)


def test_the_library_really_fails_to_load(folder: Path) -> None:
    code = f"import ctypes, os; ctypes.CDLL({str(folder / 'libuses.so')!r}, os.RTLD_NOW)"
    run = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert run.returncode != 0
    assert "undefined symbol: missing_fn" in run.stderr


@pytest.fixture
def alone_then_forced(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Report, list[int]]:
    """The report of a run in one process; then any run forks a child for the checks set
    aside, however few undefined symbols (the children counted)."""
    alone = checked(folder, jobs=1)
    monkeypatch.setattr(checking, "ASIDE_MIN_KEYS", 0)
    return alone, forks(monkeypatch)


def test_a_child_finds_what_this_process_finds(
    folder: Path, alone_then_forced: tuple[Report, list[int]]
) -> None:
    alone, started = alone_then_forced
    with_child = checked(folder, jobs=2)
    assert started, "no child was forked"
    assert with_child.findings == alone.findings
    found = {(f.check_id, Path(f.path).name) for f in with_child.findings}
    assert ("BT106", "libuses.so") in found
    assert not any(name == "libclean.so" for _, name in found)


def test_a_failed_child_leaves_the_checks_to_this_process(
    folder: Path, alone_then_forced: tuple[Report, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    alone, started = alone_then_forced
    monkeypatch.setattr(Forked, "result", lambda self: self.end())  # as if it died
    assert checked(folder, jobs=2).findings == alone.findings
    assert started


def test_few_undefined_symbols_fork_no_child(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = forks(monkeypatch)
    report = checked(folder, jobs=2)
    assert "BT106" in {finding.check_id for finding in report.findings}
    assert started == []
