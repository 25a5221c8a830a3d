"""A wheel's central directory, read without ``zipfile``, for two answers.

``read_directory``: its biggest member, its count of entries and their declared bytes, in a
seventh of the time ``zipfile`` takes (no object is made per entry). What a head start picks
(``head_start``); the wheel is read and checked the usual way afterwards, so anything unusual
here (a prefix before the archive, a broken record) gives no answer rather than an error.

``plain_listing``: every entry, as ``zipfile`` lists it, in a third of its time, when the
directory is plain (what wheel tools write); None for anything else, which ``zipfile`` lists
then, with its own errors.
"""

from __future__ import annotations

import mmap
import struct
import zipfile
from typing import Any, Final, NamedTuple

Buffer = bytes | mmap.mmap

_END: Final = struct.Struct("<4s4H2LH")
_END_SIGNATURE: Final = b"PK\x05\x06"
_END64_LOCATOR: Final = struct.Struct("<4sLQL")
_END64_LOCATOR_SIGNATURE: Final = b"PK\x06\x07"
_END64: Final = struct.Struct("<4sQ2H2L4Q")
_END64_SIGNATURE: Final = b"PK\x06\x06"
_ENTRY: Final = struct.Struct("<4s4B4HL2L5H2L")
_ENTRY_SIGNATURE: Final = b"PK\x01\x02"
_ZIP64_EXTRA: Final = 1
_UTF8_FLAG: Final = 0x800
_MAX_COMMENT: Final = 0xFFFF
_EXTRA_HEADER: Final = struct.Struct("<2H")
_UNICODE_PATH_EXTRA: Final = 0x7075
_MAX_EXTRACT_VERSION: Final = 63
"""The highest version ``zipfile`` reads (it refuses a record that needs more)."""


class Directory(NamedTuple):
    """What the central directory declares."""

    entries: int
    total_bytes: int
    """Uncompressed bytes of every entry."""
    biggest: zipfile.ZipInfo | None
    """The entry with the most uncompressed bytes that is not a folder (the first of equals)."""


def read_directory(data: Buffer) -> Directory | None:
    """The directory of a whole zip file's bytes (a mapping), or None when it is not plain:
    a prefix before the archive, a record that does not parse."""
    try:
        found = _directory_span(data)
        return None if found is None else _scan(data, *found)
    except (struct.error, UnicodeDecodeError, IndexError):
        return None


def _directory_span(data: Buffer) -> tuple[int, int, int] | None:
    """(offset, size, entries) of the central directory."""
    tail_start = max(0, len(data) - _END.size - _MAX_COMMENT)
    at = bytes(data[tail_start:]).rfind(_END_SIGNATURE)
    if at < 0:
        return None
    end = tail_start + at
    _sig, _disk, _start_disk, _here, entries, size, offset, _comment = _END.unpack_from(data, end)
    if entries != 0xFFFF and 0xFFFFFFFF not in (size, offset):
        return (offset, size, entries) if offset + size == end else None
    locator = end - _END64_LOCATOR.size
    sig, _disk64, record, _disks = _END64_LOCATOR.unpack_from(data, locator)
    if sig != _END64_LOCATOR_SIGNATURE:
        return None
    fields = _END64.unpack_from(data, record)
    if fields[0] != _END64_SIGNATURE:
        return None
    entries, size, offset = fields[7], fields[8], fields[9]
    return (offset, size, entries) if offset + size == record else None


def _scan(data: Buffer, offset: int, size: int, entries: int) -> Directory | None:
    at, end = offset, offset + size
    total, biggest, biggest_at = 0, -1, -1
    for _ in range(entries):
        fields = _ENTRY.unpack_from(data, at)
        if fields[0] != _ENTRY_SIGNATURE:
            return None
        file_size, name_size, extra_size, comment_size = fields[11:15]
        if file_size == 0xFFFFFFFF:
            file_size = _sizes(data, at, fields)[0]
        total += file_size
        is_folder = data[at + _ENTRY.size + name_size - 1 : at + _ENTRY.size + name_size] == b"/"
        if file_size > biggest and not is_folder:
            biggest, biggest_at = file_size, at
        at += _ENTRY.size + name_size + extra_size + comment_size
    if at != end:
        return None
    return Directory(entries, total, _entry(data, biggest_at) if biggest_at >= 0 else None)


def _sizes(data: Buffer, at: int, fields: tuple[Any, ...]) -> tuple[int, int, int]:
    """(file size, compressed size, header offset), the zip64 extra field's values taken for
    the ones the entry marks 0xFFFFFFFF, in the order the format gives them."""
    found = [fields[11], fields[10], fields[18]]
    if 0xFFFFFFFF not in found:
        return found[0], found[1], found[2]
    name_size, extra_size = fields[12], fields[13]
    extra = bytes(data[at + _ENTRY.size + name_size : at + _ENTRY.size + name_size + extra_size])
    while len(extra) >= 4:
        kind, length = struct.unpack_from("<2H", extra)
        if kind == _ZIP64_EXTRA:
            values = list(struct.unpack_from(f"<{length // 8}Q", extra, 4))
            for index, value in enumerate(found):
                if value == 0xFFFFFFFF:
                    found[index] = values.pop(0)
            return found[0], found[1], found[2]
        extra = extra[4 + length :]
    raise struct.error("a zip64 entry without its zip64 extra field")


def _entry(data: Buffer, at: int) -> zipfile.ZipInfo:
    """The entry at ``at`` as ``zipfile`` would make it, for the fields a member's reading
    takes (``inflate.MemberSpan.of``)."""
    fields = _ENTRY.unpack_from(data, at)
    flags, method, name_size = fields[5], fields[6], fields[12]
    raw = bytes(data[at + _ENTRY.size : at + _ENTRY.size + name_size])
    name = raw.decode("utf-8" if flags & _UTF8_FLAG else "cp437")
    file_size, compress_size, offset = _sizes(data, at, fields)
    info = zipfile.ZipInfo(name)
    info.orig_filename = name
    info.compress_type = method
    info.compress_size = compress_size
    info.file_size = file_size
    info.header_offset = offset
    info.CRC = fields[9]
    return info


class Entry(NamedTuple):
    """One record of a plain central directory: its name and its fields as the format gives
    them, under the names ``zipfile.ZipInfo`` gives them (the ones the wheel's checks read)."""

    filename: str
    signature: bytes
    create_version: int
    create_system: int
    extract_version: int
    reserved: int
    flag_bits: int
    compress_type: int
    time: int
    date: int
    CRC: int
    compress_size: int
    file_size: int
    name_length: int
    extra_length: int
    comment_length: int
    volume: int
    internal_attr: int
    external_attr: int
    header_offset: int

    @property
    def orig_filename(self) -> str:
        """The name as the record spells it: ``filename``, as a plain name is never cut."""
        return self.filename

    def is_dir(self) -> bool:
        return self.filename.endswith("/")


ArchiveEntry = Entry | zipfile.ZipInfo
"""A wheel's entry, from a plain listing or from ``zipfile``: the same fields either way."""


class Listing(NamedTuple):
    entries: list[Entry]
    directory_offset: int
    """Where the directory starts: no member's bytes run past it."""


def plain_listing(data: Buffer) -> Listing | None:
    """Every record of the directory, as ``zipfile`` (3.10 to 3.13) lists them, when it is
    plain; else None: an archive comment, a zip64 end record, a prefix before the archive
    (``zipfile`` shifts the offsets), or records that ``_plain_entries`` leaves to ``zipfile``."""
    end = len(data) - _END.size
    if end < 0:
        return None
    fields = _END.unpack_from(data, end)
    if fields[0] != _END_SIGNATURE or fields[7] != 0:
        return None
    locator = end - _END64_LOCATOR.size
    if locator >= 0 and data[locator : locator + 4] == _END64_LOCATOR_SIGNATURE:
        return None
    size, offset = fields[5], fields[6]
    if offset + size != end:
        return None
    try:
        entries = _plain_entries(data, offset, end)
    except (struct.error, UnicodeDecodeError):  # zipfile refuses a truncated record, a name
        return None
    return None if entries is None or not _plain(entries) else Listing(entries, offset)


def _plain_entries(data: Buffer, at: int, end: int) -> list[Entry] | None:
    """The records from ``at`` on, filling the directory up to ``end`` exactly; None when they
    do not, or an extra field is one that ``zipfile`` reads (zip64, unicode path) or refuses
    (malformed). Written as one loop: it runs once per member."""
    entries: list[Entry] = []
    unpack, fixed, new = _ENTRY.unpack_from, _ENTRY.size, tuple.__new__
    while at < end:
        fields = unpack(data, at)
        name_end = at + fixed + fields[12]
        extra_end = name_end + fields[13]
        if extra_end > name_end and not _plain_extra(data, name_end, extra_end):
            return None
        raw = data[at + fixed : name_end]
        # ASCII, the common case, reads alike in both encodings
        encoding = "utf-8" if fields[5] & _UTF8_FLAG else "cp437"
        name = raw.decode("ascii" if raw.isascii() else encoding)
        entries.append(new(Entry, (name, *fields)))
        at = extra_end + fields[14]
    return entries if at == end else None


def _plain(entries: list[Entry]) -> bool:
    """Whether ``zipfile`` reads every record as its fields say: each is signed, of a version
    it reads, with its sizes and offset in place (not in a zip64 extra field), and a name
    without a NUL or a backslash (which it cuts or rewrites). A pass per field, for speed."""
    names = "".join(entry.filename for entry in entries)
    return (
        "\0" not in names
        and "\\" not in names
        and all(entry.signature == _ENTRY_SIGNATURE for entry in entries)
        and max((entry.extract_version for entry in entries), default=0) <= _MAX_EXTRACT_VERSION
        and not any(0xFFFFFFFF in (e.compress_size, e.file_size, e.header_offset) for e in entries)
    )


def _plain_extra(data: Buffer, at: int, end: int) -> bool:
    """Whether the extra field's blocks are whole and none is one ``zipfile`` reads."""
    while end - at >= _EXTRA_HEADER.size:
        kind, length = _EXTRA_HEADER.unpack_from(data, at)
        at += _EXTRA_HEADER.size + length
        if at > end or kind in (_ZIP64_EXTRA, _UNICODE_PATH_EXTRA):
            return False
    return True
