"""A wheel's entries and its few members read whole (RECORD, METADATA), the way ``zipfile``
gives them, for less.

``zipfile`` makes a ``ZipInfo`` per entry: 0.14 s for torch's 12k, all of it before a worker
can start reading. Where the central directory is plain (``central_directory.plain_listing``:
what wheel tools write), the entries come from a mapping of the wheel in a third of that, and a
member is read from it when ``zipfile`` would read exactly those bytes; anything else, and any
doubt, goes to ``zipfile`` itself. Either way the caller gets the same entries, the same bytes
and the same errors.
"""

from __future__ import annotations

import bisect
import mmap
import zipfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from buildtool.linkage.inputs.central_directory import ArchiveEntry, Entry, Listing, plain_listing
from buildtool.linkage.inputs.inflate import MemberSpan, member_bytes

_REFUSED_FLAGS = 0x1 | 0x20 | 0x40
"""Encrypted, compressed patched data, strong encryption: ``zipfile`` refuses or asks for more."""


class WheelArchive:
    """An open wheel: its entries, and a member's bytes. Closed by ``close`` (or ``with``)."""

    def __init__(self, path: Path, plain: tuple[mmap.mmap, Listing] | None) -> None:
        self._path = path
        self._plain = plain
        self._zip_file: zipfile.ZipFile | None = None
        self._offsets: list[int] | None = None
        if plain is None:
            self._zip_file = zipfile.ZipFile(path)

    @classmethod
    def open(cls, path: Path) -> WheelArchive:
        """The wheel at ``path``; raises what ``zipfile.ZipFile`` raises for an unreadable one."""
        try:
            with path.open("rb") as handle:
                mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # zipfile opens it, for its own error
            return cls(path, None)
        listing = plain_listing(mapping)
        if listing is None:
            mapping.close()
            return cls(path, None)
        return cls(path, (mapping, listing))

    def infolist(self) -> Sequence[ArchiveEntry]:
        """Every entry, in the directory's order, as ``zipfile.ZipFile.infolist`` lists them."""
        if self._plain is not None:
            return self._plain[1].entries
        assert self._zip_file is not None
        return self._zip_file.infolist()

    def read(self, entry: ArchiveEntry, limit: int = -1) -> bytes:
        """The member's first ``limit`` bytes (all when negative), or what ``zipfile`` raises."""
        if isinstance(entry, Entry):
            content = self._plain_read(entry, limit)
            if content is not None:
                return content
        with self._zipfile_open(entry) as stream:
            return stream.read(limit)

    def _plain_read(self, entry: Entry, limit: int) -> bytes | None:
        """The member read from the mapping, when ``zipfile`` would read it whole and pass it:
        no flag it refuses, an ASCII name (both decode the local header's alike), its data
        before the next member's header, inflating to its size with its CRC-32; else None."""
        assert self._plain is not None
        mapping, listing = self._plain
        if entry.flag_bits & _REFUSED_FLAGS or not entry.filename.isascii():
            return None
        if 0 <= limit < entry.file_size:
            return None  # zipfile stops early, before checking the CRC
        bound = self._data_bound(entry.header_offset, listing)
        if bound is None:
            return None
        return member_bytes(mapping, MemberSpan.of(entry), bound)

    def _data_bound(self, header_offset: int, listing: Listing) -> int | None:
        """Where the member's data must end: the next member's header or the directory, as
        ``zipfile`` bounds it from 3.12 on. None when another entry shares the header."""
        if self._offsets is None:
            self._offsets = sorted(entry.header_offset for entry in listing.entries)
        offsets = self._offsets
        after = bisect.bisect_right(offsets, header_offset)
        if after >= 2 and offsets[after - 2] == header_offset:
            return None
        return offsets[after] if after < len(offsets) else listing.directory_offset

    def _zipfile_open(self, entry: ArchiveEntry) -> IO[bytes]:
        if self._zip_file is None:
            self._zip_file = zipfile.ZipFile(self._path)
        info = entry
        if isinstance(entry, Entry):  # the same entry in zipfile's identical list
            assert self._plain is not None
            entries = self._plain[1].entries
            position = next(at for at, known in enumerate(entries) if known is entry)
            info = self._zip_file.infolist()[position]
        assert isinstance(info, zipfile.ZipInfo)
        return self._zip_file.open(info)

    def close(self) -> None:
        if self._plain is not None:
            self._plain[0].close()
        if self._zip_file is not None:
            self._zip_file.close()

    def __enter__(self) -> WheelArchive:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
