"""Reading wheel members from a mapping of the wheel gives exactly what zipfile gives, with
either inflater, hashed inline or on a thread, in any chunk size; bad bytes are named errors."""

from __future__ import annotations

import hashlib
import random
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from buildtool.linkage.binaries.elf import ELF_MAGIC
from buildtool.linkage.inputs import inflate
from buildtool.linkage.inputs.inflate import MemberSpan, UnreadableMember, member_bytes, read_span


def _payloads() -> dict[str, bytes]:
    noise = random.Random(7).randbytes(20_000)
    text = b"".join(b"line %d of a header file\n" % i for i in range(2_000))
    return {
        "empty": b"",
        "three": b"\x7fEL",  # shorter than the magic
        "elf": ELF_MAGIC + noise,  # incompressible: deflate stores blocks
        "text.h": text,
        "mixed.so": ELF_MAGIC + text + noise,
    }


PAYLOADS = _payloads()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every payload twice: deflated and stored."""
    path = tmp_path_factory.mktemp("inflate") / "w.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in PAYLOADS.items():
            archive.writestr(f"deflated/{name}", data, zipfile.ZIP_DEFLATED)
            archive.writestr(f"stored/{name}", data, zipfile.ZIP_STORED)
    return path


def _spans(path: Path) -> Iterator[tuple[MemberSpan, bytes]]:
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            yield MemberSpan.of(info), archive.read(info)


def _collect() -> tuple[list[bytes], Callable[[bytes], None]]:
    chunks: list[bytes] = []
    return chunks, chunks.append


INFLATERS = {"zlib": inflate._ZlibInflation, "chosen": inflate.new_inflater}


STREAMED = [(False, 3), (False, 4096), (True, 3), (True, 1 << 20)]
"""(hashed on a thread, bytes per step) of the streaming reads; the others read whole."""


@pytest.mark.parametrize("inflater", sorted(INFLATERS))
@pytest.mark.parametrize(("threaded", "output_bytes"), [*STREAMED, (False, 0)])
def test_every_member_reads_as_zipfile_reads_it(
    wheel: Path, inflater: str, threaded: bool, output_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inflate, "new_inflater", INFLATERS[inflater])
    monkeypatch.setattr(inflate, "WHOLE_MEMBER_BYTES", -1 if output_bytes else 1 << 40)
    monkeypatch.setattr(inflate, "THREADED_HASH_BYTES", 0 if threaded else 1 << 40)
    monkeypatch.setattr(inflate, "OUTPUT_BYTES", output_bytes)
    monkeypatch.setattr(inflate, "INPUT_BYTES", max(output_bytes // 2, 1))
    data = wheel.read_bytes()
    for span, expected in _spans(wheel):
        chunks, sink = _collect()
        content = read_span(data, span, "sha256", sink)
        assert content.size == len(expected), span.name
        assert content.head == expected[:4], span.name
        assert content.digest == hashlib.sha256(expected).digest(), span.name
        assert content.crc == zlib.crc32(expected) == span.crc, span.name
        # only ELF members are handed over, whole and in order
        assert b"".join(chunks) == (expected if expected[:4] == ELF_MAGIC else b""), span.name


def test_the_chosen_inflater_is_isal_where_it_has_wheels() -> None:
    import platform

    if platform.machine() in ("x86_64", "AMD64", "aarch64", "arm64"):
        assert inflate.INFLATER == "isal"  # a dependency there: its absence is a packaging bug
    assert inflate.INFLATER in ("isal", "zlib")


def _span_named(path: Path, name: str) -> MemberSpan:
    with zipfile.ZipFile(path) as archive:
        return MemberSpan.of(archive.getinfo(name))


@pytest.fixture(params=["streamed", "whole"])
def read_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each error test runs through both ways of reading."""
    monkeypatch.setattr(
        inflate, "WHOLE_MEMBER_BYTES", -1 if request.param == "streamed" else 1 << 40
    )
    return str(request.param)


@pytest.mark.usefixtures("read_path")
def test_truncated_deflate_data_is_named(wheel: Path) -> None:
    span = _span_named(wheel, "deflated/text.h")
    data = wheel.read_bytes()
    short = MemberSpan(span.name, span.header_offset, span.compress_type, 100, span.file_size)
    with pytest.raises(UnreadableMember, match="deflate data ends early"):
        read_span(data, short, "sha256")


@pytest.mark.usefixtures("read_path")
def test_corrupt_deflate_data_is_named(wheel: Path) -> None:
    span = _span_named(wheel, "deflated/text.h")
    data = bytearray(wheel.read_bytes())
    start = span.header_offset + 30 + len(span.name)  # zipfile.writestr writes no extra field
    data[start : start + 16] = b"\xff" * 16  # a reserved block type
    with pytest.raises(UnreadableMember, match="deflate data is corrupt"):
        read_span(bytes(data), span, "sha256")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: MemberSpan("other", *_rest(s)), "local header names 'deflated/text.h'"),
        (lambda s: MemberSpan(s.name, s.header_offset + 1, *_rest(s)[1:]), "no local header"),
        (lambda s: MemberSpan(s.name, 1 << 40, *_rest(s)[1:]), "past the end"),
        (lambda s: MemberSpan(s.name, s.header_offset, 8, 1 << 40, 5), "run past the end"),
        (lambda s: MemberSpan(s.name, s.header_offset, 8, s.compress_size, 5), "past its declared"),
        (lambda s: MemberSpan(s.name, s.header_offset, 8, s.compress_size, 1 << 30), "declares"),
        (lambda s: MemberSpan(s.name, s.header_offset, 14, s.compress_size, 5), "method 14"),
    ],
)
@pytest.mark.usefixtures("read_path")
def test_headers_that_disagree_with_the_bytes_are_named(
    wheel: Path, change: Callable[[MemberSpan], MemberSpan], message: str
) -> None:
    span = change(_span_named(wheel, "deflated/text.h"))
    with pytest.raises(UnreadableMember, match=message):
        read_span(wheel.read_bytes(), span, "sha256")


def test_member_bytes_are_what_zipfile_reads(wheel: Path) -> None:
    data = wheel.read_bytes()
    for span, expected in _spans(wheel):
        assert member_bytes(data, span) == expected, span.name


@pytest.mark.parametrize(
    "change",
    [
        lambda s: MemberSpan("other", *_rest(s)),
        lambda s: MemberSpan(s.name, s.header_offset, 8, 100, s.file_size),
        lambda s: MemberSpan(s.name, s.header_offset, 8, s.compress_size, 5),
        lambda s: MemberSpan(s.name, s.header_offset, 14, s.compress_size, s.file_size),
    ],
    ids=["other name", "truncated", "longer than declared", "unknown method"],
)
def test_member_bytes_of_a_broken_member_are_none(
    wheel: Path, change: Callable[[MemberSpan], MemberSpan]
) -> None:
    span = change(_span_named(wheel, "deflated/text.h"))
    assert member_bytes(wheel.read_bytes(), span) is None


def test_member_bytes_of_corrupt_deflate_data_are_none(wheel: Path) -> None:
    span = _span_named(wheel, "deflated/text.h")
    data = bytearray(wheel.read_bytes())
    start = span.header_offset + 30 + len(span.name)
    data[start : start + 16] = b"\xff" * 16
    assert member_bytes(bytes(data), span) is None


def _rest(span: MemberSpan) -> tuple[int, int, int, int]:
    return span.header_offset, span.compress_type, span.compress_size, span.file_size


def test_a_failed_read_leaves_no_hashing_thread(
    wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    monkeypatch.setattr(inflate, "THREADED_HASH_BYTES", 0)
    monkeypatch.setattr(inflate, "WHOLE_MEMBER_BYTES", -1)
    span = _span_named(wheel, "deflated/text.h")
    short = MemberSpan(span.name, span.header_offset, span.compress_type, 100, span.file_size)
    before = threading.active_count()
    with pytest.raises(UnreadableMember):
        read_span(wheel.read_bytes(), short, "sha256")
    assert threading.active_count() == before


def test_raw_deflate_of_zlib_matches_zipfile() -> None:
    """The premise of reading without zipfile: a zip member is raw deflate (no zlib header)."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    raw = compressor.compress(PAYLOADS["text.h"]) + compressor.flush()
    expected = PAYLOADS["text.h"]
    assert inflate.new_inflater().decompress(raw, len(expected) + 1) == expected
