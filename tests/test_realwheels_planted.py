"""Planted defects in real Linux x86_64 wheels (``--realwheels``): each wheel broken the ways
wheels break in the wild, with RECORD kept consistent, and each verdict asserted: the published
wheel has no error, every broken copy has the errors named here. The ELF edits are patchelf's
(``.ci/run`` installs it). docs/realwheels.md says what importing each broken wheel really did.

The wheels are pinned in ``test_realwheels`` and come from its cache."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs.wheel_archive import record_line
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from tests.conftest import require
from tests.musl import MUSL_LOADER, musl_load_error
from tests.test_realwheels import MUSL, foreign_wheel, wheel

pytestmark = pytest.mark.realwheels

Change = Callable[[bytes], bytes | None]
"""A member's new bytes (None: the member is deleted)."""


def patchelf(*arguments: str) -> Change:
    """The member edited by ``patchelf ARGUMENTS`` (on a copy in a temporary folder)."""

    def change(data: bytes) -> bytes:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "member.so"
            path.write_bytes(data)
            subprocess.run(["patchelf", *arguments, str(path)], check=True)
            return path.read_bytes()

    return change


def chained(*changes: Change) -> Change:
    """The changes applied one after the other (patchelf 0.14 mixes up some combined options)."""

    def change(data: bytes) -> bytes | None:
        result: bytes | None = data
        for step in changes:
            result = step(result) if result is not None else None
        return result

    return change


def deleted(_data: bytes) -> None:
    return None


def planted(source: Path, target: Path, changes: Mapping[str, Change],
            added: Mapping[str, bytes]) -> Path:  # fmt: skip
    """A copy of ``source`` with ``changes`` applied and members ``added`` (new name -> its
    bytes), its RECORD rewritten to agree. Members are stored
    uncompressed: the copy is read once, and deflating 260 MB would dominate the test."""
    rows: list[str] = []
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as copy:
        names = original.namelist()
        record = next(name for name in names if name.endswith(".dist-info/RECORD"))
        assert not set(changes) - set(names), f"no such member: {set(changes) - set(names)}"
        made = [(new, data, None) for new, data in added.items()]
        members = [(n, original.read(n), changes.get(n)) for n in names if not n.endswith("/")]
        for name, data, how in [*members, *made]:
            if name == record:
                continue
            result = how(data) if how else data
            if result is not None:
                copy.writestr(name, result, zipfile.ZIP_STORED)
                rows.append(record_line(name, result))
        copy.writestr(record, "\n".join([*rows, f"{record},,"]) + "\n")
    return target


@dataclass(frozen=True)
class Graft:
    """A member added to a wheel, made from a member of it or of another wheel."""

    member: str
    how: Change
    dist: str = ""
    """The wheel the member is taken from ('': the planted one)."""

    def made(self, dist: str) -> bytes:
        with zipfile.ZipFile(wheel(self.dist or dist)) as archive:
            data = self.how(archive.read(self.member))
        assert data is not None
        return data


@dataclass(frozen=True)
class Plant:
    """One defect planted into one wheel, and the errors verify-linkage must report."""

    dist: str
    name: str
    """What was done, as a test id."""
    changes: Mapping[str, Change]
    """Member -> how it changes."""
    errors: frozenset[tuple[str, str, str | None]]
    """(check id, member, NEEDED entry or None) of every error the broken copy has."""
    added: Mapping[str, Graft] = field(default_factory=dict)
    """New member -> what it is made from."""
    together: tuple[str, ...] = ()
    """Wheels checked with it, as they are installed together."""
    probe: str = ""
    """A member that ``ctypes.CDLL`` loads alone from the unpacked copy: it must fail exactly
    when errors are expected ('': none, the member's libraries are in another wheel)."""
    warnings: frozenset[tuple[str, str]] = frozenset()
    """(check id, member) of warnings the broken copy must have too (the published wheels carry
    warnings of their own, so the rest is not compared)."""
    known_false_alarm: str = ""
    """Why verify-linkage still reports an error the import does not hit (the test is then an
    xfail, strict: it starts passing when the verdict is fixed)."""


ZMQ = "zmq/backend/cython/_zmq.cpython-311-x86_64-linux-gnu.so"
LIBZMQ = "pyzmq.libs/libzmq-2f02442c.so.5.2.5"
SODIUM = "libsodium-6c8f8377.so.26.4.0"
HDF5 = "h5py.libs/libhdf5-9e18f0c6.so.320.0.0"
SZ = "libsz-c6be10dd.so.2.0.1"
HDF5_NAME = HDF5.split("/")[1]
HDF5_HL = "h5py.libs/libhdf5_hl-69da89c9.so.320.0.0"
H5_MODULES = ("h5py/h5.cpython-311-x86_64-linux-gnu.so",)
GOMP = "libgomp-e985bcbb.so.1.0.0"
GOMP_USERS = tuple(
    f"sklearn/{module}.cpython-311-x86_64-linux-gnu.so"
    for module in (
        "_loss/_loss", "cluster/_k_means_common", "cluster/_k_means_elkan",
        "cluster/_k_means_lloyd", "cluster/_k_means_minibatch", "manifold/_barnes_hut_tsne",
        *(f"ensemble/_hist_gradient_boosting/{name}" for name in
          ("_binning", "_gradient_boosting", "_predictor", "histogram", "splitting")),
        *(f"metrics/_pairwise_distances_reduction/{name}" for name in
          ("_argkmin", "_argkmin_classmode", "_base", "_radius_neighbors",
           "_radius_neighbors_classmode")),
        "metrics/_pairwise_fast", "utils/_openmp_helpers",
    )
)  # fmt: skip
"""The extension modules that need scikit-learn's grafted libgomp."""
LOSS = GOMP_USERS[0]
OPENMP_HELPERS = GOMP_USERS[-1]
"""The first of them ``import sklearn`` loads: the others find libgomp loaded already."""
GOMP_COPY = "scikit_learn.libs/libgomp-0badc0de.so.1.0.0"
COMPILER = "tvm/lib/libtvm_compiler.so"
RUNTIME = "tvm/lib/libtvm_runtime.so"
FFI_COPY = "apache_tvm.libs/libtvm_ffi-abcdef12.so"
RUNTIME_COPY = "apache_tvm.libs/libtvm_runtime-5e2a1c9b.so"
NOWHERE = "libnotshipped.so.1"


def _errors(report: Report) -> set[tuple[str, str, str | None]]:
    """(check, member, NEEDED entry) of every error, once per file it hits."""
    return {
        (f.check_id, path.split("!/")[-1], f.needed or None)
        for f in report.findings
        if f.severity == "error"
        for path in f.paths
    }


PLANTS = [
    Plant("pyzmq", "libsodium-deleted", {f"pyzmq.libs/{SODIUM}": deleted},
          frozenset({("BT109", LIBZMQ, SODIUM)}), probe=LIBZMQ),
    Plant("pyzmq", "runpath-away", {ZMQ: patchelf("--set-rpath", "$ORIGIN/../../pyzmq.libs")},
          frozenset({("BT107", ZMQ, "libzmq-2f02442c.so.5.2.5")}), probe=ZMQ),
    Plant("pyzmq", "libsodium-not-needed", {LIBZMQ: patchelf("--remove-needed", SODIUM)},
          frozenset({("BT106", LIBZMQ, None)}), probe=LIBZMQ),
    Plant("pyzmq", "needs-unshipped", {ZMQ: patchelf("--add-needed", NOWHERE)},
          frozenset({("BT109", ZMQ, NOWHERE)}), probe=ZMQ),
    Plant("h5py", "libsz-deleted", {f"h5py.libs/{SZ}": deleted},
          frozenset({("BT109", HDF5, SZ)}), probe=HDF5),
    Plant("h5py", "runpath-away", {HDF5: patchelf("--set-rpath", "/opt/hdf5/lib")},
          frozenset({("BT107", HDF5, SZ), ("BT107", HDF5, "libaec-a27cf049.so.0.1.4")}),
          probe=HDF5),
    Plant("h5py", "libsz-not-needed", {HDF5: patchelf("--remove-needed", SZ)},
          frozenset({("BT106", HDF5, None)}), probe=HDF5),
    # import works: every module that loads libhdf5_hl needs libhdf5 too, so libhdf5 is in the
    # load's scope; ctypes.CDLL(libhdf5_hl) alone fails (undefined H5* symbols)
    Plant("h5py", "libhdf5-not-needed-by-hl", {HDF5_HL: patchelf("--remove-needed", HDF5_NAME)},
          frozenset(), warnings=frozenset({("BT117", HDF5_HL)}), probe=H5_MODULES[0]),
    Plant("h5py", "needs-unshipped", {HDF5: patchelf("--add-needed", NOWHERE)},
          frozenset({("BT109", HDF5, NOWHERE)}), probe=HDF5),
    Plant("scikit-learn", "libgomp-deleted", {f"scikit_learn.libs/{GOMP}": deleted},
          frozenset(("BT109", module, GOMP) for module in GOMP_USERS),
          probe=OPENMP_HELPERS),
    Plant("scikit-learn", "runpath-away", {OPENMP_HELPERS: patchelf("--set-rpath", "$ORIGIN")},
          frozenset({("BT107", OPENMP_HELPERS, GOMP)}), probe=OPENMP_HELPERS),
    # import works: sklearn/__init__ loads _openmp_helpers, which loads libgomp before _loss
    # asks for its SONAME; ctypes.CDLL(_loss) in a fresh interpreter fails
    Plant("scikit-learn", "runpath-away-behind-another-loader",
          {LOSS: patchelf("--set-rpath", "$ORIGIN")}, frozenset({("BT107", LOSS, GOMP)}),
          probe=LOSS),
    Plant("scikit-learn", "libgomp-not-needed", {OPENMP_HELPERS: patchelf("--remove-needed", GOMP)},
          frozenset({("BT106", OPENMP_HELPERS, None)}), probe=OPENMP_HELPERS),
    # two OpenMP runtimes in one process, each with its own thread pool: both work
    Plant("scikit-learn", "libgomp-grafted-twice",
          {LOSS: patchelf("--replace-needed", GOMP, GOMP_COPY.split("/")[1])},
          frozenset(),
          added={GOMP_COPY: Graft(f"scikit_learn.libs/{GOMP}",
                                  patchelf("--set-soname", GOMP_COPY.split("/")[1]))},
          probe=LOSS),
    Plant("scikit-learn", "needs-unshipped", {LOSS: patchelf("--add-needed", NOWHERE)},
          frozenset({("BT109", LOSS, NOWHERE)}), probe=LOSS),
    Plant(
        "apache-tvm",
        "runtime-grafted-twice",
        {COMPILER: chained(
            patchelf("--replace-needed", "libtvm_runtime.so", RUNTIME_COPY.split("/")[1]),
            patchelf("--set-rpath", "$ORIGIN:$ORIGIN/../../apache_tvm.libs"),
        )},
        frozenset({("BT122", RUNTIME_COPY, None)}),
        added={RUNTIME_COPY: Graft("tvm/lib/libtvm_runtime.so",
                                   patchelf("--set-soname", RUNTIME_COPY.split("/")[1]))},
        together=("apache-tvm-ffi",),
    ),
    # what auditwheel repair does without --exclude: the registry library grafted into
    # apache_tvm.libs; import tvm aborts ("TypeAttr `__ffi_convert__` is already registered")
    Plant(
        "apache-tvm",
        "libtvm-ffi-grafted",
        {name: chained(
            patchelf("--replace-needed", "libtvm_ffi.so", FFI_COPY.split("/")[1]),
            patchelf("--set-rpath", "$ORIGIN:$ORIGIN/../../apache_tvm.libs"),
        ) for name in (RUNTIME, COMPILER)},
        frozenset({("BT122", FFI_COPY, None)}),
        added={FFI_COPY: Graft("tvm_ffi/lib/libtvm_ffi.so",
                               patchelf("--set-soname", FFI_COPY.split("/")[1]),
                               "apache-tvm-ffi")},
        together=("apache-tvm-ffi",),
    ),
    # BT114's own advice followed: RUNPATH into apache-tvm-ffi's folder; import tvm and
    # tvm.compile work, one libtvm_ffi.so is loaded
    Plant("apache-tvm", "runpath-to-tvm-ffi",
          {name: patchelf("--set-rpath", "$ORIGIN:$ORIGIN/../../tvm_ffi/lib")
           for name in (RUNTIME, COMPILER, "tvm/lib/libtvm_runtime_cuda.so",
                        "tvm/lib/libtvm_runtime_extra.so")},
          frozenset(), together=("apache-tvm-ffi",)),
    # import works: tvm_ffi loads libtvm_ffi.so RTLD_GLOBAL before tvm loads its runtime;
    # ctypes.CDLL(libtvm_runtime.so) alone fails (undefined symbol): underlinking, a warning
    Plant("apache-tvm", "libtvm-ffi-not-needed",
          {RUNTIME: patchelf("--remove-needed", "libtvm_ffi.so")}, frozenset(),
          warnings=frozenset({("BT117", RUNTIME)}), together=("apache-tvm-ffi",)),
]  # fmt: skip


CUDA_TOOLKIT = dataclasses.replace(LinkagePolicy.empty(), host_provided=("libcudart.so.*",))
"""apache-tvm's libtvm_runtime_cuda.so NEEDs libcudart.so.13, which it does not bundle and no
manylinux policy provides: the CUDA toolkit a CUDA user installs. Judged by the wheel's tag,
that is BT109 on every host; accepted here as a recipe would accept it (``host-provided``)."""


def policy_for(dist: str) -> LinkagePolicy:
    return CUDA_TOOLKIT if dist == "apache-tvm" else LinkagePolicy.empty()


def build(plant: Plant, folder: Path) -> Path:
    """The broken copy of ``plant``'s wheel, under its own name in ``folder``."""
    source = wheel(plant.dist)
    folder.mkdir(parents=True, exist_ok=True)
    added = {name: graft.made(plant.dist) for name, graft in plant.added.items()}
    return planted(source, folder / source.name, plant.changes, added)


@pytest.mark.parametrize("dist", sorted({p.dist for p in PLANTS}))
def test_the_published_wheel_has_no_error(dist: str) -> None:
    together = next(p.together for p in PLANTS if p.dist == dist)
    report = verify_paths([wheel(d) for d in (dist, *together)], policy_for(dist))
    assert _errors(report) == set()


CASES = [
    pytest.param(
        plant,
        id=f"{plant.dist}-{plant.name}",
        marks=[pytest.mark.xfail(strict=True, reason=plant.known_false_alarm)]
        if plant.known_false_alarm
        else [],
    )
    for plant in PLANTS
]


@pytest.mark.parametrize("plant", CASES)
def test_the_verdict_on_a_planted_copy(plant: Plant, tmp_path: Path) -> None:
    require(shutil.which("patchelf") is not None, "patchelf is not installed")
    broken = build(plant, tmp_path)
    report = verify_paths([broken, *(wheel(d) for d in plant.together)], policy_for(plant.dist))
    assert _errors(report) == plant.errors
    warned = {(f.check_id, p.split("!/")[-1]) for f in report.findings
              if f.severity == "warning" for p in f.paths}  # fmt: skip
    assert plant.warnings <= warned


def load_error(archive: Path, member: str, folder: Path) -> str:
    """What the loader says when ``ctypes.CDLL`` loads ``member`` of the unpacked ``archive``
    alone, in a fresh interpreter ('': it loads)."""
    with zipfile.ZipFile(archive) as unpacking:
        unpacking.extractall(folder)
    code = "import ctypes, sys; ctypes.CDLL(sys.argv[1])"
    command = [sys.executable, "-c", code, str(folder / member)]
    loaded = subprocess.run(command, capture_output=True, text=True, check=False)
    if loaded.returncode == 0:
        return ""
    return (loaded.stderr.strip().splitlines() or [f"exit {loaded.returncode}"])[-1]


@pytest.mark.parametrize("plant", [p for p in PLANTS if p.probe],
                         ids=[f"{p.dist}-{p.name}" for p in PLANTS if p.probe])  # fmt: skip
def test_the_changed_file_fails_to_load_exactly_when_errors_are_expected(
    plant: Plant, tmp_path: Path
) -> None:
    """The ground truth of the verdicts above, for the files that load without another wheel."""
    require(shutil.which("patchelf") is not None, "patchelf is not installed")
    assert load_error(wheel(plant.dist), plant.probe, tmp_path / "published") == ""
    broken = load_error(build(plant, tmp_path), plant.probe, tmp_path / "broken")
    assert bool(broken) == bool(plant.errors), broken or "loads"


# --- a musllinux wheel, its ground truth from musl's own loader ----------------------------------

MUSL_LIBZMQ = "pyzmq.libs/libzmq-d0713f8f.so.5.2.5"
MUSL_SODIUM = "libsodium-18a1306d.so.26.4.0"


def _musl_load_error(archive: Path, member: str, folder: Path) -> str:
    """What musl's loader says of ``member`` of the unpacked ``archive`` ('': it loads)."""
    with zipfile.ZipFile(archive) as unpacking:
        unpacking.extractall(folder)
    return musl_load_error(folder / member)


def test_a_musllinux_library_that_no_longer_needs_libsodium_is_bt106(tmp_path: Path) -> None:
    """musl versions no symbol, so libzmq's references to libsodium are unversioned like its
    references to musl: before the C library's export list judged them, this was exit 0."""
    require(shutil.which("patchelf") is not None, "patchelf is not installed")
    require(MUSL_LOADER.exists(), "musl is not installed (apt-get install musl)")
    source = foreign_wheel("pyzmq", "27.3.0", MUSL)
    assert _musl_load_error(source, MUSL_LIBZMQ, tmp_path / "published") == ""
    assert _errors(verify_paths([source], LinkagePolicy.empty())) == set()
    (tmp_path / "planted").mkdir()
    changes = {MUSL_LIBZMQ: patchelf("--remove-needed", MUSL_SODIUM)}
    broken = planted(source, tmp_path / "planted" / source.name, changes, {})
    error = _musl_load_error(broken, MUSL_LIBZMQ, tmp_path / "broken")
    assert "crypto_box_open: symbol not found" in error
    assert _errors(verify_paths([broken], LinkagePolicy.empty())) == {("BT106", MUSL_LIBZMQ, None)}
