"""A wheel's platform tags against the architectures of the binaries Python loads from it.

Ground truth on Linux: a real extension module built for x86_64 and for aarch64, each in a wheel
tagged for this machine and installed by pip into a fresh virtual environment; the x86_64 one
imports, the aarch64 one installs and fails to import, and only it is BT152. On Windows, under
wine, a 32-bit module refused by a 64-bit process (``tests/test_windows.py``). On macOS (no dyld
here) by dyld's documented rule, a Mach-O file loads only from a slice of the process's
architecture: an arm64 module in a universal2 wheel lacks the x86_64 slice pip promises Intel
Macs; the same module made universal with lipo is clean.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from collections import Counter
from pathlib import Path

import pytest

from buildtool.linkage.binaries import BinaryFacts, defines_module_init
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.checks.tag_architecture import tag_machines
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from tests.builders import write_wheel
from tests.conftest import require
from tests.macos_sdk import clang_macos, write_sdk
from tests.test_wheel import Venv

pytestmark = pytest.mark.integration

PYTHON_TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"
MODULE = """#include <Python.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "_archmod", 0, -1, 0};
PyMODINIT_FUNC PyInit__archmod(void) { return PyModule_Create(&def); }
"""
BUNDLE = "int PyInit__archmod(void) { return 0; }\n"
"""What dyld is asked to load; no Python.h is needed to make a Mach-O module's shape."""


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("manylinux_2_17_aarch64", ("elf", ("aarch64",))),
        ("musllinux_1_2_x86_64", ("elf", ("x86_64",))),
        ("linux_i686", ("elf", ("i386",))),
        ("macosx_11_0_arm64", ("macho", ("arm64",))),
        ("macosx_10_9_universal2", ("macho", ("arm64", "x86_64"))),
        ("win_amd64", ("pe", ("x86_64",))),
        ("win32", ("pe", ("i386",))),
        ("macosx_10_6_universal", None),
        ("any", None),
    ],
)
def test_a_tag_names_the_format_and_machines_it_installs_on(
    tag: str, expected: tuple[str, tuple[str, ...]] | None
) -> None:
    assert tag_machines(tag) == expected


def _check(wheel: Path) -> Report:
    return verify_paths([wheel], LinkagePolicy.empty(), jobs=1)


def _module(folder: Path, compiler: str) -> bytes:
    """``_archmod`` built by ``compiler`` against this interpreter's headers."""
    require(shutil.which(compiler) is not None, f"{compiler} is not installed")
    source = folder / "archmod.c"
    source.write_text(MODULE)
    out = folder / f"_archmod-{compiler}.so"
    include = sysconfig.get_paths()["include"]
    command = [compiler, "-shared", "-fPIC", "-O1", f"-I{include}", "-o", str(out), str(source)]
    subprocess.run(command, check=True, capture_output=True)
    return out.read_bytes()


def _wheel(folder: Path, dist: str, tag: str, module: bytes) -> Path:
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    name = f"{dist}-1.0-{PYTHON_TAG}-{PYTHON_TAG}-{tag}.whl"
    return write_wheel(folder / name, dist, {f"{dist}/_archmod{suffix}": module})


def test_an_aarch64_module_in_an_x86_64_wheel_installs_fails_and_is_an_error(
    tmp_path: Path,
) -> None:
    require(sysconfig.get_platform() == "linux-x86_64", "the ground truth needs an x86_64 Linux")
    tag = "linux_x86_64"
    native = _wheel(tmp_path, "native", tag, _module(tmp_path, "gcc"))
    foreign = _wheel(tmp_path, "foreign", tag, _module(tmp_path, "aarch64-linux-gnu-gcc"))
    environment = Venv(tmp_path / "venv")
    environment.pip("install", "--no-index", str(native), str(foreign))  # pip takes both
    assert environment.run("-c", "import native._archmod").returncode == 0
    failed = environment.run("-c", "import foreign._archmod")
    assert failed.returncode == 1
    assert "ImportError" in failed.stderr
    assert _check(native).findings == ()
    findings = [(f.check_id, f.message) for f in _check(foreign).findings]
    assert ("BT152", "is built for aarch64, but the wheel's tags install it on x86_64 "
            "(linux_x86_64)") in findings  # fmt: skip


@pytest.fixture(scope="module")
def macos_modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """``_archmod`` as macOS modules are linked (``-bundle -undefined dynamic_lookup``): thin
    arm64, thin x86_64, and both made one universal file by lipo."""
    folder = tmp_path_factory.mktemp("macos-modules")
    sdk = folder / "sdk"
    write_sdk(sdk)
    flags = ("-bundle", "-undefined", "dynamic_lookup")
    thin = {arch: clang_macos(sdk, arch, folder / f"{arch}.so", BUNDLE, *flags)
            for arch in ("arm64", "x86_64")}  # fmt: skip
    fat = folder / "universal2.so"
    lipo = ["llvm-lipo-14", "-create", *map(str, thin.values()), "-output", str(fat)]
    subprocess.run(lipo, check=True, capture_output=True)
    return {name: path.read_bytes() for name, path in {**thin, "universal2": fat}.items()}


@pytest.mark.parametrize(
    ("tag", "module", "missing"),
    [
        ("macosx_11_0_arm64", "arm64", None),
        ("macosx_11_0_universal2", "universal2", None),
        ("macosx_11_0_x86_64.macosx_11_0_arm64", "universal2", None),
        ("macosx_11_0_universal2", "arm64", "x86_64 (macosx_11_0_universal2)"),
        ("macosx_11_0_arm64", "x86_64", "arm64 (macosx_11_0_arm64)"),
        ("macosx_11_0_x86_64.macosx_11_0_arm64", "x86_64", "arm64 (macosx_11_0_arm64)"),
    ],
)
def test_a_macos_module_needs_every_architecture_its_tags_name(
    macos_modules: dict[str, bytes], tmp_path: Path, tag: str, module: str, missing: str | None
) -> None:
    members = {"m/_archmod.cpython-311-darwin.so": macos_modules[module]}
    wheel = write_wheel(tmp_path / f"m-1.0-cp311-cp311-{tag}.whl", "m", members)
    findings = [(f.check_id, f.message) for f in _check(wheel).findings]
    expected = [] if missing is None else [
        ("BT152", f"is built for {module}, but the wheel's tags install it on {missing}")
    ]  # fmt: skip
    assert findings == expected


def test_a_module_of_another_format_is_an_error(
    macos_modules: dict[str, bytes], tmp_path: Path
) -> None:
    members = {"m/_archmod.cpython-311-x86_64-linux-gnu.so": macos_modules["x86_64"]}
    wheel = write_wheel(tmp_path / "m-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", "m", members)
    assert [(f.check_id, f.message) for f in _check(wheel).findings] == [
        ("BT152", "is a Mach-O file, but the wheel's tags (manylinux_2_17_x86_64) install it "
         "where ELF files load")
    ]  # fmt: skip


LIBRARY = "int sf_version(void) { return 1; }\n"


def _library(folder: Path, compiler: str) -> Path:
    require(shutil.which(compiler) is not None, f"{compiler} is not installed")
    source = folder / "sndfile.c"
    source.write_text(LIBRARY)
    out = folder / compiler / "libsndfile_x86_64.so"
    out.parent.mkdir()
    command = [compiler, "-shared", "-fPIC", "-O1", "-o", str(out), str(source)]
    subprocess.run(command, check=True, capture_output=True)
    return out


def test_a_library_opened_by_path_of_another_architecture_is_an_error(tmp_path: Path) -> None:
    """soundfile's shape: cffi opens ``_soundfile_data/libsndfile_x86_64.so`` by path, and no
    module NEEDs it. Its aarch64 build in an x86_64 wheel fails to open; the x86_64 one opens."""
    require(sysconfig.get_platform() == "linux-x86_64", "the ground truth needs an x86_64 Linux")
    tag = "py3-none-manylinux_2_17_x86_64"
    for compiler, loads in (("gcc", True), ("aarch64-linux-gnu-gcc", False)):
        library = _library(tmp_path, compiler)
        code = "import ctypes, sys; ctypes.CDLL(sys.argv[1])"
        command = [sys.executable, "-c", code, str(library)]
        opened = subprocess.run(command, capture_output=True, text=True, check=False)
        assert (opened.returncode == 0) is loads, opened.stderr
        member = {"sf/_soundfile_data/libsndfile_x86_64.so": library.read_bytes()}
        wheel = write_wheel(tmp_path / compiler / f"sf-1.0-{tag}.whl", "sf", member)
        checks = {f.check_id for f in _check(wheel).findings}
        assert checks == (set() if loads else {"BT152"})


def test_each_file_is_scanned_for_a_module_init_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BT152 and BT122 both ask whether a file is an extension module: a library's names
    (libtorch_cpu.so's 74k) are scanned once for both."""
    require(sysconfig.get_platform() == "linux-x86_64", "the module is built for this machine")
    source = tmp_path / "core.c"
    source.write_text(LIBRARY)
    library = tmp_path / "libcore.so.1"
    command = ["gcc", "-shared", "-fPIC", "-Wl,-soname,libcore.so.1", "-o", str(library)]
    subprocess.run([*command, str(source)], check=True, capture_output=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    members = {
        f"dist/_archmod{suffix}": _module(tmp_path, "gcc"),
        "dist/libcore.so.1": library.read_bytes(),
    }
    name = f"dist-1.0-{PYTHON_TAG}-{PYTHON_TAG}-linux_x86_64.whl"
    wheel = write_wheel(tmp_path / name, "dist", members)
    scans: Counter[str] = Counter()
    scan = defines_module_init

    def counted(facts: BinaryFacts) -> bool:
        scans[facts.soname or "module"] += 1
        return scan(facts)

    for module in list(sys.modules.values()):  # wherever a check looks the function up
        if (
            module.__name__.startswith("buildtool.")
            and getattr(module, "defines_module_init", None) is scan
        ):
            monkeypatch.setattr(module, "defines_module_init", counted)
    assert _check(wheel).findings == ()
    assert scans == Counter({"module": 1, "libcore.so.1": 1})
