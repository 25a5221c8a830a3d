"""One wheel member's bytes, read from a mapping of the wheel: located, inflated, hashed.

``zipfile`` opens each member through a file object, a decompressor and a CRC; over the twenty
thousand members of a big wheel that overhead costs more than the bytes. Here a process maps
the wheel once and finds a member by the central-directory facts the headers' checks already
took (``MemberSpan``). Deflate data is inflated by ISA-L when the ``isal`` package is installed
(about twice zlib's speed on x86-64 and arm64), else by zlib. A big member is hashed on a second
thread while it is inflated: both release the GIL, so it costs about its inflation alone.

Every read also works out the member's CRC-32 (``MemberContent.crc``), which its callers hold
against the central directory's: a first read checks the RECORD hash too, but a member whose
CRC-32 disagrees is one that pip and ``zipfile`` refuse to extract, whatever RECORD says. ISA-L
computes it while it inflates, at no measurable cost; zlib's ``crc32`` is a pass of its own.
A member read again, whose hash a read checked already, is checked by its CRC-32 alone.
"""

from __future__ import annotations

import hashlib
import queue
import struct
import threading
import zipfile
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, NamedTuple, Protocol, cast

from buildtool.linkage.binaries.magic import HEAD_BYTES, binary_format

if TYPE_CHECKING:
    import mmap

    from buildtool.linkage.inputs.central_directory import ArchiveEntry

Sink = Callable[[bytes], object]


class Inflation(Protocol):
    """A raw-deflate stream being inflated, as ``bz2.BZ2Decompressor`` works: input it cannot
    give out yet (``max_length``) it keeps; ``crc`` is the CRC-32 of everything given out."""

    @property
    def eof(self) -> bool: ...
    @property
    def needs_input(self) -> bool: ...
    @property
    def crc(self) -> int: ...

    def decompress(self, data: bytes, max_length: int, /) -> bytes: ...


class _ZlibInflation:
    """``Inflation`` over zlib, whose decompressor hands back the input it kept instead."""

    def __init__(self) -> None:
        self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate: zip has no header
        self.crc = 0

    @property
    def eof(self) -> bool:
        return self._inflater.eof

    @property
    def needs_input(self) -> bool:
        return not self._inflater.unconsumed_tail

    def decompress(self, data: bytes, max_length: int, /) -> bytes:
        kept = self._inflater.unconsumed_tail
        chunk = self._inflater.decompress(kept + data if kept else data, max_length)
        self.crc = zlib.crc32(chunk, self.crc)
        return chunk


def _pick_inflater() -> tuple[Callable[[], Inflation], tuple[type[Exception], ...], str]:
    try:
        from isal import igzip_lib
    except ImportError:
        return _ZlibInflation, (zlib.error,), "zlib"

    def isal_inflation() -> Inflation:
        # raw deflate, its CRC-32 computed as it is inflated (gzip's checksum is the zip's)
        found: Inflation = igzip_lib.IgzipDecompressor(
            flag=igzip_lib.DECOMP_GZIP_NO_HDR, hist_bits=zlib.MAX_WBITS
        )
        return found

    isal_error = cast("type[Exception]", igzip_lib.IsalError)  # its stub says an instance
    return isal_inflation, (zlib.error, isal_error), "isal"


new_inflater, INFLATE_ERRORS, INFLATER = _pick_inflater()
"""A raw-deflate ``Inflation``, what it raises on bad data, and which library it comes from."""

INPUT_BYTES: Final = 256 << 10
"""Compressed bytes handed to the inflater per step."""

OUTPUT_BYTES: Final = 256 << 10
"""At most this much is inflated per step: what a member costs in memory beyond its kept bytes.
Small steps keep the heap small enough to be reused as chunks come and go: with 1 MiB steps
(up to ``HASH_QUEUE_CHUNKS`` waiting for the hashing thread), reading torch's wheel took 100k
page faults, 70k with these."""

WHOLE_MEMBER_BYTES: Final = 1 << 20
"""Members up to this big are inflated in one step (most of a wheel's thousands of files)."""

THREADED_HASH_BYTES: Final = 8 << 20
"""Members at least this big are hashed on a second thread."""

HASH_QUEUE_CHUNKS: Final = 16
"""Inflated chunks that may wait for the hashing thread (bounds the memory it may hold)."""

_LOCAL_HEADER = struct.Struct("<4s5H3I2H")
_LOCAL_SIGNATURE: Final = b"PK\x03\x04"
_UTF8_NAME_FLAG: Final = 0x800


def _pick_crc32() -> Callable[[bytes, int], int]:
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib.crc32
    crc32: Callable[[bytes, int], int] = isal_zlib.crc32  # about twice zlib's speed
    return crc32


_crc32: Final = _pick_crc32()


class _NoHash:
    """What a read that checks no RECORD hash is fed: a member read again, which its CRC-32
    decides (its hash was checked by the read that made its facts)."""

    def update(self, data: bytes) -> None:
        """Nothing to do."""

    def digest(self) -> bytes:
        return b""


def new_hash(algorithm: str | None, data: bytes = b"") -> hashlib._Hash | _NoHash:
    """``hashlib.new``, without its Python-level dispatch for the common algorithm (a wheel's
    every member is hashed); None: no hash."""
    if algorithm == "sha256":
        return hashlib.sha256(data)
    if algorithm is None:
        return _NoHash()
    return hashlib.new(algorithm, data)


class UnreadableMember(Exception):
    """The member's bytes are not what its headers say; the message says what is wrong."""


# One per wheel member (tens of thousands): a NamedTuple is made in a third of the time a
# frozen dataclass takes.
class MemberSpan(NamedTuple):
    """Where a member's bytes lie in the wheel, from the central directory."""

    name: str
    """Its name as the central directory spells it (its local header must agree)."""
    header_offset: int
    compress_type: int
    compress_size: int
    file_size: int
    crc: int = 0
    """Its CRC-32 as the central directory gives it."""

    @classmethod
    def of(cls, info: ArchiveEntry) -> MemberSpan:
        fields = (
            info.orig_filename,
            info.header_offset,
            info.compress_type,
            info.compress_size,
            info.file_size,
            info.CRC,
        )
        return tuple.__new__(cls, fields)  # without NamedTuple's keyword handling: one per member


# One per wheel member (tens of thousands): a NamedTuple is made in a third of the time a
# frozen dataclass takes.
class MemberContent(NamedTuple):
    head: bytes
    """The first four bytes (fewer for a shorter member)."""
    size: int
    digest: bytes
    """Its hash (b"" when read without one)."""
    crc: int
    """The CRC-32 of its bytes: a first read's caller holds it against ``MemberSpan.crc``
    (``crc_problem``)."""


def crc_problem(content: MemberContent, span: MemberSpan) -> str | None:
    """Why ``zipfile`` (and pip) would refuse the member's bytes as read: their CRC-32 is not
    the one the central directory gives; None when it is."""
    if content.crc == span.crc:
        return None
    return f"member's CRC-32 is {content.crc:08x}, its central directory's {span.crc:08x}"


def _data_offset(data: mmap.mmap | bytes, span: MemberSpan) -> int:
    """Where the member's compressed bytes start, once its local header agrees with ``span``."""
    end = span.header_offset + _LOCAL_HEADER.size
    if span.header_offset < 0 or end > len(data):
        raise UnreadableMember(f"member's local header at {span.header_offset} is past the end")
    fields = _LOCAL_HEADER.unpack_from(data, span.header_offset)
    name_length: int = fields[9]
    extra_length: int = fields[10]
    if fields[0] != _LOCAL_SIGNATURE:
        raise UnreadableMember(f"member has no local header at offset {span.header_offset}")
    raw_name = data[end : end + name_length]  # a copy (bytes) from a mapping too
    if raw_name.isascii():  # both encodings agree on ASCII, the common case, decoded fastest
        name = raw_name.decode("ascii")
    else:
        name = raw_name.decode("utf-8" if fields[2] & _UTF8_NAME_FLAG else "cp437", "replace")
    if name != span.name:
        raise UnreadableMember(f"member's local header names {name!r} (the wheel changed?)")
    start = end + name_length + extra_length
    if start + span.compress_size > len(data):
        raise UnreadableMember(f"member's {span.compress_size} bytes run past the end of the file")
    return start


class _Hasher:
    """A hash fed in order; on a second thread when the member is big."""

    def __init__(self, algorithm: str | None, threaded: bool) -> None:
        self._hash = new_hash(algorithm)
        threaded = threaded and algorithm is not None
        self._queue: queue.Queue[bytes | None] | None = None
        self._thread: threading.Thread | None = None
        if threaded:
            self._queue = queue.Queue(HASH_QUEUE_CHUNKS)
            self._thread = threading.Thread(target=self._consume, daemon=True)
            self._thread.start()

    def _consume(self) -> None:
        assert self._queue is not None
        while (chunk := self._queue.get()) is not None:
            self._hash.update(chunk)

    def update(self, chunk: bytes) -> None:
        if self._queue is None:
            self._hash.update(chunk)
        else:
            self._queue.put(chunk)

    def close(self) -> None:
        """Wait for the thread (if any) to hash what it was given."""
        if self._queue is not None and self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._queue = None

    def digest(self) -> bytes:
        self.close()
        return self._hash.digest()


class _Output:
    """Counts, hashes and (for an ELF member) keeps what is inflated, never past ``limit``."""

    def __init__(self, limit: int, hasher: _Hasher, sink: Sink | None) -> None:
        self.limit = limit
        self.size = 0
        self.head = b""
        self._hasher = hasher
        self._sink = sink
        self._early: list[bytes] = []
        """Chunks seen before the head is complete: whether to keep them is not known yet."""

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.limit:
            raise UnreadableMember("member decompresses past its declared size")
        self._hasher.update(chunk)
        if len(self.head) < HEAD_BYTES:
            self._early.append(chunk)
            self.head = b"".join(self._early)[:HEAD_BYTES]
            if len(self.head) == HEAD_BYTES:
                self._decide()
        elif self._sink is not None:
            self._sink(chunk)

    def _decide(self) -> None:
        if binary_format(self.head) is None:
            self._sink = None
        elif self._sink is not None:
            for early in self._early:
                self._sink(early)
        self._early.clear()


def _copy_stored(data: mmap.mmap | bytes, start: int, end: int, output: _Output) -> int:
    """The stored bytes to ``output``; their CRC-32."""
    crc = 0
    for at in range(start, end, OUTPUT_BYTES):
        chunk = data[at : min(at + OUTPUT_BYTES, end)]
        crc = _crc32(chunk, crc)
        output.add(chunk)
    return crc


def _inflate(data: mmap.mmap | bytes, start: int, end: int, output: _Output) -> int:
    """The deflate data inflated to ``output``; its CRC-32."""
    inflater = new_inflater()
    position = start
    starved = False
    while not inflater.eof:
        compressed = b""
        # more input when it asks, or when what it kept gave nothing (ISA-L holds back the
        # last bytes of a few it was given until more come)
        if (inflater.needs_input or starved) and position < end:
            compressed = data[position : min(position + INPUT_BYTES, end)]
            position += len(compressed)
        chunk = inflater.decompress(compressed, OUTPUT_BYTES)
        if chunk:
            output.add(chunk)
        elif not compressed and position >= end and not inflater.eof:
            raise UnreadableMember("member's deflate data ends early (truncated)")
        starved = not chunk
    return inflater.crc


def _read_whole(
    compressed: bytes, span: MemberSpan, algorithm: str | None, sink: Sink | None
) -> MemberContent:
    """A small member in one step: the same checks as the streaming read, less overhead."""
    content = compressed
    if span.compress_type == zipfile.ZIP_DEFLATED:
        inflater = new_inflater()
        content = inflater.decompress(compressed, span.file_size + 1)  # 0 would be no limit
        if len(content) > span.file_size:
            raise UnreadableMember("member decompresses past its declared size")
        if not inflater.eof:
            raise UnreadableMember("member's deflate data ends early (truncated)")
        crc = inflater.crc
    else:
        crc = _crc32(content, 0)
    if len(content) != span.file_size:
        declared = span.file_size
        raise UnreadableMember(f"member has {len(content)} bytes, its header declares {declared}")
    head = content[:HEAD_BYTES]
    if binary_format(head) is not None and sink is not None:
        sink(content)
    return MemberContent(head, len(content), new_hash(algorithm, content).digest(), crc)


def _read_streaming(
    data: mmap.mmap | bytes, start: int, span: MemberSpan, algorithm: str | None, sink: Sink | None
) -> MemberContent:
    end = start + span.compress_size
    hasher = _Hasher(algorithm, threaded=span.file_size >= THREADED_HASH_BYTES)
    output = _Output(span.file_size, hasher, sink)
    try:
        if span.compress_type == zipfile.ZIP_STORED:
            crc = _copy_stored(data, start, end, output)
        else:
            crc = _inflate(data, start, end, output)
    finally:
        hasher.close()
    if output.size != span.file_size:
        declared = span.file_size
        raise UnreadableMember(f"member has {output.size} bytes, its header declares {declared}")
    return MemberContent(output.head, output.size, hasher.digest(), crc)


def peek_head(data: mmap.mmap | bytes, span: MemberSpan) -> bytes:
    """A member's first ``HEAD_BYTES`` (fewer when it is shorter or unreadable): what kind of
    file it is, for the price of inflating its first compressed bytes."""
    try:
        start = _data_offset(data, span)
        compressed = data[start : start + min(span.compress_size, INPUT_BYTES)]
        if span.compress_type == zipfile.ZIP_STORED:
            return bytes(compressed[:HEAD_BYTES])
        return new_inflater().decompress(compressed, HEAD_BYTES)[:HEAD_BYTES]
    except UnreadableMember:
        return b""
    except INFLATE_ERRORS:
        return b""


def member_bytes(
    data: mmap.mmap | bytes, span: MemberSpan, bound: int | None = None
) -> bytes | None:
    """A small member's bytes in one step, as ``zipfile`` reads them when they pass its checks
    (the headers agree, the data inflates to exactly the declared size and has the declared
    CRC-32), but not checked against RECORD (the loader scripts, read before the members are:
    each is checked when it is read with the others); None when they fail, or when its data
    runs past ``bound``."""
    try:
        start = _data_offset(data, span)
    except UnreadableMember:
        return None
    if bound is not None and start + span.compress_size > bound:
        return None
    return _whole_content(data[start : start + span.compress_size], span)


def plain_content(data: mmap.mmap | bytes, span: MemberSpan) -> bytes | None:
    """A small member's bytes in one step when they pass every check ``read_span`` makes and
    are no binary (``binary_format``): most of a wheel's members, and the read they need
    least. None for anything else, which ``read_span`` reads (for the exact error, or to keep
    a binary's bytes)."""
    content = member_bytes(data, span) if span.file_size <= WHOLE_MEMBER_BYTES else None
    if content is None or binary_format(content[:HEAD_BYTES]) is not None:
        return None
    return content


def _whole_content(compressed: bytes, span: MemberSpan) -> bytes | None:
    """``compressed`` inflated (or as stored) when it gives exactly the declared bytes, of the
    declared CRC-32."""
    if span.compress_type == zipfile.ZIP_STORED:
        content, crc = compressed, _crc32(compressed, 0)
    elif span.compress_type == zipfile.ZIP_DEFLATED:
        inflater = new_inflater()
        try:
            content = inflater.decompress(compressed, span.file_size + 1)  # 0 would be no limit
        except INFLATE_ERRORS:
            return None
        if not inflater.eof:
            return None
        crc = inflater.crc
    else:
        return None
    return content if len(content) == span.file_size and crc == span.crc else None


def read_span(
    data: mmap.mmap | bytes,
    span: MemberSpan,
    algorithm: str | None,
    sink: Sink | None = None,
) -> MemberContent:
    """The member's head, size, hash (``algorithm``; None: none) and CRC-32; an ELF member's
    bytes also go to ``sink``, in order. ``UnreadableMember`` when the bytes disagree with the
    local header or the declared size, or cannot be inflated; their CRC-32 is the caller's to
    hold against the central directory's (``crc_problem``), after its own checks.

    Slices of ``data`` are copies (bytes), never views: nothing keeps the mapping exported."""
    if span.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise UnreadableMember(f"member uses compression method {span.compress_type}")
    start = _data_offset(data, span)
    try:
        if span.file_size <= WHOLE_MEMBER_BYTES:
            compressed = data[start : start + span.compress_size]
            return _read_whole(compressed, span, algorithm, sink)
        return _read_streaming(data, start, span, algorithm, sink)
    except INFLATE_ERRORS as error:
        raise UnreadableMember(f"member's deflate data is corrupt: {error}") from None
