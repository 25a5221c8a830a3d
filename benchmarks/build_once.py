"""Build once, at the size of a real split: ``buildtool ci`` side by side with what the upstream
project pays for the same sources, a plain ``cmake --build`` plus zipping the two wheels.

Generates a project of a few hundred translation units split like TVM (a registry core, a
runtime with an object library, a compiler three times its size, an executable, a test), then
measures in rounds, one run of each per round, each from a fresh copy:

(a) ``buildtool ci``: configure, check-cmake, build, ctest, verify-linkage of the build tree, the
    runtime wheel and the compiler add-on (repaired, verified), installed into a fresh virtual
    environment, imported full and runtime-only;
(b) ``cmake`` configure + ``cmake --build`` of the same generated CMake, then the two wheels'
    files (``cmake --install --component``) zipped with zipfile.

Both compile through a counting compiler (a wrapper set as CC and CXX), so the report also says
how often each translation unit was compiled. Ratios are taken run by run within a round and
their median reported (the goal: ``ci`` <= 1.15x the plain build). ``python
benchmarks/build_once.py [--units N] [--runs N] [--jobs N]``.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from buildtool.cmake.run import cmake_executable, ninja_executable  # noqa: E402

PACKAGE_INIT = "from . import base  # noqa: F401  (loads the libraries)\n"

SOURCE = """\
#include <map>
#include <string>
#include <vector>
#include <algorithm>
#include "demo/{layer}.h"
namespace {{
template <int N> struct Table {{ std::map<std::string, std::vector<int>> rows; }};
int work_{index}(int x) {{
  Table<{index}> table;
  for (int i = 0; i < 64; ++i) table.rows[std::to_string(i * x)].push_back(i);
  std::vector<int> all;
  for (auto& [key, row] : table.rows) all.insert(all.end(), row.begin(), row.end());
  std::sort(all.begin(), all.end());
  return static_cast<int>(all.size());
}}
}}  // namespace
{uses}
{export} int {name}_unit_{index}(int x) {{ return work_{index}(x){call}; }}
"""

RECIPE = """\
[project]
name = "big"
package = "big"
env-prefix = "BIG"
version = "0.1.0"
python-package-dir = "python/big"

[libraries.ffi]
sources = ["ffi/*.cc"]
include-dirs = ["include"]

[libraries.runtime]
sources = ["runtime/*.cc"]
links = ["ffi"]
objects = ["gemm"]

[libraries.compiler]
sources = ["compiler/*.cc"]
links = ["runtime"]
optional = true
load = "local"

[objects.gemm]
sources = ["gemm/*.cc"]

[executables.rpc]
sources = ["apps/*.cc"]
links = ["runtime"]
no-as-needed = ["runtime"]

[tests.unit]
sources = ["tests/*.cc"]
links = ["compiler"]
"""

LAYERS = (("ffi", 0.1), ("runtime", 0.25), ("gemm", 0.05), ("compiler", 0.6))
LINKS = {"runtime": "ffi", "compiler": "runtime"}


def generate(root: Path, units: int) -> dict[str, int]:
    """The project: ``units`` translation units in four layers; returns units per layer."""
    counts = {}
    for layer, share in LAYERS:
        count = max(1, round(units * share))
        counts[layer] = count
        folder = root / layer
        folder.mkdir(parents=True)
        export = "BIG_RUNTIME_API" if layer == "gemm" else f"BIG_{layer.upper()}_API"
        header_layer = "runtime" if layer == "gemm" else layer
        for index in range(count):
            below = LINKS.get(layer)  # each library uses the one it links: kept by --as-needed
            uses = f"int {below}_unit_0(int);" if below else ""
            call = f" + {below}_unit_0(x)" if below else ""
            text = SOURCE.format(
                layer=header_layer, name=layer, index=index, export=export, uses=uses, call=call
            )
            (folder / f"{layer}_{index:04d}.cc").write_text(text, encoding="utf-8")
    include = root / "include" / "demo"
    include.mkdir(parents=True)
    for layer in ("ffi", "runtime", "compiler"):
        (include / f"{layer}.h").write_text(
            f'#pragma once\n#include "big_{layer}_export.h"\n', encoding="utf-8"
        )
    for program in ("apps", "tests"):
        (root / program).mkdir()
        (root / program / "main.cc").write_text("int main() { return 0; }\n", encoding="utf-8")
    package = root / "python" / "big"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(PACKAGE_INIT, encoding="utf-8")
    (root / "buildtool.toml").write_text(RECIPE, encoding="utf-8")
    return counts


def counting_compilers(folder: Path, log: Path) -> dict[str, str]:
    """CC and CXX wrappers that log every compile's source."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {}
    for variable, name, compiler in (("CC", "cc", "gcc"), ("CXX", "c++", "g++")):
        real = shutil.which(compiler)
        assert real is not None, f"{compiler} is needed"
        script = folder / name
        script.write_text(
            '#!/bin/sh\nfor a in "$@"; do [ "$a" = -c ] && '
            f'{{ for l in "$@"; do :; done; echo "$l" >> {log}; }}; done\n'
            f'exec {real} "$@"\n',
            encoding="utf-8",
        )
        script.chmod(0o755)
        env[variable] = str(script)
    return env


def compiles(log: Path, root: Path) -> collections.Counter[str]:
    prefix, build = str(root) + "/", str(root / "build") + "/"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return collections.Counter(
        line for line in lines if line.startswith(prefix) and not line.startswith(build)
    )


def cpu_seconds() -> float:
    """User + system time of every finished child process (and what they waited for): the
    compilers' work, which other load on the machine does not stretch the way it stretches
    wall time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def timed(measure: Callable[[Path, dict[str, str], int], float], *args: Any) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the children) of one measured run."""
    before = cpu_seconds()
    wall = measure(*args)
    return wall, cpu_seconds() - before


def buildtool_ci(project: Path, env: dict[str, str], jobs: int) -> float:
    return run([sys.executable, "-m", "buildtool", "-q", "ci", "-j", str(jobs)], project, env)


def plain_build(project: Path, env: dict[str, str], jobs: int) -> float:
    """configure + build the generated CMake, install each wheel's components, zip them."""
    start = time.perf_counter()
    build, cmake = project / "build", str(cmake_executable())
    run([cmake, "-S", str(project), "-B", str(build), "-G", "Ninja",
         f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}", "-DSKBUILD=2"], project, env)  # fmt: skip
    run([cmake, "--build", str(build), "-j", str(jobs)], project, env)
    for wheel, components in (
        ("runtime", ("python", "ffi", "runtime")),
        ("compiler", ("compiler",)),
    ):
        staging = project / "staging" / wheel
        for component in components:
            run([cmake, "--install", str(build), "--prefix", str(staging),
                 "--component", component], project, env)  # fmt: skip
        with zipfile.ZipFile(project / f"{wheel}.whl", "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(staging.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(staging).as_posix())
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=300, help="translation units (300)")
    parser.add_argument("--runs", type=int, default=3, help="rounds (3)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="compile jobs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="build-once-") as scratch:
        template = Path(scratch) / "template"
        counts = generate(template, args.units)
        # the generated files are committed, as a project keeps them (ci checks they are current)
        configure = [sys.executable, "-m", "buildtool", "-q", "configure", "--build-dir"]
        run([*configure, str(Path(scratch) / "configured")], template, dict(os.environ))
        env_base = {k: v for k, v in os.environ.items() if k not in ("CMAKE_ARGS", "VIRTUAL_ENV")}
        times: dict[str, list[float]] = {"ci": [], "plain": []}
        cpu: dict[str, list[float]] = {"ci": [], "plain": []}
        seen: dict[str, collections.Counter[str]] = {}
        for round_index in range(args.runs):
            for name, measure in (("ci", buildtool_ci), ("plain", plain_build)):
                project = Path(scratch) / f"{name}-{round_index}"
                shutil.copytree(template, project)
                log = Path(scratch) / f"{name}-{round_index}.log"
                env = {**env_base, **counting_compilers(Path(scratch) / f"cc-{name}", log)}
                wall, used = timed(measure, project, env, args.jobs)
                times[name].append(wall)
                cpu[name].append(used)
                seen[name] = compiles(log, project)
                shutil.rmtree(project)
        report(args, counts, times, cpu, seen)
    return 0


def report(
    args: argparse.Namespace,
    counts: dict[str, int],
    times: dict[str, list[float]],
    cpu: dict[str, list[float]],
    seen: dict[str, collections.Counter[str]],
) -> None:
    total = sum(counts.values()) + 2
    print(f"project: {total} translation units ({counts}, 2 executables), -j{args.jobs}")
    for name, label in (("ci", "buildtool ci"), ("plain", "cmake --build + zip")):
        runs = ", ".join(f"{t:.1f}" for t in times[name])
        used = ", ".join(f"{t:.1f}" for t in cpu[name])
        per_unit = collections.Counter(seen[name].values())
        print(
            f"{label:>20}: wall median {statistics.median(times[name]):.1f} s ({runs}); "
            f"CPU median {statistics.median(cpu[name]):.1f} s ({used}); "
            f"{sum(seen[name].values())} compiles of {len(seen[name])} sources "
            f"(compiled n times: {dict(sorted(per_unit.items()))})"
        )
    for what, values in (("wall", times), ("CPU", cpu)):
        ratios = [a / b for a, b in zip(values["ci"], values["plain"], strict=True)]
        print(f"ratio ci / plain ({what}), run by run: median {statistics.median(ratios):.2f}x "
              f"({', '.join(f'{r:.2f}' for r in ratios)}); goal <= 1.15x")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
