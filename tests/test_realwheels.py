"""verify-linkage on popular third-party wheels, each verdict asserted (``nox -s realwheels``).

Every wheel here installs and imports in a fresh virtual environment (docs/realwheels.md says
how each verdict was checked against the loader). The wheels are pinned, downloaded once
(``pip download --no-deps``) into ``$BUILDTOOL_REALWHEELS_CACHE`` (default
``~/.cache/buildtool/realwheels``) and never extracted. Deselected unless ``--realwheels``.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.verify import verify_paths

pytestmark = pytest.mark.realwheels

PINS = {
    "apache-tvm": "0.27.0.post1",
    "apache-tvm-ffi": "0.1.15.post2",
    "torch": "2.13.0",
    "numpy": "2.4.6",
    "scipy": "1.17.1",
    "pyarrow": "26.0.1",
    "grpcio": "1.85.3",
    "opencv-python-headless": "5.1.0.95",
    "torchvision": "0.28.0",
    # the planted-defect corpus (test_realwheels_planted) only
    "pyzmq": "27.3.0",
    "h5py": "3.16.0",
    "scikit-learn": "1.9.1",
}


def cache() -> Path:
    default = Path.home() / ".cache" / "buildtool" / "realwheels"
    folder = Path(os.environ.get("BUILDTOOL_REALWHEELS_CACHE", default))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def wheel(dist: str) -> Path:
    """The pinned wheel of ``dist`` for this interpreter, downloaded when the cache lacks it."""
    stem = re.sub(r"[-_.]+", "_", dist)
    pattern = re.compile(rf"{stem}-{re.escape(PINS[dist])}(\+[^-]+)?-.*\.whl", re.IGNORECASE)
    folder = cache()
    found = [p for p in folder.glob("*.whl") if pattern.fullmatch(p.name)]
    if not found:
        pinned = f"{dist}=={PINS[dist]}"
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                   "--only-binary", ":all:", "-d", str(folder), pinned]  # fmt: skip
        subprocess.run(command, check=True)
        found = [p for p in folder.glob("*.whl") if pattern.fullmatch(p.name)]
    assert len(found) == 1, f"{dist}: expected one wheel in {folder}, found {found}"
    return found[0]


@dataclass(frozen=True)
class Verdict:
    """What verify-linkage --no-recipe must say about a set of wheels installed together."""

    dists: tuple[str, ...]
    errors: tuple[tuple[str, str], ...] = ()
    """(check id, wheel member) of every error, the true defects (each file a finding lists)."""
    warnings: dict[str, int] = field(default_factory=dict)
    """Files warned about per check id (a finding of one cause counts each file it lists)."""
    findings: int | None = None
    """How many findings the report has (one per cause), when it is asserted."""


CUDA_RUNTIME = ("BT109", "tvm/lib/libtvm_runtime_cuda.so")
"""libcudart.so.13, which apache-tvm does not bundle and no policy provides (the CUDA toolkit):
judged by the tag on every host; this machine has /usr/local/cuda-13.0, which before hid it."""

VERDICTS = [
    # BT116: libtvm_ffi.so for four files, libcudart.so.13 for one (2 findings, 5 files)
    Verdict(("apache-tvm",), warnings={"BT108": 1, "BT116": 5}, findings=3),
    Verdict(
        ("apache-tvm", "apache-tvm-ffi"),
        errors=(CUDA_RUNTIME,),
        warnings={"BT114": 4, "BT108": 1},
        findings=3,
    ),
    Verdict(("apache-tvm-ffi",)),
    Verdict(
        ("torch",),
        errors=tuple(("BT107", "torch/bin/test_shim") for _ in range(3)),
        warnings={"BT113": 207},
    ),
    Verdict(("numpy",), warnings={"BT111": 5}),
    Verdict(("scipy",), warnings={"BT111": 23, "BT113": 1, "BT124": 2}),
    Verdict(("numpy", "scipy"), warnings={"BT111": 28, "BT113": 1, "BT124": 2}),
    Verdict(("pyarrow",), warnings={"BT124": 3}),
    Verdict(("grpcio",)),
    Verdict(("opencv-python-headless",), warnings={"BT111": 8}),
]


@pytest.mark.parametrize("verdict", VERDICTS, ids=["+".join(v.dists) for v in VERDICTS])
def test_verdict(verdict: Verdict) -> None:
    report = verify_paths([wheel(dist) for dist in verdict.dists], LinkagePolicy.empty())
    hits = [(f, path.split("!/")[-1]) for f in report.findings for path in f.paths]
    errors = sorted((f.check_id, member) for f, member in hits if f.severity == "error")
    warnings = collections.Counter(f.check_id for f, _member in hits if f.severity == "warning")
    assert errors == sorted(verdict.errors)
    assert dict(warnings) == verdict.warnings
    if verdict.findings is not None:
        assert len(report.findings) == verdict.findings


def test_adding_the_required_wheel_never_makes_tvm_worse() -> None:
    """With the CUDA runtime accepted as the recipe's ``host-provided``, as a CUDA user's
    recipe would."""
    cuda = dataclasses.replace(LinkagePolicy.empty(), host_provided=("libcudart.so.*",))
    alone = verify_paths([wheel("apache-tvm")], cuda)
    both = verify_paths([wheel("apache-tvm"), wheel("apache-tvm-ffi")], cuda)
    assert both.count("error") <= alone.count("error") == 0
    assert {f.message for f in both.findings if f.check_id == "BT114"} == {
        "needs libtvm_ffi.so, found only when apache-tvm-ffi is imported first"
    }


# --- wheels of other platforms, checked on this x86_64 glibc machine ---------------------------

AARCH64 = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
MUSL = ("musllinux_1_2_x86_64",)


@dataclass(frozen=True)
class Foreign:
    """A wheel of another platform and what verify-linkage --no-recipe must say about it."""

    dist: str
    version: str
    platforms: tuple[str, ...]
    warnings: dict[str, int] = field(default_factory=dict)


FOREIGN = [
    Foreign("apache-tvm-ffi", "0.1.12", AARCH64, {"BT111": 2}),
    Foreign("numpy", "2.4.6", AARCH64, {"BT111": 5}),
    Foreign("pyzmq", "27.3.0", AARCH64, {"BT111": 2}),
    Foreign("numpy", "2.4.6", MUSL, {"BT111": 6, "BT124": 1}),
    Foreign("pyzmq", "27.3.0", MUSL, {"BT111": 3}),
]


def foreign_wheel(dist: str, version: str, platforms: tuple[str, ...]) -> Path:
    """The wheel of ``dist`` for ``platforms`` (``pip download --platform``), cached."""
    stem = re.sub(r"[-_.]+", "_", dist)
    kind = "musllinux" if platforms[0].startswith("musllinux") else platforms[0].rsplit("_")[-1]

    folder = cache() / kind  # apart from this machine's wheels, which ``wheel`` finds by name
    folder.mkdir(exist_ok=True)

    def found() -> list[Path]:
        return list(folder.glob(f"{stem}-{version}-*.whl"))

    if not found():
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary",
                   ":all:", "-d", str(folder), f"{dist}=={version}"]  # fmt: skip
        command += [arg for platform in platforms for arg in ("--platform", platform)]
        subprocess.run(command, check=True)
    wheels = found()
    assert len(wheels) == 1, f"{dist} for {platforms}: expected one wheel, found {wheels}"
    return wheels[0]


@pytest.mark.parametrize(
    "case", FOREIGN, ids=[f"{c.dist}-{c.platforms[0].split('_')[0]}" for c in FOREIGN]
)
def test_a_foreign_platforms_wheel_is_judged_by_its_tag(case: Foreign) -> None:
    """Before, this machine's ld.so.cache was asked: 17, 40, 10, 24 and 5 BT108 warnings."""
    report = verify_paths(
        [foreign_wheel(case.dist, case.version, case.platforms)], LinkagePolicy.empty()
    )
    findings = collections.Counter(f.check_id for f in report.findings)
    assert dict(findings) == case.warnings
    assert not report.failed


def without_member(wheel_path: Path, pattern: str, out: Path) -> tuple[Path, str]:
    """A copy of a wheel with the member matching ``pattern`` deleted, its RECORD row too."""
    import zipfile

    from buildtool.linkage.inputs.wheel_archive import record_line

    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel_path) as archive:
        members = {n: archive.read(n) for n in archive.namelist() if not n.endswith("/")}
    gone = next(name for name in members if re.search(pattern, name))
    del members[gone]
    record = next(name for name in members if name.endswith(".dist-info/RECORD"))
    rows = [record_line(n, d) for n, d in members.items() if n != record] + [f"{record},,"]
    members[record] = ("\n".join(rows) + "\n").encode()
    copy = out / wheel_path.name
    with zipfile.ZipFile(copy, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return copy, gone


@pytest.mark.parametrize("platforms", [AARCH64, MUSL], ids=["aarch64", "musllinux"])
def test_a_bundled_library_deleted_from_a_foreign_wheel_is_an_error(
    platforms: tuple[str, ...], tmp_path: Path
) -> None:
    wheel_path, gone = without_member(
        foreign_wheel("pyzmq", "27.3.0", platforms), r"pyzmq\.libs/libzmq-", tmp_path
    )
    report = verify_paths([wheel_path], LinkagePolicy.empty())
    module = "_zmq.cpython-311-" + (
        "aarch64-linux-gnu.so" if platforms is AARCH64 else "x86_64-linux-musl.so"
    )
    errors = [(f.check_id, f.path.split("/")[-1], f.needed) for f in report.findings
              if f.severity == "error"]  # fmt: skip
    assert errors == [("BT109", module, gone.split("/")[-1])]


def test_torchvision_beside_a_cpu_torch_that_lacks_libtorch_cuda_is_an_error() -> None:
    """torchvision 0.28.0 (a CUDA build) needs libtorch_cuda.so and libc10_cuda.so, which the
    CPU torch 2.13.0 it requires does not ship: ``import torchvision`` fails ("operator
    torchvision::nms does not exist"), and ctypes.CDLL of its _C.so says "libc10_cuda.so: cannot
    open shared object file". Alone, torch unchecked, the same NEEDED entries are BT116."""
    torchvision = wheel("torchvision")
    alone = verify_paths([torchvision], LinkagePolicy.empty())
    # and libcudart.so.13, which _C.so's RPATH (a build folder) does not reach: it ships as
    # torchvision.libs/libcudart.faf08d9a.so.13 and is found only by its SONAME once loaded
    # (this machine's CUDA toolkit hid that before)
    found = {(f.check_id, f.needed) for f in alone.findings if f.needed}
    assert {check for check, needed in found if needed != "libcudart.so.13"} == {"BT116"}
    both = verify_paths([torchvision, wheel("torch")], LinkagePolicy.empty())
    missing = sorted(
        (path.split("!/")[-1], f.needed)
        for f in both.findings
        if f.check_id == "BT109"
        for path in f.paths
    )
    assert missing == [
        ("torchvision/_C.so", "libc10_cuda.so"),
        ("torchvision/_C.so", "libtorch_cuda.so"),
        ("torchvision/image.so", "libc10_cuda.so"),
        ("torchvision/image.so", "libtorch_cuda.so"),
    ]
