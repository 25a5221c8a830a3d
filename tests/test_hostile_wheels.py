"""Wheels are untrusted: every hostile archive, built here with zipfile, is a clear exit-2 error
naming the wheel and the member (or a finding), and reading one never writes anything."""

from __future__ import annotations

import csv
import dataclasses
import shutil
import stat
import struct
import subprocess
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from buildtool.cli import main
from buildtool.errors import InputError
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs.collect import read_wheel
from buildtool.linkage.inputs.wheel_archive import (
    WheelLimits,
    parse_record,
    record_line,
    record_rows,
)
from buildtool.linkage.verify import verify_paths
from tests.conftest import require

DIST_INFO = "demo-0.1.0.dist-info"
RECORD = f"{DIST_INFO}/RECORD"
LIBRARY = "demo/lib/libdemo_x.so"

Member = tuple[str | zipfile.ZipInfo, bytes]


@pytest.fixture(scope="module")
def elf(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A small real shared library."""
    require(shutil.which("gcc") is not None, "needs gcc")
    folder = tmp_path_factory.mktemp("elf")
    (folder / "x.c").write_text("int x(void) { return 1; }\n", encoding="utf-8")
    command = ["gcc", "-shared", "-fPIC", "x.c", "-o", "libdemo_x.so", "-Wl,-rpath,$ORIGIN"]
    subprocess.run(command, cwd=folder, check=True, capture_output=True)
    return (folder / "libdemo_x.so").read_bytes()


def _name(member: str | zipfile.ZipInfo) -> str:
    return member.filename if isinstance(member, zipfile.ZipInfo) else member


def write_wheel(path: Path, members: list[Member], record: str | None = "auto") -> Path:
    """A wheel of ``members``; RECORD lists them truthfully unless ``record`` says otherwise."""
    rows = [record_line(_name(m), data) for m, data in members if not _name(m).endswith("/")]
    text = with_record(*rows) if record == TRUTH else record
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate names made on purpose
        for member, data in members:
            archive.writestr(member, data)
        if text is not None:
            archive.writestr(RECORD, text)
    return path


def symlink(name: str, target: str) -> Member:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


def compressed(name: str, method: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.compress_type = method
    return info


def with_record(*lines: str) -> str:
    return "\n".join([*lines, f"{RECORD},,"]) + "\n"


def _hash_of(line: str) -> str:
    return line.split(",")[1]


TRUTH = "auto"
"""RECORD lists every member truthfully."""

RecordSpec = str | None | Callable[[bytes], str]
"""RECORD's text, TRUTH, None for no RECORD, or a function of the ELF library's bytes."""


@dataclasses.dataclass(frozen=True)
class HostileCase:
    members: Callable[[bytes], list[Member]]
    """The members, given the ELF library's bytes."""
    member: str
    """The member the message must name ("" for the wheel as a whole)."""
    problem: str
    """What the message must say."""
    record: RecordSpec = TRUTH


def _one(name: str) -> Callable[[bytes], list[Member]]:
    return lambda elf: [(name, elf)]


CASES: dict[str, HostileCase] = {
    "dot-dot": HostileCase(_one("../../evil.so"), "../../evil.so", "'..' component"),
    "dot-dot inside": HostileCase(
        _one("demo/../../evil.so"), "demo/../../evil.so", "'..' component"),
    "absolute": HostileCase(_one("/tmp/evil.so"), "/tmp/evil.so", "absolute path"),
    "drive letter": HostileCase(_one("C:/evil.so"), "C:/evil.so", "absolute path"),
    "backslash": HostileCase(_one("demo\\..\\evil.so"), "demo\\..\\evil.so", "backslash"),
    "symlink": HostileCase(
        lambda e: [(LIBRARY, e), symlink("demo/lib/libdemo_y.so", "/etc/passwd")],
        "demo/lib/libdemo_y.so", "symbolic link"),
    "duplicate": HostileCase(lambda e: [(LIBRARY, e), (LIBRARY, e)], LIBRARY, "appears twice"),
    "file and folder": HostileCase(
        lambda e: [("demo/lib", b"x"), (LIBRARY, e)], "demo/lib", "both a file and a folder"),
    "folder entry and file": HostileCase(
        lambda e: [("demo/x/", b""), ("demo/x", e)], "demo/x", "both a file and a folder"),
    "bzip2": HostileCase(
        lambda e: [(compressed(LIBRARY, zipfile.ZIP_BZIP2), e)], LIBRARY, "compression method 12"),
    "not in RECORD": HostileCase(
        _one(LIBRARY), LIBRARY, "not listed in RECORD", with_record()),
    "wrong hash in RECORD": HostileCase(
        _one(LIBRARY), LIBRARY, "hash differs from RECORD's",
        lambda e: with_record(f"{LIBRARY},{_hash_of(record_line(LIBRARY, b'x'))},{len(e)}")),
    "wrong size in RECORD": HostileCase(
        _one(LIBRARY), LIBRARY, "RECORD says 7",
        lambda e: with_record(f"{LIBRARY},{_hash_of(record_line(LIBRARY, e))},7")),
    "no hash in RECORD": HostileCase(
        _one(LIBRARY), LIBRARY, "RECORD gives no hash", with_record(f"{LIBRARY},,")),
    "weak hash in RECORD": HostileCase(
        _one(LIBRARY), LIBRARY, "not sha256 or stronger",
        lambda e: with_record(f"{LIBRARY},md5=abc,{len(e)}")),
    "RECORD lists a ghost": HostileCase(
        _one(LIBRARY), "demo/ghost.so", "which the wheel does not hold",
        lambda e: with_record(record_line(LIBRARY, e), "demo/ghost.so,,")),
    "no RECORD": HostileCase(_one(LIBRARY), "", "expected one <name>.dist-info/RECORD", None),
}  # fmt: skip


def hostile_wheel(name: str, folder: Path, elf: bytes) -> Path:
    case = CASES[name]
    record = case.record(elf) if callable(case.record) else case.record
    path = folder / f"{name.replace(' ', '_')}-0.1.0-py3-none-any.whl"
    return write_wheel(path, case.members(elf), record)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_wheel_is_an_input_error_naming_the_member(
    case: str, elf: bytes, tmp_path: Path
) -> None:
    wheel = hostile_wheel(case, tmp_path, elf)
    member, problem = CASES[case].member, CASES[case].problem
    with pytest.raises(InputError) as raised:
        read_wheel(wheel, ())
    message = str(raised.value)
    assert message.startswith(f"{wheel}!/{member}: " if member else f"{wheel}: "), message
    assert problem in message


@pytest.mark.parametrize("case", ["dot-dot", "symlink", "wrong hash in RECORD", "no RECORD"])
def test_hostile_wheel_exits_2_without_a_traceback(
    case: str, elf: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = hostile_wheel(case, tmp_path, elf)
    assert main(["verify-linkage", "--no-recipe", str(wheel)]) == 2
    err = capsys.readouterr().err
    assert str(wheel) in err
    assert "Traceback" not in err


def test_nothing_is_written_anywhere(
    elf: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading every hostile wheel leaves the temporary folder, the working folder and the
    targets the members aim at untouched (wheels are read in memory, never extracted)."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    paths = [hostile_wheel(case, wheels, elf) for case in sorted(CASES)]
    aimed = tmp_path / "aimed" / "evil.so"
    paths.append(write_wheel(wheels / "aimed-0.1.0-py3-none-any.whl", [(str(aimed), elf)]))
    temporary, work = tmp_path / "tmp", tmp_path / "work" / "deeper"
    temporary.mkdir()
    work.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(temporary))
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    monkeypatch.chdir(work)
    for path in paths:
        assert main(["-q", "verify-linkage", "--no-recipe", str(path)]) == 2
    assert list(temporary.iterdir()) == []
    assert list(work.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp", "wheels", "work"]
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["deeper"]


def test_good_wheel_is_read(elf: bytes, tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "good-0.1.0-py3-none-any.whl", [(LIBRARY, elf)])
    inputs = read_wheel(wheel, ())
    assert [b.display for b in inputs.files] == [f"{wheel}!/{LIBRARY}"]
    assert inputs.files[0].facts is not None


def test_a_folder_entry_after_the_files_inside_it_is_no_duplicate(
    elf: bytes, tmp_path: Path
) -> None:
    members: list[Member] = [(LIBRARY, elf), ("demo/lib/", b""), ("demo/", b"")]
    wheel = write_wheel(tmp_path / "late-0.1.0-py3-none-any.whl", members)
    assert [b.display for b in read_wheel(wheel, ()).files] == [f"{wheel}!/{LIBRARY}"]


def test_non_elf_library_is_a_finding(elf: bytes, tmp_path: Path) -> None:
    members: list[Member] = [(LIBRARY, elf), ("demo/lib/libfake.so.1", b"INPUT(-lc)\n")]
    wheel = write_wheel(tmp_path / "fake-0.1.0-py3-none-any.whl", members)
    (finding,) = [f for f in verify_paths([wheel], LinkagePolicy.empty()).findings
                  if f.check_id == "BT100"]  # fmt: skip
    assert finding.path == f"{wheel}!/demo/lib/libfake.so.1"
    assert "named like a shared library" in finding.message
    assert finding.evidence == "offset 0x0"


# --- zip bombs --------------------------------------------------------------------------------


def test_zip_bomb_ratio_is_refused_from_the_headers(tmp_path: Path) -> None:
    zeros = bytes(64 << 20)  # deflates about 1000:1
    wheel = write_wheel(tmp_path / "bomb-0.1.0-py3-none-any.whl", [("demo/zeros.so", zeros)])
    with pytest.raises(InputError, match=r"!/demo/zeros\.so: member compresses \d+:1, over"):
        read_wheel(wheel, ())


def test_total_and_member_limits(elf: bytes, tmp_path: Path) -> None:
    members: list[Member] = [(LIBRARY, elf), ("demo/lib/libdemo_y.so", elf)]
    wheel = write_wheel(tmp_path / "big-0.1.0-py3-none-any.whl", members)
    with pytest.raises(InputError, match=r"members declare \d+ bytes, over the limit"):
        read_wheel(wheel, (), WheelLimits(max_total_bytes=len(elf) + 100))
    with pytest.raises(InputError, match=rf"{LIBRARY}: member declares \d+ bytes, over the limit"):
        read_wheel(wheel, (), WheelLimits(max_member_bytes=len(elf) - 1))
    with pytest.raises(InputError, match="3 members, over the limit of 2"):
        read_wheel(wheel, (), WheelLimits(max_members=2))


def _central_entry(data: bytes, name: bytes) -> int:
    at = data.index(b"PK\x01\x02")
    while data[at + 46 : at + 46 + len(name)] != name:
        at = data.index(b"PK\x01\x02", at + 1)
    return at


def _patch_central(path: Path, name: str, fmt: str, offset: int, value: int) -> None:
    """Overwrite one field of a member's central directory entry (offset from its start)."""
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, _central_entry(bytes(data), name.encode()) + offset, value)
    path.write_bytes(bytes(data))


def test_lying_size_header_is_caught_while_reading(elf: bytes, tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "liar-0.1.0-py3-none-any.whl", [(LIBRARY, elf)])
    _patch_central(wheel, LIBRARY, "<I", 24, 100)  # uncompressed size: 100 bytes
    with pytest.raises(InputError, match=f"!/{LIBRARY}: "):
        read_wheel(wheel, ())


def test_encrypted_member_is_refused(elf: bytes, tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "secret-0.1.0-py3-none-any.whl", [(LIBRARY, elf)])
    _patch_central(wheel, LIBRARY, "<H", 8, 0x1)  # general purpose flags: encrypted
    with pytest.raises(InputError, match=f"!/{LIBRARY}: member is encrypted"):
        read_wheel(wheel, ())


def test_overlapping_entries_are_refused(elf: bytes, tmp_path: Path) -> None:
    members: list[Member] = [(LIBRARY, elf), ("demo/lib/libdemo_y.so", elf)]
    wheel = write_wheel(tmp_path / "overlap-0.1.0-py3-none-any.whl", members)
    _patch_central(wheel, "demo/lib/libdemo_y.so", "<I", 42, 0)  # local header offset: 0
    with pytest.raises(InputError, match="overlaps the one before it"):
        read_wheel(wheel, ())


# --- anything else is an input error, never another exception ---------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a.py,sha256=AbC,12\nb/c d.py,sha256=x,3\n\nw.dist-info/RECORD,,\n",
        "a.py,sha256=x,1\r\n  spaced ,sha256=y, 2\r\n\r\n",
        "t\tab.py,sha256=x,1\x0bv.py,sha256=y,2\u2028w.py,,\n",
        "only-one-field\na,b,c,d,e\n,,\n",
        "",
    ],
)
def test_unquoted_record_rows_are_what_csv_reads(text: str) -> None:
    assert record_rows("w.whl", text) == [row for row in csv.reader(text.splitlines()) if row]


def _csv_rows(text: str) -> list[list[str]] | None:
    try:
        return [row for row in csv.reader(text.splitlines()) if row]
    except csv.Error:
        return None


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('ab ,\t\n\r\x0b\u2028"\0\u00e9=')), max_size=60))
def test_record_rows_are_what_csv_reads(text: str) -> None:
    expected = _csv_rows(text)
    if expected is None:
        with pytest.raises(InputError, match="RECORD: not a CSV file"):
            record_rows("w.whl", text)
    else:
        assert record_rows("w.whl", text) == expected


def test_quoted_record_rows_keep_their_commas() -> None:
    assert record_rows("w.whl", '"b,c.py",sha256=x,1\n') == [["b,c.py", "sha256=x", "1"]]


def test_record_parsing() -> None:
    text = 'a.py,sha256=AbC,12\n"b,c.py",sha512=x,\nw.dist-info/RECORD,,\n'
    entries = parse_record("w.whl", text)
    assert entries["a.py"].digest == "AbC"
    assert entries["b,c.py"].size is None
    with pytest.raises(InputError, match="listed twice"):
        parse_record("w.whl", "a.py,sha256=x,1\na.py,sha256=x,1\n")
    with pytest.raises(InputError, match="expected path,hash,size rows"):
        parse_record("w.whl", "a.py,sha256=x\n")
    with pytest.raises(InputError, match="is not a number"):
        parse_record("w.whl", "a.py,sha256=x,-1\n")


@pytest.fixture(scope="module")
def small_wheel(elf: bytes, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    folder = tmp_path_factory.mktemp("small")
    return write_wheel(folder / "s-0.1.0-py3-none-any.whl", [(LIBRARY, elf[:2000])]).read_bytes()


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(st.data())
def test_corrupt_archive_bytes_are_input_errors(
    small_wheel: bytes, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    raw = bytearray(small_wheel)
    for _ in range(data.draw(st.integers(1, 6))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.sampled_from([len(raw), len(raw) - 1, len(raw) // 2, 30]))
    path = tmp_path_factory.getbasetemp() / "corrupt-0.1.0-py3-none-any.whl"
    path.write_bytes(bytes(raw[:cut]))
    try:
        verify_paths([path], LinkagePolicy.empty())
    except InputError as error:
        message = str(error)
    else:
        return
    assert message.startswith(str(path))
