"""verify-linkage on the macOS and Windows wheels of popular projects (``--realwheels``):
no error on the published wheels, and planted defects caught as errors: a bundled dylib or DLL
deleted, an ``LC_RPATH`` removed. The wheels are pinned and downloaded for their platform
(``pip download --platform``) into ``platforms/`` in the realwheels cache; see
docs/realwheels.md."""

from __future__ import annotations

import base64
import hashlib
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from tests.test_realwheels import cache

pytestmark = pytest.mark.realwheels

MACOS = "macosx_11_0_arm64"
WINDOWS = "win_amd64"
PINS = {
    ("torch", MACOS): "2.11.0",  # the newest torch with a macOS arm64 wheel for cp311
    ("torch", WINDOWS): "2.13.0",
    ("numpy", MACOS): "2.4.6",
    ("numpy", WINDOWS): "2.4.6",
    ("apache-tvm-ffi", MACOS): "0.1.15.post2",
    ("apache-tvm-ffi", WINDOWS): "0.1.15.post2",
    ("apache-tvm", MACOS): "0.27.0.post1",  # py3-none: one wheel for every Python
    ("apache-tvm", WINDOWS): "0.27.0.post1",
}


def platform_wheel(dist: str, platform: str) -> Path:
    stem = dist.replace("-", "_")
    version = PINS[(dist, platform)]
    # a folder of its own: test_realwheels finds its Linux wheels by name and version alone
    folder = cache() / "platforms"
    folder.mkdir(exist_ok=True)
    tag = "macosx" if platform == MACOS else "win"
    pattern = f"{stem}-{version}-*-{tag}*.whl"
    found = sorted(folder.glob(pattern))
    if not found:
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary",
                   ":all:", "--platform", platform, "--python-version", "3.11", "-d", str(folder),
                   f"{dist}=={version}"]  # fmt: skip
        subprocess.run(command, check=True)
        found = sorted(folder.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def _errors(report: Report) -> list[tuple[str, str]]:
    """(check, member) of every error, once per file it hits."""
    return sorted(
        (f.check.id, path.split("!/")[-1])
        for f in report.findings
        if f.severity == "error"
        for path in f.paths
    )


CASES = [(dist, platform) for dist, platform in PINS]


@pytest.mark.parametrize(("dist", "platform"), CASES)
def test_published_wheel_has_no_error(dist: str, platform: str) -> None:
    report = verify_paths([platform_wheel(dist, platform)], LinkagePolicy.empty())
    assert _errors(report) == []
    expected = "Mach-O" if platform == MACOS else "PE"
    assert set(dict(report.files_by_format)) == {expected}


@pytest.mark.parametrize("platform", [MACOS, WINDOWS])
def test_the_model_case_split_is_clean_with_its_ffi_wheel(platform: str) -> None:
    """apache-tvm's runtime and compiler libraries need libtvm_ffi from apache-tvm-ffi, which
    its Python package imports first: on macOS the one warning per library that needs it
    (``LC_RPATH`` is ``@loader_path`` only; dyld takes the already loaded image by its install
    name), on Windows none (tvm_ffi adds its DLL folder)."""
    wheels = [platform_wheel("apache-tvm", platform), platform_wheel("apache-tvm-ffi", platform)]
    report = verify_paths(wheels, LinkagePolicy.empty())
    assert _errors(report) == []
    warnings = sorted((f.check.id, p.split("!/")[-1]) for f in report.findings for p in f.paths)
    if platform == WINDOWS:
        assert warnings == []
        return
    assert warnings == [
        ("BT114", f"tvm/lib/libtvm_{name}.dylib")
        for name in ("compiler", "runtime", "runtime_extra", "runtime_metal")
    ]
    assert len(report.findings) == 1  # one cause: libtvm_ffi, listing the four
    assert all("dyld matches an @rpath name" in f.evidence for f in report.findings)


def _rewritten(source: Path, target: Path, change: Callable[[str, bytes], bytes | None]) -> Path:
    """A copy of a wheel with members changed (None: left out), its RECORD rewritten."""
    rows = []
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as copy:
        for info in original.infolist():
            if info.filename.endswith(".dist-info/RECORD"):
                record = info.filename
                continue
            if info.is_dir():
                continue
            data = change(info.filename, original.read(info))
            if data is None:
                continue
            copy.writestr(info.filename, data, zipfile.ZIP_DEFLATED)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            rows.append(f"{info.filename},sha256={digest.decode()},{len(data)}")
        copy.writestr(record, "\n".join([*rows, f"{record},,"]) + "\n")
    return target


def _without_rpaths(data: bytes) -> bytes:
    """A thin 64-bit Mach-O file whose LC_RPATH commands are turned into LC_UUID-sized no-ops
    (command 0x1A, LC_PREBIND_CKSUM, which dyld ignores)."""
    patched = bytearray(data)
    ncmds, _size = struct.unpack_from("<II", data, 16)
    at = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == 0x8000001C:
            struct.pack_into("<I", patched, at, 0x1A)
        at += size
    return bytes(patched)


def _missing(report: Report) -> set[tuple[str, str, str | None]]:
    """(check, member, library) of every not-found finding: BT109 for a library nothing ships
    and no platform provides."""
    return {
        (f.check.id, path.split("!/")[-1], f.needed)
        for f in report.findings
        if f.check.id in ("BT107", "BT108", "BT109")
        for path in f.paths
    }


def test_deleted_bundled_dylib_is_reported(tmp_path: Path) -> None:
    source = platform_wheel("torch", MACOS)
    broken = _rewritten(
        source,
        tmp_path / source.name,
        lambda name, data: None if name == "torch/lib/libc10.dylib" else data,
    )
    missing = _missing(verify_paths([broken], LinkagePolicy.empty()))
    assert ("BT109", "torch/lib/libtorch_cpu.dylib", "@rpath/libc10.dylib") in missing


def test_deleted_delocated_dylib_is_reported(tmp_path: Path) -> None:
    source = platform_wheel("numpy", MACOS)  # delocate grafted OpenBLAS into numpy/.dylibs
    broken = _rewritten(
        source,
        tmp_path / source.name,
        lambda name, data: None if name == "numpy/.dylibs/libgfortran.5.dylib" else data,
    )
    missing = _missing(verify_paths([broken], LinkagePolicy.empty()))
    assert {library for _check, _member, library in missing} == {"@loader_path/libgfortran.5.dylib"}


def test_removed_rpath_is_an_error(tmp_path: Path) -> None:
    source = platform_wheel("torch", MACOS)
    member = "torch/_C.cpython-311-darwin.so"
    broken = _rewritten(
        source,
        tmp_path / source.name,
        lambda name, data: _without_rpaths(data) if name == member else data,
    )
    assert ("BT107", member) in _errors(verify_paths([broken], LinkagePolicy.empty()))


def test_deleted_bundled_dll_is_reported(tmp_path: Path) -> None:
    source = platform_wheel("numpy", WINDOWS)
    broken = _rewritten(
        source,
        tmp_path / source.name,
        lambda name, data: None if name.startswith("numpy.libs/libscipy_openblas") else data,
    )
    missing = _missing(verify_paths([broken], LinkagePolicy.empty()))
    assert any(str(library).startswith("libscipy_openblas") for _c, _m, library in missing)


def test_pe_readers_agree_on_torch_dlls(tmp_path: Path) -> None:
    from tests.test_formats_pe import compare_readers

    source = platform_wheel("torch", WINDOWS)
    with zipfile.ZipFile(source) as archive:
        for member in ("torch/lib/c10.dll", "torch/lib/uv.dll", "torch/lib/torch_python.dll"):
            path = tmp_path / Path(member).name
            path.write_bytes(archive.read(member))
            assert compare_readers(path) == [], member


def test_macho_readers_agree_on_torch_dylibs() -> None:
    from tests.test_formats_macho import compare_readers

    source = platform_wheel("torch", MACOS)
    with zipfile.ZipFile(source) as archive:
        for member in ("torch/lib/libc10.dylib", "torch/lib/libomp.dylib", "torch/lib/libshm.dylib",
                       "torch/_C.cpython-311-darwin.so"):  # fmt: skip
            assert compare_readers(archive.read(member), member) == [], member


@pytest.mark.parametrize(
    ("dist", "platform", "member"),
    [
        ("torch", MACOS, "torch/lib/libshm.dylib"),
        ("torch", WINDOWS, "torch/lib/shm.dll"),
    ],
)
def test_mutated_real_files_are_malformed_never_a_crash(
    dist: str, platform: str, member: str
) -> None:
    """Truncations and bogus 32-bit fields (counts, offsets, sizes) all through the headers:
    facts or a ``MalformedBinary`` naming an offset, never another exception."""
    from buildtool.linkage.binaries.facts import MalformedBinary
    from buildtool.linkage.binaries.read import read_other_format

    with zipfile.ZipFile(platform_wheel(dist, platform)) as archive:
        data = archive.read(member)
    cases = [data[:end] for end in range(8, len(data), max(1, len(data) // 64))]
    for at in range(0, min(len(data), 4096) - 4, 4):
        for value in (0xFFFFFFFF, 0x7FFFFFF0, len(data) + 1):
            mutated = bytearray(data)
            struct.pack_into("<I", mutated, at, value)
            cases.append(bytes(mutated))
    messages = []
    for case in cases:
        try:
            read_other_format(case, member)
        except MalformedBinary as error:
            messages.append(str(error))
    assert len(messages) >= 50  # the mutations reach the decoder's checks
    assert all("at offset 0x" in message for message in messages)
