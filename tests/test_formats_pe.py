"""PE facts and the Windows loader's rules, on DLLs and executables that mingw-w64 builds here,
with wine's loader as ground truth: what wine refuses to load, verify-linkage reports as an
error, and what wine runs stays clean."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pefile  # type: ignore[import-untyped]
import pytest

from buildtool.linkage.binaries.bounded import Bounded
from buildtool.linkage.binaries.pe import MalformedPE, read_pe_facts
from buildtool.linkage.binaries.pe.decoder import parse_image
from buildtool.linkage.binaries.pe.reference import read_pe_reference
from buildtool.linkage.binaries.pe.relocations import (
    BASE_RELOCATION_DIRECTORY,
    BaseRelocations,
    parse_blocks,
    string_before,
)
from buildtool.linkage.binaries.read import read_binary_file
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs.dll_directories import add_dll_directories, dll_directories
from buildtool.linkage.loaders.windows import provided
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from tests.conftest import require

MINGW = shutil.which("x86_64-w64-mingw32-g++")
WINE = next(
    (w for w in ("/usr/lib/wine/wine64", shutil.which("wine64")) if w and Path(w).exists()), None
)

LIBRARY = 'extern "C" __declspec(dllexport) int answer() { return 42; }\n'
OTHER_LIBRARY = 'extern "C" __declspec(dllexport) int other() { return 7; }\n'
PROGRAM = (
    "#include <cstdio>\n"
    'extern "C" __declspec(dllimport) int answer();\n'
    'int main() { std::printf("%d\\n", answer()); return 0; }\n'
)


def _compile(folder: Path, source: str, output: str, *extra: str) -> None:
    assert MINGW is not None
    (folder / f"{output}.cc").write_text(source)
    flags = ["-static-libgcc", "-static-libstdc++"]
    command = [MINGW, f"{output}.cc", "-o", output, *flags, *extra]
    subprocess.run(command, cwd=folder, check=True)
    (folder / f"{output}.cc").unlink()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main.exe and the liba.dll it imports ``answer`` from, side by side."""
    require(MINGW is not None, "mingw-w64 (x86_64-w64-mingw32-g++) is not installed")
    folder = tmp_path_factory.mktemp("pe")
    _compile(folder, LIBRARY, "liba.dll", "-shared")
    _compile(folder, PROGRAM, "main.exe", "liba.dll")
    return folder


def _copy(built: Path, tmp_path: Path) -> Path:
    app = tmp_path / "app"
    shutil.copytree(built, app)
    return app


def _wine(app: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    require(WINE is not None, "wine64 is not installed")
    assert WINE is not None
    env = dict(os.environ, WINEDEBUG="-all", WINEPREFIX=str(tmp_path.parent / "wineprefix"))
    return subprocess.run(
        [WINE, "main.exe"],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _errors(report: Report) -> list[tuple[str, str, str]]:
    return [
        (f.check.id, Path(f.path).name, f.message) for f in report.findings if f.severity == "error"
    ]


def test_facts_of_built_files(built: Path) -> None:
    program = read_binary_file(built / "main.exe", "main.exe")
    library = read_binary_file(built / "liba.dll", "liba.dll")
    assert program is not None
    assert library is not None
    assert (program.format, program.file_type, program.machine) == ("pe", "executable", "x86_64")
    assert "liba.dll" in program.needed
    assert ("liba.dll", "answer") in program.bound_imports
    assert (library.soname, library.file_type, library.defined) == (
        "liba.dll",
        "shared",
        frozenset({"answer"}),
    )


COMPARED = ("machine", "file_type", "soname", "needed", "defined", "undefined", "bound_imports",
            "weak_needed", "elf_class", "exported_count", "code_size", "sections",
            "registration_strings", "init_array_size", "has_symtab")  # fmt: skip
"""The facts both PE readers fill (the reference reads no COFF symbol table)."""


def compare_readers(path: Path) -> list[str]:
    """The facts on which the struct decoder and pefile disagree for one file."""
    data = path.read_bytes()
    names = ["answer", "aten::add"]
    fast, reference = (
        read_pe_facts(data, path.name, names),
        read_pe_reference(data, path.name, names),
    )
    assert fast is not None
    assert reference is not None
    return [key for key in COMPARED if getattr(fast, key) != getattr(reference, key)]


def test_readers_agree_on_built_files(built: Path) -> None:
    assert compare_readers(built / "main.exe") == []
    assert compare_readers(built / "liba.dll") == []


def test_working_program_is_clean_and_runs(built: Path, tmp_path: Path) -> None:
    app = _copy(built, tmp_path)
    run = _wine(app, tmp_path)
    assert (run.returncode, run.stdout.strip()) == (0, "42")
    report = verify_paths([app], LinkagePolicy.empty())
    assert _errors(report) == []
    assert dict(report.files_by_format) == {"PE": 2}


def test_missing_dll_fails_under_wine_and_is_an_error(built: Path, tmp_path: Path) -> None:
    app = _copy(built, tmp_path)
    (app / "liba.dll").unlink()
    run = _wine(app, tmp_path)
    assert run.returncode != 0  # STATUS_DLL_NOT_FOUND
    report = verify_paths([app], LinkagePolicy.empty())
    # BT109: nothing ships liba.dll any more and no system provides it
    found = [(f.check.id, Path(f.path).name, f.needed) for f in report.findings]
    assert found == [("BT109", "main.exe", "liba.dll")]


def test_dll_without_the_bound_export_fails_and_is_an_error(built: Path, tmp_path: Path) -> None:
    app = _copy(built, tmp_path)
    (app / "liba.dll").unlink()
    _compile(app, OTHER_LIBRARY, "liba.dll", "-shared")  # same name, no "answer"
    run = _wine(app, tmp_path)
    # Windows refuses the load (STATUS_ENTRYPOINT_NOT_FOUND); wine binds the missing export to
    # a stub that raises at the first call, and its exit status then depends on its debugger
    assert "42" not in run.stdout.splitlines()  # a line of its own; winedbg's dump has addresses
    errors = _errors(verify_paths([app], LinkagePolicy.empty()))
    assert [(check, path) for check, path, _ in errors] == [("BT106", "main.exe")]


def test_truncated_and_corrupt_files_are_malformed_with_an_offset(built: Path) -> None:
    data = (built / "main.exe").read_bytes()
    for end in (2, 0x40, 0x80, 0x100, 0x200, 0x400, len(data) // 2):
        with pytest.raises(MalformedPE, match="malformed PE at offset 0x"):
            read_pe_facts(data[:end], "main.exe")
    (lfanew,) = struct.unpack_from("<I", data, 0x3C)
    bogus = bytearray(data)
    struct.pack_into("<H", bogus, lfanew + 6, 0xFFFF)  # NumberOfSections
    with pytest.raises(MalformedPE, match="sections"):
        read_pe_facts(bytes(bogus), "main.exe")
    bogus = bytearray(data)
    struct.pack_into("<I", bogus, 0x3C, len(data) + 16)  # e_lfanew past the end
    with pytest.raises(MalformedPE, match="past the end"):
        read_pe_facts(bytes(bogus), "main.exe")


def test_corrupt_dll_is_bt100_naming_the_format(built: Path, tmp_path: Path) -> None:
    app = _copy(built, tmp_path)
    data = (app / "liba.dll").read_bytes()
    (app / "liba.dll").write_bytes(data[:0x90])
    report = verify_paths([app], LinkagePolicy.empty())
    malformed = [f for f in report.findings if f.check.id == "BT100"]
    assert len(malformed) == 1
    assert "malformed PE" in malformed[0].message


def test_system_and_interpreter_dlls_are_provided() -> None:
    assert provided("KERNEL32.dll") == "system"
    assert provided("api-ms-win-crt-runtime-l1-1-0.dll") == "system"
    assert provided("VCRUNTIME140_1.dll") == "system"
    assert provided("python311.dll") == "interpreter"
    assert provided("liba.dll") is None


DELVEWHEEL_PATCH = """
def _delvewheel_patch_1_11_2():
    import os
    if os.path.isdir(libs_dir := os.path.abspath(os.path.join(os.path.dirname(__file__), \
os.pardir, 'numpy.libs'))):
        os.add_dll_directory(libs_dir)
"""


def test_add_dll_directory_as_delvewheel_writes_it() -> None:
    assert add_dll_directories(DELVEWHEEL_PATCH) == (("../numpy.libs",), False)
    assert add_dll_directories("import os\n") == ((), False)
    assert add_dll_directories("os.add_dll_directory(str(path.parent))\n") == ((), True)
    from pathlib import PurePosixPath

    folders = dll_directories([(PurePosixPath("/numpy/__init__.py"), DELVEWHEEL_PATCH)], [])
    assert folders == (PurePosixPath("/numpy.libs"),)


# --- base relocations: what the initializer walk compares of a DLL's read-only data -----------


def _block(page: int, *entries: int) -> bytes:
    return struct.pack("<II", page, 8 + 2 * len(entries)) + struct.pack(
        f"<{len(entries)}H", *entries
    )


def _every_relocated(relocations: BaseRelocations, end: int) -> list[int]:
    found: list[int] = []
    while (rva := relocations.first_within(found[-1] + 1 if found else 0, end)) is not None:
        found.append(rva)
    return found


def test_base_relocation_blocks_are_read_page_by_page() -> None:
    # DIR64 (type 10) and HIGHLOW (3) entries count; type 0 pads a block, whatever its offset;
    # a page may have two blocks
    table = _block(0x1000, 0xA010, 0xA008, 0, 0x0020, 0x3FF0) + _block(0x2000, 0xA004)
    relocations = parse_blocks(table + _block(0x1000, 0xA100))
    assert relocations is not None
    assert _every_relocated(relocations, 0x10000) == [0x1008, 0x1010, 0x1100, 0x1FF0, 0x2004]
    assert relocations.first_within(0x1009, 0x1011) == 0x1010
    assert relocations.first_within(0x1011, 0x1100) is None
    assert relocations.first_within(0x1FF1, 0x3000) == 0x2004
    assert parse_blocks(table[:-2]) is None  # the last block runs past the table
    assert parse_blocks(struct.pack("<II", 0x1000, 4)) is None  # shorter than its header


def test_a_string_before_a_relocated_pointer_is_kept_and_other_bytes_are_not() -> None:
    assert string_before(b"gemm\0\x10\x20\x30\x40", 5) == b"gemm\0"
    assert string_before(b"gemm\0\x10\x20\x30\x40", 4) == b""  # the pointer cuts the string
    assert string_before(b"\x01\0\0\0\0\0\0\0\x10\x20", 8) == b""  # a structure's head
    assert string_before(b"\x10\x20\x30", 0) == b""


def test_base_relocations_agree_with_pefile(built: Path) -> None:
    for path in (built / "liba.dll", built / "main.exe"):
        data = path.read_bytes()
        image = parse_image(Bounded(data, path.name, MalformedPE, 0, len(data)))
        rva, size = image.directory(BASE_RELOCATION_DIRECTORY)
        relocations = parse_blocks(data[image.offset(rva, "base relocations") :][:size])
        assert relocations is not None
        reference = pefile.PE(data=data, fast_load=True)
        reference.parse_data_directories(
            directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_BASERELOC"]]
        )
        expected = sorted(
            entry.rva
            for block in reference.DIRECTORY_ENTRY_BASERELOC
            for entry in block.entries
            if entry.type
        )
        assert len(expected) > 10, path.name  # static libstdc++: vtables, type_info
        end = max(s.virtual_address + s.virtual_size for s in image.sections)
        assert _every_relocated(relocations, end) == expected, path.name
