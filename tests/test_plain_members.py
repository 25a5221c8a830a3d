"""A wheel's plain members (no binary, small) are read the short way (``plain_member``) only
when the full read (``read_member``) would pass them: anything else goes the full way, which
names the problem exactly."""

from __future__ import annotations

import hashlib
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from buildtool.errors import InputError
from buildtool.linkage.binaries.magic import binary_format
from buildtool.linkage.inputs import inflate
from buildtool.linkage.inputs.wheel_archive import (
    DEFAULT_LIMITS,
    CheckedMember,
    checked_members,
    open_wheel,
    plain_member,
    read_member,
    record_digest,
)
from tests.test_member_crc import flip_crc

TEXT = b"".join(b"line %d of a header file\n" % i for i in range(500))
PAYLOADS = {
    "pkg/empty.txt": b"",
    "pkg/header.h": TEXT,
    "pkg/short": b"\x7fEL",  # shorter than any magic: no binary
    "pkg/lib.so": b"\x7fELF" + TEXT,
    "pkg/lib.dylib": b"\xcf\xfa\xed\xfe" + TEXT,
    "pkg/lib.dll": b"MZ" + TEXT,
}
BINARIES = {"pkg/lib.so", "pkg/lib.dylib", "pkg/lib.dll"}


def _row(name: str, data: bytes) -> str:
    return f"{name},sha256={record_digest(hashlib.sha256(data).digest())},{len(data)}"


def _write(path: Path, members: dict[str, tuple[bytes, int]], rows: dict[str, str]) -> Path:
    record = "\n".join([*rows.values(), "pkg-1.dist-info/RECORD,,"]) + "\n"
    with zipfile.ZipFile(path, "w") as archive:
        for name, (data, method) in members.items():
            archive.writestr(name, data, method)
        archive.writestr("pkg-1.dist-info/RECORD", record)
    return path


def _members(path: Path) -> dict[str, CheckedMember]:
    with open_wheel(path) as archive:
        found = checked_members(str(path), archive, DEFAULT_LIMITS)
    return {member.name: member for member in found}


def _full_read_passes(data: bytes, wheel: str, member: CheckedMember) -> bytes | None:
    """The member's first bytes when ``read_member`` passes it; None when it raises."""
    try:
        return read_member(wheel, data, member, None)[0]  # type: ignore[arg-type]
    except InputError:
        return None


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_plain_members_go_the_short_way_and_binaries_the_full_way(
    tmp_path: Path, method: int
) -> None:
    members = {name: (data, method) for name, data in PAYLOADS.items()}
    rows = {name: _row(name, data) for name, data in PAYLOADS.items()}
    path = _write(tmp_path / "pkg-1-py3-none-any.whl", members, rows)
    data = path.read_bytes()
    for name, member in _members(path).items():
        if name.endswith("RECORD"):
            continue
        short = plain_member(data, member)  # type: ignore[arg-type]
        assert short == (name not in BINARIES), name
        assert _full_read_passes(data, str(path), member) == PAYLOADS[name][:4], name


def test_a_member_over_the_one_step_size_goes_the_full_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(
        tmp_path / "pkg-1-py3-none-any.whl",
        {"pkg/header.h": (TEXT, zipfile.ZIP_DEFLATED)},
        {"pkg/header.h": _row("pkg/header.h", TEXT)},
    )
    member = _members(path)["pkg/header.h"]
    assert plain_member(path.read_bytes(), member)  # type: ignore[arg-type]
    monkeypatch.setattr(inflate, "WHOLE_MEMBER_BYTES", len(TEXT) - 1)
    assert not plain_member(path.read_bytes(), member)  # type: ignore[arg-type]


def _patched_data(path: Path, name: str, raw: bytes) -> None:
    """The member's compressed bytes start with ``raw`` (no longer than they are)."""
    blob = bytearray(path.read_bytes())
    member = _members(path)[name]
    start = member.span.header_offset + 30 + len(name)  # writestr writes no extra field
    assert len(raw) <= member.span.compress_size
    blob[start : start + len(raw)] = raw
    path.write_bytes(bytes(blob))


def _corrupt_deflate(path: Path) -> None:
    _write(path, {"pkg/header.h": (TEXT, 8)}, {"h": _row("pkg/header.h", TEXT)})
    _patched_data(path, "pkg/header.h", b"\xff" * 16)  # a reserved block type


def _central_entry(blob: bytes, name: str) -> int:
    at = blob.index(b"PK\x01\x02")
    while blob[at + 46 : at + 46 + len(name)] != name.encode():
        at = blob.index(b"PK\x01\x02", at + 1)
    return at


def _deflate_that_never_ends(path: Path) -> None:
    """A member whose deflate data yields every byte of TEXT, then stops short of the final
    block: written stored as those bytes, then its headers made to say deflate, and TEXT's
    size (RECORD's row is TEXT's, so the hash would agree)."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    raw = compressor.compress(TEXT) + compressor.flush(zlib.Z_SYNC_FLUSH)
    _write(path, {"pkg/header.h": (raw, zipfile.ZIP_STORED)}, {"h": _row("pkg/header.h", TEXT)})
    blob = bytearray(path.read_bytes())
    local = _members(path)["pkg/header.h"].span.header_offset
    central = _central_entry(bytes(blob), "pkg/header.h")
    for method_at, size_at in ((local + 8, local + 22), (central + 10, central + 24)):
        blob[method_at : method_at + 2] = zipfile.ZIP_DEFLATED.to_bytes(2, "little")
        blob[size_at : size_at + 4] = len(TEXT).to_bytes(4, "little")
    path.write_bytes(bytes(blob))


def _crc_differs(path: Path) -> None:
    """RECORD's row is right, the headers' CRC-32 is not (pip refuses it)."""
    _write(path, {"pkg/header.h": (TEXT, 8)}, {"h": _row("pkg/header.h", TEXT)})
    flip_crc(path, "pkg/header.h")


BROKEN: dict[str, Callable[[Path], object]] = {
    "hash differs": lambda p: _write(
        p, {"pkg/header.h": (TEXT, 8)}, {"h": _row("pkg/header.h", TEXT[:-1] + b"!")}
    ),
    "size differs": lambda p: _write(
        p, {"pkg/header.h": (TEXT, 8)}, {"h": _row("pkg/header.h", TEXT)[:-1] + "9"}
    ),
    "no hash in RECORD": lambda p: _write(p, {"pkg/header.h": (TEXT, 8)}, {"h": "pkg/header.h,,"}),
    "not in RECORD": lambda p: _write(p, {"pkg/header.h": (TEXT, 8)}, {}),
    "corrupt deflate": _corrupt_deflate,
    "CRC-32 differs": _crc_differs,
    "deflate never ends": _deflate_that_never_ends,
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_member_goes_the_full_way_which_names_it(tmp_path: Path, broken: str) -> None:
    path = tmp_path / "pkg-1-py3-none-any.whl"
    BROKEN[broken](path)
    member = _members(path)["pkg/header.h"]
    data = path.read_bytes()
    assert not plain_member(data, member)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"\.whl!/pkg/header\.h: "):
        read_member(str(path), data, member, None)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(
    at=st.integers(min_value=0, max_value=10_000),
    value=st.integers(min_value=0, max_value=255),
)
def test_whatever_the_short_way_passes_the_full_way_passes(
    tmp_path_factory: pytest.TempPathFactory, at: int, value: int
) -> None:
    path = tmp_path_factory.mktemp("flip") / "pkg-1-py3-none-any.whl"
    members = {name: (data, zipfile.ZIP_DEFLATED) for name, data in PAYLOADS.items()}
    _write(path, members, {name: _row(name, data) for name, data in PAYLOADS.items()})
    checked = _members(path)
    blob = bytearray(path.read_bytes())
    blob[at % len(blob)] = value
    data = bytes(blob)
    for name, member in checked.items():
        if plain_member(data, member):  # type: ignore[arg-type]
            head = _full_read_passes(data, str(path), member)
            assert head is not None, name
            assert binary_format(head) is None, name
