"""A wheel opened by ``WheelArchive`` gives what ``zipfile`` gives: the same entries, and for
each member the same bytes or the same error, whether it was read from the mapping or left to
``zipfile``; and a plain wheel's members are read from the mapping."""

from __future__ import annotations

import functools
import io
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buildtool.linkage.inputs.archive import WheelArchive
from buildtool.linkage.inputs.central_directory import Entry

MEMBERS = {
    "pkg/__init__.py": (b"import os\n" * 40, zipfile.ZIP_DEFLATED),
    "pkg/data.bin": (bytes(range(256)) * 3, zipfile.ZIP_STORED),
    "pkg/empty.txt": (b"", zipfile.ZIP_DEFLATED),
    "pkg-1.dist-info/METADATA": (b"Name: pkg\nVersion: 1\n", zipfile.ZIP_DEFLATED),
    "pkg-1.dist-info/RECORD": (b"pkg/__init__.py,,\n", zipfile.ZIP_STORED),
}

Outcome = tuple[str, object]


def wheel_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, (content, method) in MEMBERS.items():
            archive.writestr(name, content, method)
    return buffer.getvalue()


def outcome(read: Callable[[], bytes]) -> Outcome:
    """What a read gave: its bytes, or its error's kind and message."""
    try:
        return ("bytes", read())
    except Exception as error:  # any error must be zipfile's
        return (type(error).__name__, str(error))


def zipfile_reads(path: Path, limit: int) -> list[Outcome] | Outcome:
    try:
        archive = zipfile.ZipFile(path)
    except Exception as error:
        return (type(error).__name__, str(error))
    with archive:

        def read(info: zipfile.ZipInfo) -> bytes:
            with archive.open(info) as stream:
                return stream.read(limit)

        return [outcome(functools.partial(read, info)) for info in archive.infolist()]


def our_reads(path: Path, limit: int) -> list[Outcome] | Outcome:
    try:
        archive = WheelArchive.open(path)
    except Exception as error:
        return (type(error).__name__, str(error))
    with archive:
        return [
            outcome(functools.partial(archive.read, entry, limit)) for entry in archive.infolist()
        ]


@pytest.fixture
def zipfile_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The members ``WheelArchive`` left to ``zipfile``."""
    opened: list[str] = []
    original = WheelArchive._zipfile_open

    def counting(self: WheelArchive, entry: object) -> object:
        opened.append(entry.filename)  # type: ignore[attr-defined]
        return original(self, entry)  # type: ignore[arg-type]

    monkeypatch.setattr(WheelArchive, "_zipfile_open", counting)
    return opened


def test_a_plain_wheel_is_read_from_its_mapping(tmp_path: Path, zipfile_opens: list[str]) -> None:
    path = tmp_path / "pkg-1-py3-none-any.whl"
    path.write_bytes(wheel_bytes())
    with WheelArchive.open(path) as archive:
        entries = archive.infolist()
        assert all(isinstance(entry, Entry) for entry in entries)
        contents = {entry.filename: archive.read(entry) for entry in entries}
    assert contents == {name: content for name, (content, _) in MEMBERS.items()}
    assert zipfile_opens == []
    assert our_reads(path, -1) == zipfile_reads(path, -1)


def test_a_read_that_stops_early_is_zipfiles(tmp_path: Path, zipfile_opens: list[str]) -> None:
    """A limit below the member's size: zipfile's read stops before its CRC-32 is checked."""
    path = tmp_path / "pkg-1-py3-none-any.whl"
    path.write_bytes(wheel_bytes())
    assert our_reads(path, 10) == zipfile_reads(path, 10)
    assert "pkg/__init__.py" in zipfile_opens


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(min_value=0), st.binary(min_size=1, max_size=4), st.sampled_from([-1, 64]))
def test_a_damaged_wheel_reads_as_zipfile_reads_it(
    tmp_path: Path, where: int, garbage: bytes, limit: int
) -> None:
    """Bytes overwritten anywhere (headers, data, the directory): the same entries' bytes, or
    the same errors, opening or reading."""
    data = bytearray(wheel_bytes())
    at = where % len(data)
    data[at : at + len(garbage)] = garbage
    path = tmp_path / "damaged.whl"
    path.write_bytes(bytes(data))
    assert our_reads(path, limit) == zipfile_reads(path, limit)


def test_data_running_into_the_next_header_is_left_to_zipfile(
    tmp_path: Path, zipfile_opens: list[str]
) -> None:
    """A member whose declared compressed size runs past the next member's header: zipfile
    refuses it from 3.12 on ("Overlapped entries"), reads it before; either way it decides."""
    data = bytearray(wheel_bytes())
    directory = data.rindex(b"PK\x05\x06")
    first = data.index(b"PK\x01\x02", data.index(b"PK\x01\x02"))
    fields = list(struct.unpack_from("<4s4B4HL2L5H2L", data, first))
    fields[10] += 8  # compressed size: 8 bytes into the next local header
    data[first : first + 46] = struct.pack("<4s4B4HL2L5H2L", *fields)
    assert directory > first
    path = tmp_path / "overlapping.whl"
    path.write_bytes(bytes(data))
    assert our_reads(path, -1) == zipfile_reads(path, -1)
    assert zipfile_opens[0] == "pkg/__init__.py"


def test_an_unreadable_file_fails_as_zipfile_fails(tmp_path: Path) -> None:
    for name, content in {"empty.whl": b"", "text.whl": b"not a zip"}.items():
        path = tmp_path / name
        path.write_bytes(content)
        assert our_reads(path, -1) == zipfile_reads(path, -1)
        assert our_reads(path, -1)[0] == "BadZipFile"
