"""The example split linked for macOS arm64 by lld's Mach-O linker, over a stand-in SDK
(``tests/macos_sdk.py``): ground truth for what the generated CMake gives ld64, without a Mac.

Nothing here can run a Mach-O file, so the load commands are read with LLVM's otool (not
buildtool's reader), and the planted defects are judged by dyld's documented rules (``man dyld``:
``@rpath/`` is searched through the ``LC_RPATH`` entries of the loading chain; a missing
``LC_LOAD_DYLIB`` target aborts the launch; ld64 keeps every dylib it is given unless told
``-dead_strip_dylibs``): a dylib deleted beside minrpc, minrpc's ``LC_RPATH`` removed, and the
registration-only runtime dead-stripped from minrpc. Each is an error; the build itself is
clean with the recipe.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from buildtool.linkage.binaries.macho.decoder import MalformedMachO, read_macho_facts
from buildtool.linkage.binaries.macho.initializers import pointer_target
from buildtool.linkage.binaries.read import read_other_format
from buildtool.linkage.checks.policy import LinkagePolicy, recipe_spelling
from buildtool.linkage.inputs import decoding, pool
from buildtool.linkage.inputs.collect import read_wheel
from buildtool.linkage.inputs.decoding import Source
from buildtool.linkage.verify import verify_paths
from tests.builders import refusing_registry
from tests.conftest import DEMO_RECIPE, DUPLICATE_GEMM, REPO, CliRunner, edited_example
from tests.cross import buildtool_cross_build, cross_build, damaged_copies, elf_only_link_flags
from tests.macos_sdk import clang_macos, write_sdk
from tests.test_hostile_wheels import Member, write_wheel
from tests.test_reading import sources_passed

pytestmark = pytest.mark.integration

MACHO_64 = b"\xcf\xfa\xed\xfe"
OTOOL = "llvm-otool-14"
PROJECT_DYLIBS = ["libdemo_compiler.dylib", "libdemo_ffi.dylib", "libdemo_runtime.dylib"]


def _otool(*argv: str | Path) -> str:
    command = [OTOOL, *map(str, argv)]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def _objdump(*argv: str | Path) -> str:
    command = ["llvm-objdump", "--macho", *map(str, argv)]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def _loads(binary: Path) -> list[str]:
    """``LC_LOAD_DYLIB`` names, in order (otool -L lists the install name first for a dylib)."""
    lines = _otool("-L", binary).splitlines()[1:]
    names = [line.split(" (compatibility")[0].strip() for line in lines]
    return names[1:] if binary.suffix == ".dylib" else names


def _rpaths(binary: Path) -> list[str]:
    return re.findall(r"path (\S+) \(offset", _otool("-l", binary))


def _verify(run_cli: CliRunner, path: Path) -> tuple[int, dict[str, object]]:
    result = run_cli("verify-linkage", str(path), "--recipe", str(DEMO_RECIPE), "--format",
                     "json")  # fmt: skip
    assert result.exit_code in (0, 1), result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return result.exit_code, report


def _errors(report: dict[str, object]) -> list[tuple[str, str, str]]:
    findings = report["findings"]
    assert isinstance(findings, list)
    return [(f["id"], Path(f["path"]).name, f["message"]) for f in findings
            if f["severity"] == "error"]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "spelled"),
    [
        ("@rpath/libdemo_runtime.dylib", "libdemo_runtime.so"),
        ("libdemo_runtime.1.2.dylib", "libdemo_runtime.so"),  # a versioned file: its link name
        ("libdemo_runtime.dll", "libdemo_runtime.so"),
        ("demo_runtime.DLL", "libdemo_runtime.so"),  # MSVC names DLLs without lib
        ("minrpc.exe", "minrpc"),
        ("libdemo_runtime.so.1", "libdemo_runtime.so"),
        ("libggml-base.so.0.21.0", "libggml-base.so"),
        ("minrpc", "minrpc"),
    ],
)
def test_a_recipe_names_each_format_s_files_by_their_elf_names(name: str, spelled: str) -> None:
    assert recipe_spelling(name) == spelled


@pytest.fixture(scope="session")
def macos_toolchain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sdk(tmp_path_factory.mktemp("macos") / "sdk")


@pytest.fixture(scope="session")
def macos_build(macos_toolchain: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example, full variant, built with ``buildtool build --toolchain <file>``."""
    return buildtool_cross_build(tmp_path_factory.mktemp("macos-build") / "build",
                                 str(macos_toolchain))  # fmt: skip


def _copy(build: Path, into: Path) -> Path:
    for folder in ("bin", "lib"):
        shutil.copytree(build / folder, into / folder, symlinks=True)
    return into


def test_the_split_is_real_mach_o_with_rpath_install_names(macos_build: Path) -> None:
    lib = macos_build / "lib"
    assert sorted(path.name for path in lib.glob("*.dylib")) == PROJECT_DYLIBS
    minrpc = macos_build / "bin" / "minrpc"
    for binary in (minrpc, *lib.glob("*.dylib")):
        assert binary.read_bytes()[:4] == MACHO_64, binary
    runtime = lib / "libdemo_runtime.dylib"
    assert _otool("-D", runtime).split()[-1] == "@rpath/libdemo_runtime.dylib"
    assert "@rpath/libdemo_compiler.dylib" not in _loads(runtime)
    assert "@rpath/libdemo_runtime.dylib" in _loads(lib / "libdemo_compiler.dylib")
    assert _loads(minrpc)[:2] == ["@rpath/libdemo_runtime.dylib", "@rpath/libdemo_ffi.dylib"]
    # found beside each other, and from bin/ in ../lib: in the build tree as installed
    assert _rpaths(runtime) == ["@loader_path"]
    assert _rpaths(minrpc) == ["@loader_path/../lib"]


def test_no_elf_only_flags_reach_the_mach_o_linker(macos_build: Path) -> None:
    assert elf_only_link_flags(macos_build) == []


def test_verify_linkage_passes_the_macos_build_with_the_recipe(
    macos_build: Path, run_cli: CliRunner
) -> None:
    """The recipe names ``libdemo_runtime.so``; on macOS the same library is
    ``@rpath/libdemo_runtime.dylib``, and every rule of the recipe holds for it."""
    code, report = _verify(run_cli, macos_build)
    assert report["files_checked"] == 5
    assert report["findings"] == []
    assert code == 0


def test_a_dylib_deleted_beside_minrpc_is_an_error(
    macos_build: Path, run_cli: CliRunner, tmp_path: Path
) -> None:
    tree = _copy(macos_build, tmp_path / "build")
    (tree / "lib" / "libdemo_runtime.dylib").unlink()
    code, report = _verify(run_cli, tree)
    assert code == 1
    errors = _errors(report)
    # every binary that loads it, each an error naming it
    assert {path for _, path, _ in errors} == {"minrpc", "cpptest", "libdemo_compiler.dylib"}
    assert all("@rpath/libdemo_runtime.dylib" in message for *_, message in errors), errors


def test_minrpc_without_its_lc_rpath_is_an_error(
    macos_build: Path, run_cli: CliRunner, tmp_path: Path
) -> None:
    tree = _copy(macos_build, tmp_path / "build")
    minrpc = tree / "bin" / "minrpc"
    tool = ["llvm-install-name-tool-14", "-delete_rpath", "@loader_path/../lib", str(minrpc)]
    subprocess.run(tool, check=True, capture_output=True)
    assert _rpaths(minrpc) == []
    code, report = _verify(run_cli, tree)
    assert code == 1
    missing = {message for check, path, message in _errors(report) if path == "minrpc"}
    assert any("@rpath/libdemo_runtime.dylib" in message for message in missing), missing


def test_the_runtime_dead_stripped_from_minrpc_is_caught(
    macos_toolchain: Path, run_cli: CliRunner, tmp_path: Path
) -> None:
    """ld64 keeps a dylib nothing references (minrpc uses no symbol of the runtime, only its
    registrations); ``-dead_strip_dylibs`` is macOS's ``--as-needed`` and drops it."""
    dead_strip = "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-dead_strip_dylibs"
    build = cross_build(REPO / "src", tmp_path / "build", macos_toolchain, "demo_minrpc",
                        defines=[dead_strip])  # fmt: skip
    assert "@rpath/libdemo_runtime.dylib" not in _loads(build / "bin" / "minrpc")
    code, report = _verify(run_cli, build)
    assert code == 1
    assert _errors(report) == [
        ("BT101", "minrpc", "does not need libdemo_runtime.so, which the recipe requires")
    ]


def _strip_locals(build: Path, into: Path) -> Path:
    """A copy of ``build`` with its dylibs stripped of local symbols (``strip -x``, as wheels
    ship): no ``__GLOBAL__sub_I_*`` names left, only ``__mod_init_func``."""
    tree = _copy(build, into)
    for dylib in (tree / "lib").glob("*.dylib"):
        subprocess.run(["llvm-strip-14", "-x", str(dylib)], check=True, capture_output=True)
    return tree


@pytest.fixture(scope="module")
def duplicate_gemm_macos(macos_toolchain: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("macos-dup")
    return cross_build(edited_example(root, *DUPLICATE_GEMM), root / "build", macos_toolchain)


@pytest.mark.parametrize("stripped", [False, True])
def test_the_gemm_linked_into_two_dylibs_is_an_error_without_a_recipe(
    duplicate_gemm_macos: Path, macos_build: Path, run_cli: CliRunner, tmp_path: Path,
    stripped: bool,
) -> None:  # fmt: skip
    """dyld runs each image's initializers: both copies of gemm's register into
    libdemo_ffi.dylib's one registry, the second aborts (as under qemu and wine). Unstripped,
    the initializer's name pairs them; stripped, its code."""
    build, clean = duplicate_gemm_macos, macos_build
    if stripped:
        build = _strip_locals(build, tmp_path / "dup")
        clean = _strip_locals(clean, tmp_path / "clean")
    result = run_cli("verify-linkage", str(build), "--no-recipe", "--format", "json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1
    assert [(f["id"], Path(f["path"]).name) for f in report["findings"]] == [
        ("BT103", "libdemo_compiler.dylib")
    ]
    evidence = report["findings"][0]["evidence"]
    assert evidence.startswith("stripped: an initializer" if stripped else "unstripped:")
    assert "both register through libdemo_ffi.dylib:" in evidence
    # the split as generated: each initializer registers in one dylib only
    assert run_cli("verify-linkage", str(clean), "--no-recipe").exit_code == 0


def _handed_off_wheel(
    build: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, str]:
    """A wheel of the build's dylibs, whose biggest member a read on two CPUs hands off
    (``pool._Handoff``), and that member's display path."""
    members: list[Member] = [
        (f"demo/lib/{dylib.name}", dylib.read_bytes()) for dylib in sorted(build.glob("lib/*"))
    ]
    wheel = write_wheel(folder / "demo-0.1.0-py3-none-macosx_11_0_arm64.whl", members)
    monkeypatch.setattr(pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(pool, "SPLIT_MIN_BYTES", 1)  # the biggest member is handed off
    monkeypatch.setattr(pool, "BATCH_BYTES", 4096)  # and the others are tasks of their own
    return wheel, f"{wheel}!/{max(members, key=lambda member: len(member[1]))[0]}"


def test_a_handed_off_dylib_has_its_initializers_walked_by_a_worker(
    duplicate_gemm_macos: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheel's biggest member, a Mach-O library, is inflated by a worker and decoded here,
    while another worker walks its initializers from the same memory. Stripped, the two copies
    of gemm are paired by that walk alone: the facts and the finding are those of a read in one
    process."""
    build = _strip_locals(duplicate_gemm_macos, tmp_path / "dup")
    wheel, biggest = _handed_off_wheel(build, tmp_path, monkeypatch)
    here, walked = os.getpid(), tmp_path / "walked"  # by the workers: a file, across processes
    handed_part = pool._handed_part
    decoded_here: list[tuple[str, bool]] = []

    def logged(source: Source, *args: Any) -> object:
        with walked.open("a") as log:
            log.write(f"{source.display} {'here' if os.getpid() == here else 'in a worker'}\n")
        return handed_part(source, *args)

    def decoded(data: Any, display: str, *args: Any, read_code: bool = True, **kw: Any) -> object:
        decoded_here.append((display, read_code))
        return read_other_format(data, display, *args, read_code=read_code, **kw)

    monkeypatch.setattr(pool, "_handed_part", logged)
    monkeypatch.setattr(decoding, "read_other_format", decoded)
    serial = verify_paths([wheel], LinkagePolicy.empty(), jobs=1)
    files = read_wheel(wheel, (), jobs=1).files
    decoded_here.clear()
    parallel = verify_paths([wheel], LinkagePolicy.empty(), jobs=2)
    assert read_wheel(wheel, (), jobs=2).files == files  # the walk's initializers joined
    assert all(binary.facts and binary.facts.initializers is not None for binary in files)
    assert parallel.findings == serial.findings
    assert [(f.check_id, Path(f.path).name) for f in parallel.findings] == [
        ("BT103", "libdemo_compiler.dylib")
    ]
    assert parallel.findings[0].evidence.startswith("stripped: an initializer")
    assert walked.read_text().splitlines() == [f"{biggest} in a worker"] * 2
    assert (biggest, False) in decoded_here
    assert (biggest, True) not in decoded_here


def test_a_handed_off_dylib_of_the_clean_split_stays_clean(
    macos_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The split as generated, stripped, as a wheel whose biggest dylib is handed off: each
    initializer registers in one dylib only, so the walk in a worker pairs nothing."""
    build = _strip_locals(macos_build, tmp_path / "clean")
    wheel, _biggest = _handed_off_wheel(build, tmp_path, monkeypatch)
    handed = sources_passed(monkeypatch, "_read_handed")
    serial = verify_paths([wheel], LinkagePolicy.empty(), jobs=1)
    parallel = verify_paths([wheel], LinkagePolicy.empty(), jobs=2)
    assert handed, "nothing was handed off"
    assert parallel.findings == serial.findings == ()


def test_a_failed_walk_of_a_handed_off_dylib_reads_it_again_whole(
    macos_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the worker's walk of the hand-off's initializers fails, the member is read again
    whole here, for the facts (or the finding) a read in one process gives."""
    wheel, biggest = _handed_off_wheel(macos_build, tmp_path, monkeypatch)
    files = read_wheel(wheel, (), jobs=1).files

    def failing(_data: Any, display: str, **_options: Any) -> object:
        raise MalformedMachO(display, 0, "planted: the walk fails")

    monkeypatch.setattr(pool, "read_initializers_again", failing)
    whole_reads = sources_passed(monkeypatch, "read_source")
    assert read_wheel(wheel, (), jobs=2).files == files
    assert whole_reads == [biggest]


@pytest.mark.parametrize(
    ("value", "chained", "target"),
    [
        (0x3F40, False, 0x3F40),  # classic: the address, rebased by dyld
        (0x8000_0000_0000_0001, True, None),  # a chained bind: another image's function
        (0x0010_0000_0000_3F40, True, 0x1_0000_3F40),  # DYLD_CHAINED_PTR_64_OFFSET: from the base
        (0x0000_0001_0000_3F40, True, 0x1_0000_3F40),  # DYLD_CHAINED_PTR_64: the address
        (0, False, None),
    ],
)
def test_an_initializer_pointer_names_its_function(
    value: int, chained: bool, target: int | None
) -> None:
    assert pointer_target(value, 0x1_0000_0000, chained) == target


def test_a_damaged_dylib_is_malformed_or_read_never_a_crash(macos_build: Path) -> None:
    for dylib in sorted((macos_build / "lib").glob("*.dylib")):
        for damaged in damaged_copies(dylib.read_bytes()):
            with contextlib.suppress(MalformedMachO):
                read_macho_facts(damaged, dylib.name)


# --- a short registration in two dylibs ----------------------------------------------------------

REGISTRY_C = """int strcmp(const char*, const char*);
void abort(void);
static const char* seen[16];
static int count;
void registry_add(const char* name) {
  for (int i = 0; i < count; ++i)
    if (strcmp(seen[i], name) == 0) abort();
  seen[count++] = name;
}
"""
SHORT_CONSTRUCTOR = """void registry_add(const char*);
__attribute__((constructor)) static void registration(void) { registry_add(NAME); }
int LIBRARY(void) { return 1; }
"""
"""A C constructor in ``__mod_init_func``: the name's address (adrp/add) and a tail branch to
the registry's stub, a few instructions; no ``_GLOBAL__sub_I_`` name pairs the copies."""
BOTH_DYLIBS = (
    "int one(void); int two(void);\nint main(void) { return one() + two() == 2 ? 0 : 1; }\n"
)


def _dylib_pair(
    sdk: Path, folder: Path, core: tuple[str, str], source_of: Callable[[str], str]
) -> Path:
    """``core`` (its name and source) as a dylib, libone and libtwo from ``source_of(library)``
    linked to it, and the program loading both."""
    folder.mkdir()
    rpath = ("-Wl,-rpath,@loader_path", f"-L{folder}")
    name, source = core
    clang_macos(sdk, "arm64", folder / f"lib{name}.dylib", source, "-dynamiclib",
                "-install_name", f"@rpath/lib{name}.dylib")  # fmt: skip
    for library in ("one", "two"):
        clang_macos(sdk, "arm64", folder / f"lib{library}.dylib", source_of(library), "-O2",
                    "-dynamiclib", "-install_name", f"@rpath/lib{library}.dylib", *rpath,
                    f"-l{name}")  # fmt: skip
    clang_macos(sdk, "arm64", folder / "main", BOTH_DYLIBS, *rpath, "-lone", "-ltwo")
    return folder


def _short_pair(sdk: Path, folder: Path, names: tuple[str, str]) -> Path:
    registered = dict(zip(("one", "two"), names, strict=True))

    def source_of(library: str) -> str:
        return SHORT_CONSTRUCTOR.replace("LIBRARY", library).replace(
            "NAME", f'"{registered[library]}"'
        )

    return _dylib_pair(sdk, folder, ("registry", REGISTRY_C), source_of)


def _errors_without_recipe(run_cli: CliRunner, path: Path) -> list[tuple[str, str, str]]:
    """(id, file name, evidence) of every error of verify-linkage --no-recipe."""
    result = run_cli("verify-linkage", str(path), "--no-recipe", "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    findings = json.loads(result.stdout)["findings"]
    errors = [(f["id"], Path(f["path"]).name, f["evidence"]) for f in findings
              if f["severity"] == "error"]  # fmt: skip
    assert result.exit_code == (1 if errors else 0)
    return errors


def test_a_short_constructor_registering_one_name_in_two_dylibs_is_bt103(
    macos_toolchain: Path, run_cli: CliRunner, tmp_path: Path
) -> None:
    """dyld runs both dylibs' constructors in one process (no Mac here: the same code aborts
    under qemu and wine); registering two different names is the clean case."""
    sdk = macos_toolchain.parent
    errors = _errors_without_recipe(run_cli, _short_pair(sdk, tmp_path / "same", ("gemm", "gemm")))
    assert [(check_id, name) for check_id, name, _ in errors] == [("BT103", "libtwo.dylib")]
    assert "libregistry.dylib:_registry_add" in errors[0][2]
    assert "'gemm'" in errors[0][2]
    other = _short_pair(sdk, tmp_path / "other", ("gemm.one", "gemm.two"))
    assert _errors_without_recipe(run_cli, other) == []


HELPER_CONSTRUCTOR = """void registry_add(const char*);
__attribute__((noinline)) static void add(const char* name) { registry_add(name); }
__attribute__((constructor)) static void registration(void) { add(NAME); }
int LIBRARY(void) { return 1; }
"""
"""At ``-O2`` the constructor is one branch to a copy of ``add`` that holds the name (its address
in x0, then a branch to the registry's stub): only the data that copy hands on tells two
registrations apart (PE's form of it aborts under wine: tests/test_windows.py)."""


def _helper_pair(sdk: Path, folder: Path, names: tuple[str, str]) -> Path:
    registered = dict(zip(("one", "two"), names, strict=True))

    def source_of(library: str) -> str:
        source = HELPER_CONSTRUCTOR.replace("LIBRARY", library)
        return source.replace("NAME", f'"{registered[library]}"')

    return _dylib_pair(sdk, folder, ("registry", REGISTRY_C), source_of)


def test_a_name_handed_on_by_a_helper_in_two_dylibs_is_bt103(
    macos_toolchain: Path, run_cli: CliRunner, tmp_path: Path
) -> None:
    sdk = macos_toolchain.parent
    errors = _errors_without_recipe(run_cli, _helper_pair(sdk, tmp_path / "same", ("gemm",) * 2))
    assert [(check_id, name) for check_id, name, _ in errors] == [("BT103", "libtwo.dylib")]
    assert "libregistry.dylib:_registry_add" in errors[0][2]
    other = _helper_pair(sdk, tmp_path / "other", ("gemm", "conv"))
    assert _errors_without_recipe(run_cli, other) == []


# --- a registry that takes a second registration alike, as Mach-O names it ------------------------

RESOURCE_REGISTRIES_C = """int memcmp(const void*, const void*, unsigned long);
void abort(void);
static const unsigned char* listed[16];
static int count;
int accepting(int version, const unsigned char* tree, const unsigned char* names,
              const unsigned char* data) __asm__("__Z21qRegisterResourceDataiPKhS0_S0_");
int accepting(int version, const unsigned char* tree, const unsigned char* names,
              const unsigned char* data) { listed[count++] = tree; return 1; }
int refusing(int version, const unsigned char* tree, const unsigned char* names,
             const unsigned char* data) __asm__("__Z16registerOnceDataiPKhS0_S0_");
int refusing(int version, const unsigned char* tree, const unsigned char* names,
             const unsigned char* data) {
  for (int i = 0; i < count; ++i)
    if (memcmp(listed[i], tree, 8) == 0) abort();
  listed[count++] = tree;
  return 1;
}
"""
"""Qt's ``qRegisterResourceData`` as its C++ name reads on Mach-O (an underscore more than ELF's),
which lists the same tables twice, and a registry under another name that refuses them."""

RESOURCE_INITIALIZER_C = """int registry(int, const unsigned char*, const unsigned char*,
             const unsigned char*) __asm__("SYMBOL");
static const unsigned char tree[] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0};
static const unsigned char names[] = {0, 5, 'i', 'c', 'o', 'n', 's'};
static const unsigned char data[] = {0, 0, 0, 4, 'P', 'N', 'G', '!'};
__attribute__((constructor)) static void resources(void) { registry(3, tree, names, data); }
int LIBRARY(void) { return 1; }
"""
"""rcc's resource initializer: one collection linked into two dylibs (PySide6's QtDesigner and
QtDesignerComponents frameworks)."""


def _resource_pair(sdk: Path, folder: Path, symbol: str) -> Path:
    def source_of(library: str) -> str:
        return RESOURCE_INITIALIZER_C.replace("LIBRARY", library).replace("SYMBOL", symbol)

    return _dylib_pair(sdk, folder, ("core", RESOURCE_REGISTRIES_C), source_of)


def test_a_registry_that_takes_the_copy_twice_is_recognised_as_mach_o_spells_it(
    macos_toolchain: Path, run_cli: CliRunner, tmp_path: Path
) -> None:
    """The registries known to take a second registration alike are listed as ELF spells them;
    Mach-O's extra underscore made PySide6's macOS wheel 536 BT103 (none on Linux). The same
    tables registered with a registry that refuses them stay BT103 (the ELF twin of this test,
    in tests/test_duplicate_verdicts.py, runs both: the first loads, the second aborts)."""
    sdk = macos_toolchain.parent
    accepting = _resource_pair(sdk, tmp_path / "qt", "__Z21qRegisterResourceDataiPKhS0_S0_")
    assert _errors_without_recipe(run_cli, accepting) == []
    refusing = _resource_pair(sdk, tmp_path / "once", "__Z16registerOnceDataiPKhS0_S0_")
    errors = _errors_without_recipe(run_cli, refusing)
    assert [(check_id, name) for check_id, name, _ in errors] == [("BT103", "libtwo.dylib")]
    assert "libcore.dylib:__Z16registerOnceDataiPKhS0_S0_" in errors[0][2]


# --- one boilerplate calling each dylib's own registrar ------------------------------------------

COUNTER_C = "static int users;\nvoid attach(void) { ++users; }\n"

OWN_REGISTRAR_C = """void registry_add(const char*);
void attach(void);
__attribute__((noinline)) void REGISTRAR(void) { registry_add(NAME); }
__attribute__((constructor)) static void boilerplate(void) {
  for (int i = 0; i < 4; ++i) attach();
  REGISTRAR();
}
int LIBRARY(void) { return 1; }
"""
"""A header's boilerplate calling the registrar of the module including it (VTK's
``AddRegistrar_<module>``): Mach-O calls a dylib's own function directly, so the walk reads the
registrar's code, which is alike in every dylib once addresses are left out."""


def _registrar_pair(sdk: Path, folder: Path, registrars: tuple[str, str], name: str) -> Path:
    named = dict(zip(("one", "two"), registrars, strict=True))

    def source_of(library: str) -> str:
        source = OWN_REGISTRAR_C.replace("LIBRARY", library).replace("REGISTRAR", named[library])
        return source.replace("NAME", f'"{name or library}"')

    return _dylib_pair(sdk, folder, ("registry", REGISTRY_C + COUNTER_C), source_of)


def test_one_boilerplate_calling_each_dylibs_own_registrar_is_no_bt103(
    macos_toolchain: Path, run_cli: CliRunner, tmp_path: Path
) -> None:
    """Registrars named after their dylibs, registering "one" and "two": other registrations,
    though their code is alike (vtk's macOS wheel: 113 BT103 while only the code was compared).
    A registrar of one name in both, registering "gemm" in both, is a copy of one object file's
    code, which aborts where it runs (its ELF twin in tests/test_header_initializers.py does)."""
    sdk = macos_toolchain.parent
    apart = _registrar_pair(sdk, tmp_path / "apart", ("AddRegistrar_one", "AddRegistrar_two"), "")
    assert _errors_without_recipe(run_cli, apart) == []
    copies = _registrar_pair(sdk, tmp_path / "copies", ("add_gemm", "add_gemm"), "gemm")
    errors = _errors_without_recipe(run_cli, copies)
    assert [(check_id, name) for check_id, name, _ in errors] == [("BT103", "libtwo.dylib")]
    assert "libregistry.dylib:_registry_add" in errors[0][2]


# --- one static library's code in two dylibs: each calls its own copy -----------------------------

PRIVATE_REGISTRY = {
    "registry.cc": refusing_registry("registry_add")
    + 'extern "C" int registry_count(void) { return count; }\n',
    "setup.cc": """extern "C" void registry_add(const char*);
namespace { struct Setup { Setup() { registry_add("gemm"); } } setup; }
""",
}
"""A static library: a registry that refuses a name twice, and a source whose static initializer
registers "gemm" in it; linked into two libraries, each exporting its functions."""


def _private_registries(folder: Path, link: list[str], suffix: str) -> Path:
    """libone and libtwo (``suffix``), each linked by ``link`` from ``PRIVATE_REGISTRY`` and a
    source of its own, and the program loading both (``BOTH_DYLIBS``)."""
    folder.mkdir()
    for name, text in PRIVATE_REGISTRY.items():
        (folder / name).write_text(text)
    for library in ("one", "two"):
        own = folder / f"{library}.cc"
        own.write_text(f'extern "C" int registry_count();\nextern "C" int {library}() '
                       "{ return registry_count(); }\n")  # fmt: skip
        out = f"lib{library}{suffix}"
        sources = ["registry.cc", "setup.cc", own.name]
        subprocess.run([*link, "-o", out, *sources, *(["-install_name", f"@rpath/{out}"]
                        if suffix == ".dylib" else [])], cwd=folder, check=True,
                       capture_output=True)  # fmt: skip
    return folder


def test_one_static_library_in_two_dylibs_binds_each_to_its_own_copy(
    macos_toolchain: Path, run_cli: CliRunner, tmp_path: Path
) -> None:
    """ld64 calls a dylib's own exported functions directly (``b _registry_add``, no fixup for
    dyld to bind elsewhere), so each initializer registers "gemm" in its own copy: BT124, not
    BT103, the shared functions named as Mach-O spells them. The same libraries on ELF bind
    both initializers to the first copy, and the program aborts: BT103."""
    clang = ["clang", "--target=arm64-apple-macos11", "-isysroot", str(macos_toolchain.parent),
             "-fuse-ld=lld", "-O2", "-dynamiclib", "-x", "c++"]  # fmt: skip
    mach_o = _private_registries(tmp_path / "macho", clang, ".dylib")
    clang_macos(macos_toolchain.parent, "arm64", mach_o / "main", BOTH_DYLIBS,
                "-Wl,-rpath,@loader_path", f"-L{mach_o}", "-lone", "-ltwo")  # fmt: skip
    code = _objdump("-d", mach_o / "libone.dylib")
    assert re.search(r"\bbl?\s+_registry_add\b", code), code  # a call, or a tail call
    binds = _objdump("--bind", "--lazy-bind", "--weak-bind", mach_o / "libone.dylib")
    assert "registry_add" not in binds
    assert _errors_without_recipe(run_cli, mach_o) == []
    result = run_cli("verify-linkage", str(mach_o), "--no-recipe", "--format", "json")
    (copy,) = [f for f in json.loads(result.stdout)["findings"] if f["id"] == "BT124"]
    assert "_registry_add" in copy["evidence"]
    assert "#" not in copy["evidence"]  # named, not shown as digests

    elf = _private_registries(tmp_path / "elf", ["g++", "-O2", "-shared", "-fPIC"], ".so")
    (elf / "main.c").write_text(BOTH_DYLIBS)
    subprocess.run(["gcc", "-o", "main", "main.c", "-L.", "-lone", "-ltwo",
                    "-Wl,-rpath,$ORIGIN"], cwd=elf, check=True)  # fmt: skip
    assert subprocess.run([elf / "main"], check=False).returncode == -6  # SIGABRT
    errors = _errors_without_recipe(run_cli, elf)
    assert [(check_id, name) for check_id, name, _ in errors] == [("BT103", "libtwo.so")]
