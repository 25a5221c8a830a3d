"""check-cmake at the size of a big project, side by side with the ``cmake`` it follows.

Generates a CMake project of hundreds of targets (OBJECT libraries, shared libraries linking
each other, executables linking them with --no-as-needed; the sources are one-line files, never
compiled), then measures in rounds, one run of each per round:

(a) ``cmake`` configuring it into a fresh build folder (compiler checks included), with the
    File API query in place, as a project's CI runs it;
(b) ``cmake BUILD_DIR`` re-run on that folder: what check-cmake pays when the reply is stale;
(c) reading the code model (``buildtool.cmakecheck.codemodel.read_codemodel``, plain json) and
    running every check with a policy of every library and executable, in this process;
(d) the same read with scikit-build-core's ``load_reply_dir``, alone (no checks);
(e) ``buildtool check-cmake BUILD_DIR --recipe R``, the whole command (interpreter start, the
    toolchain probe and the report included).

Ratios are taken run by run within a round and their median reported. Writes the results to the
check-cmake section of ``benchmarks/README.md``. ``python benchmarks/check_cmake.py
[--libraries N] [--runs N]``.
"""

from __future__ import annotations

import argparse
import datetime
import os
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
sys.path.insert(0, str(REPO))

from buildtool.cmake.run import cmake_executable, ninja_executable, write_file_api_query  # noqa: E402
from buildtool.cmakecheck.codemodel import read_codemodel  # noqa: E402
from buildtool.cmakecheck.policy import policy_for_recipe  # noqa: E402
from buildtool.cmakecheck.rules import check_codemodel  # noqa: E402
from buildtool.recipe.load import load_recipe  # noqa: E402

README = REPO / "benchmarks" / "README.md"
SECTION = "<!-- other benchmarks -->\n## check-cmake"


def generate(root: Path, libraries: int) -> tuple[Path, int]:
    """A project of ``libraries`` shared libraries, as many OBJECT libraries (one per library)
    and an executable per ten libraries; and a policy recipe for it. Returns (recipe, targets)."""
    (root / "src").mkdir(parents=True)
    cmake = [
        "cmake_minimum_required(VERSION 3.20)",
        "project(big LANGUAGES CXX)",
        "set(CMAKE_POSITION_INDEPENDENT_CODE ON)",
        'set(CMAKE_LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/lib")',
        "set(CMAKE_BUILD_WITH_INSTALL_RPATH ON)",
        'set(CMAKE_INSTALL_RPATH "$ORIGIN")',
    ]
    recipe = ['[project]\nname = "big"\n']
    for index in range(libraries):
        for kind in ("lib", "obj"):
            (root / "src" / f"{kind}{index}.cc").write_text(
                f"int {kind}{index}() {{ return {index}; }}\n"
            )
        cmake.append(f"add_library(obj{index} OBJECT src/obj{index}.cc)")
        cmake.append(
            f"add_library(lib{index} SHARED src/lib{index}.cc $<TARGET_OBJECTS:obj{index}>)"
        )
        links = [f"lib{other}" for other in (index - 1, index // 2) if 0 <= other < index]
        links = list(dict.fromkeys(links))
        if links:
            cmake.append(f"target_link_libraries(lib{index} PUBLIC {' '.join(links)})")
        recipe.append(
            f'[libraries.lib{index}]\nfile = "liblib{index}.so"\nobjects = ["obj{index}"]'
        )
        if links:
            recipe.append("links = [" + ", ".join(f'"{link}"' for link in links) + "]")
        recipe.append(f"[objects.obj{index}]\n")
    executables = libraries // 10
    for index in range(executables):
        (root / "src" / f"exe{index}.cc").write_text("int main() { return 0; }\n")
        library = f"lib{index * 10 + 9}"
        cmake.append(f"add_executable(exe{index} src/exe{index}.cc)")
        cmake.append(
            f"target_link_libraries(exe{index} PRIVATE -Wl,--push-state,--no-as-needed {library} "
            "-Wl,--pop-state)"
        )
        cmake.append(f'set_target_properties(exe{index} PROPERTIES INSTALL_RPATH "$ORIGIN/../lib")')
        recipe.append(
            f'[executables.exe{index}]\nlinks = ["{library}"]\nno-as-needed = ["{library}"]\n'
        )
    (root / "CMakeLists.txt").write_text("\n".join(cmake) + "\n")
    (root / "buildtool.toml").write_text("\n".join(recipe) + "\n")
    return root / "buildtool.toml", 2 * libraries + executables


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def run(command: list[str | Path]) -> None:
    subprocess.run(command, check=True, capture_output=True)


def configure_fresh(source: Path, build: Path) -> None:
    shutil.rmtree(build, ignore_errors=True)
    write_file_api_query(build)
    run([cmake_executable(), "-S", source, "-B", build, "-G", "Ninja",
         f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}"])  # fmt: skip


def measure(source: Path, recipe: Path, runs: int) -> dict[str, list[float]]:
    build = source.parent / "build"
    reply = build / ".cmake" / "api" / "v1" / "reply"
    policy = policy_for_recipe(load_recipe(recipe))
    configure_fresh(source, build)  # warm-up: page cache, byte code

    def checks() -> None:
        assert not check_codemodel(read_codemodel(reply), policy, as_needed_default=True)

    def skbuild() -> None:
        from scikit_build_core.file_api.reply import load_reply_dir

        load_reply_dir(reply)

    command: list[str | Path] = [sys.executable, "-m", "buildtool", "-q", "check-cmake"]
    command += [build, "--recipe", recipe]
    checks()  # warm-up: imports, byte code
    skbuild()
    series: dict[str, list[float]] = {name: [] for name in "abcde"}
    for _ in range(runs):
        series["a"].append(timed(lambda: configure_fresh(source, build)))
        series["b"].append(timed(lambda: run([cmake_executable(), build])))
        series["c"].append(timed(checks))
        series["d"].append(timed(skbuild))
        series["e"].append(timed(lambda: run(command)))
    return series


def paired(numerator: list[float], denominator: list[float]) -> float:
    return statistics.median(n / d for n, d in zip(numerator, denominator, strict=True))


LABELS = {
    "a": "cmake: configure, fresh build folder",
    "b": "cmake BUILD_DIR: re-run (a stale reply)",
    "c": "buildtool: code model read + every check (plain json)",
    "d": "scikit-build-core load_reply_dir: read only",
    "e": "buildtool check-cmake BUILD_DIR --recipe R (whole command)",
}


def report(series: dict[str, list[float]], targets: int) -> list[str]:
    lines = [
        SECTION,
        "",
        "`python benchmarks/check_cmake.py` generates a CMake project of "
        f"{targets} targets and measures, in rounds, `cmake` beside check-cmake "
        f"({platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} "
        f"CPUs, {datetime.date.today().isoformat()}):",
        "",
        "| measurement | median | runs |",
        "|---|---|---|",
    ]
    for key, label in LABELS.items():
        runs = ", ".join(f"{s:.3f} s" for s in series[key])
        lines.append(f"| {label} | {statistics.median(series[key]):.3f} s | {runs} |")
    lines += [
        "",
        "| ratio (median of the per-round ratios) | measured |",
        "|---|---|",
        f"| cmake configure / code model read + checks | {paired(series['a'], series['c']):.1f}x |",
        f"| cmake re-run / code model read + checks | {paired(series['b'], series['c']):.1f}x |",
        f"| load_reply_dir (read only) / plain json read + checks | "
        f"{paired(series['d'], series['c']):.1f}x |",
        "| whole check-cmake command / cmake configure | "
        f"{paired(series['e'], series['a']):.2f}x |",
        "",
        "check-cmake reads the reply with the plain json module: scikit-build-core's",
        "`load_reply_dir` builds dataclasses for every field of every target, which the checks",
        "never read (the third ratio).",
    ]
    return lines


def write_readme(lines: list[str]) -> None:
    text = README.read_text(encoding="utf-8") if README.is_file() else ""
    start = text.find(SECTION)
    head = text[:start].rstrip("\n") if start >= 0 else text.rstrip("\n")
    README.write_text(head + "\n\n" + "\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--libraries", type=int, default=200, help="shared libraries (default 200)")
    parser.add_argument("--runs", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--no-readme", action="store_true", help="print only")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        recipe, targets = generate(Path(folder) / "big", args.libraries)
        series = measure(recipe.parent, recipe, args.runs)
    lines = report(series, targets)
    print("\n".join(lines))
    if not args.no_readme:
        write_readme(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
