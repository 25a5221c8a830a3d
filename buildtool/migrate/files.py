"""Which files a migrate run reads, how they are decoded, and how a fix is written (the shell).

Inside a git checkout the files are the ones git tracks (``git ls-files``); elsewhere every file
under the folder, except what its ``.gitignore`` files ignore and ``.git`` itself. Binary files
(a NUL byte in the first 8 KiB, unless a UTF-16 byte-order mark explains it), files larger than
``MAX_BYTES``, files that cannot be read, anything that is not a regular file (a symlink, a FIFO)
and files buildtool generated are skipped and counted. Text is decoded as UTF-8 (with or without
a byte-order mark), UTF-16 with a byte-order mark, or else Latin-1, which maps every byte to one
character and back: a rewrite changes only the bytes of the rewritten names.
"""

from __future__ import annotations

import codecs
import dataclasses
import logging
import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

from buildtool import process
from buildtool.errors import InputError, ToolFailed, UsageError
from buildtool.fsutil import carries_generated_header, write_atomic
from buildtool.migrate.ignore import IgnoreRule, excluded, is_ignored, parse_gitignore
from buildtool.migrate.rules import Rules
from buildtool.migrate.scan import Match, file_kind, scan_text

log = logging.getLogger("buildtool")

MAX_BYTES = 4 * 1024 * 1024
"""Larger files are skipped: sources and documents are smaller, data and archives are not."""

SNIFF_BYTES = 8192
"""How much of a file is looked at for a NUL byte (git's own binary test)."""


SkipReason = Literal["binary", "too large", "unreadable", "not a regular file", "generated"]


@dataclasses.dataclass(frozen=True)
class TextEncoding:
    """How a file's bytes become text and back."""

    codec: str
    """Python codec: ``utf-8``, ``utf-16-le``, ``utf-16-be`` or ``latin-1``."""
    bom: bytes = b""
    """Byte-order mark the file starts with, written back as it was."""

    @property
    def name(self) -> str:
        return self.codec.upper() + (" with BOM" if self.bom else "")


_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def decode(data: bytes) -> tuple[str, TextEncoding] | None:
    """The text of a file and its encoding; None for a binary file."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(codec), TextEncoding(codec, bom)
            except UnicodeDecodeError:
                return None
    if b"\0" in data[:SNIFF_BYTES]:
        return None
    try:
        return data.decode("utf-8"), TextEncoding("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1"), TextEncoding("latin-1")


def encode(text: str, encoding: TextEncoding) -> bytes:
    """The bytes of ``text`` in ``encoding`` (``UnicodeEncodeError`` when it cannot hold it)."""
    return encoding.bom + text.encode(encoding.codec)


@dataclasses.dataclass(frozen=True)
class SourceFile:
    """A text file as read."""

    path: Path
    """Where it is."""
    shown: str
    """How reports name it (relative to the current folder when beneath it)."""
    text: str
    """Its decoded text, line endings untouched."""
    encoding: TextEncoding
    """How it was decoded; a rewrite encodes the same way."""
    mode: int
    """Permission bits, kept by a rewrite."""


def _read_bytes(path: Path, max_bytes: int) -> tuple[bytes, int] | SkipReason:
    """The bytes and permission bits of a regular file, read without following a symlink or
    blocking on a FIFO; or why not."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size > max_bytes:
            return "too large"
        with os.fdopen(os.open(path, flags), "rb") as stream:
            data = stream.read(max_bytes + 1)
    except OSError:
        return "unreadable"
    if len(data) > max_bytes:  # it grew since lstat
        return "too large"
    return data, stat.S_IMODE(info.st_mode)


def read_source(path: Path, shown: str, max_bytes: int = MAX_BYTES) -> SourceFile | SkipReason:
    """Read and decode one file; or why it was skipped."""
    read = _read_bytes(path, max_bytes)
    if isinstance(read, str):
        return read
    data, mode = read
    decoded = decode(data)
    if decoded is None:
        return "binary"
    text, encoding = decoded
    if carries_generated_header(text):
        return "generated"
    return SourceFile(path, shown, text, encoding, mode)


def encode_source(source: SourceFile, text: str) -> bytes:
    """``text`` in the file's own encoding; an ``InputError`` naming the file when it cannot hold
    it (a non-Latin-1 replacement in a Latin-1 file)."""
    try:
        return encode(text, source.encoding)
    except UnicodeEncodeError as error:
        raise InputError(
            f"{source.shown}: the replacement cannot be written in the file's encoding "
            f"({source.encoding.name}): {error.reason}; nothing was rewritten"
        ) from None


def write_source(source: SourceFile, data: bytes) -> None:
    """Replace the file with ``data``, atomically, keeping its mode."""
    write_atomic(source.path, data, mode=source.mode)


# --- which files ---------------------------------------------------------------------------------


def _git_files(folder: Path) -> list[Path] | None:
    """The files git tracks under ``folder``; None outside a checkout or without git."""
    git = ["git", "-C", str(folder)]
    try:
        probe = process.run([*git, "rev-parse", "--is-inside-work-tree"], stream=False, quiet=True)
        if probe.strip() != "true":
            return None
        listed = process.run([*git, "ls-files", "-z", "--cached"], stream=False, quiet=True)
    except ToolFailed:
        return None
    names = sorted({name for name in listed.split("\0") if name})
    return [folder / name for name in names]


def _walk_files(folder: Path) -> list[Path]:
    """Every file under ``folder`` that no ``.gitignore`` on the way ignores; ``.git`` never."""
    found: list[Path] = []
    rules: list[IgnoreRule] = []
    for current, folders, names in os.walk(folder):
        here = Path(current)
        base = here.relative_to(folder).as_posix()
        base = "" if base == "." else base
        ignore_file = here / ".gitignore"
        if ignore_file.is_file():
            rules += parse_gitignore(
                ignore_file.read_text(encoding="utf-8", errors="replace"), base
            )
        prefix = base + "/" if base else ""
        folders[:] = sorted(
            name
            for name in folders
            if name != ".git" and not is_ignored(prefix + name, True, rules)
        )
        found += [here / name for name in names if not is_ignored(prefix + name, False, rules)]
    # git's order (byte order of the relative paths), so reports read the same either way
    return sorted(found, key=lambda path: path.relative_to(folder).as_posix().encode())


def list_files(folder: Path) -> list[Path]:
    """The files of a folder a migrate run reads (before skipping binary and other files)."""
    tracked = _git_files(folder)
    if tracked is not None:
        log.debug("%s: %d files tracked by git", folder, len(tracked))
        return tracked
    return _walk_files(folder)


# --- a whole run ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FileMatches:
    """A file with stale references."""

    source: SourceFile
    """The file as read."""
    matches: tuple[Match, ...]
    """What is stale in it, in order."""


@dataclasses.dataclass(frozen=True)
class ScanResult:
    """What a migrate run found."""

    files: tuple[FileMatches, ...]
    """Files with stale references, in the order they were scanned."""
    scanned: int
    """Text files read and scanned."""
    skipped: dict[str, int]
    """Files not scanned, by reason (``binary``, ``too large``, ``unreadable``, ...)."""

    @property
    def matches(self) -> int:
        return sum(len(entry.matches) for entry in self.files)


def shown_path(path: Path, cwd: Path) -> str:
    """``path`` relative to ``cwd`` when beneath it, else absolute; ``/``-separated."""
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return path.as_posix()


def _candidates(paths: Iterable[Path], root: Path, rules: Rules) -> Iterator[Path]:
    seen: set[Path] = set()
    for given in paths:
        absolute = given.absolute()
        # The folder resolved, the name kept: a symlink stays a symlink (skipped when read),
        # and a file reached by two spellings (the recipe through a link) is one file.
        absolute = absolute.parent.resolve() / absolute.name
        if not absolute.exists() and not absolute.is_symlink():
            raise UsageError(f"{given}: no such file or folder")
        listed = list_files(absolute.resolve()) if absolute.is_dir() else [absolute]
        for path in listed:
            if path in seen:
                continue
            seen.add(path)
            inside = path.is_relative_to(root)
            if inside and excluded(path.relative_to(root).as_posix(), rules.exclude):
                continue
            yield path


def scan_paths(
    paths: Iterable[Path],
    rules: Rules,
    *,
    root: Path,
    skip: Iterable[Path] = (),
    max_bytes: int = MAX_BYTES,
    cwd: Path | None = None,
) -> ScanResult:
    """Scan files and folders (``root`` is the project root ``exclude`` is relative to; ``skip``
    are files never read, such as the recipe that names the old names)."""
    here = (cwd or Path.cwd()).absolute()
    never = {path.resolve() for path in skip}
    skipped: Counter[str] = Counter()
    found: list[FileMatches] = []
    scanned = 0
    for path in _candidates(paths, root.resolve(), rules):
        if path in never:
            continue
        source = read_source(path, shown_path(path, here), max_bytes)
        if isinstance(source, str):
            skipped[source] += 1
            log.debug("%s: skipped (%s)", path, source)
            continue
        scanned += 1
        matches = scan_text(source.text, rules, file_kind(path.name))
        if matches:
            found.append(FileMatches(source, matches))
    return ScanResult(tuple(found), scanned, dict(sorted(skipped.items())))
