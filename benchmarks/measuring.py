"""Timing whole commands and in-process work for the benchmarks: runs, their medians, peak
memory (RSS from ``wait4``, PSS sampled), CPU time, and ratios taken run by run."""

from __future__ import annotations

import dataclasses
import os
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Run:
    """One run of a command."""

    seconds: float
    peak_rss: int
    """Bytes: the largest resident set of the process or any process it waited for."""
    peak_pss: int
    """Bytes: the largest sum, sampled every few milliseconds, of the proportional set sizes of
    the process and its children (shared pages counted once)."""
    cpu_seconds: float = 0.0
    """User and system time of the command and of every process it waited for (0: not taken)."""


@dataclasses.dataclass(frozen=True)
class Measurement:
    name: str
    runs: tuple[Run, ...]
    """Timed runs."""
    sampled: Run | None = None
    """An extra run whose memory was sampled (its time is not used)."""

    @property
    def seconds(self) -> float:
        return statistics.median(run.seconds for run in self.runs)

    @property
    def peak_rss(self) -> int:
        return max(run.peak_rss for run in self.runs)

    @property
    def peak_pss(self) -> int:
        return self.sampled.peak_pss if self.sampled else 0


def _descendants(pid: int) -> Iterator[int]:
    yield pid
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return
    for task in tasks:
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            yield from _descendants(int(child))


def _pss(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


class _PssSampler(threading.Thread):
    """Samples the summed PSS of a process tree until told to stop."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, sum(_pss(p) for p in _descendants(self.pid)))
            self.done.wait(0.005)


def run_command(
    command: Sequence[str], env: dict[str, str], cwd: Path = REPO, sample: bool = False
) -> Run:
    """Run ``command`` (output discarded); exit codes 0 and 1 (findings) are success.

    ``sample``: also sample the PSS of its processes, which slows them down (reading
    ``smaps_rollup`` walks their page tables): never in a timed run.
    """
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    sampler = _PssSampler(process.pid)
    if sample:
        sampler.start()
    _pid, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    sampler.done.set()
    if sample:
        sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    errors = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{errors}")
    cpu = usage.ru_utime + usage.ru_stime
    return Run(seconds, usage.ru_maxrss * 1024, sampler.peak, cpu)


def measure(
    name: str, runs: int, once: Callable[[], Run], sampled: Callable[[], Run] | None = None
) -> Measurement:
    print(f"  {name}: ", end="", flush=True)
    results = []
    for _ in range(runs):
        results.append(once())
        print(f"{results[-1].seconds:.2f}s ", end="", flush=True)
    print()
    return Measurement(name, tuple(results), sampled() if sampled else None)


def measure_together(
    runs: int, named: Sequence[tuple[str, Callable[[], Run]]]
) -> list[Measurement]:
    """Rounds of one run of each, in turn: a ratio between them is not skewed by the machine
    getting faster or slower between two series of runs."""
    results: list[list[Run]] = [[] for _ in named]
    for round_number in range(runs):
        print(f"  round {round_number + 1}: ", end="", flush=True)
        for (name, once), found in zip(named, results, strict=True):
            found.append(once())
            print(f"{name} {found[-1].seconds:.2f}s; ", end="", flush=True)
        print()
    return [
        Measurement(name, tuple(found)) for (name, _), found in zip(named, results, strict=True)
    ]


def paired_ratio(a: Measurement, b: Measurement) -> float:
    """The median of a's runs over b's, run by run: runs of one round were made back to back."""
    return statistics.median(x.seconds / y.seconds for x, y in zip(a.runs, b.runs, strict=True))


def in_process(work: Callable[[], object]) -> Callable[[], Run]:
    def once() -> Run:
        start = time.perf_counter()
        work()
        return Run(time.perf_counter() - start, 0, 0)

    return once
