"""Members read again after the read (``wheel_archive.read_member_again``: the checks' and the
findings' second reads) are checked against the zip's CRC-32 rather than hashed again for
RECORD: the bytes are the ones read before, and a wheel changed since is refused as before."""

from __future__ import annotations

import hashlib
import mmap
import random
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from buildtool.errors import InputError
from buildtool.linkage.inputs import inflate
from buildtool.linkage.inputs.central_directory import read_directory
from buildtool.linkage.inputs.wheel_archive import (
    DEFAULT_LIMITS,
    CheckedMember,
    checked_members,
    open_wheel,
    read_member,
    read_member_again,
    record_digest,
)

SIZES = {
    "pkg/small.so": 3_000,  # read in one step
    "pkg/medium.so": 2 << 20,  # streamed
    "pkg/big.so": 9 << 20,  # streamed, where a hash would take a thread
}


def _payload(size: int, seed: int) -> bytes:
    """ELF-headed bytes that deflate compresses a little (runs of random words)."""
    rng = random.Random(seed)
    words = [rng.randbytes(rng.randrange(1, 16)) for _ in range(4096)]
    body = bytearray(b"\x7fELF")
    while len(body) < size:
        body += rng.choice(words)
    return bytes(body[:size])


def _wheel(path: Path, members: dict[str, bytes], method: int) -> Path:
    rows = [
        f"{name},sha256={record_digest(hashlib.sha256(data).digest())},{len(data)}"
        for name, data in members.items()
    ]
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data, method)
        archive.writestr("pkg-1.dist-info/RECORD", "\n".join([*rows, "pkg-1.dist-info/RECORD,,"]))
    return path


def _members(path: Path) -> dict[str, CheckedMember]:
    with open_wheel(path) as archive:
        return {m.name: m for m in checked_members(str(path), archive, DEFAULT_LIMITS)}


def _mapped(path: Path) -> mmap.mmap:
    with path.open("rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_a_member_read_again_gives_what_the_read_gave(tmp_path: Path, method: int) -> None:
    payloads = {name: _payload(size, size) for name, size in SIZES.items()}
    path = _wheel(tmp_path / "pkg-1-py3-none-any.whl", payloads, method)
    mapping = _mapped(path)
    for name, member in _members(path).items():
        if name not in payloads:
            continue
        first, again = bytearray(), bytearray()
        assert read_member(str(path), mapping, member, first.extend) == (b"\x7fELF", len(first))
        assert read_member_again(str(path), mapping, member, again.extend) == (
            b"\x7fELF",
            len(again),
        )
        assert bytes(again) == bytes(first) == payloads[name]
        # RECORD is not what it goes by: its row may be gone, the CRC-32 still holds
        unlisted = member._replace(record=None)
        assert read_member_again(str(path), mapping, unlisted, None)[1] == len(first)


@pytest.mark.parametrize("name", sorted(SIZES))
def test_a_wheel_changed_since_the_read_is_refused(tmp_path: Path, name: str) -> None:
    """The same layout (stored members of the same sizes) with one byte changed: what the
    read took for the member is not there any more, and both reads say so."""
    payloads = {n: _payload(size, size) for n, size in SIZES.items()}
    before = _wheel(tmp_path / "before.whl", payloads, zipfile.ZIP_STORED)
    changed = dict(payloads)
    changed[name] = changed[name][:-1] + bytes([changed[name][-1] ^ 1])
    after = _wheel(tmp_path / "after.whl", changed, zipfile.ZIP_STORED)
    member = _members(before)[name]
    assert member.span == _members(after)[name].span._replace(crc=member.span.crc)
    mapping = _mapped(after)
    refused = r"CRC-32 is [0-9a-f]{8}, its central directory's [0-9a-f]{8} \(changed since read"
    with pytest.raises(InputError, match=refused):
        read_member_again(str(after), mapping, member, None)
    with pytest.raises(InputError, match="hash differs from RECORD"):
        read_member(str(after), mapping, member, None)


@pytest.mark.parametrize("inflation", [inflate._ZlibInflation, inflate.new_inflater])
def test_the_checksum_is_zlibs_crc32_of_what_was_inflated(
    inflation: Callable[[], inflate.Inflation],
) -> None:
    """In small steps too: the inflater keeps what it cannot give out yet, and its CRC-32 is
    of everything given out, however it was asked for."""
    data = _payload(3 << 20, 7)
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    raw = compressor.compress(data) + compressor.flush()
    inflater, out, position, chunk = inflation(), bytearray(), 0, b"-"
    while not inflater.eof:
        # more input when it asks, or when what it kept gave nothing (as ``_inflate`` feeds it)
        fed = raw[position : position + 1000] if inflater.needs_input or not chunk else b""
        assert fed or chunk, "the inflater neither asked for input nor gave output"
        position += len(fed)
        chunk = inflater.decompress(fed, 7000)
        out += chunk
    assert bytes(out) == data
    assert inflater.crc == zlib.crc32(data)


def test_every_reader_of_the_directory_gives_the_crc(tmp_path: Path) -> None:
    payloads = {name: _payload(size, size) for name, size in SIZES.items()}
    path = _wheel(tmp_path / "pkg-1-py3-none-any.whl", payloads, zipfile.ZIP_DEFLATED)
    expected = {info.filename: info.CRC for info in zipfile.ZipFile(path).infolist()}
    assert {n: m.span.crc for n, m in _members(path).items()} == {
        n: crc for n, crc in expected.items() if not n.endswith("RECORD")
    }
    directory = read_directory(_mapped(path))
    assert directory is not None
    assert directory.biggest is not None
    assert expected["pkg/big.so"] == directory.biggest.CRC
