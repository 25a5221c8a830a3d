"""Mach-O facts and dyld's rules on files that ``tests/macho_builder`` writes byte by byte:
``@rpath`` through the loading chain, ``@loader_path``, system libraries, two-level binding,
weak libraries, fat files, minos against the wheel tag, and corrupt files."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import struct
import zipfile
from pathlib import Path

import pytest

from buildtool.linkage.binaries.macho import MalformedMachO, read_macho_facts
from buildtool.linkage.binaries.macho.reference import COMPARED, read_macho_reference
from buildtool.linkage.checks.macos_tag import wheel_macos_release
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from tests.macho_builder import CPU_ARM64, CPU_X86_64, MH_BUNDLE, MachO, fat

SYSTEM = "/usr/lib/libSystem.B.dylib"


def _extension(**changes: object) -> MachO:
    """An extension module (a bundle) that needs libcore.dylib through @rpath."""
    fields: dict[str, object] = {
        "filetype": MH_BUNDLE,
        "dylibs": ["@rpath/libcore.dylib", SYSTEM],
        "rpaths": ["@loader_path/lib"],
        "imports": [(0, "_core_answer"), (1, "_malloc")],
        "exports": ["_PyInit_ext"],
    }
    fields.update(changes)
    return MachO(**fields)  # type: ignore[arg-type]


def _core(**changes: object) -> MachO:
    fields: dict[str, object] = {
        "install_name": "@rpath/libcore.dylib",
        "dylibs": [SYSTEM],
        "exports": ["_core_answer"],
        "imports": [(0, "_free")],
        "locals": ["__GLOBAL__sub_I_core.cc"],
    }
    fields.update(changes)
    return MachO(**fields)  # type: ignore[arg-type]


def _package(tmp_path: Path, extension: MachO, core: MachO | None) -> Path:
    package = tmp_path / "pkg"
    (package / "lib").mkdir(parents=True)
    (package / "ext.cpython-311-darwin.so").write_bytes(extension.build())
    if core is not None:
        (package / "lib" / "libcore.dylib").write_bytes(core.build())
    return package


def _found(report: Report) -> list[tuple[str, str, str]]:
    return [(f.check.id, Path(f.path).name, f.severity) for f in report.findings]


def test_facts_of_a_built_dylib() -> None:
    facts = read_macho_facts(
        _core(strings=("demo.answer",)).build(), "libcore.dylib", ["demo.answer"]
    )
    assert facts is not None
    assert (facts.format, facts.machine, facts.file_type) == ("macho", "arm64", "shared")
    assert (facts.soname, facts.needed, facts.minos) == ("@rpath/libcore.dylib", (SYSTEM,), "11.0")
    assert facts.defined == {"_core_answer"}
    assert facts.undefined == {"_free"}
    assert facts.bound_imports == ((SYSTEM, "_free"),)
    assert facts.static_initializers == ("_GLOBAL__sub_I_core.cc",)
    assert facts.registration_strings == {"demo.answer"}


def test_static_initializers_are_the_local_symbols_whose_names_say_so() -> None:
    """Told by their names' offsets in the string table (the local symbols are not decoded one
    by one): an external symbol of that name is none, a name that only contains the prefix is
    none, and a symbol whose index points into a longer name reads the rest of it."""
    core = _core(
        locals=["__GLOBAL__sub_I_core.cc", "_helper__GLOBAL__sub_I_mid.cc", "_other", "_x"],
        exports=["_core_answer", "__GLOBAL__sub_I_exported.cc"],
    )
    data = bytearray(core.build())
    symoff, stroff = _symtab(bytes(data))
    helper = data.find(b"_helper__GLOBAL__sub_I_mid.cc\0", stroff) - stroff
    # the fourth local ("_x") names the tail of the second one's name
    struct.pack_into("<I", data, symoff + 3 * 16, helper + len("_helper"))
    facts = read_macho_facts(bytes(data), "libcore.dylib")
    assert facts is not None
    assert facts.static_initializers == ("_GLOBAL__sub_I_core.cc", "_GLOBAL__sub_I_mid.cc")
    assert "__GLOBAL__sub_I_exported.cc" in facts.defined


def _symtab(data: bytes) -> tuple[int, int]:
    """``LC_SYMTAB``'s symoff and stroff."""
    at = data.find(struct.pack("<II", 0x2, 24))
    symoff, _nsyms, stroff = struct.unpack_from("<III", data, at + 8)
    return symoff, stroff


def test_working_package_is_clean(tmp_path: Path) -> None:
    report = verify_paths([_package(tmp_path, _extension(), _core())], LinkagePolicy.empty())
    assert _found(report) == []
    assert dict(report.files_by_format) == {"Mach-O": 2}


def test_deleted_bundled_dylib_is_reported(tmp_path: Path) -> None:
    report = verify_paths([_package(tmp_path, _extension(), None)], LinkagePolicy.empty())
    assert [(check, name) for check, name, _ in _found(report)] == [
        ("BT109", "ext.cpython-311-darwin.so")
    ]


def test_removed_rpath_is_an_error(tmp_path: Path) -> None:
    package = _package(tmp_path, _extension(rpaths=[]), _core())
    assert ("BT107", "ext.cpython-311-darwin.so", "error") in _found(
        verify_paths([package], LinkagePolicy.empty())
    )


def test_rpath_of_the_loader_serves_the_chain(tmp_path: Path) -> None:
    # libcore needs @rpath/libleaf.dylib and has no LC_RPATH: the extension's serves it
    leaf = MachO(install_name="@rpath/libleaf.dylib", exports=["_leaf"])
    core = _core(dylibs=["@rpath/libleaf.dylib"], imports=[(0, "_leaf")])
    package = _package(tmp_path, _extension(), core)
    (package / "lib" / "libleaf.dylib").write_bytes(leaf.build())
    assert _found(verify_paths([package], LinkagePolicy.empty())) == []


def test_import_not_exported_by_its_bound_library_is_an_error(tmp_path: Path) -> None:
    # libcore exports _core_answer, but the extension binds _gone to it (two-level namespace)
    extension = _extension(imports=[(0, "_core_answer"), (0, "_gone")])
    found = _found(verify_paths([_package(tmp_path, extension, _core())], LinkagePolicy.empty()))
    assert found == [("BT106", "ext.cpython-311-darwin.so", "error")]


def test_weak_library_may_be_absent(tmp_path: Path) -> None:
    extension = _extension(weak_dylibs=["@rpath/liboptional.dylib"])
    assert (
        _found(verify_paths([_package(tmp_path, extension, _core())], LinkagePolicy.empty())) == []
    )


def test_readers_agree_on_built_files() -> None:
    files = [
        _core().build(),
        _extension(weak_dylibs=["@rpath/liboptional.dylib"]).build(),
        fat([(CPU_X86_64, _core(cputype=CPU_X86_64).build()), (CPU_ARM64, _core().build())]),
    ]
    for data in files:
        assert compare_readers(data, "file.dylib") == []


def compare_readers(data: bytes, name: str) -> list[str]:
    """The facts on which the struct decoder and macholib disagree."""
    fast, reference = read_macho_facts(data, name), read_macho_reference(data, name)
    assert fast is not None
    assert reference is not None
    return [key for key in COMPARED if getattr(fast, key) != getattr(reference, key)]


def test_fat_file_facts_are_the_arm64_slice() -> None:
    arm = _core().build()
    intel = _core(exports=["_intel_only"], cputype=CPU_X86_64).build()
    facts = read_macho_facts(fat([(CPU_X86_64, intel), (CPU_ARM64, arm)]), "libcore.dylib")
    assert facts is not None
    assert facts.architectures == ("x86_64", "arm64")
    assert (facts.machine, facts.defined) == ("arm64", frozenset({"_core_answer"}))


def _wheel(tmp_path: Path, tag: str, minos: str, intel_minos: str | None = None) -> Path:
    """``intel_minos``: the files are fat, an x86_64 slice of that minimum beside the arm64 one
    (a universal2 build)."""

    def built(file: MachO) -> bytes:
        if intel_minos is None:
            return file.build()
        intel = dataclasses.replace(file, cputype=CPU_X86_64, minos=intel_minos).build()
        return fat([(CPU_X86_64, intel), (CPU_ARM64, file.build())])

    files = {
        "pkg/ext.cpython-311-darwin.so": built(_extension(minos=minos)),
        "pkg/lib/libcore.dylib": built(_core(minos=minos)),
        "pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n\n",
        "pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("pkg-1.0.dist-info/RECORD,,")
    path = tmp_path / f"pkg-1.0-cp311-cp311-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("pkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def test_minos_newer_than_the_wheel_tag_is_an_error(tmp_path: Path) -> None:
    good = verify_paths([_wheel(tmp_path, "macosx_11_0_arm64", "11.0")], LinkagePolicy.empty())
    assert _found(good) == []
    bad = verify_paths([_wheel(tmp_path, "macosx_11_0_arm64", "12.0")], LinkagePolicy.empty())
    assert sorted(_found(bad)) == [
        ("BT151", "ext.cpython-311-darwin.so", "error"),
        ("BT151", "libcore.dylib", "error"),
    ]


def test_a_universal2_wheels_arm64_slice_is_promised_macos_11(tmp_path: Path) -> None:
    """pip installs a macosx_10_9_universal2 wheel on arm64 Macs, which run macOS 11 at least:
    its arm64 slices may need 11.0 (lxml's and pyzmq's do), but not 12.0."""
    universal = _wheel(tmp_path, "macosx_10_9_universal2", "11.0", intel_minos="10.9")
    assert _found(verify_paths([universal], LinkagePolicy.empty())) == []
    newer = _wheel(tmp_path, "macosx_10_9_universal2", "12.0", intel_minos="10.9")
    report = verify_paths([newer], LinkagePolicy.empty())
    assert sorted(_found(report)) == [
        ("BT151", "ext.cpython-311-darwin.so", "error"),
        ("BT151", "libcore.dylib", "error"),
    ]
    assert "needs macOS 12.0, but the wheel's tag promises macOS 11.0" in report.findings[0].message
    assert "(arm64: from macOS 11.0)" in report.findings[0].evidence


def test_wheel_macos_release() -> None:
    assert wheel_macos_release("x-1-cp311-cp311-macosx_10_9_x86_64.macosx_11_0_arm64.whl") == (
        10,
        9,
    )
    assert wheel_macos_release("x-1-cp311-cp311-win_amd64.whl") is None


def test_truncated_and_corrupt_files_are_malformed_with_an_offset() -> None:
    data = _core().build()
    for end in range(4, len(data), 7):
        with pytest.raises(MalformedMachO, match="malformed Mach-O at offset 0x"):
            read_macho_facts(data[:end], "libcore.dylib")
    bogus = bytearray(data)
    struct.pack_into("<I", bogus, 16, 0xFFFFFF)  # ncmds
    with pytest.raises(MalformedMachO, match="load commands"):
        read_macho_facts(bytes(bogus), "libcore.dylib")
    bogus = bytearray(data)
    struct.pack_into("<I", bogus, 20, len(data) * 2)  # sizeofcmds
    with pytest.raises(MalformedMachO, match="past the end"):
        read_macho_facts(bytes(bogus), "libcore.dylib")


def test_corrupt_dylib_in_a_folder_is_bt100(tmp_path: Path) -> None:
    package = _package(tmp_path, _extension(), _core())
    core = package / "lib" / "libcore.dylib"
    core.write_bytes(core.read_bytes()[:40])
    report = verify_paths([package], LinkagePolicy.empty())
    malformed = [f for f in report.findings if f.check.id == "BT100"]
    assert len(malformed) == 1
    assert "malformed Mach-O" in malformed[0].message
