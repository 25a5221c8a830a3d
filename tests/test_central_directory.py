"""The central directory read without ``zipfile`` (``central_directory``: the head start's
answer, and a plain directory's entries) agrees with ``zipfile`` on every archive it answers
for, and answers nothing, never raising, on the ones it cannot read plainly."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from buildtool.linkage.inputs.central_directory import (
    Directory,
    Listing,
    plain_listing,
    read_directory,
)
from buildtool.linkage.inputs.inflate import MemberSpan

Entry = tuple[str, bytes, int, bool]
"""A member to write: name, content, compression method, forced zip64 header."""

NAMES = st.text(alphabet="abcé/_.", min_size=1, max_size=12).filter(
    lambda name: not name.startswith("/")
)
ENTRIES = st.lists(
    st.tuples(
        NAMES,
        st.binary(max_size=300),
        st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]),
        st.booleans(),
    ),
    max_size=12,
    unique_by=lambda entry: entry[0],  # zipfile warns of a repeated name
)


def archive_of(entries: list[Entry], comment: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content, method, zip64 in entries:
            info = zipfile.ZipInfo(name)
            info.compress_type = method
            with archive.open(info, "w", force_zip64=zip64) as stream:
                stream.write(content)
        archive.comment = comment
    return buffer.getvalue()


def as_zipfile_reads_it(data: bytes) -> Directory:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
    files = [info for info in infos if not info.is_dir()]
    biggest = max(files, key=lambda info: info.file_size, default=None)
    return Directory(len(infos), sum(info.file_size for info in infos), biggest)


def same(found: Directory | None, expected: Directory) -> bool:
    if found is None or found[:2] != expected[:2]:
        return False
    if found.biggest is None or expected.biggest is None:
        return found.biggest is expected.biggest
    return MemberSpan.of(found.biggest) == MemberSpan.of(expected.biggest)


@settings(max_examples=150, deadline=None)
@given(ENTRIES, st.binary(max_size=40).filter(lambda comment: b"PK" not in comment))
def test_agrees_with_zipfile(entries: list[Entry], comment: bytes) -> None:
    data = archive_of(entries, comment)
    assert same(read_directory(data), as_zipfile_reads_it(data))


def test_agrees_with_zipfile_past_zip64_entry_counts() -> None:
    """More entries than the plain end record counts: the zip64 end record gives them."""
    entries: list[Entry] = [(f"m/{n}", b"", zipfile.ZIP_STORED, False) for n in range(70_000)]
    entries.append(("m/big.so", b"\x7fELF" + bytes(5000), zipfile.ZIP_DEFLATED, True))
    data = archive_of(entries)
    found = read_directory(data)
    assert found is not None
    assert found.entries == 70_001
    assert same(found, as_zipfile_reads_it(data))


@settings(max_examples=150, deadline=None)
@given(ENTRIES, st.integers(min_value=0), st.binary(min_size=1, max_size=8))
def test_a_damaged_archive_gives_no_answer_or_zipfiles(
    entries: list[Entry], where: int, garbage: bytes
) -> None:
    """Bytes overwritten anywhere: no exception; an answer only where the directory still
    parses, and a prefix before the archive (offsets zipfile shifts) gives none."""
    data = bytearray(archive_of(entries))
    at = where % len(data)
    data[at : at + len(garbage)] = garbage
    found = read_directory(bytes(data))
    assert found is None or isinstance(found, Directory)
    assert read_directory(b"prefix" + archive_of(entries)) is None


def test_no_archive_gives_no_answer() -> None:
    assert read_directory(b"") is None
    assert read_directory(b"PK\x05\x06" + bytes(10)) is None
    assert read_directory(bytes(100)) is None


def with_zip64_fields(data: bytes) -> bytes:
    """The one-member archive ``data`` with its central directory entry's sizes and offset
    moved to a zip64 extra field, as a member past 4 GB has them."""
    end = data.rindex(b"PK\x05\x06")
    entry = data.rindex(b"PK\x01\x02", 0, end)
    fields = list(struct.unpack_from("<4s4B4HL2L5H2L", data, entry))
    compress_size, file_size, offset = fields[10], fields[11], fields[18]
    name = data[entry + 46 : entry + 46 + fields[12]]
    extra = struct.pack("<2H3Q", 1, 24, file_size, compress_size, offset)
    fields[10] = fields[11] = fields[18] = 0xFFFFFFFF
    fields[13], fields[14] = len(extra), 0
    moved = struct.pack("<4s4B4HL2L5H2L", *fields) + name + extra
    record = list(struct.unpack_from("<4s4H2LH", data, end))
    record[5], record[7] = len(moved), 0
    return data[:entry] + moved + struct.pack("<4s4H2LH", *record)


def test_agrees_with_zipfile_on_zip64_entry_fields() -> None:
    data = with_zip64_fields(
        archive_of([("m/big.so", b"\x7fELF" * 100, zipfile.ZIP_DEFLATED, False)])
    )
    expected = as_zipfile_reads_it(data)
    assert expected.biggest is not None
    assert expected.biggest.file_size == 400
    assert same(read_directory(data), expected)


# --- a plain directory's entries ----------------------------------------------------------------

INFO_FIELDS = (
    "filename",
    "orig_filename",
    "create_version",
    "create_system",
    "extract_version",
    "reserved",
    "flag_bits",
    "compress_type",
    "CRC",
    "compress_size",
    "file_size",
    "volume",
    "internal_attr",
    "external_attr",
    "header_offset",
)


def as_listed(entries: Sequence[object]) -> list[tuple[object, ...]]:
    return [
        (*(getattr(entry, field) for field in INFO_FIELDS), entry.is_dir())  # type: ignore[attr-defined]
        for entry in entries
    ]


def zipfile_listing(data: bytes) -> tuple[list[tuple[object, ...]], int]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return as_listed(archive.infolist()), archive.start_dir


def agrees(found: Listing, data: bytes) -> bool:
    return (as_listed(found.entries), found.directory_offset) == zipfile_listing(data)


@settings(max_examples=150, deadline=None)
@given(ENTRIES)
def test_a_plain_directory_is_listed_as_zipfile_lists_it(entries: list[Entry]) -> None:
    data = archive_of(entries)
    found = plain_listing(data)
    assert found is not None
    assert agrees(found, data)


@settings(max_examples=300, deadline=None)
@given(ENTRIES, st.integers(min_value=0), st.binary(min_size=1, max_size=8))
def test_a_damaged_directory_is_listed_as_zipfile_lists_it_or_left_to_it(
    entries: list[Entry], where: int, garbage: bytes
) -> None:
    """Bytes overwritten anywhere: a listing only where ``zipfile`` lists the same."""
    data = bytearray(archive_of(entries))
    at = where % len(data)
    data[at : at + len(garbage)] = garbage
    found = plain_listing(bytes(data))
    if found is not None:
        assert agrees(found, bytes(data))


def _entry_at(data: bytes) -> tuple[int, list[Any]]:
    """The last central directory record of ``data`` and its fields."""
    at = data.rindex(b"PK\x01\x02", 0, data.rindex(b"PK\x05\x06"))
    return at, list(struct.unpack_from("<4s4B4HL2L5H2L", data, at))


def with_entry_fields(data: bytes, **changes: int) -> bytes:
    at, fields = _entry_at(data)
    for index, value in changes.items():
        fields[int(index.removeprefix("f"))] = value
    return data[:at] + struct.pack("<4s4B4HL2L5H2L", *fields) + data[at + 46 :]


def with_extra(data: bytes, extra: bytes) -> bytes:
    """The last record of a one-member ``data`` with ``extra`` as its extra field."""
    at, fields = _entry_at(data)
    name = data[at + 46 : at + 46 + fields[12]]
    fields[13], fields[14] = len(extra), 0
    record = struct.pack("<4s4B4HL2L5H2L", *fields) + name + extra
    end = data.rindex(b"PK\x05\x06")
    trailer = list(struct.unpack_from("<4s4H2LH", data, end))
    trailer[5] = len(record)
    return data[:at] + record + struct.pack("<4s4H2LH", *trailer)


ONE = [("m/lib.so", b"\x7fELF" * 100, zipfile.ZIP_DEFLATED, False)]
UNIX_TIMES = struct.pack("<2HB", 0x5455, 1, 0)


def test_what_zipfile_reads_otherwise_is_left_to_it() -> None:
    """Each of these ``zipfile`` lists (or refuses) otherwise than a plain record says, in
    some version (3.13 takes a unicode path field's name): the listing leaves them to it."""
    plain = archive_of(ONE)
    nul_name = plain.replace(b"m/lib.so", b"m/l\0b.so")
    unicode_path = struct.pack("<2HBL", 0x7075, 5 + 3, 1, zlib.crc32(b"m/lib.so")) + b"x.so"
    left_to_zipfile = {
        "an archive comment": archive_of(ONE, b"signed"),
        "a prefix": b"#!/bin/sh\n" + plain,
        "zip64 entry fields": with_zip64_fields(plain),
        "a NUL in a name": nul_name,
        "a backslash in a name": plain.replace(b"m/lib.so", b"m\\lib.so"),
        "a newer version": with_entry_fields(plain, f3=64),
        "a unicode path field": with_extra(plain, unicode_path),
        "a cut extra field": with_extra(plain, struct.pack("<2H", 0x5455, 9) + bytes(5)),
        "a bad signature": plain.replace(b"PK\x01\x02", b"PK\x01\x03"),
        "a name not UTF-8": with_entry_fields(plain.replace(b"m/lib.so", b"m/l\xffb.so"), f5=0x800),
    }
    for what, data in left_to_zipfile.items():
        assert plain_listing(data) is None, what
    assert zipfile_listing(nul_name)[0][0][0] == "m/l"  # what zipfile makes of it
    with pytest.raises(zipfile.BadZipFile, match="Corrupt extra field"):
        zipfile.ZipFile(io.BytesIO(left_to_zipfile["a cut extra field"]))


def test_a_whole_extra_field_is_plain() -> None:
    data = with_extra(archive_of(ONE), UNIX_TIMES)
    found = plain_listing(data)
    assert found is not None
    assert agrees(found, data)
