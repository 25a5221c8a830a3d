"""The example split built for Windows with mingw-w64 and run under wine: ground truth for the
generated CMake on a PE linker, without a Windows machine.

The build uses the toolchain file buildtool ships (``cmake-templates/toolchains/``), the PyPI
cmake and ninja; the executables run under wine in a prefix made once per session. Two planted
defects really fail there: a DLL missing beside the executable, and the registration-only
runtime DLL dropped from minrpc's import table (the PE form of ``--as-needed``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from buildtool.linkage.binaries.code_walk import MAX_LIBRARY_INSTRUCTIONS
from buildtool.linkage.binaries.pe.decoder import MalformedPE, read_pe_facts
from buildtool.linkage.binaries.read import read_initializers_again
from tests.builders import constructor_fillers, write_wheel
from tests.conftest import DEMO_RECIPE, DUPLICATE_GEMM, CliRunner, edited_example, require
from tests.cross import (
    TOOLCHAINS,
    buildtool_cross_build,
    cross_build,
    damaged_copies,
    elf_only_link_flags,
    source_without_runtime_anchor,
)
from tests.test_platforms import check

pytestmark = pytest.mark.integration

log = logging.getLogger(__name__)

TOOLCHAIN = TOOLCHAINS / "mingw-w64-x86_64.cmake"
TRIPLE = "x86_64-w64-mingw32"
PROJECT_DLLS = ["libdemo_compiler.dll", "libdemo_ffi.dll", "libdemo_runtime.dll"]


def _require_mingw() -> None:
    compilers = (f"{TRIPLE}-g++-posix", f"{TRIPLE}-g++")
    require(
        any(shutil.which(name) for name in compilers),
        "the mingw-w64 cross compiler is not installed (Debian: g++-mingw-w64-x86-64)",
    )


def _imports(binary: Path) -> list[str]:
    """DLL names of a PE file's import table, as mingw's objdump lists them."""
    objdump = shutil.which(f"{TRIPLE}-objdump")
    assert objdump, "mingw-w64's binutils come with its compiler"
    completed = subprocess.run([objdump, "-p", binary], capture_output=True, text=True, check=True)
    lines = completed.stdout.splitlines()
    return [line.split(":", 1)[1].strip() for line in lines if "DLL Name:" in line]


@pytest.fixture(scope="session")
def windows_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example, full variant, cross-built with ``buildtool build --toolchain``."""
    _require_mingw()
    return buildtool_cross_build(tmp_path_factory.mktemp("win64") / "build", TOOLCHAIN.stem)


@pytest.fixture(scope="session")
def dropped_runtime_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """minrpc without ``no-as-needed``: the generated CMake as it would be without the rule."""
    _require_mingw()
    root = tmp_path_factory.mktemp("win64-dropped")
    source = source_without_runtime_anchor(root)
    return cross_build(source, root / "build", TOOLCHAIN, "demo_minrpc")


@pytest.fixture(scope="session")
def duplicate_gemm_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gemm linked into the compiler DLL too (the TVM fpA_intB_gemm bug), cross-built."""
    _require_mingw()
    root = tmp_path_factory.mktemp("win64-dup")
    return cross_build(edited_example(root, *DUPLICATE_GEMM), root / "build", TOOLCHAIN)


@pytest.fixture(scope="session")
def wine_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A wine prefix of its own, created once (wine's first start is the expensive part)."""
    wine = shutil.which("wine") or shutil.which("wine64")
    require(wine is not None, "wine is not installed (Debian: wine and wine64)")
    assert wine is not None
    prefix = tmp_path_factory.mktemp("wineprefix")
    env = {
        **os.environ,
        "WINEPREFIX": str(prefix),
        # Loader errors only (a missing DLL is named); no Mono or Gecko installers.
        "WINEDEBUG": "-all,err+module",
        "WINEDLLOVERRIDES": "mscoree,mshtml=",
        "WINE": wine,
    }
    started = time.perf_counter()
    subprocess.run([wine, "wineboot", "-i"], env=env, capture_output=True, check=True, timeout=300)
    log.info("wine prefix created in %.1f s", time.perf_counter() - started)
    yield env
    wineserver = shutil.which("wineserver") or "/usr/lib/wine/wineserver"
    subprocess.run([wineserver, "-k"], env=env, capture_output=True, check=False)
    shutil.rmtree(prefix, ignore_errors=True)  # hundreds of MB of Windows system files


def _run_under_wine(env: dict[str, str], exe: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([env["WINE"], exe, *argv], env=env, capture_output=True, text=True,
                          check=False, timeout=120, cwd=exe.parent)  # fmt: skip


def test_dlls_go_beside_the_executables_and_import_libraries_into_lib(
    windows_build: Path,
) -> None:
    bin_dir = windows_build / "bin"
    assert sorted(path.name for path in bin_dir.glob("*.dll")) == PROJECT_DLLS
    assert (bin_dir / "minrpc.exe").is_file()
    assert (bin_dir / "cpptest.exe").is_file()
    assert sorted(path.name for path in (windows_build / "lib").glob("*.dll.a")) == [
        f"{name}.a" for name in PROJECT_DLLS
    ]


def test_no_elf_only_flags_reach_the_pe_linker(windows_build: Path) -> None:
    assert elf_only_link_flags(windows_build) == []


def test_the_split_holds_on_windows(windows_build: Path) -> None:
    bin_dir = windows_build / "bin"
    assert "libdemo_compiler.dll" not in _imports(bin_dir / "libdemo_runtime.dll")
    assert "libdemo_runtime.dll" in _imports(bin_dir / "libdemo_compiler.dll")
    # Only system DLLs and the project's own: the toolchain links the compiler's runtime in.
    assert set(_imports(bin_dir / "minrpc.exe")) == {
        "KERNEL32.dll",
        "msvcrt.dll",
        "libdemo_ffi.dll",
        "libdemo_runtime.dll",
    }


def test_minrpc_resolves_its_runtime_registrations_under_wine(
    windows_build: Path, wine_env: dict[str, str]
) -> None:
    completed = _run_under_wine(wine_env, windows_build / "bin" / "minrpc.exe")
    assert completed.returncode == 0, completed.stderr
    assert "rpc.testing.GetShapeSize(2,3,4) = 24" in completed.stdout
    assert "rpc.testing.GetShapeElem(2,3,4,1) = 3" in completed.stdout


def test_cpptest_passes_under_wine(windows_build: Path, wine_env: dict[str, str]) -> None:
    completed = _run_under_wine(wine_env, windows_build / "bin" / "cpptest.exe")
    assert completed.returncode == 0, completed.stdout
    assert "13 passed, 0 failed" in completed.stdout


@pytest.fixture
def missing_runtime_dll(windows_build: Path, tmp_path: Path) -> Path:
    """The build's bin/ with libdemo_runtime.dll deleted."""
    bin_dir = tmp_path / "bin"
    shutil.copytree(windows_build / "bin", bin_dir)
    (bin_dir / "libdemo_runtime.dll").unlink()
    return bin_dir


def test_a_dll_missing_beside_minrpc_fails_to_load(
    missing_runtime_dll: Path, wine_env: dict[str, str]
) -> None:
    completed = _run_under_wine(wine_env, missing_runtime_dll / "minrpc.exe")
    assert completed.returncode != 0
    assert "libdemo_runtime.dll" in completed.stderr
    assert "not found" in completed.stderr
    assert "rpc.testing" not in completed.stdout


def test_without_the_anchor_the_registration_only_dll_is_dropped(
    dropped_runtime_build: Path, windows_build: Path, wine_env: dict[str, str]
) -> None:
    dropped = dropped_runtime_build / "bin" / "minrpc.exe"
    assert "libdemo_runtime.dll" not in _imports(dropped)
    assert "libdemo_runtime.dll" in _imports(windows_build / "bin" / "minrpc.exe")
    # It loads (every DLL it imports is there) but the registrations never ran: exit 3.
    completed = _run_under_wine(wine_env, dropped)
    assert completed.returncode == 3, completed.stderr
    assert "'rpc.testing.GetShapeSize' is not registered" in completed.stderr


def _verify_json(run_cli: CliRunner, path: Path, *options: str) -> tuple[int, dict[str, object]]:
    """verify-linkage's JSON report on ``path``, without a recipe unless ``options`` give one."""
    result = run_cli("verify-linkage", str(path), *(options or ["--no-recipe"]), "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return result.exit_code, report


def test_verify_linkage_checks_the_windows_build(windows_build: Path, run_cli: CliRunner) -> None:
    code, report = _verify_json(run_cli, windows_build / "bin")
    assert report["files_checked"] == len(PROJECT_DLLS) + 2
    assert code == 0, report["findings"]


def test_verify_linkage_passes_the_windows_build_with_the_recipe(
    windows_build: Path, run_cli: CliRunner
) -> None:
    """The recipe names libdemo_runtime.so; here it is libdemo_runtime.dll, in bin/."""
    code, report = _verify_json(run_cli, windows_build / "bin", "--recipe", str(DEMO_RECIPE))
    assert (code, report["findings"]) == (0, [])


def test_a_dll_outside_lib_and_bin_fails_to_load_and_is_an_error(
    windows_build: Path, wine_env: dict[str, str], run_cli: CliRunner, tmp_path: Path
) -> None:
    """bin/ is where a DLL goes outside a wheel (no RPATH on Windows): one moved to plugins/
    is not found by minrpc.exe."""
    tree = tmp_path / "build"
    shutil.copytree(windows_build / "bin", tree / "bin")
    (tree / "plugins").mkdir()
    (tree / "bin" / "libdemo_runtime.dll").rename(tree / "plugins" / "libdemo_runtime.dll")
    completed = _run_under_wine(wine_env, tree / "bin" / "minrpc.exe")
    assert completed.returncode != 0
    assert "libdemo_runtime.dll" in completed.stderr
    code, report = _verify_json(run_cli, tree, "--recipe", str(DEMO_RECIPE))
    findings = report["findings"]
    assert isinstance(findings, list)
    assert code == 1
    placed = {(f["id"], f["message"]) for f in findings if f["id"] == "BT120"}
    assert ("BT120", "a project library outside a lib/ or bin/ folder") in placed
    assert any(f["severity"] == "error" and f["path"].endswith("minrpc.exe") for f in findings)


def test_verify_linkage_reports_the_dropped_registration_dll(
    dropped_runtime_build: Path, run_cli: CliRunner
) -> None:
    code, report = _verify_json(
        run_cli, dropped_runtime_build / "bin", "--recipe", str(DEMO_RECIPE)
    )
    findings = report["findings"]
    assert isinstance(findings, list)
    assert code == 1
    assert [(f["id"], f["path"].rsplit("/", 1)[-1], f["message"]) for f in findings] == [
        ("BT101", "minrpc.exe", "does not need libdemo_runtime.so, which the recipe requires")
    ]


def test_the_gemm_linked_into_two_dlls_aborts_and_is_an_error_without_a_recipe(
    duplicate_gemm_build: Path, wine_env: dict[str, str], run_cli: CliRunner
) -> None:
    """A DLL binds to its own copy of code (no interposition), but both copies' initializers
    register into libdemo_ffi.dll's one registry: the second registration aborts."""
    completed = _run_under_wine(wine_env, duplicate_gemm_build / "bin" / "cpptest.exe")
    assert completed.returncode != 0
    assert "'contrib.gemm_fp16_int' is already registered" in completed.stderr
    code, report = _verify_json(run_cli, duplicate_gemm_build / "bin")
    findings = report["findings"]
    assert isinstance(findings, list)
    assert code == 1
    assert [(f["id"], f["path"].rsplit("/", 1)[-1]) for f in findings] == [
        ("BT103", "libdemo_compiler.dll")
    ]
    assert "_GLOBAL__sub_I_gemm.cc" in findings[0]["evidence"]
    assert "both register through libdemo_ffi.dll:" in findings[0]["evidence"]


def test_verify_linkage_reports_the_missing_dll(
    missing_runtime_dll: Path, run_cli: CliRunner
) -> None:
    code, report = _verify_json(run_cli, missing_runtime_dll)
    findings = report["findings"]
    assert isinstance(findings, list)
    assert code == 1
    assert any(
        finding["severity"] == "error" and "libdemo_runtime.dll" in finding["message"]
        for finding in findings
    ), findings


def test_a_folder_keeps_its_toolchain(windows_build: Path, run_cli: CliRunner) -> None:
    """CMake ignores a toolchain asked for after a folder's first configure: refused, exit 2,
    and the folder is left as it was."""
    cache = (windows_build / "CMakeCache.txt").read_text()
    own = windows_build.parent / "own-toolchain.cmake"
    own.write_text(TOOLCHAIN.read_text())
    argv = ["build", "--recipe", str(DEMO_RECIPE), "--build-dir", str(windows_build)]
    result = run_cli(*argv, "--toolchain", str(own))
    assert result.exit_code == 2
    assert f"was configured with toolchain {TOOLCHAIN}" in result.stderr
    assert (windows_build / "CMakeCache.txt").read_text() == cache
    # the same toolchain again, by name: the folder is reconfigured and built
    assert run_cli(*argv, "--toolchain", TOOLCHAIN.stem).exit_code == 0


@pytest.mark.parametrize("name", ["mingw-w64", "no/such/file.cmake"])
def test_an_unknown_toolchain_is_a_usage_error(
    name: str, run_cli: CliRunner, tmp_path: Path
) -> None:
    result = run_cli(
        "configure",
        "--recipe",
        str(DEMO_RECIPE),
        "--build-dir",
        str(tmp_path / "b"),
        "--toolchain",
        name,
    )
    assert result.exit_code == 2
    assert (
        f"--toolchain {name!r}: expected the name of a toolchain buildtool ships " in result.stderr
    )
    assert TOOLCHAIN.stem in result.stderr
    assert not (tmp_path / "b").exists()


# --- a 32-bit DLL in a win_amd64 wheel --------------------------------------------------------

LOAD_LIBRARY = """#include <windows.h>
#include <stdio.h>
int main(int argc, char **argv) {
    if (argc > 1 && LoadLibraryA(argv[1])) return 0;
    printf("LoadLibrary failed: %lu\\n", GetLastError());
    return 1;
}
"""
MODULE_DLL = "__declspec(dllexport) int PyInit__archmod(void) { return 0; }\n"
ERROR_BAD_EXE_FORMAT = 193


def _mingw_gcc(triple: str, out: Path, source: str, *flags: str) -> Path:
    compiler = shutil.which(f"{triple}-gcc")
    require(compiler is not None, f"{triple}-gcc is not installed (Debian: gcc-mingw-w64)")
    assert compiler is not None
    src = out.with_suffix(".c")
    src.write_text(source)
    subprocess.run([compiler, "-O1", "-o", str(out), str(src), *flags], check=True,
                   capture_output=True)  # fmt: skip
    return out


def test_a_32_bit_module_in_a_win_amd64_wheel_fails_to_load_and_is_an_error(
    wine_env: dict[str, str], tmp_path: Path
) -> None:
    loader = _mingw_gcc(TRIPLE, tmp_path / "load.exe", LOAD_LIBRARY, "-static")
    x64 = _mingw_gcc(TRIPLE, tmp_path / "x64.pyd", MODULE_DLL, "-shared")
    x86 = _mingw_gcc("i686-w64-mingw32", tmp_path / "x86.pyd", MODULE_DLL, "-shared")
    assert _run_under_wine(wine_env, loader, x64.name).returncode == 0
    refused = _run_under_wine(wine_env, loader, x86.name)
    assert refused.returncode == 1
    assert f"LoadLibrary failed: {ERROR_BAD_EXE_FORMAT}" in refused.stdout
    reports = {}
    for module in (x64, x86):
        members = {"m/_archmod.cp311-win_amd64.pyd": module.read_bytes()}
        wheel = write_wheel(tmp_path / "m-1.0-cp311-cp311-win_amd64.whl", "m", members)
        reports[module.stem] = [(f.check_id, f.message) for f in check(wheel).findings]
    assert reports == {
        "x64": [],
        "x86": [("BT152", "is built for i386, but the wheel's tags install it on x86_64 "
                 "(win_amd64)")],
    }  # fmt: skip


def test_a_damaged_dll_is_malformed_or_read_never_a_crash(windows_build: Path) -> None:
    for dll in sorted((windows_build / "bin").glob("*.dll")):
        for damaged in damaged_copies(dll.read_bytes()):
            with contextlib.suppress(MalformedPE):
                read_pe_facts(damaged, dll.name)


# --- a two-instruction registration in two DLLs -------------------------------------------------

REGISTRY_DLL = """#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
extern "C" __declspec(dllexport) void registry_add(const char* name) {
  static std::set<std::string> names;
  if (!names.insert(name).second) { std::fprintf(stderr, "duplicate %s\\n", name); std::abort(); }
}
"""
SHORT_REGISTRATION = """extern "C" __declspec(dllimport) void registry_add(const char*);
namespace { struct Registerer { Registerer() { registry_add("gemm"); } } registerer; }
extern "C" __declspec(dllexport) int LIBRARY() { return 1; }
"""
"""-O2 makes the initializer two instructions: the name's address in rcx and a jump through
the import address table (``jmp *__imp_registry_add``)."""
HELPER_REGISTRATION = """extern "C" __declspec(dllimport) void registry_add(const char*);
namespace {
__attribute__((noinline)) void add(const char* name) { registry_add(name); }
struct Registerer { Registerer() { add("NAME"); } } registerer;
}
extern "C" __declspec(dllexport) int LIBRARY() { return 1; }
"""
"""-O2 makes the initializer one instruction, a jump to a copy of ``add`` that holds the name
(``add.constprop.0``: its address in rcx, then ``jmp *__imp_registry_add``): only the data
that copy hands on tells two registrations apart."""
CALLED_REGISTRATION = """extern "C" __declspec(dllimport) void registry_add(const char*);
namespace {
__attribute__((noinline)) void add(const char* name) {
  static volatile int seen[4];
  for (int i = 0; i < 4; ++i) seen[i] += i * name[0];
  registry_add(name);
}
struct Registerer { Registerer() { add("NAME"); add("NAME.cpu"); } } registerer;
}
extern "C" __declspec(dllexport) int LIBRARY() { return 1; }
"""
"""The initializer calls ``add`` (no stub: a loop first) and then jumps to it: a read walks its
own code only, and the registry it reaches is known once the checks read the DLL again and
walk it whole (``read_pe_initializers``)."""
BOTH_DLLS = """extern "C" __declspec(dllimport) int one();
extern "C" __declspec(dllimport) int two();
int main() { return one() + two() == 2 ? 0 : 1; }
"""


def _mingw_cxx(folder: Path, out: str, source: str, *flags: str) -> Path:
    # the win32 thread model: the DLLs need no libwinpthread-1.dll beside them
    compiler = shutil.which(f"{TRIPLE}-g++-win32")
    require(compiler is not None, f"{TRIPLE}-g++-win32 is not installed (g++-mingw-w64-x86-64)")
    assert compiler is not None
    src = folder / f"{out.split('.', maxsplit=1)[0]}.cc"
    src.write_text(source)
    command = [compiler, "-O2", "-o", str(folder / out), str(src), f"-L{folder}", *flags]
    subprocess.run(command, check=True, capture_output=True)
    return folder / out


def _registering_dlls(folder: Path, sources: dict[str, str]) -> Path:
    """``registry.dll``, a DLL built from each source (by name) registering through it, and
    ``main.exe``, which loads ``one.dll`` and ``two.dll``."""
    folder.mkdir()
    static = ("-static-libgcc", "-static-libstdc++")
    _mingw_cxx(folder, "registry.dll", REGISTRY_DLL, "-shared", *static)
    for name, source in sources.items():
        library = source.replace("LIBRARY", name)
        _mingw_cxx(folder, f"{name}.dll", library, "-shared", "-lregistry", *static)
    return _mingw_cxx(folder, "main.exe", BOTH_DLLS, "-lone", "-ltwo", *static)


def test_a_two_instruction_registration_in_two_dlls_aborts_and_is_bt103(
    wine_env: dict[str, str], run_cli: CliRunner, tmp_path: Path
) -> None:
    sources = dict.fromkeys(("one", "two"), SHORT_REGISTRATION)
    main = _registering_dlls(tmp_path / "short", sources)
    file, evidence = _aborts_and_is_bt103(wine_env, run_cli, main, "gemm")
    assert file == "two.dll"
    assert "both register through registry.dll:registry_add" in evidence
    assert "'gemm'" in evidence


def test_a_registration_handed_on_by_a_helper_in_two_dlls_aborts_and_is_bt103(
    wine_env: dict[str, str], run_cli: CliRunner, tmp_path: Path
) -> None:
    """The name is read-only data the helper passes to the registry: without reading it, the
    one-instruction initializers told nothing, and the pair passed."""
    sources = dict.fromkeys(("one", "two"), HELPER_REGISTRATION.replace("NAME", "gemm"))
    main = _registering_dlls(tmp_path / "helper", sources)
    file, evidence = _aborts_and_is_bt103(wine_env, run_cli, main, "gemm")
    assert file == "two.dll"
    assert "both register through registry.dll:registry_add" in evidence


@pytest.mark.parametrize(
    "registration", [HELPER_REGISTRATION, CALLED_REGISTRATION], ids=["helper", "called"]
)
def test_two_names_registered_through_one_function_run_and_stay_clean(
    wine_env: dict[str, str], run_cli: CliRunner, tmp_path: Path, registration: str
) -> None:
    """The working side of the helper and the call-deep pairs: "gemm" and "conv" through the
    same function run under wine, and no finding."""
    names = {"one": "gemm", "two": "conv"}
    sources = {dll: registration.replace("NAME", name) for dll, name in names.items()}
    main = _registering_dlls(tmp_path / "dlls", sources)
    assert _run_under_wine(wine_env, main).returncode == 0
    code, report = _verify_json(run_cli, main.parent)
    assert (code, report["findings"]) == (0, [])


def test_a_registration_a_call_deep_in_two_dlls_aborts_and_is_bt103(
    wine_env: dict[str, str], run_cli: CliRunner, tmp_path: Path
) -> None:
    sources = dict.fromkeys(("one", "two"), CALLED_REGISTRATION.replace("NAME", "gemm"))
    main = _registering_dlls(tmp_path / "called", sources)
    facts = read_pe_facts((main.parent / "one.dll").read_bytes(), "one.dll")
    assert facts is not None
    assert [(init.complete, init.reaches) for init in facts.initializers or ()] == [
        (False, frozenset())
    ]  # the read's walk: its own code, the call to add left unfollowed
    file, evidence = _aborts_and_is_bt103(wine_env, run_cli, main, "gemm")
    assert file == "two.dll"
    assert "both register through registry.dll:registry_add" in evidence


def _aborts_and_is_bt103(
    wine_env: dict[str, str], run_cli: CliRunner, main: Path, registered: str
) -> tuple[str, str]:
    """``main`` aborts on registering ``registered`` twice, and ``verify-linkage`` finds exactly
    one BT103 in its folder: (the file it names, its evidence)."""
    completed = _run_under_wine(wine_env, main)
    assert completed.returncode != 0
    assert f"duplicate {registered}" in completed.stderr
    code, report = _verify_json(run_cli, main.parent)
    findings = report["findings"]
    assert isinstance(findings, list)
    assert code == 1
    assert [f["id"] for f in findings] == ["BT103"]
    return findings[0]["path"].rsplit("/", 1)[-1], findings[0]["evidence"]


# --- a registration past two thousand initializers in a DLL -----------------------------------

FILLERS = 2100
"""Initializers of 61 instructions before the registering one: more than the fixed budget
(``MAX_LIBRARY_INSTRUCTIONS``) that every one walked whole once shared."""
LATE_REGISTRATION = """extern "C" __declspec(dllimport) void registry_add(const char*);
namespace { struct Registerer { Registerer() { registry_add("verbose_logging"); } } registerer; }
"""
ANSWER = 'extern "C" __declspec(dllexport) int LIBRARY() { return 1; }\n'


def _late_registration_dlls(folder: Path, big_registers: bool) -> Path:
    """``big.dll``: the fillers, then (``big_registers``) the registering file; ``small.dll``:
    the registering file alone; ``main.exe``, which imports from both."""
    folder.mkdir()
    static = ("-static-libgcc", "-static-libstdc++")
    _mingw_cxx(folder, "registry.dll", REGISTRY_DLL, "-shared", *static)
    (folder / "fillers.s").write_text(constructor_fillers(FILLERS, 60, coff=True))
    (folder / "registering.cc").write_text(LATE_REGISTRATION)
    for source in ("fillers.s", "registering.cc"):
        subprocess.run([f"{TRIPLE}-g++-win32", "-O2", "-c", source], cwd=folder, check=True,
                       capture_output=True)  # fmt: skip
    own = ["registering.o"] if big_registers else []
    for name, objects in (("big", ["fillers.o", *own]), ("small", ["registering.o"])):
        flags = [*(str(folder / o) for o in objects), "-lregistry", *static]
        _mingw_cxx(folder, f"{name}.dll", ANSWER.replace("LIBRARY", name), "-shared", *flags)
    both = BOTH_DLLS.replace("one", "big").replace("two", "small")
    _mingw_cxx(folder, "main.exe", both, "-lbig", "-lsmall", *static)
    return folder


def test_a_registration_past_two_thousand_initializers_in_a_dll_aborts_and_is_bt103(
    wine_env: dict[str, str], run_cli: CliRunner, tmp_path: Path
) -> None:
    folder = _late_registration_dlls(tmp_path / "late", big_registers=True)
    file, evidence = _aborts_and_is_bt103(wine_env, run_cli, folder / "main.exe", "verbose_logging")
    assert file == "small.dll"
    assert "'verbose_logging'" in evidence
    data = (folder / "big.dll").read_bytes()
    facts = read_pe_facts(data, "big.dll")
    assert facts is not None
    assert facts.initializers is not None
    own = [init.instructions for init in facts.initializers]
    assert len(own) > FILLERS
    assert sum(own) > MAX_LIBRARY_INSTRUCTIONS
    assert all(own), "an initializer was left without a shape"
    last = facts.initializers[-1]  # the registering file, linked after the fillers
    assert last.strings == ("verbose_logging",)
    whole = read_initializers_again(data, "big.dll", deep=[len(own) - 1])
    assert [(init.whole, init.strings) for init in whole] == [(True, ("verbose_logging",))]


def test_two_thousand_initializers_in_a_dll_and_no_copy_stay_clean(
    wine_env: dict[str, str], run_cli: CliRunner, tmp_path: Path
) -> None:
    folder = _late_registration_dlls(tmp_path / "late", big_registers=False)
    assert _run_under_wine(wine_env, folder / "main.exe").returncode == 0
    code, report = _verify_json(run_cli, folder)
    assert (code, report["findings"]) == (0, [])


# --- a DLL of a fresh Windows that the curated list lacked ------------------------------------

USES_LDAP = """#include <windows.h>
#include <winldap.h>
__declspec(dllexport) void *PyInit__ldapmod(void) { return ldap_initA("localhost", 389); }
"""
USES_ABSENT = """__declspec(dllimport) int absent_answer(void);
__declspec(dllexport) int PyInit__ldapmod(void) { return absent_answer(); }
"""
ERROR_MOD_NOT_FOUND = 126


def test_a_system_dll_a_fresh_windows_has_is_provided_and_one_it_lacks_is_not(
    wine_env: dict[str, str], tmp_path: Path
) -> None:
    """wldap32.dll is in every Windows' System32 (the generated list, ``windows_dlls``): a
    module importing it loads, and was BT109 while the list was hand-made. A module importing
    a DLL that nothing ships fails to load, and stays BT109."""
    loader = _mingw_gcc(TRIPLE, tmp_path / "load.exe", LOAD_LIBRARY, "-static")
    system = _mingw_gcc(TRIPLE, tmp_path / "system.pyd", USES_LDAP, "-shared", "-lwldap32")
    absent = tmp_path / "absent.dll"
    _mingw_gcc(TRIPLE, absent, "__declspec(dllexport) int absent_answer(void) { return 1; }",
               "-shared")  # fmt: skip
    missing = _mingw_gcc(TRIPLE, tmp_path / "missing.pyd", USES_ABSENT, "-shared", str(absent))
    absent.unlink()
    assert _run_under_wine(wine_env, loader, system.name).returncode == 0
    refused = _run_under_wine(wine_env, loader, missing.name)
    assert f"LoadLibrary failed: {ERROR_MOD_NOT_FOUND}" in refused.stdout
    verdicts = {}
    for module in (system, missing):
        members = {"m/_ldapmod.cp311-win_amd64.pyd": module.read_bytes()}
        wheel = write_wheel(tmp_path / "m-1.0-cp311-cp311-win_amd64.whl", "m", members)
        verdicts[module.stem] = {(f.check_id, f.needed) for f in check(wheel).findings}
    assert verdicts == {"system": set(), "missing": {("BT109", "absent.dll")}}
