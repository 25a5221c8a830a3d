"""Duplicate registration where it happens in the wild: protobuf's generated descriptors,
gflags' flags and LLVM's command-line options, each compiled into two shared libraries that one
process loads, built with the libraries Debian ships (tests/packages/registries).

Each case is loaded the two ways a process loads libraries, ``RTLD_GLOBAL`` and ``RTLD_LOCAL``
(ctypes in a child process). The verdict must match: a case that fails either way is a BT103
error naming the duplicated code, a case that loads both ways has no error. Each case is checked
as built and stripped."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from buildtool.linkage import checking
from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.binaries.elf import ElfBuffer, Ranges, code_ranges, read_elf_facts
from buildtool.linkage.binaries.read import read_initializers_again
from buildtool.linkage.checks.duplicates import initializers_to_read
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs import decoding, pool
from buildtool.linkage.inputs.collect import BinaryFile
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from tests.builders import check, cxx, refusing_registry, write_wheel
from tests.conftest import PACKAGES, require
from tests.test_reading import hand_offs_decoded

pytestmark = pytest.mark.integration

SOURCES = PACKAGES / "registries"
LLVM = Path("/usr/lib/llvm-14")


@dataclass(frozen=True)
class Registry:
    """A registry library and the code that registers with it."""

    sources: tuple[str, ...]
    """Files of its folder under ``SOURCES`` that both libraries compile."""
    flags: tuple[str, ...]
    """Compile flags for them."""
    libraries: tuple[str, ...]
    """What both libraries link."""
    failure: str
    """What the second registration prints when it fails."""
    named: tuple[str, ...]
    """Names of the duplicated code; a finding's evidence shows one of them."""
    needs: Path
    """A file of the Debian package it needs."""


REGISTRIES = {
    "protobuf": Registry(
        ("point.pb.cc", "work.cc"),
        (),
        ("-lprotobuf",),
        "File already exists in database: point.proto",
        ("point.pb.cc", "point.proto", "Point"),
        Path("/usr/include/google/protobuf/message.h"),
    ),
    "gflags": Registry(
        ("flags.cc",),
        (),
        ("-lgflags",),
        "something wrong with flag 'demo_threads'",
        ("flags.cc", "demo_threads"),
        Path("/usr/include/gflags/gflags.h"),
    ),
    "llvm": Registry(
        ("options.cc",),
        (f"-I{LLVM}/include", "-std=c++17", "-fno-exceptions"),
        (
            f"-L{LLVM}/lib",
            *("-lLLVMMC", "-lLLVMDebugInfoCodeView", "-lLLVMBinaryFormat", "-lLLVMSupport"),
            *("-lLLVMDemangle", "-lz", "-ltinfo", "-lpthread"),
        ),
        "registered more than once",
        ("MCAsmInfo", "llvm", "LLVM"),
        LLVM / "lib" / "libLLVMMC.a",
    ),
}

VARIANTS = {
    "default": ((), ()),
    "hidden": (("-fvisibility=hidden", "-fvisibility-inlines-hidden"), ("-Wl,--exclude-libs,ALL",)),
    "bsymbolic": ((), ("-Wl,-Bsymbolic",)),
}
"""Compile and link flags of each way the libraries keep their symbols: exported, hidden (and
static libraries' symbols not exported), exported but bound inside each library first."""

FAILS: dict[tuple[str, str], frozenset[str]] = {
    ("protobuf", "default"): frozenset({"local"}),
    ("protobuf", "hidden"): frozenset({"global", "local"}),
    ("protobuf", "bsymbolic"): frozenset({"global", "local"}),
    ("gflags", "default"): frozenset({"global", "local"}),
    ("gflags", "hidden"): frozenset({"global", "local"}),
    ("gflags", "bsymbolic"): frozenset({"global", "local"}),
    ("llvm", "default"): frozenset({"global"}),
    ("llvm", "hidden"): frozenset(),
    ("llvm", "bsymbolic"): frozenset(),
}
"""The loads that fail, as measured on Debian 12: with default visibility, protobuf's second
registration binds to the first copy's descriptor table when both are global; LLVM's options
register into the first copy's registry when both are global; gflags fails whatever the
visibility."""

LOAD = """import ctypes, sys
mode = ctypes.RTLD_GLOBAL if sys.argv[1] == "global" else ctypes.RTLD_LOCAL
for name in sys.argv[2:]:
    ctypes.CDLL(name, mode=mode)
"""


def _run(command: list[str | Path], cwd: Path) -> None:
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)


def _build(root: Path, registry: str, variant: str) -> Path:
    """libone.so and libtwo.so, each with the registry's sources beside its own api.cc, and
    main linking both."""
    spec = REGISTRIES[registry]
    require(spec.needs.exists(), f"{spec.needs} is missing (Debian's packages of {registry})")
    compile_flags, link_flags = VARIANTS[variant]
    folder = root / f"{registry}-{variant}"
    shutil.copytree(SOURCES / registry, folder)
    shutil.copy(SOURCES / "api.cc", folder)
    if registry == "protobuf":
        require(shutil.which("protoc") is not None, "protoc is missing (protobuf-compiler)")
        _run(["protoc", "--cpp_out=.", "point.proto"], folder)
    cxx = ["g++", "-O2", "-fPIC", *compile_flags, *spec.flags]
    objects = [f"{Path(source).stem}.o" for source in spec.sources]
    for source, obj in zip(spec.sources, objects, strict=True):
        _run([*cxx, "-c", source, "-o", obj], folder)
    for name in ("one", "two"):
        _run([*cxx, f"-DNAME={name}", "-c", "api.cc", "-o", f"api-{name}.o"], folder)
        _run(["g++", "-shared", "-o", f"lib{name}.so", f"api-{name}.o", *objects, *link_flags,
              *spec.libraries, f"-Wl,-soname,lib{name}.so"], folder)  # fmt: skip
    shutil.copy(SOURCES / "main.cc", folder)
    _run(["g++", "-O2", "main.cc", "-o", "main", "-L.", "-Wl,--no-as-needed", "-lone", "-ltwo",
          "-Wl,-rpath,$ORIGIN"], folder)  # fmt: skip
    return folder


def _stripped(folder: Path) -> Path:
    copy = folder.with_name(folder.name + "-stripped")
    copy.mkdir()
    for name in ("libone.so", "libtwo.so", "main"):
        shutil.copy(folder / name, copy)
        _run(["strip", name], copy)
    return copy


Built = Callable[[str, str, bool], Path]


@pytest.fixture(scope="session")
def registry_case(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """A case's folder (libone.so, libtwo.so, main), built on first use, once a session."""
    root = tmp_path_factory.mktemp("registries")

    @functools.cache
    def built(registry: str, variant: str, stripped: bool) -> Path:
        folder = built(registry, variant, False) if stripped else None
        return _stripped(folder) if folder else _build(root, registry, variant)

    return built


def _loads(folder: Path, mode: str) -> subprocess.CompletedProcess[str]:
    libraries = [str(folder / "libone.so"), str(folder / "libtwo.so")]
    command = [sys.executable, "-c", LOAD, mode, *libraries]
    return subprocess.run(command, check=False, capture_output=True, text=True)


def _initializers_as_read(monkeypatch: pytest.MonkeyPatch, *, big: bool) -> dict[str, bool]:
    """Whether each shared library's initializers were walked as it was read, by file name;
    ``big``: every file counts as big (``decoding.LATE_WALK_MIN_BYTES``)."""
    if big:
        monkeypatch.setattr(decoding, "LATE_WALK_MIN_BYTES", 0)
    walked: dict[str, bool] = {}

    def recorded(data: ElfBuffer, display: str, *args: Any, **kwargs: Any) -> BinaryFacts | None:
        facts = read_elf_facts(data, display, *args, **kwargs)
        if facts is not None and facts.file_type == "shared":
            walked[Path(display).name] = facts.initializers is not None
        return facts

    monkeypatch.setattr("buildtool.linkage.inputs.decoding.read_elf_facts", recorded)
    return walked


def _errors(report: Report) -> list[tuple[str, str, str]]:
    return [
        (f.check_id, Path(f.path).name, f.evidence)
        for f in report.findings
        if f.severity == "error"
    ]


@pytest.mark.parametrize("big", [False, True], ids=["small", "big"])
@pytest.mark.parametrize("stripped", [False, True], ids=["unstripped", "stripped"])
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("registry", list(REGISTRIES))
def test_a_registry_in_two_libraries_is_an_error_exactly_when_loading_both_fails(
    registry_case: Built,
    monkeypatch: pytest.MonkeyPatch,
    *,
    registry: str,
    variant: str,
    stripped: bool,
    big: bool,
) -> None:
    """``big``: every file counts as big, whose initializers are walked as it is read only
    when it is stripped (an unstripped one is paired by their names first, and they are read
    again when a check needs them); the verdicts are the same."""
    folder = registry_case(registry, variant, stripped)
    walked = _initializers_as_read(monkeypatch, big=big)
    spec = REGISTRIES[registry]
    failed = set()
    for mode in ("global", "local"):
        run = _loads(folder, mode)
        if run.returncode != 0:
            assert spec.failure in run.stderr, run.stderr  # the duplicate registration itself
            failed.add(mode)
    assert failed == FAILS[registry, variant]
    errors = _errors(check(folder))
    assert walked == {"libone.so": not big or stripped, "libtwo.so": not big or stripped}
    if not failed:
        assert errors == []
        return
    assert [(check_id, name) for check_id, name, _ in errors] == [("BT103", "libtwo.so")]
    evidence = errors[0][2]
    assert any(name in evidence for name in spec.named), evidence


def _read_again_here(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose initializers this process reads again as the facts hold them (not
    deeper), by file name: a child forked to read them ahead counts in its own copy."""
    read: list[str] = []

    def counted(data: Any, display: str, **kwargs: Any) -> Any:
        if kwargs.get("deep") is False:
            read.append(Path(display).name)
        return read_initializers_again(data, display, **kwargs)

    monkeypatch.setattr("buildtool.linkage.inputs.lookups.read_initializers_again", counted)
    return read


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("registry", list(REGISTRIES))
def test_the_initializers_a_check_reads_again_are_read_ahead_by_a_child(
    registry_case: Built, monkeypatch: pytest.MonkeyPatch, registry: str, variant: str
) -> None:
    """Every file counts as big, so the libraries' initializers are left unread and read again
    when the duplicate-code check needs them: with one process, here, exactly those that
    ``initializers_to_read`` foretells; with two, by a child while the other checks run, and
    none here. The report is the same, and an error exactly when loading both libraries fails
    (``FAILS``, measured by the test above): the pairs that load stay clean."""
    folder = registry_case(registry, variant, False)
    monkeypatch.setattr(decoding, "LATE_WALK_MIN_BYTES", 0)
    read = _read_again_here(monkeypatch)
    foretold: list[list[str]] = []

    def recorded(subject: Subject) -> list[BinaryFile]:
        found = initializers_to_read(subject)
        foretold.append(sorted(binary.location.name for binary in found))
        return found

    monkeypatch.setattr(checking, "initializers_to_read", recorded)
    alone = verify_paths([folder], LinkagePolicy.empty(), jobs=1)
    assert sorted(read) == foretold[0] == ["libone.so", "libtwo.so"]
    read.clear()
    assert threading.active_count() == 1, "a thread left by another test stops every fork"
    ahead = verify_paths([folder], LinkagePolicy.empty(), jobs=2)
    assert foretold[1] == foretold[0]
    assert read == []
    assert ahead == alone
    errors = [f.check_id for f in ahead.findings if f.severity == "error"]
    assert errors == (["BT103"] if FAILS[registry, variant] else [])


# --- extension modules of one package: the interpreter imports them into one process ---------

PYTHON_INCLUDE = sysconfig.get_paths()["include"]
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
CPYTHON = f"cp{sys.version_info.major}{sys.version_info.minor}"
IMPORT = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"


def _modules(
    root: Path, name: str, sources: list[Path], flags: tuple[str, ...], libraries: tuple[str, ...]
) -> Path:
    """pkg/one and pkg/two under ``root / name``: ``sources`` compiled once (``MODULE`` one,
    ``flags``), and linked twice with ``libraries``, the second time with its init function
    renamed ``PyInit_two``: two modules built from one source differ by nothing else the
    verdict reads (their compiles are what costs: pybind11's take seconds)."""
    require(Path(PYTHON_INCLUDE, "Python.h").exists(), "Python.h is missing (python3-dev)")
    folder = root / name
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "__init__.py").write_text("")
    objects = [folder / f"{source.stem}.o" for source in sources]
    for source, obj in zip(sources, objects, strict=True):
        compile_command: list[str | Path] = [
            "g++", "-O2", "-fPIC", "-fvisibility=hidden", f"-I{PYTHON_INCLUDE}", "-DMODULE=one",
            *flags, "-c", source, "-o", obj,
        ]  # fmt: skip
        _run(compile_command, folder)
    renamed = [folder / f"{obj.stem}-two.o" for obj in objects]
    for obj, copy in zip(objects, renamed, strict=True):
        _run(["objcopy", "--redefine-sym", "PyInit_one=PyInit_two", obj, copy], folder)
    for module, linked in (("one", objects), ("two", renamed)):
        out = folder / "pkg" / f"{module}{SUFFIX}"
        _run(["g++", "-shared", *linked, *libraries, "-o", out], folder)
    return folder


def _imports(folder: Path, *names: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", IMPORT, *names]
    return subprocess.run(command, cwd=folder, check=False, capture_output=True, text=True)


def _strip_modules(folder: Path) -> Path:
    copy = folder.with_name(folder.name + "-stripped")
    shutil.copytree(folder, copy)
    for module in (copy / "pkg").glob(f"*{SUFFIX}"):
        _run(["strip", module], copy)
    return copy


@pytest.fixture(scope="session")
def protobuf_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two C-API extension modules of one package, each with protobuf's generated code."""
    spec = REGISTRIES["protobuf"]
    require(spec.needs.exists(), f"{spec.needs} is missing (libprotobuf-dev)")
    require(shutil.which("protoc") is not None, "protoc is missing (protobuf-compiler)")
    root = tmp_path_factory.mktemp("package")
    generated = root / "generated"
    shutil.copytree(SOURCES / "protobuf", generated)
    _run(["protoc", "--cpp_out=.", "point.proto"], generated)
    sources = [SOURCES / "module.cc", generated / "point.pb.cc", generated / "work.cc"]
    return _modules(root, "protobuf", sources, (f"-I{generated}",), ("-lprotobuf",))


@pytest.mark.parametrize("stripped", [False, True], ids=["unstripped", "stripped"])
def test_registering_code_in_two_modules_of_one_package_is_bt103(
    protobuf_modules: Path, stripped: bool
) -> None:
    """No file NEEDs the other and nothing loads both, but importing the package's modules
    registers point.proto twice in the one libprotobuf both load."""
    folder = _strip_modules(protobuf_modules) if stripped else protobuf_modules
    assert _imports(folder, "pkg.one").returncode == 0
    both = _imports(folder, "pkg.one", "pkg.two")
    assert both.returncode != 0
    assert REGISTRIES["protobuf"].failure in both.stderr
    errors = _errors(check(folder))
    assert [(check_id, name) for check_id, name, _ in errors] == [("BT103", f"two{SUFFIX}")]
    assert "libprotobuf.so" in errors[0][2]
    assert "point.proto" in errors[0][2]


@pytest.fixture(scope="session")
def pybind11_modules(tmp_path_factory: pytest.TempPathFactory) -> Callable[[bool], Path]:
    """pkg/one and pkg/two, both binding Point with Debian's pybind11: globally, or
    module-local (built on first use)."""
    require(Path("/usr/include/pybind11/pybind11.h").exists(), "pybind11-dev is missing")
    root = tmp_path_factory.mktemp("pybind11")
    sources = [SOURCES / "pybind11" / "module.cc"]

    @functools.cache
    def built(local: bool) -> Path:
        extra = ("-DPOINT_EXTRA=, pybind11::module_local()",) if local else ()
        return _modules(root, "local" if local else "global", sources, extra, ())

    return built


@pytest.mark.parametrize("stripped", [False, True], ids=["unstripped", "stripped"])
@pytest.mark.parametrize("local", [False, True], ids=["global", "module-local"])
def test_one_type_bound_by_two_modules_of_a_package_is_bt126_unless_module_local(
    pybind11_modules: Callable[[bool], Path], local: bool, stripped: bool
) -> None:
    folder = pybind11_modules(local)
    folder = _strip_modules(folder) if stripped else folder
    both = _imports(folder, "pkg.one", "pkg.two")
    report = check(folder)
    if local:
        assert both.returncode == 0, both.stderr
        assert _errors(report) == []
        return
    assert 'generic_type: type "Point" is already registered!' in both.stderr
    assert [(f.check_id, Path(f.path).name) for f in report.findings] == [("BT127", f"two{SUFFIX}")]
    assert "C++ type Point" in report.findings[0].message
    assert "__pybind11_internals_" in report.findings[0].evidence


@pytest.mark.parametrize("handed_off", [False, True], ids=["serial", "handed-off"])
@pytest.mark.parametrize("suffix", [SUFFIX, ".so"], ids=["cpython-suffix", "plain-so"])
@pytest.mark.parametrize("local", [False, True], ids=["global", "module-local"])
def test_a_big_module_is_read_with_its_init_function(
    pybind11_modules: Callable[[bool], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    local: bool,
    suffix: str,
    handed_off: bool,
) -> None:
    """A big wheel member is inflated without its code (libtorch_cpu.so keeps 100 of its 434
    MB), but a module's init function is code: the BT127 of two big modules binding one type
    globally (importing both fails) stays, and module-local bindings (they import) stay clean.
    A member named like a module is read whole at once; one named ``x.so`` (CPython imports
    that too) is read without its code, found to be a module, and read again whole. The
    modules stand for big ones: every member counts as big, and ``handed_off``, the bigger one
    is inflated by a worker and decoded here (``pool.Handoff``)."""
    built = pybind11_modules(local)
    folder = tmp_path / "modules"
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "__init__.py").write_text("")
    for module in ("one", "two"):
        shutil.copy(built / "pkg" / f"{module}{SUFFIX}", folder / "pkg" / f"{module}{suffix}")
    members = {f"pkg/{path.name}": path.read_bytes() for path in (folder / "pkg").iterdir()}
    wheel = write_wheel(tmp_path / f"pkg-1.0-{CPYTHON}-{CPYTHON}-linux_x86_64.whl", "pkg", members)
    left_out: list[Ranges] = []

    def recorded(head: bytes, size: int, keep_front: int) -> Ranges:
        left_out.append(code_ranges(head, size, keep_front))
        return left_out[-1]

    monkeypatch.setattr(decoding, "SPARSE_MIN_BYTES", 1)
    monkeypatch.setattr(decoding, "KEEP_FRONT_BYTES", 0)
    monkeypatch.setattr(decoding, "code_ranges", recorded)
    decoded_here = hand_offs_decoded(monkeypatch)
    if handed_off:
        monkeypatch.setattr(pool, "PARALLEL_MIN_BYTES", 0)
        monkeypatch.setattr(pool, "SPLIT_MIN_BYTES", 1)
        monkeypatch.setattr(pool, "BATCH_BYTES", 1)
    report = verify_paths([wheel], LinkagePolicy.empty(), jobs=2 if handed_off else 1)
    assert len(decoded_here) == handed_off
    if not handed_off:  # a worker's reads are not seen here
        assert len(left_out) == (2 if suffix == ".so" else 0)  # without their code, or whole
        assert all(left_out)
    both = _imports(folder, "pkg.one", "pkg.two")
    found = [(f.check_id, Path(f.path).name) for f in report.findings]
    assert (both.returncode == 0) is local, both.stderr
    assert found == ([] if local else [("BT127", f"two{suffix}")])


def test_modules_of_different_packages_are_not_imported_together(
    pybind11_modules: Callable[[bool], Path], tmp_path: Path
) -> None:
    """The same two modules in two top-level packages: importing one of each still fails
    (one registry per process), but nothing says a process imports both packages."""
    folder = tmp_path / "two-packages"
    for module, package in (("one", "first"), ("two", "second")):
        (folder / package).mkdir(parents=True)
        shutil.copy(pybind11_modules(False) / "pkg" / f"{module}{SUFFIX}", folder / package)
    assert check(folder).findings == ()


# --- a lock is no registry ------------------------------------------------------------------------

ABSL_LIKE = """namespace absl { inline namespace lts_20260107 {
class Mutex { public: void lock(); void unlock(); int held = 0; };
void Mutex::lock() { ++held; }
void Mutex::unlock() { --held; }
} }
""" + refusing_registry("shared_registry_add")
"""A third library holding absl's ``Mutex`` (its mangled names as abseil's release spells
them) and a registry that refuses a name twice."""

LOCKED_REGISTRY = """namespace absl { inline namespace lts_20260107 {
class Mutex { public: void lock(); void unlock(); int held = 0; };
} }
extern "C" void shared_registry_add(const char* name);
static absl::Mutex mutex;
static const char* names[8];
static int count;
extern "C" __attribute__((visibility("hidden"))) void registry_add(const char* name) {
  mutex.lock();
  ADD;
  mutex.unlock();
}
"""
"""A registry a static library keeps in each library linking it (hidden), guarded by an absl
``Mutex``: ``ADD`` keeps the name in its own table, or hands it to the third library's."""

SETUP = """extern "C" void registry_add(const char*);
namespace { struct Setup { Setup() { registry_add("gemm"); } } setup; }
"""

OWN_TABLE = "names[count++] = name"


def _locked_registries(folder: Path, add: str) -> subprocess.CompletedProcess[str]:
    folder.mkdir()
    cxx(folder, "libabsl.so", {"absl.cc": ABSL_LIKE}, "-shared", "-fPIC")
    for library in ("one", "two"):
        sources = {
            "registry.cc": LOCKED_REGISTRY.replace("ADD", add),
            "setup.cc": SETUP,
            f"{library}.cc": f'extern "C" int {library}() {{ return 1; }}\n',
        }
        cxx(folder, f"lib{library}.so", sources, "-shared", "-fPIC", "-labsl",
            "-Wl,-rpath,$ORIGIN")  # fmt: skip
    main = 'extern "C" int one(); extern "C" int two();\nint main() { return one() + two() - 2; }\n'
    cxx(folder, "main", {"main.cc": main}, "-Wl,--no-as-needed", "-lone", "-ltwo",
        "-Wl,-rpath,$ORIGIN")  # fmt: skip
    return subprocess.run([folder / "main"], check=False, capture_output=True, text=True)


def test_a_lock_both_copies_take_in_a_third_library_is_no_registry(tmp_path: Path) -> None:
    """Each library registers "gemm" in its own copy of the registry, under a lock of the
    third library: the program runs, and no BT103 (pyarrow's macOS dylibs: protobuf's copies
    registering their descriptors under libarrow's ``absl::Mutex``). The same lock around the
    third library's registry aborts, and is BT103 through that registry."""
    own = _locked_registries(tmp_path / "own", OWN_TABLE)
    assert own.returncode == 0, own.stderr
    report = check(tmp_path / "own")
    assert not {f.check_id for f in report.findings} & {"BT103"}, [
        f.evidence for f in report.findings
    ]
    shared = _locked_registries(tmp_path / "shared", "shared_registry_add(name)")
    assert shared.returncode == -6, shared  # SIGABRT: "gemm" registered twice
    report = check(tmp_path / "shared")
    (found,) = [f for f in report.findings if f.check_id == "BT103"]
    assert "libabsl.so:shared_registry_add" in found.evidence
