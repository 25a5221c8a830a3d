"""One verdict on every host, for every ABI (``--realwheels``): real wheels nobody tuned for,
published and planted the ways wheels break in the wild, each verdict asserted, each broken
copy shown to fail the way its finding says (``ctypes.CDLL`` of the member in this
interpreter). docs/realwheels.md has the numbers per wheel.

The wheels are pinned here and cached with the others (``test_realwheels.cache``)."""

from __future__ import annotations

import collections
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from tests.test_realwheels import cache
from tests.test_realwheels_planted import load_error, planted

pytestmark = pytest.mark.realwheels


def pinned(requirement: str, kind: str = "", *options: str) -> Path:
    """The one wheel of ``requirement`` (``name==version``) that ``pip download`` picks with
    ``options`` (``--platform``, ``--python-version``), cached in ``cache()/kind``."""
    folder = cache() / kind if kind else cache()
    folder.mkdir(exist_ok=True)
    name, version = requirement.split("==")
    stem = name.replace("-", "_").lower()

    def found() -> list[Path]:
        return [p for p in folder.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]

    if not found():
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary",
                   ":all:", "-d", str(folder), requirement, *options]  # fmt: skip
        subprocess.run(command, check=True)
    wheels = found()
    assert len(wheels) == 1, f"{requirement} {options}: expected one wheel, found {wheels}"
    return wheels[0]


def errors(report: Report) -> set[tuple[str, str]]:
    return {(f.check_id, f.path.split("!/")[-1]) for f in report.findings if f.severity == "error"}


def counts(report: Report, severity: str) -> dict[str, int]:
    return dict(collections.Counter(f.check_id for f in report.findings if f.severity == severity))


def check(*wheels: Path) -> Report:
    return verify_paths(list(wheels), LinkagePolicy.empty())


def member_bytes(archive: Path, member: str) -> bytes:
    with zipfile.ZipFile(archive) as opened:
        return opened.read(member)


# --- an extension module built for another CPython --------------------------------------------

PANDAS = "pandas==2.3.3"
PROPERTIES = "pandas/_libs/properties.cpython-{}-x86_64-linux-gnu.so"


def test_pandas_for_311_and_312_is_clean() -> None:
    for python in ("3.11", "3.12"):
        kind = "" if python == "3.11" else "cp312"
        report = check(pinned(PANDAS, kind, "--python-version", python))
        assert errors(report) == set(), python


def test_pandas_with_a_module_of_its_312_build_is_an_error_and_fails_to_load(
    tmp_path: Path,
) -> None:
    """The cp312 build of ``properties`` under its cp311 name: the 3.11 interpreter refuses it
    ("undefined symbol: PyType_FromMetaclass"); before, every ``Py*`` name was taken on trust
    (exit 0)."""
    source = pinned(PANDAS, "", "--python-version", "3.11")
    newer = member_bytes(
        pinned(PANDAS, "cp312", "--python-version", "3.12"), PROPERTIES.format(312)
    )
    member = PROPERTIES.format(311)
    (tmp_path / "planted").mkdir()
    broken = planted(source, tmp_path / "planted" / source.name, {member: lambda _: newer}, {})
    if sys.version_info[:2] == (3, 11):
        assert "undefined symbol: Py" in load_error(broken, member, tmp_path / "broken")
        assert load_error(source, member, tmp_path / "published") == ""
    report = check(broken)
    assert errors(report) == {("BT153", member)}
    (finding,) = [f for f in report.findings if f.check_id == "BT153"]
    assert "PyType_FromMetaclass" in finding.message
    assert "cpython-311" in finding.evidence


# --- a bundled library of another architecture ----------------------------------------------

AARCH64 = ("--platform", "manylinux_2_28_aarch64", "--platform", "manylinux2014_aarch64")
SNDFILE = "_soundfile_data/libsndfile_x86_64.so"
NETCDF = "netcdf4.libs/libnetcdf-3622e713.so.22"
NETCDF_MODULE = "netCDF4/_netCDF4.abi3.so"


def _swapped(
    tmp_path: Path, requirement: str, member: str, foreign_member: str
) -> tuple[Path, Path]:
    """The x86_64 wheel with ``member`` replaced by the aarch64 wheel's ``foreign_member``."""
    source = pinned(requirement)
    arm = member_bytes(pinned(requirement, "aarch64", *AARCH64), foreign_member)
    (tmp_path / "planted").mkdir()
    return source, planted(source, tmp_path / "planted" / source.name, {member: lambda _: arm}, {})


def test_soundfile_with_its_aarch64_libsndfile_is_an_error_and_fails_to_load(
    tmp_path: Path,
) -> None:
    """cffi opens the library by path (no NEEDED entry): before, exit 0; the import fails on a
    machine without the system's libsndfile (here cffi falls back to it silently)."""
    source, broken = _swapped(tmp_path, "soundfile==0.14.0", SNDFILE,
                              "_soundfile_data/libsndfile_arm64.so")  # fmt: skip
    assert errors(check(source)) == set()
    assert load_error(source, SNDFILE, tmp_path / "published") == ""
    assert "cannot open shared object file" in load_error(broken, SNDFILE, tmp_path / "broken")
    report = check(broken)
    assert errors(report) == {("BT152", SNDFILE)}
    assert "is built for aarch64" in report.findings[0].message


def test_netcdf4_with_its_aarch64_libnetcdf_names_the_architecture(tmp_path: Path) -> None:
    """Before, BT107/BT109 "not found" only; now the library is BT152 and the module's BT107
    says why ld.so skips it."""
    source, broken = _swapped(tmp_path, "netCDF4==1.7.5.1.post1", NETCDF,
                              "netcdf4.libs/libnetcdf-084db265.so.22")  # fmt: skip
    assert errors(check(source)) == set()
    assert load_error(source, NETCDF_MODULE, tmp_path / "published") == ""
    assert load_error(broken, NETCDF_MODULE, tmp_path / "broken") != ""
    report = check(broken)
    assert ("BT152", NETCDF) in errors(report)
    (skipped,) = [
        f for f in report.findings if f.check_id == "BT107" and f.path.endswith(NETCDF_MODULE)
    ]
    assert "is built for aarch64" in skipped.evidence


# --- the same verdict on every host -------------------------------------------------------

LIGHTGBM = "lightgbm==4.7.0"
MACOS_ARM64 = ("--platform", "macosx_12_0_arm64", "--platform", "macosx_14_0_arm64")


@pytest.mark.parametrize(
    ("kind", "options", "needed"),
    [
        ("", (), "libgomp.so.1"),
        ("aarch64", AARCH64, "libgomp.so.1"),
        ("macos", MACOS_ARM64, "@rpath/libomp.dylib"),
    ],
    ids=["x86_64", "aarch64", "macos"],
)
def test_lightgbm_needs_an_openmp_runtime_it_does_not_bundle_on_every_host(
    kind: str, options: tuple[str, ...], needed: str
) -> None:
    """lightgbm NEEDs libgomp.so.1 (macOS: libomp), which no policy provides and it does not
    bundle: "libgomp.so.1: cannot open shared object file" in a slim image. Before, the x86_64
    wheel was clean on this machine (it has libgomp) and an error elsewhere."""
    report = check(pinned(LIGHTGBM, kind, *options))
    assert errors(report) == {
        ("BT109", f"lightgbm/lib/lib_lightgbm.{'dylib' if kind == 'macos' else 'so'}")
    }
    (finding,) = [f for f in report.findings if f.check_id == "BT109"]
    assert finding.needed == needed


def test_lightgbm_loads_here_only_because_this_machine_has_libgomp(tmp_path: Path) -> None:
    wheel = pinned(LIGHTGBM)
    (finding,) = [f for f in check(wheel).findings if f.check_id == "BT109"]
    assert "this machine has it (" in finding.evidence
    assert load_error(wheel, "lightgbm/lib/lib_lightgbm.so", tmp_path) == ""


# --- shared code that loads is no error ---------------------------------------------------------


def test_pyqt6_with_pyqt6_qt6_has_no_bt103_on_linker_symbols() -> None:
    """1,886 BT103 before: every pair of Qt libraries exports _end, _edata and __bss_start
    under the catch-all Qt_6 version."""
    report = check(pinned("PyQt6-Qt6==6.9.2"), pinned("PyQt6==6.9.1"))
    duplicates = [f for f in report.findings if f.check_id == "BT103"]
    assert not any("_end" in f.evidence or "__bss_start" in f.evidence for f in duplicates)


QT_RESOURCES = {
    "libQt6LabsWavefrontMesh.so.6": ":/qt-project.org/imports/Qt/labs/wavefrontmesh/qmldir",
    "libQt6QmlWorkerScript.so.6": ":/qt-project.org/imports/QtQml/WorkerScript/qmldir",
    "libQt6Quick3D.so.6": ":/qt-project.org/imports/QtQuick3D/qmldir",
    "libQt6Quick3DEffects.so.6": ":/qt-project.org/imports/QtQuick3D/Effects/qmldir",
    "libQt6QuickControls2Fusion.so.6": ":/qt-project.org/imports/QtQuick/Controls/Fusion/qmldir",
    "libQt6QuickControls2FusionStyleImpl.so.6": (
        ":/qt-project.org/imports/QtQuick/Controls/Fusion/impl/qmldir"
    ),
}
"""Libraries whose resource initializers (one code, rcc's and qmlcachegen's) were paired as
copies, and a resource each registers that no other library does."""

LIST_RESOURCES = """import ctypes, pathlib, sys
from PyQt6 import QtCore
lib = pathlib.Path(QtCore.__file__).parent / "Qt6" / "lib"
for name in sys.argv[1:]:
    ctypes.CDLL(str(lib / name), mode=ctypes.RTLD_GLOBAL)
found = QtCore.QDirIterator(":/", QtCore.QDirIterator.IteratorFlag.Subdirectories)
while found.hasNext():
    print(found.next())
"""


def test_pyqt6_with_pyqt6_qt6_has_no_bt103(tmp_path: Path) -> None:
    """467 BT103 before (332 when issue 33 measured it): Qt's resource initializers are one
    code in every library, each registering its own resources with libQt6Core, and its FFmpeg
    stubs export the same unique template members (no second build). Loaded into one process
    with PyQt6, the libraries each registered their own resources."""
    wheels = (pinned("PyQt6-Qt6==6.9.2"), pinned("PyQt6==6.9.1"))
    report = check(*wheels)
    assert counts(report, "error").get("BT103", 0) == 0
    site = tmp_path / "site"
    for wheel in (*wheels, pinned("PyQt6-sip==13.13.1")):
        with zipfile.ZipFile(wheel) as opened:
            opened.extractall(site)
    command = [sys.executable, "-c", LIST_RESOURCES, *QT_RESOURCES]
    environment = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    run = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
    assert set(QT_RESOURCES.values()) <= set(run.stdout.split())


DESIGNER = ("libQt6Designer.so.6", "libQt6DesignerComponents.so.6")

LOAD_QT_LIBRARIES = """import ctypes, pathlib, sys
from PySide6 import QtCore
lib = pathlib.Path(QtCore.__file__).parent / "Qt" / "lib"
def listed():
    found = QtCore.QDirIterator(":/", QtCore.QDirIterator.IteratorFlag.Subdirectories)
    names = set()
    while found.hasNext():
        names.add(found.next())
    return names
before = listed()
for name in sys.argv[1:]:
    ctypes.CDLL(str(lib / name), mode=ctypes.RTLD_GLOBAL)
print(len(listed() - before))
"""


def test_pyside6_one_resource_collection_in_two_libraries_is_no_bt103(tmp_path: Path) -> None:
    """1 BT103 before: libQt6Designer.so.6 and libQt6DesignerComponents.so.6 (stripped) both
    hold one resource collection, tables and all, and register it with libQt6Core's
    qRegisterResourceData, which lists a resource twice without complaint. Loaded into one
    process with PySide6, in either order, both libraries register their resources."""
    wheels = (pinned("PySide6-Essentials==6.12.0"), pinned("shiboken6==6.12.0"))
    report = check(*wheels)
    assert counts(report, "error").get("BT103", 0) == 0
    site = tmp_path / "site"
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as opened:
            opened.extractall(site)
    environment = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    added = []
    for order in (DESIGNER, DESIGNER[::-1]):
        command = [sys.executable, "-c", LOAD_QT_LIBRARIES, *order]
        run = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
        added.append(int(run.stdout))
    assert added[0] == added[1] > 0


def test_tensorflow_cpu_profiler_factory_in_two_libraries_is_no_bt103() -> None:
    """lib_pywrap_tensorflow_common.so and libtensorflow_cc.so.2 hold the same object code, and
    its initializer registers a profiler factory with TSL's RegisterProfilerFactory in
    libtensorflow_framework.so.2, which lists it twice: BT103 before, now BT124 (the copy costs
    space). ``import tensorflow`` maps all three and computes, and a profiling session records
    its trace without error (checked with the wheel installed, see docs/realwheels.md)."""
    report = check(pinned("tensorflow-cpu==2.21.0"))
    common = "tensorflow/python/lib_pywrap_tensorflow_common.so"
    assert ("BT103", common) not in errors(report)
    (copy,) = [
        f
        for f in report.findings
        if f.check_id == "BT124"
        and f.path.endswith(common)
        and "RegisterProfilerFactory" in f.evidence
    ]
    assert "libtensorflow_cc.so.2" in copy.message


def test_pyqt6_each_library_it_does_not_bundle_is_one_finding_listing_its_files() -> None:
    """327 BT109 before, one per file and library: 70 libraries outside the manylinux_2_28
    policy (libxkbcommon.so.0 for 137 files, the xcb family, ...), one finding each."""
    report = check(pinned("PyQt6-Qt6==6.9.2"), pinned("PyQt6==6.9.1"))
    missing = [f for f in report.findings if f.check_id == "BT109"]
    assert len(missing) == len({f.needed for f in missing}) == 70
    assert sum(len(f.paths) for f in missing) == 327
    (xkb,) = [f for f in missing if f.needed == "libxkbcommon.so.0"]
    assert len(xkb.paths) == 137


def test_vtk_is_clean_of_the_toolchain_runtimes_code() -> None:
    """BT103 before: libvtkfmt and libviskores_filter_core share only devtoolset's
    libstdc++_nonshared (system_error48.cc, the _ZGTt clones)."""
    assert errors(check(pinned("vtk==9.7.2"))) == set()


def test_tables_two_lz4_builds_and_two_libblosc2_are_warnings() -> None:
    """BT103 x4 + BT122 before; everything round-trips (blosc2 copies without initializers,
    LZ4 1.9.4 and 1.10.0 exported by both)."""
    report = check(pinned("tables==3.11.1"))
    assert errors(report) == set()
    assert counts(report, "warning").get("BT124", 0) == 5


def test_scipys_windows_wheel_has_no_copies_of_its_modules() -> None:
    """optimize/_zeros and optimize/cython_optimize/_zeros are two modules, loaded by path."""
    wheel = pinned("scipy==1.17.1", "win", "--platform", "win_amd64", "--python-version", "3.11")
    assert errors(check(wheel)) == set()


def test_polars_pure_python_wheel_beside_its_runtime_is_valid_input() -> None:
    """Exit 2 before: a wheel with no binary stopped the run."""
    report = check(pinned("polars==2.1.0"), pinned("polars-runtime-32==2.1.0"))
    assert report.inputs[0].endswith("polars-2.1.0-py3-none-any.whl")
    assert errors(report) == set()


NUMBA_PARALLEL = """
import numba, numpy
@numba.njit(parallel=True)
def total(values):
    result = 0.0
    for index in numba.prange(values.size):
        result += values[index]
    return result
print(total(numpy.arange(1000.0)), numba.threading_layer())
try:
    from numba.np.ufunc import omppool
except ImportError as error:
    print(str(error).split(":")[0])
"""


def test_numba_threading_layers_it_imports_inside_handlers_are_bt118(tmp_path: Path) -> None:
    """numba's OpenMP and TBB threading layers need libgomp and libtbb, which the wheel does not
    bundle and manylinux does not provide: BT109 before. numba imports them only inside
    ``try/except ImportError`` and picks another layer: BT118 now. Unpacked with llvmlite and
    numpy, and omppool's libgomp renamed to one nowhere (as on a system without it), parallel
    code runs on the workqueue layer; both modules fail to load."""
    wheels = (pinned("numba==0.68.1"), pinned("llvmlite==0.50.0"))
    report = check(*wheels)
    layers = {"omppool", "tbbpool"}
    found = {f.path.rpartition("/")[2].partition(".")[0]: f for f in report.findings}
    assert set(found) == layers
    assert {f.check_id for f in found.values()} == {"BT118"}
    assert {f.needed for f in found.values()} == {"libgomp.so.1.0.0", "libtbb.so.12"}
    site = tmp_path / "site"
    for wheel in (*wheels, pinned("numpy==2.4.6")):
        with zipfile.ZipFile(wheel) as opened:
            opened.extractall(site)
    (omppool,) = (site / "numba/np/ufunc").glob("omppool.*.so")
    rename = ["patchelf", "--replace-needed", "libgomp.so.1.0.0", "libgomp-absent.so.1"]
    subprocess.run([*rename, str(omppool)], check=True)
    environment = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-c", NUMBA_PARALLEL]
    run = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    assert run.stdout.split() == ["499500.0", "workqueue", "libgomp-absent.so.1"], run.stderr


def test_numba_windows_tbb_layer_is_bt118_too() -> None:
    """The Windows wheel's TBB layer needs tbb12.dll, which it does not bundle; the same
    guarded imports make it BT118 (its OpenMP layer uses vcomp140.dll, a system DLL)."""
    options = ("--platform", "win_amd64", "--python-version", "3.11")
    wheels = (pinned("numba==0.68.1", "win", *options), pinned("llvmlite==0.50.0", "win", *options))
    report = check(*wheels)
    assert {(f.check_id, f.needed) for f in report.findings} == {("BT118", "tbb12.dll")}


def test_rusts_bcryptprimitives_dll_is_windows_own() -> None:
    """cryptography's _rust.pyd imports bcryptprimitives.dll (Rust's standard library does),
    which every Windows has: BT109 while the system DLLs were a hand-made list."""
    options = ("--platform", "win_amd64", "--python-version", "3.11")
    report = check(pinned("cryptography==50.0.2", "win", *options))
    assert counts(report, "error") == {}


def test_a_universal2_wheels_arm64_slices_may_need_macos_11() -> None:
    """lxml's macosx_10_9_universal2 files: x86_64 slices need 10.9, arm64 slices 11.0, the
    oldest macOS an arm64 Mac runs: 7 BT151 while arm64 slices were held to the tag's 10.9."""
    options = ("--platform", "macosx_10_9_universal2", "--python-version", "3.11")
    report = check(pinned("lxml==6.2.0", "mac", *options))
    assert counts(report, "error") == {}


def test_pyside6_macos_resource_collections_are_no_bt103() -> None:
    """The macOS wheel's frameworks register their resources with QtCore's
    qRegisterResourceData, which Mach-O spells with one more underscore than the list of
    registries that take a collection twice: 536 BT103 while names were compared as spelled."""
    options = ("--platform", "macosx_14_0_universal2", "--python-version", "3.11")
    report = check(pinned("PySide6-Essentials==6.12.0", "mac", *options))
    assert counts(report, "error").get("BT103", 0) == 0


def test_vtk_macos_module_registrars_are_no_bt103() -> None:
    """Every wrapper source's boilerplate calls its module's own ``AddRegistrar_<module>``,
    which Mach-O calls directly: one code in every dylib, calling another function in each.
    113 BT103 while only the callees' code was compared (503 before the Mach-O spelling)."""
    options = ("--platform", "macosx_11_0_arm64", "--python-version", "3.11")
    report = check(pinned("vtk==9.7.2", "mac", *options))
    assert counts(report, "error") == {}


def test_tensorflow_cpu_stream_setup_in_two_libraries_is_no_bt103() -> None:
    """_pywrap_parallel_device.so and libtensorflow_cc.so.2 hold parallel_device_lib.cc, whose
    static initializer only sets up the standard streams: BT103 before, now BT124. With the
    wheel installed, ``import tensorflow`` maps both and a ParallelDevice computes. _xla_ops.so
    stays BT103: loaded with the libraries it shares code with, it exits, its copy of XLA's
    flags registered twice (checked the same way, see docs/realwheels.md)."""
    report = check(pinned("tensorflow-cpu==2.21.0"))
    device = "tensorflow/python/_pywrap_parallel_device.so"
    assert ("BT103", device) not in errors(report)
    (copy,) = [f for f in report.findings if f.check_id == "BT124" and f.path.endswith(device)]
    assert "_GLOBAL__sub_I_parallel_device_lib.cc" in copy.evidence
    assert "libtensorflow_cc.so.2" in copy.message
    xla = "tensorflow/compiler/tf2xla/ops/_xla_ops.so"
    assert any(check_id == "BT103" and path.endswith(xla) for check_id, path in errors(report))


def test_pyarrow_macos_static_copies_in_each_dylib_are_private() -> None:
    """Each of pyarrow's dylibs links its own OpenSSL, abseil, re2 and protobuf: Mach-O calls a
    dylib's own functions directly, so each uses its copy (BT124), and protobuf's copies take
    libarrow's ``absl::Mutex``, which keeps no registration: 6 BT103 before."""
    options = ("--platform", "macosx_12_0_arm64", "--python-version", "3.11")
    report = check(pinned("pyarrow==26.0.1", "mac", *options))
    assert counts(report, "error") == {}
    flight = [f for f in report.findings if f.path.endswith("libarrow_flight.2600.dylib")]
    assert {f.check_id for f in flight} >= {"BT124"}


def test_mediapipe_weak_glibc_private_need_is_no_bt150() -> None:
    """libmediapipe.so references ``_dl_get_tls_static_info@GLIBC_PRIVATE`` weakly, and its
    link (LLD) marked that version need weak: ld.so loads it whatever the glibc (BT150 before,
    whose message said ld.so stops)."""
    report = check(pinned("mediapipe==1.2.3"))
    assert not [f for f in report.findings if f.check_id == "BT150"]
