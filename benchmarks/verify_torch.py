"""verify-linkage at torch scale, side by side with the tools people use today, in one run.

Downloads the torch 2.13.0 CPU wheel (``pip download --no-deps``), unpacks it, and measures,
with the median of several runs each:

(a) decompressing the wheel's ELF members with zipfile: the floor for reading a wheel
    (also: decompressing every member and hashing it, which checking RECORD needs);
(b) ``buildtool verify-linkage --no-recipe`` on the wheel;
(c) ``auditwheel show`` on the wheel, each run beside a run of (b);
(d) ``readelf --dyn-syms -W`` over the unpacked ELF files;
(e) ``buildtool verify-linkage --no-recipe`` on the unpacked ``torch/lib`` (time and memory), and
    the same in one process (``--jobs 1``): what the second CPU is worth on the host right now;
(f) the same on a folder with the ``torch/lib`` files and on one with twice as many (a second
    copy of the tree): how the cost grows;
(g) a no-op ``buildtool wheel`` of the bundled example against a no-op
    ``pip wheel --no-build-isolation --no-deps`` of the same project, both after a first build;
(h) reading the facts of the unpacked ELF files in this process with the fast decoder and with
    pyelftools, in rounds: what the cross-check (``verify-linkage --reader pyelftools``) costs;
(j) torch's macOS arm64 and Windows x64 wheels (``pip download --platform``), and tensorflow's
    Linux CPU wheel (77 ELF files whose duplicate-code pairs the checks weigh by the thousand):
    zipfile decompressing every member, in rounds with ``buildtool verify-linkage --no-recipe``
    on them.

Ratios between two commands are taken pair by pair, from runs made one after the other, and their
median reported: the host's speed drifts (a virtual machine shares its CPUs), and a ratio of two
medians taken minutes apart would carry that drift. Prints the ratios against the targets of the
performance issue and writes them, with the machine and the date, to ``benchmarks/README.md``.
``nox -s bench`` runs it; so does ``python benchmarks/verify_torch.py --work-dir DIR`` (DIR keeps
the downloads between runs).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, NamedTuple

from measuring import (  # a sibling module: benchmarks/ is the script's folder
    Measurement,
    Run,
    in_process,
    measure,
    measure_together,
    paired_ratio,
    run_command,
)

REPO = Path(__file__).resolve().parent.parent
README = REPO / "benchmarks" / "README.md"
OTHER_SECTIONS = "<!-- other benchmarks -->"
PROJECT_README = REPO / "README.md"
PERFORMANCE_START = "<!-- performance: written by benchmarks/verify_torch.py -->"
PERFORMANCE_END = "<!-- end of performance -->"
"""The part of the project's README that each run rewrites: its targets table."""
TORCH = "torch==2.13.0"
OTHER_WHEELS: Final = {
    "macOS": ("torch==2.11.0", "macosx_11_0_arm64"),  # the newest torch with a cp311 macOS wheel
    "Windows": ("torch==2.13.0", "win_amd64"),
    "tensorflow-cpu Linux": ("tensorflow-cpu==2.21.0", "manylinux_2_27_x86_64"),
}
"""The other wheels measured: torch's for the other formats, and one of another project:
(requirement, platform tag)."""
BEFORE_PEAK_RSS_MIB: Final = 326
"""Peak RSS (largest process) of ``verify-linkage`` on the torch wheel before this work
(median of 7 runs): the memory target is not to exceed it."""
ELF_MAGIC = b"\x7fELF"
CHUNK = 1 << 20
MIB = 1 << 20


# --- inputs ---------------------------------------------------------------------------------


def child_environment(work: Path) -> dict[str, str]:
    """The environment of measured commands: byte code cached, as an installed package has it."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return env


def download_other(work: Path, requirement: str, tag: str) -> Path:
    """A wheel for a platform (``pip download --platform``), kept in ``work``."""
    project = requirement.partition("==")[0].replace("-", "_")
    folder = work / tag
    found = sorted(folder.glob(f"{project}-*{tag}*.whl"))
    if not found:
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
            "--platform", tag, "--python-version", "3.11", requirement, "-d", str(folder),
        ]  # fmt: skip
        subprocess.run(command, check=True)
        found = sorted(folder.glob(f"{project}-*{tag}*.whl"))
    return found[0]


def every_member(wheel: Path) -> list[zipfile.ZipInfo]:
    with zipfile.ZipFile(wheel) as archive:
        return [info for info in archive.infolist() if not info.is_dir()]


def _unzipping(wheel: Path, members: Sequence[zipfile.ZipInfo]) -> Callable[[], Run]:
    return in_process(lambda: unzip(wheel, members))


def _verifying(wheel: Path, env: dict[str, str]) -> Callable[[], Run]:
    return lambda: run_command(verify(wheel), env)


def other_wheels(work: Path, env: dict[str, str], runs: int) -> dict[str, Pair]:
    """Each other wheel: its decompression (every member) and verify-linkage on it, in
    rounds."""
    found: dict[str, Pair] = {}
    for name, (requirement, tag) in OTHER_WHEELS.items():
        wheel = download_other(work, requirement, tag)
        members = every_member(wheel)
        run_command(verify(wheel), env)  # warm: byte code, page cache
        floor, ours = measure_together(runs, [
            (f"zipfile: {name} wheel, every member", _unzipping(wheel, members)),
            (f"buildtool: {name} wheel", _verifying(wheel, env)),
        ])  # fmt: skip
        found[name] = Pair(floor, ours)
    return found


def download_torch(work: Path) -> Path:
    found = sorted(work.glob("torch-2.13.0*.whl"))
    if not found:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", TORCH, "-d", str(work)]
        subprocess.run(command, check=True)
        found = sorted(work.glob("torch-2.13.0*.whl"))
    return found[0]


def wheel_members(wheel: Path) -> tuple[list[zipfile.ZipInfo], list[zipfile.ZipInfo]]:
    """(ELF members, every regular member)."""
    with zipfile.ZipFile(wheel) as archive:
        regular = [info for info in archive.infolist() if not info.is_dir()]
        elf = []
        for info in regular:
            with archive.open(info) as stream:
                if stream.read(len(ELF_MAGIC)) == ELF_MAGIC:
                    elf.append(info)
    return elf, regular


def unpack(wheel: Path, work: Path) -> Path:
    folder = work / "unpacked"
    if not (folder / "torch" / "lib").is_dir():
        shutil.rmtree(folder, ignore_errors=True)
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(folder)
    return folder


def scaling_folders(lib: Path, work: Path) -> tuple[Path, Path]:
    """One copy of torch/lib, and a folder with two copies (a second tree)."""
    once, twice = work / "scale-1x", work / "scale-2x"
    for target, copies in ((once, ("lib",)), (twice, ("lib", "lib-copy"))):
        for copy in copies:
            if not (target / copy).is_dir():
                shutil.copytree(lib, target / copy)
    return once / "lib", twice


# --- the measurements -----------------------------------------------------------------------


LOOP = (
    "def loop():\n"
    "    total = 0\n"
    "    for number in range(10_000_000):\n"
    "        total += number\n"
    "loop()\n"
)
"""A fixed amount of pure-Python work (in a function, as the work of a program is)."""


def loops(processes: int) -> Callable[[], Run]:
    """``LOOP`` in new interpreters at once: one shows how fast the machine runs Python right
    now, two whether both CPUs were there for the taking."""

    def once() -> Run:
        start = time.perf_counter()
        running = [subprocess.Popen([sys.executable, "-c", LOOP]) for _ in range(processes)]
        for process in running:
            process.wait()
        return Run(time.perf_counter() - start, 0, 0)

    return once


def unzip(wheel: Path, members: Sequence[zipfile.ZipInfo], hashing: bool = False) -> None:
    """Decompress (and hash) members in chunks, keeping nothing."""
    with zipfile.ZipFile(wheel) as archive:
        for info in members:
            digest = hashlib.sha256()
            with archive.open(info) as stream:
                while chunk := stream.read(CHUNK):
                    if hashing:
                        digest.update(chunk)


def inflate_with_isal(wheel: Path, members: Sequence[zipfile.ZipInfo]) -> None:
    """What ``unzip`` does for ``members``, with ISA-L's inflate (the one buildtool uses where
    the isal package is installed) instead of zipfile's zlib."""
    from isal import isal_zlib

    with wheel.open("rb") as handle:
        for info in members:
            handle.seek(info.header_offset + 26)
            name_length, extra_length = struct.unpack("<HH", handle.read(4))
            handle.seek(name_length + extra_length, os.SEEK_CUR)
            inflater = isal_zlib.decompressobj(-15)
            left = info.compress_size
            while left:
                compressed = handle.read(min(CHUNK, left))
                left -= len(compressed)
                data = compressed
                while data:
                    inflater.decompress(data, CHUNK)
                    data = inflater.unconsumed_tail


def have_isal() -> bool:
    try:
        import isal  # noqa: F401
    except ImportError:
        return False
    return True


def buildtool(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "buildtool", *map(str, args)]


def verify(path: Path, *options: str) -> list[str]:
    return buildtool("verify-linkage", "--no-recipe", *options, path)


def with_memory(
    measurement: Measurement, command: Sequence[str], env: dict[str, str]
) -> Measurement:
    """The measurement and one more run of ``command``, its memory sampled."""
    return dataclasses.replace(measurement, sampled=run_command(command, env, sample=True))


def wheel_no_op(work: Path, env: dict[str, str], runs: int) -> tuple[Measurement, Measurement]:
    """``buildtool wheel`` and ``pip wheel`` of the example, each again after a first build."""
    ours = buildtool("-q", "wheel", "--out-dir", work / "dist-buildtool", "--build-root", work)
    theirs = [
        *(sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps"),
        *("src", "-w", str(work / "dist-pip")),
        f"--config-settings=build-dir={work / 'pip-build' / '{wheel_tag}'}",
    ]
    run_command(ours, env)  # the first builds: configure and compile
    run_command(theirs, env)
    mine, pips = measure_together(
        runs,
        [
            ("buildtool wheel (no-op)", lambda: run_command(ours, env)),
            ("pip wheel (no-op)", lambda: run_command(theirs, env)),
        ],
    )
    return mine, pips


class Pair(NamedTuple):
    """A wheel's decompression and verify-linkage on it, measured in the same rounds."""

    floor: Measurement
    ours: Measurement


@dataclasses.dataclass(frozen=True)
class Results:
    speed: Measurement
    both_cpus: Measurement
    floor: Measurement
    floor_record: Measurement
    wheel: Measurement
    auditwheel: Measurement
    wheel_beside_auditwheel: Measurement
    """Runs of (b), each just before a run of auditwheel."""
    readelf: Measurement
    lib: Measurement
    lib_one_process: Measurement
    once: Measurement
    twice: Measurement
    wheel_ours: Measurement
    wheel_pip: Measurement
    isal_floor: Measurement | None
    """Decompressing the ELF members with ISA-L (when the isal package is installed)."""
    fast_reader: Measurement | None = None
    """(h): the facts of the unpacked ELF files by the fast decoder, in this process."""
    pyelftools_reader: Measurement | None = None
    """(h): the same by pyelftools, one run beside each of ``fast_reader``'s."""
    exit_at_once: Measurement | None = None
    """(i): ``python -m buildtool`` on torch/lib, which ends with ``os._exit`` after ``main``."""
    full_teardown: Measurement | None = None
    """(i): the same ``main`` followed by the interpreter's ordinary teardown, run beside it."""
    others: dict[str, Pair] = dataclasses.field(default_factory=dict)
    """(j): by name, the wheel's decompression and verify-linkage on it."""


def run_all(
    work: Path, runs: int, auditwheel_runs: int, reader_runs: int, others: bool = True
) -> Results:
    env = child_environment(work)
    wheel = download_torch(work)
    members, all_members = wheel_members(wheel)
    root = unpack(wheel, work)
    lib = root / "torch" / "lib"
    once, twice = scaling_folders(lib, work)
    elf_files = [root / info.filename for info in members]
    run_command(verify(lib), env)  # byte code compiled, files in the page cache
    print(f"{wheel.name}: {len(members)} ELF members")
    speed, both_cpus = measure_together(runs, [
        ("python: 10M loop additions, 1 process", loops(1)),
        ("python: the same in 2 processes at once", loops(2)),
    ])  # fmt: skip
    side_by_side = [
        ("zipfile: ELF members", in_process(lambda: unzip(wheel, members))),
        ("zipfile: all members + sha256",
         in_process(lambda: unzip(wheel, all_members, hashing=True))),
        ("buildtool: wheel", lambda: run_command(verify(wheel), env)),
    ]  # fmt: skip
    if have_isal():
        isal_floor = in_process(lambda: inflate_with_isal(wheel, members))
        side_by_side.append(("isal: ELF members", isal_floor))
    floor, record, timed_ours, *isal = measure_together(runs, side_by_side)
    ours = with_memory(timed_ours, verify(wheel), env)
    show = [sys.executable, "-m", "auditwheel", "show", str(wheel)]
    beside, theirs = measure_together(auditwheel_runs, [
        ("buildtool: wheel (beside auditwheel)", lambda: run_command(verify(wheel), env)),
        ("auditwheel show", lambda: run_command(show, env)),
    ])  # fmt: skip
    readelf = ["readelf", "--dyn-syms", "-W", *map(str, elf_files)]
    dyn_syms = measure("readelf --dyn-syms", runs, lambda: run_command(readelf, env))
    on_lib, on_lib_one = measure_together(runs, [
        ("buildtool: torch/lib", lambda: run_command(verify(lib), env)),
        ("buildtool: torch/lib, one process",
         lambda: run_command(verify(lib, "--jobs", "1"), env)),
    ])  # fmt: skip
    on_once, on_twice = measure_together(runs, [
        ("buildtool: 1x files", lambda: run_command(verify(once), env)),
        ("buildtool: 2x files", lambda: run_command(verify(twice), env)),
    ])  # fmt: skip
    wheel_ours, wheel_pip = wheel_no_op(work, env, runs)
    fast_reader, pyelftools_reader = readers(elf_files, reader_runs)
    exit_at_once, full_teardown = teardown(lib, env, runs)
    return Results(
        speed, both_cpus, floor, record, ours, theirs, beside, dyn_syms,
        with_memory(on_lib, verify(lib), env), on_lib_one, with_memory(on_once, verify(once), env),
        with_memory(on_twice, verify(twice), env), wheel_ours, wheel_pip,
        isal[0] if isal else None, fast_reader, pyelftools_reader, exit_at_once, full_teardown,
        other_wheels(work, env, runs) if others else {},
    )  # fmt: skip


def read_facts(files: Sequence[Path], reader: str) -> int:
    """The facts of every file, read in this process by one reader (as ``--reader`` chooses, on
    one CPU and without the checks); the number of ELF files among them."""
    from buildtool.linkage.binaries.elf import read_elf_facts_pyelftools, read_elf_file

    read = read_elf_facts_pyelftools if reader == "pyelftools" else read_elf_file
    return sum(read(path, str(path)) is not None for path in files)


def readers(files: Sequence[Path], runs: int) -> tuple[Measurement, Measurement]:
    """The fast decoder and pyelftools on the same files, one run of each per round."""
    fast, reference = measure_together(runs, [
        ("fast decoder: facts of the ELF files", in_process(lambda: read_facts(files, "fast"))),
        ("pyelftools: the same facts", in_process(lambda: read_facts(files, "pyelftools"))),
    ])  # fmt: skip
    return fast, reference


TEARDOWN_SCRIPT = "import sys; from buildtool.cli import main; sys.exit(main(sys.argv[1:]))"
"""``main`` without ``cli.console``'s ``os._exit``: the interpreter frees every object on exit."""


def teardown(lib: Path, env: dict[str, str], runs: int) -> tuple[Measurement, Measurement]:
    """What ``os._exit`` after ``main`` saves: the same check, with and without the teardown."""
    ordinary = [sys.executable, "-c", TEARDOWN_SCRIPT, "verify-linkage", "--no-recipe", str(lib)]
    at_once, full = measure_together(runs, [
        ("buildtool: torch/lib, os._exit after main", lambda: run_command(verify(lib), env)),
        ("buildtool: torch/lib, ordinary teardown", lambda: run_command(ordinary, env)),
    ])  # fmt: skip
    return at_once, full


# --- the report -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Target:
    what: str
    value: str
    goal: str
    met: bool


def targets(r: Results) -> list[Target]:
    floor = paired_ratio(r.wheel, r.floor)
    faster = paired_ratio(r.auditwheel, r.wheel_beside_auditwheel)
    scale = paired_ratio(r.twice, r.once)
    no_op = paired_ratio(r.wheel_ours, r.wheel_pip)
    lib_mib = r.lib.peak_rss / MIB
    wheel_mib = r.wheel.peak_rss / MIB
    others = [
        Target(
            f"{name} wheel / zlib decompression of every member",
            f"{ratio:.2f}x",
            "<= 1.2x",
            ratio <= 1.2,
        )
        for name, pair in r.others.items()
        if (ratio := paired_ratio(pair.ours, pair.floor))
    ]
    return [
        Target(
            "wheel / zlib decompression of its ELF members",
            f"{floor:.2f}x",
            "<= 0.8x",
            floor <= 0.8,
        ),
        Target(
            "wheel peak RSS",
            f"{wheel_mib:.0f} MiB",
            f"<= {BEFORE_PEAK_RSS_MIB} MiB (before)",
            wheel_mib <= BEFORE_PEAK_RSS_MIB,
        ),
        Target("auditwheel show / wheel", f"{faster:.1f}x faster", ">= 25x faster", faster >= 25),
        Target("torch/lib wall", f"{r.lib.seconds:.2f} s", "<= 0.5 s", r.lib.seconds <= 0.5),
        Target("torch/lib peak RSS", f"{lib_mib:.0f} MiB", "<= 120 MiB", lib_mib <= 120),
        Target("2x files / 1x files", f"{scale:.2f}x", "<= 2.1x", scale <= 2.1),
        Target("buildtool wheel / pip wheel (no-op)", f"{no_op:.2f}x", "<= 1.3x", no_op <= 1.3),
        *others,
    ]


def _cpus() -> int | None:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def machine() -> list[str]:
    """The machine by its CPUs alone (a shared host's model and kernel say nothing useful)."""
    return [
        f"- CPUs: {_cpus()}",
        f"- Python {platform.python_version()} on {platform.system()}",
        f"- date: {datetime.date.today().isoformat()}",
    ]


def _row(m: Measurement, memory: bool = False) -> str:
    rss = f"{m.peak_rss / MIB:.0f} MiB" if memory else ""
    pss = f"{m.peak_pss / MIB:.0f} MiB" if m.sampled else ""
    runs = ", ".join(f"{run.seconds:.2f} s" for run in m.runs)
    return f"| {m.name} | {m.seconds:.2f} s | {rss} | {pss} | {runs} |"


def tables(r: Results) -> list[str]:
    timed = [
        (r.speed, False), (r.both_cpus, False), (r.floor, False), (r.floor_record, False),
        (r.wheel, True), (r.wheel_beside_auditwheel, False), (r.auditwheel, True),
        (r.readelf, False), (r.lib, True), (r.lib_one_process, True), (r.once, True),
        (r.twice, True), (r.wheel_ours, False), (r.wheel_pip, False),
    ]  # fmt: skip
    if r.isal_floor is not None:
        timed.insert(4, (r.isal_floor, False))
    extra = (r.fast_reader, r.pyelftools_reader, r.exit_at_once, r.full_teardown)
    timed += [(m, False) for m in extra if m is not None]
    timed += [
        (m, memory)
        for pair in r.others.values()
        for m, memory in ((pair.floor, False), (pair.ours, True))
    ]
    header = (
        "| measurement | median | peak RSS (largest process) | peak PSS (all processes) | runs |"
    )
    verdicts = [f"| {t.what} | {t.value} | {t.goal} | {_verdict(t)} |" for t in targets(r)]
    return [
        header,
        "|---|---|---|---|---|",
        *(_row(m, memory) for m, memory in timed),
        "",
        "| target | measured | goal | |",
        "|---|---|---|---|",
        *verdicts,
        *comparisons(r),
    ]


def comparisons(r: Results) -> list[str]:
    """Ratios without a target: how low the wheel's ratio could go at its CPU time, the wheel
    against zipfile doing the read's own work, what the pyelftools cross-check costs beside the
    fast decoder, and what ending with ``os._exit`` saves (the reason ``cli.console`` does
    it)."""
    rows = [busy_bound_row(r.wheel, r.floor), same_work_row(r.wheel, r.floor_record)]
    if r.fast_reader is not None and r.pyelftools_reader is not None:
        slower = paired_ratio(r.pyelftools_reader, r.fast_reader)
        rows.append(f"| fast decoder vs pyelftools | pyelftools takes {slower:.1f}x as long |")
    if r.exit_at_once is not None and r.full_teardown is not None:
        saved = statistics.median(
            full.seconds - once.seconds
            for once, full in zip(r.exit_at_once.runs, r.full_teardown.runs, strict=True)
        )
        ratio = paired_ratio(r.full_teardown, r.exit_at_once)
        rows.append(
            f"| os._exit after main vs ordinary teardown (torch/lib) | teardown takes "
            f"{ratio:.2f}x as long ({saved * 1000:.0f} ms more, median of paired runs) |"
        )
    return ["", "| comparison | ratio |", "|---|---|", *rows]


def busy_bound(ours: Measurement, floor: Measurement, cpus: int) -> float:
    """The least ``paired_ratio(ours, floor)`` could be had ``ours`` kept ``cpus`` CPUs busy
    from its start to its exit: its CPU time spread over them, run by run."""
    pairs = zip(ours.runs, floor.runs, strict=True)
    return statistics.median(mine.cpu_seconds / cpus / theirs.seconds for mine, theirs in pairs)


def cpu_figures(ours: Measurement, floor: Measurement) -> tuple[float, int, float]:
    """``ours``' median CPU time, this machine's CPUs, and its ``busy_bound`` against ``floor``."""
    cpus = _cpus() or 1
    cpu = statistics.median(run.cpu_seconds for run in ours.runs)
    return cpu, cpus, busy_bound(ours, floor, cpus)


def busy_bound_row(ours: Measurement, floor: Measurement) -> str:
    cpu, cpus, bound = cpu_figures(ours, floor)
    return (
        f"| wheel: its CPU time ({cpu:.2f} s) spread over {cpus} CPUs / zlib decompression | "
        f"{bound:.2f}x: the least the wheel's ratio could be with every CPU busy throughout |"
    )


def same_work_row(ours: Measurement, record: Measurement) -> str:
    """The wheel against zipfile doing the work the read does on every member: inflate it and
    hash it for RECORD (the zlib line inflates the ELF members alone)."""
    ratio = paired_ratio(ours, record)
    return (
        f"| wheel / zlib decompression and sha256 of every member | {ratio:.2f}x: what a read "
        "checking every member against RECORD costs with zipfile, on one CPU |"
    )


ISSUE_HOST: Final = {"zipfile: ELF members": 1.44, "readelf --dyn-syms": 1.45}
"""Seconds the performance issue's host took for these, when its targets were set."""


def host_speed(r: Results) -> list[str]:
    """How this run's host compares with the issue's, by two commands of fixed work; the only
    absolute target (torch/lib wall) scaled by it. The verdicts above are not scaled."""
    measured = {m.name: m.seconds for m in (r.floor, r.readelf)}
    factor = statistics.median(measured[name] / then for name, then in ISSUE_HOST.items())
    took = " and ".join(f"{measured[name]:.2f} s for `{name}`" for name in ISSUE_HOST)
    then = " and ".join(f"{seconds:.2f} s" for seconds in ISSUE_HOST.values())
    return [
        f"This run's host took {took},",
        f"where the host the issue's figures came from took {then}: {factor:.2f} times as long.",
        "torch/lib's wall target is absolute; at that host's speed this run's",
        f"{r.lib.seconds:.2f} s would be {r.lib.seconds / factor:.2f} s.",
    ]


def _verdict(target: Target) -> str:
    return "met" if target.met else "missed"


NOTES = """\
How each figure is taken: wall time of the whole command (interpreter start included) with
`time.perf_counter`, the median of the runs listed; the zipfile figures are the decompression
alone, in the benchmark's own process. Peak RSS is `ru_maxrss` of the command as `wait4` reports
it: the largest resident set of the command or of any worker process it started. Peak PSS adds
up, every 5 ms, the proportional set sizes (`/proc/<pid>/smaps_rollup`) of the command and its
workers, so shared pages count once; it comes from one more run, not timed, as sampling slows
the command down. Files are in the page cache (a warm-up run comes first) and byte code is
cached, as it is for an installed package.

The first line is a fixed amount of pure-Python work in a new interpreter, for comparing
machines; the second runs it in two interpreters at once, in the same rounds, so it takes as
long as the first while both CPUs are there for the taking and up to twice as long when one is
taken by something else. Their spread over the runs shows how steady the machine was: a
virtual machine shares its host's CPUs.

Commands compared with each other are measured in rounds, one run of each per round (the
zipfile lines, the isal line and `buildtool: wheel`; `buildtool: wheel (beside auditwheel)` and
`auditwheel show`; the two torch/lib lines; 1x and 2x files; the two no-op wheel builds), and a
ratio in the targets table is the median of the ratios of the runs of one round: the machine
changes speed from minute to minute, and runs made back to back see the same machine. The one
process torch/lib line (`--jobs 1`) shows what the second CPU gave the default run.

buildtool reads the wheel member by member and checks every member against `RECORD` (size and
sha256) before trusting it, so on a wheel it decompresses and hashes every member, not only the
ELF ones: the second zipfile line is that work alone, on one CPU, and a comparison sets the
wheel's run beside it round by round. It inflates with ISA-L (the
`isal` package, a dependency on x86-64 and arm64) rather than zlib: the isal line is the
decompression of the ELF members alone with that library, on one CPU.

The wheel's CPU time (user and system time of the command and its worker processes, from
`wait4`) spread over every CPU is the least its wall time could be, were every CPU busy from the
interpreter's start to its exit; the comparison shows that bound against the zipfile line, run
by run. A wall-time ratio below it needs less CPU time, not better scheduling.

The fast decoder and pyelftools lines read the facts of the same unpacked ELF files in the
benchmark's own process, one file after another (no worker processes, no checks), one run of each
per round; the comparison is the median of the ratios of the runs of one round. It is what
`verify-linkage --reader pyelftools`, the cross-check of the fast decoder, costs.
"""


def write_readme(r: Results) -> None:
    lines = [
        "# Benchmarks",
        "",
        "`nox -s bench` runs `benchmarks/verify_torch.py`: it downloads the torch 2.13.0 CPU",
        "wheel, unpacks it, and measures buildtool beside zipfile, auditwheel and readelf in one",
        "run. The results of the last run:",
        "",
        *machine(),
        "",
        *tables(r),
        "",
        *host_speed(r),
        "",
        NOTES,
    ]
    # other benchmarks keep their sections below the marker (benchmarks/check_cmake.py)
    text = README.read_text(encoding="utf-8") if README.is_file() else ""
    start = text.find(OTHER_SECTIONS)
    kept = ["", text[start:].rstrip("\n")] if start >= 0 else []
    README.write_text("\n".join(lines + kept) + ("\n" if kept else ""), encoding="utf-8")


def performance_section(r: Results) -> list[str]:
    """The project README's performance section: this run's targets, the machine by its CPUs."""
    verdicts = [f"| {t.what} | {t.value} | {t.goal} | {_verdict(t)} |" for t in targets(r)]
    return [
        PERFORMANCE_START,
        f"One run of `nox -s bench` on {_cpus()} CPUs ({datetime.date.today().isoformat()}); "
        "every ratio is taken run by run from runs made back to back "
        "(all figures: `benchmarks/README.md`):",
        "",
        "| target | measured | goal | |",
        "|---|---|---|---|",
        *verdicts,
        "",
        busy_bound_sentence(r.wheel, r.floor),
        same_work_sentence(r.wheel, r.floor_record),
        PERFORMANCE_END,
    ]


def busy_bound_sentence(ours: Measurement, floor: Measurement) -> str:
    """What the wheel's CPU time allows, for the README (see ``busy_bound``)."""
    cpu, cpus, bound = cpu_figures(ours, floor)
    return (
        f"The wheel check spends {cpu:.2f} s of CPU time (inflating and hashing every member, "
        f"decoding and checking the binaries): spread over {cpus} CPUs kept busy from start to "
        f"exit, it would still be {bound:.2f}x the zlib decompression."
    )


def same_work_sentence(ours: Measurement, record: Measurement) -> str:
    """The wheel beside zipfile doing the read's own work, for the README (``same_work_row``)."""
    return (
        f"Beside zipfile decompressing every member and hashing it with sha256 (what checking "
        f"the wheel against RECORD takes, on one CPU), it takes {paired_ratio(ours, record):.2f}x "
        "as long."
    )


def with_performance(text: str, section: Sequence[str]) -> str:
    """``text`` (the project README) with its performance section replaced by ``section``;
    unchanged when it has none (the markers are missing)."""
    start, end = text.find(PERFORMANCE_START), text.find(PERFORMANCE_END)
    if start < 0 or end < start:
        return text
    return text[:start] + "\n".join(section) + text[end + len(PERFORMANCE_END) :]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--work-dir", type=Path, help="keeps the downloads (default: temporary)")
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (default 5)")
    parser.add_argument(
        "--no-other-platforms",
        action="store_true",
        help="leave out the other wheels: torch's macOS and Windows ones (about 100 MB each) "
        "and tensorflow-cpu's (270 MB)",
    )
    parser.add_argument(
        "--auditwheel-runs", type=int, default=3, help="(default 3: about 50 s each)"
    )
    parser.add_argument(
        "--reader-runs",
        type=int,
        default=3,
        help="rounds of the fast decoder beside pyelftools (default 3)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-") as temporary:
        work = (args.work_dir or Path(temporary)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        results = run_all(
            work, args.runs, args.auditwheel_runs, args.reader_runs, not args.no_other_platforms
        )
    print("\n".join(["", *machine(), "", *tables(results), "", *host_speed(results)]))
    write_readme(results)
    text = PROJECT_README.read_text(encoding="utf-8")
    PROJECT_README.write_text(with_performance(text, performance_section(results)), "utf-8")
    print(f"\nwritten to {README.relative_to(REPO)} and {PROJECT_README.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
