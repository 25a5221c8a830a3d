"""verify-linkage's cost against the size of its input, on synthetic ELF files.

Each dimension is measured at a size N and at 4N, side by side in rounds (one run of each per
round), with ``buildtool verify-linkage --no-recipe`` as a user runs it (interpreter start
included): a cost linear in the input grows about 4x (a little less, the start-up is fixed), a
quadratic one about 16x. The dimensions:

- ``needed``: one library with N DT_NEEDED entries that nothing provides (each a finding);
- ``symbols``: a library defining N functions and one referencing all of them and N more
  that nothing defines (one finding listing them);
- ``runpath``: a library with N RUNPATH entries (absent folders) and ten NEEDED entries;
- ``files``: N libraries in one folder, each needing one base library.

Ratios are taken run by run within a round and their median reported; the results go to the
linear-cost section of ``benchmarks/README.md``. ``python benchmarks/linear_cost.py [--size N]
[--runs N]`` (needs gcc and patchelf).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "benchmarks" / "README.md"
SECTION = "<!-- linear cost -->"


def _gcc(out: Path, source: str, *flags: str) -> Path:
    src = out.with_suffix(".c")
    src.write_text(source)
    command = ["gcc", "-shared", "-fPIC", "-O0", "-o", str(out), str(src), *flags]
    subprocess.run(command, check=True, capture_output=True)
    return out


def _patchelf(path: Path, *arguments: str) -> None:
    subprocess.run(["patchelf", *arguments, str(path)], check=True)


def needed(folder: Path, n: int) -> Path:
    library = _gcc(folder / "libmany.so", "int f(void) { return 1; }\n")
    names = [arg for i in range(n) for arg in ("--add-needed", f"libabsent{i:05d}.so.1")]
    _patchelf(library, *names)
    return library


def symbols(folder: Path, n: int) -> Path:
    defined = "".join(f"int s{i}(void) {{ return {i}; }}\n" for i in range(n))
    _gcc(folder / "libdefs.so", defined, "-Wl,-soname,libdefs.so")
    uses = "".join(f"int s{i}(void);\nint u{i}(void);\n" for i in range(n))
    uses += "int all(void) { return 0" + "".join(f" + s{i}() + u{i}()" for i in range(n)) + "; }\n"
    _gcc(folder / "libuses.so", uses, f"-L{folder}", "-ldefs", "-Wl,-rpath,$ORIGIN")
    return folder


def runpath(folder: Path, n: int) -> Path:
    library = _gcc(folder / "libsearch.so", "int f(void) { return 1; }\n")
    entries = ":".join(f"$ORIGIN/absent{i}" for i in range(n))
    _patchelf(library, "--set-rpath", entries)
    _patchelf(library, *[a for i in range(10) for a in ("--add-needed", f"libabsent{i}.so.1")])
    return library


def files(folder: Path, n: int) -> Path:
    _gcc(folder / "libbase.so", "int base(void) { return 1; }\n", "-Wl,-soname,libbase.so")
    template = _gcc(folder / "template.so", "int base(void);\nint f(void) { return base(); }\n",
                    f"-L{folder}", "-lbase", "-Wl,-rpath,$ORIGIN")  # fmt: skip
    for i in range(n):
        copy = folder / f"libpart{i}.so"
        shutil.copy(template, copy)
        _patchelf(copy, "--set-soname", copy.name)
    template.unlink()
    return folder


DIMENSIONS: dict[str, Callable[[Path, int], Path]] = {
    "needed": needed,
    "symbols": symbols,
    "runpath": runpath,
    "files": files,
}


def _seconds(target: Path) -> float:
    command = [sys.executable, "-m", "buildtool", "verify-linkage", "--no-recipe", str(target)]
    start = time.perf_counter()
    run = subprocess.run(command, check=False, capture_output=True, cwd=target.parent)
    seconds = time.perf_counter() - start
    if run.returncode not in (0, 1):  # 1: findings, as planted; anything else measures nothing
        raise SystemExit(f"verify-linkage failed on {target}: {run.stderr.decode()[-400:]}")
    return seconds


def measure(name: str, size: int, runs: int, work: Path) -> tuple[float, float, float]:
    """(median seconds at N, median at 4N, median per-round ratio)."""
    made = {}
    for scale in (size, 4 * size):
        folder = work / f"{name}-{scale}"
        folder.mkdir()
        made[scale] = DIMENSIONS[name](folder, scale)
    small, large = [], []
    for _ in range(runs):
        small.append(_seconds(made[size]))
        large.append(_seconds(made[4 * size]))
    ratios = [b / a for a, b in zip(small, large, strict=True)]
    return statistics.median(small), statistics.median(large), statistics.median(ratios)


def render(rows: list[tuple[str, float, float, float]], size: int, runs: int) -> str:
    lines = [
        SECTION,
        "## verify-linkage's cost against its input size",
        "",
        f"`python benchmarks/linear_cost.py --size {size} --runs {runs}`, "
        f"{datetime.date.today()}, {platform.machine()}, Python {platform.python_version()}: "
        "the whole command on synthetic inputs at N and 4N, median of per-round ratios "
        "(linear: about 4x, quadratic: about 16x).",
        "",
        f"| dimension | N = {size} | 4N = {4 * size} | 4N / N |",
        "|---|---|---|---|",
    ]
    lines += [f"| {n} | {a:.2f} s | {b:.2f} s | {r:.1f}x |" for n, a, b, r in rows]
    return "\n".join(lines) + "\n"


def _write(section: str) -> None:
    text = README.read_text(encoding="utf-8") if README.exists() else ""
    before = text.split(SECTION)[0].rstrip("\n")
    after = ""
    if SECTION in text:
        rest = text.split(SECTION, 1)[1]
        after = rest[rest.find("\n<!--") :] if "\n<!--" in rest else ""
    README.write_text(f"{before}\n\n{section}{after}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=sorted(DIMENSIONS), action="append")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.only or list(DIMENSIONS):
            small, large, ratio = measure(name, args.size, args.runs, Path(work))
            print(f"{name}: {small:.2f} s -> {large:.2f} s ({ratio:.1f}x)", flush=True)
            rows.append((name, small, large, ratio))
    section = render(rows, args.size, args.runs)
    if not args.only:
        _write(section)
    print(section)


if __name__ == "__main__":
    main()
