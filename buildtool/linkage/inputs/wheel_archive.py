"""Reading an untrusted wheel in memory: member names, sizes and RECORD checked, nothing extracted.

A wheel from an index or a CI artifact may be hostile: members that escape the install folder
(``..``, absolute paths, symlinks), names that clash once installed (duplicates, a file where a
folder must be), zip bombs (a tiny archive that decompresses to terabytes, or entries that overlap
so one compressed block counts many times), or a ``RECORD`` that does not describe what is there.
Each is an ``InputError`` naming the wheel and the member, raised before anything is decompressed
when the headers already show it, and enforced again while reading, since headers can lie.

Members are read one at a time from a mapping of the wheel (see ``inflate``), in bounded chunks,
hashed as they stream; only ELF members are kept in memory, in a buffer the caller gives. Nothing
is ever written to disk.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import hashlib
import itertools
import mmap
import stat
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NamedTuple

from buildtool.errors import InputError
from buildtool.linkage.inputs.archive import WheelArchive
from buildtool.linkage.inputs.central_directory import ArchiveEntry
from buildtool.linkage.inputs.inflate import (
    MemberSpan,
    Sink,
    UnreadableMember,
    crc_problem,
    plain_content,
    read_span,
)

ALLOWED_COMPRESSION = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
"""What wheel tools write, and what ``inflate`` reads in bounded steps."""

RECORD_SIGNATURES = ("RECORD.jws", "RECORD.p7s")
"""Files beside RECORD that RECORD cannot list (they sign it)."""

ACCEPTED_HASHES = ("sha256", "sha384", "sha512", "blake2b", "sha3_256", "sha3_384", "sha3_512")
"""RECORD hash algorithms accepted: sha256 or stronger, as pip requires."""


@dataclasses.dataclass(frozen=True)
class WheelLimits:
    """Bounds on what reading one wheel may cost."""

    max_members: int = 200_000
    """Entries in the archive."""
    max_member_bytes: int = 8 << 30
    """Uncompressed bytes of one member (CUDA and LLVM-static libraries run to a few GB)."""
    max_total_bytes: int = 32 << 30
    """Uncompressed bytes of all members together."""
    max_ratio: int = 200
    """Uncompressed / compressed bytes of one member above ``ratio_floor_bytes``: real binaries
    compress 2-10x, a zip bomb 1000x."""
    ratio_floor_bytes: int = 16 << 20
    """Members smaller than this may have any ratio (they cannot hurt)."""


DEFAULT_LIMITS = WheelLimits()


# One per wheel member (tens of thousands): a NamedTuple is made in a third of the time a
# frozen dataclass takes.
class RecordEntry(NamedTuple):
    algorithm: str
    digest: str
    """urlsafe base64 without padding, as RECORD writes it; "" when RECORD gives none."""
    size: int | None


def _fail(wheel: str, member: str, problem: str) -> InputError:
    return InputError(f"{wheel}!/{member}: {problem}" if member else f"{wheel}: {problem}")


# --- names ----------------------------------------------------------------------------------


def _name_problem(name: str) -> str | None:
    """Why a member name could write outside the install folder, or None when it is safe."""
    if not name or "\0" in name:
        return "an empty name or one with a NUL byte"
    if "\\" in name:
        return "a backslash in the name (zip paths use '/'; Windows would read a folder)"
    # str.split and set tests, not PurePosixPath: a wheel has tens of thousands of members
    parts = name.split("/")
    first = parts[0]
    if first in _EMPTY_OR_DOT:
        first = next((part for part in parts if part not in _EMPTY_OR_DOT), "")
    if name.startswith("/") or ":" in first:
        return "an absolute path"
    if ".." in parts:
        return "a '..' component that leads outside the install folder"
    if not _EMPTY_OR_DOT.isdisjoint(name.rstrip("/").split("/")):
        return "an empty or '.' path component"
    return None


_EMPTY_OR_DOT: Final = frozenset({"", "."})


def _mode_problem(info: ArchiveEntry) -> str | None:
    if info.flag_bits & 0x1:
        return "encrypted"
    if info.compress_type not in ALLOWED_COMPRESSION:
        return f"compression method {info.compress_type} (a wheel uses stored or deflate)"
    mode = info.external_attr >> 16
    if info.create_system == 3 and stat.S_ISLNK(mode):
        return "a symbolic link (installers write it as a file, or follow it out of the folder)"
    kind = stat.S_IFMT(mode) if info.create_system == 3 else 0  # zip writers may leave it 0
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        return f"a special file (mode {mode:#o})"
    return None


def _is_folder(info: ArchiveEntry) -> bool:
    """``is_dir``, without a method call (tens of thousands of members, three times each)."""
    return info.filename.endswith("/")


def _add_folders(folders: set[str], name: str) -> None:
    """Add the folders above ``name`` (a checked name: no empty, "." or ".." component)."""
    folder = name.rpartition("/")[0]
    while folder and folder not in folders:  # a known folder's parents are known
        folders.add(folder)
        folder = folder.rpartition("/")[0]


def check_names(wheel: str, infos: Sequence[ArchiveEntry]) -> None:
    """Refuse unsafe names, symlinks, special files, duplicates and file/folder clashes."""
    files: set[str] = set()
    listed_folders: set[str] = set()
    folders: set[str] = set()
    for info in infos:
        problem = _name_problem(info.filename) or _mode_problem(info)
        if problem:
            raise _fail(wheel, info.filename, f"member is {problem}")
        name = info.filename.rstrip("/")
        listed = listed_folders if _is_folder(info) else files
        if name in listed:
            raise _fail(wheel, info.filename, "member name appears twice")
        listed.add(name)
        _add_folders(folders, name)
    folders |= listed_folders
    clashes = sorted(files & folders)
    if clashes:
        raise _fail(wheel, clashes[0], "member is both a file and a folder")


# --- sizes ----------------------------------------------------------------------------------


def member_size_problem(info: ArchiveEntry, limits: WheelLimits) -> str | None:
    """What makes one member's declared sizes a bomb, or None."""
    if info.file_size > limits.max_member_bytes:
        return f"declares {info.file_size} bytes, over the limit of {limits.max_member_bytes}"
    ratio_applies = info.file_size >= limits.ratio_floor_bytes
    if ratio_applies and info.file_size > limits.max_ratio * max(info.compress_size, 1):
        ratio = info.file_size // max(info.compress_size, 1)
        return f"compresses {ratio}:1, over the limit of {limits.max_ratio}:1 (a zip bomb)"
    return None


def _overlap(infos: Sequence[ArchiveEntry]) -> ArchiveEntry | None:
    """A member whose compressed bytes run into the next member's (one block counted twice)."""
    ordered = sorted(infos, key=lambda info: info.header_offset)
    for first, second in itertools.pairwise(ordered):
        if first.header_offset + first.compress_size > second.header_offset:
            return second
    return None


def check_sizes(wheel: str, infos: Sequence[ArchiveEntry], limits: WheelLimits) -> None:
    """Refuse what the headers already show to be a bomb, before decompressing anything."""
    if len(infos) > limits.max_members:
        raise _fail(wheel, "", f"{len(infos)} members, over the limit of {limits.max_members}")
    for info in infos:
        problem = member_size_problem(info, limits)
        if problem:
            raise _fail(wheel, info.filename, f"member {problem}")
    total = sum(info.file_size for info in infos)
    if total > limits.max_total_bytes:
        raise _fail(
            wheel, "", f"members declare {total} bytes, over the limit of {limits.max_total_bytes}"
        )
    overlapping = _overlap(infos)
    if overlapping is not None:
        raise _fail(wheel, overlapping.filename, "member overlaps the one before it (a zip bomb)")


# --- RECORD ---------------------------------------------------------------------------------


def find_record(wheel: str, infos: Sequence[ArchiveEntry]) -> ArchiveEntry:
    """The one ``<name>.dist-info/RECORD`` at the top of the wheel (names already checked)."""
    records = [
        info
        for info in infos
        if info.filename.endswith(".dist-info/RECORD") and info.filename.count("/") == 1
    ]
    if len(records) != 1:
        found = ", ".join(info.filename for info in records) or "none"
        raise _fail(wheel, "", f"expected one <name>.dist-info/RECORD, found {found}")
    return records[0]


def _record_entry(wheel: str, row: Sequence[str]) -> tuple[str, RecordEntry]:
    if len(row) != 3:
        raise _fail(wheel, "RECORD", f"expected path,hash,size rows, found {row!r}")
    path, hash_field, size_field = row
    algorithm, _, digest = hash_field.partition("=")
    if hash_field and (algorithm not in ACCEPTED_HASHES or not digest):
        raise _fail(wheel, path, f"RECORD hash {hash_field!r} is not sha256 or stronger")
    if size_field and not size_field.isdigit():
        raise _fail(wheel, path, f"RECORD size {size_field!r} is not a number")
    return path, RecordEntry(algorithm, digest, int(size_field) if size_field else None)


def record_rows(wheel: str, text: str) -> list[list[str]]:
    """RECORD's non-empty rows, as ``csv`` reads them. Text without a quote or a NUL has no
    field that ``csv`` would read otherwise than a split at commas, which costs less (torch's
    12k rows: 4 ms rather than 7)."""
    lines = text.splitlines()
    if '"' not in text and "\0" not in text:
        return [line.split(",") for line in lines if line]
    try:
        return [row for row in csv.reader(lines) if row]
    except csv.Error as error:
        raise _fail(wheel, "RECORD", f"not a CSV file: {error}") from None


def parse_record(wheel: str, text: str) -> dict[str, RecordEntry]:
    """RECORD's rows by path (pure); a path listed twice is an error."""
    entries: dict[str, RecordEntry] = {}
    for row in record_rows(wheel, text):
        path, entry = _record_entry(wheel, row)
        if path in entries:
            raise _fail(wheel, path, "listed twice in RECORD")
        entries[path] = entry
    return entries


def _unlisted(record_name: str) -> frozenset[str]:
    """RECORD and its signatures: members RECORD cannot list."""
    folder = record_name.rpartition("/")[0]
    return frozenset((record_name, *(f"{folder}/{signature}" for signature in RECORD_SIGNATURES)))


def record_digest(raw: bytes) -> str:
    """A digest as RECORD writes it: urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def check_against_record(wheel: str, name: str, entry: RecordEntry, size: int, digest: str) -> None:
    """One member's size and hash against its RECORD row."""
    if entry.size is not None and entry.size != size:
        raise _fail(wheel, name, f"member has {size} bytes, RECORD says {entry.size}")
    if entry.digest != digest:
        raise _fail(wheel, name, f"member's {entry.algorithm} hash differs from RECORD's")


# --- reading --------------------------------------------------------------------------------


ZIP_ERRORS = (OSError, zipfile.BadZipFile, EOFError, ValueError, NotImplementedError, zlib.error)
"""What zipfile raises on a corrupt archive or member (CRC, truncation, bad headers, bad deflate
data); the wheel input's other reads (its METADATA) catch the same."""

RECORD_LIMIT = 64 << 20


def _read_record(wheel: str, archive: WheelArchive, info: ArchiveEntry) -> str:
    try:
        raw = archive.read(info, RECORD_LIMIT + 1)
    except ZIP_ERRORS as error:
        raise _fail(wheel, info.filename, f"cannot read the member: {error}") from None
    if len(raw) > RECORD_LIMIT:
        raise _fail(wheel, info.filename, f"RECORD is larger than {RECORD_LIMIT} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(wheel, info.filename, "RECORD is not UTF-8 text") from None


def _checked_record(
    wheel: str, archive: WheelArchive, infos: Sequence[ArchiveEntry]
) -> tuple[str, dict[str, RecordEntry]]:
    record_info = find_record(wheel, infos)
    record = parse_record(wheel, _read_record(wheel, archive, record_info))
    listed = {info.filename for info in infos if not _is_folder(info)}
    if not listed.issuperset(record):
        path = next(path for path in record if path not in listed)
        raise _fail(wheel, path, "RECORD lists this member, which the wheel does not hold")
    return record_info.filename, record


# One per wheel member (tens of thousands): a NamedTuple is made in a third of the time a
# frozen dataclass takes.
class CheckedMember(NamedTuple):
    """A member to read, once the headers and RECORD passed."""

    name: str
    span: MemberSpan
    record: RecordEntry | None
    """Its RECORD row: its size and hash are checked as it is read."""


def checked_members(wheel: str, archive: WheelArchive, limits: WheelLimits) -> list[CheckedMember]:
    """Every check the headers and RECORD allow, before anything else is decompressed; then
    the members to read."""
    infos = archive.infolist()
    check_names(wheel, infos)
    check_sizes(wheel, infos, limits)
    record_name, record = _checked_record(wheel, archive, infos)
    unlisted = _unlisted(record_name)
    new, span_of, row = tuple.__new__, MemberSpan.of, record.get  # once per member: no lookups
    return [
        new(CheckedMember, (info.filename, span_of(info), row(info.filename)))
        for info in infos
        if not _is_folder(info) and info.filename not in unlisted
    ]


def read_member(
    wheel: str, mapping: mmap.mmap, member: CheckedMember, sink: Sink | None
) -> tuple[bytes, int]:
    """One member of ``checked_members``, read from a mapping of the wheel, hashed and checked
    against its RECORD row; an ELF member's bytes go to ``sink`` chunk by chunk, in order. Its
    first four bytes and its size.

    Each member may use its whole declared size: ``check_sizes`` bounded their sum, and no
    member decompresses past its own, so members can be read in any order, by any process.
    """
    entry = member.record
    if entry is None:
        raise _fail(wheel, member.name, "member is not listed in RECORD")
    if not entry.digest:
        raise _fail(wheel, member.name, "RECORD gives no hash for this member")
    try:
        content = read_span(mapping, member.span, entry.algorithm, sink)
    except UnreadableMember as error:
        raise _fail(wheel, member.name, str(error)) from None
    check_against_record(wheel, member.name, entry, content.size, record_digest(content.digest))
    problem = crc_problem(content, member.span)
    if problem is not None:  # RECORD agrees, but pip cannot extract it: zipfile checks the CRC
        raise _fail(wheel, member.name, f"{problem}: pip and zipfile refuse to extract it")
    return content.head, content.size


def read_member_again(
    wheel: str, mapping: mmap.mmap, member: CheckedMember, sink: Sink | None
) -> tuple[bytes, int]:
    """``read_member`` for a member that a read checked against RECORD already (the checks and
    findings read some files again): checked against the zip's CRC-32 alone (worked out as it
    is inflated), not hashed again, so that a wheel changed since is not read as the one
    checked."""
    try:
        content = read_span(mapping, member.span, None, sink)
    except UnreadableMember as error:
        raise _fail(wheel, member.name, str(error)) from None
    problem = crc_problem(content, member.span)
    if problem is not None:
        raise _fail(wheel, member.name, f"{problem} (changed since read?)")
    return content.head, content.size


def plain_member(mapping: mmap.mmap, member: CheckedMember) -> bool:
    """Whether a member of ``checked_members`` is small, no binary, and passes every check
    ``read_member`` makes, read in one step (a wheel's thousands of headers, sources and data
    files: half of the time per member). False for anything else, which ``read_member`` reads,
    for the exact error or to keep a binary's bytes."""
    entry = member.record
    if entry is None or entry.algorithm != "sha256" or not entry.digest:
        return False
    content = plain_content(mapping, member.span)
    if content is None or (entry.size is not None and entry.size != len(content)):
        return False
    return record_digest(hashlib.sha256(content).digest()) == entry.digest


def map_wheel(path: Path) -> mmap.mmap:
    """The wheel's bytes, mapped read-only; ``InputError`` when it cannot be read."""
    try:
        with path.open("rb") as handle:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as error:  # ValueError: an empty file cannot be mapped
        raise _fail(str(path), "", f"cannot read the wheel: {error}") from None


def open_wheel(path: Path) -> WheelArchive:
    """The wheel's archive; ``InputError`` when it is no readable zip file."""
    try:
        return WheelArchive.open(path)
    except ZIP_ERRORS as error:
        raise _fail(str(path), "", f"not a readable wheel (zip) file: {error}") from None


def record_line(name: str, content: bytes) -> str:
    """A RECORD row for ``content`` (what wheel tools write): for tests and for tools."""
    return f"{name},sha256={record_digest(hashlib.sha256(content).digest())},{len(content)}"
