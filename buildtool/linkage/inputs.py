"""Collecting the ELF files verify-linkage reads: build trees, folders, installed packages, wheels.

Every file is read once (mmap for files on disk, one decompression for wheel members) and turned
into ``ElfFacts``; non-ELF files are skipped, malformed ones become findings. Wheels are read
straight from the zip: nothing is extracted to disk.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import stat
import zipfile
from collections.abc import Collection, Iterator
from pathlib import Path, PurePosixPath

from buildtool.errors import InputError
from buildtool.linkage.elf import ELF_MAGIC, ElfFacts, MalformedElf, read_elf_facts

WHEEL_SEPARATOR = "!/"
"""Joins a wheel's path and a member's name in display paths: ``dist/x.whl!/demo/lib/liba.so``."""

SKIPPED_FOLDERS = frozenset({".git", "__pycache__", "CMakeFiles", ".cmake", "skb", ".nox", ".venv"})
"""Folders never walked: version control, caches, and CMake's object files."""


@dataclasses.dataclass(frozen=True)
class BinaryFile:
    """One ELF file of an input."""

    display: str
    """How findings name it (path as given, or ``wheel!/member``)."""
    location: PurePosixPath
    """Where it lies for ``$ORIGIN`` and layout: absolute on disk, or ``/<member>`` in a wheel."""
    facts: ElfFacts | None
    malformed: MalformedElf | None


@dataclasses.dataclass(frozen=True)
class InputSet:
    """The ELF files of one PATH argument and the names they can be found by."""

    kind: str
    """``build-tree``, ``folder``, ``wheel`` or ``file``."""
    label: str
    files: tuple[BinaryFile, ...]
    aliases: dict[PurePosixPath, PurePosixPath]
    """Symlinks inside the input: link location -> target location (``libx.so -> libx.so.1``)."""

    @property
    def in_wheel(self) -> bool:
        return self.kind == "wheel"


def _read(data: bytes | mmap.mmap, display: str, names: Collection[str]) -> BinaryFile | None:
    location = PurePosixPath("/")  # replaced by the caller
    try:
        facts = read_elf_facts(data, display, names)
    except MalformedElf as error:
        return BinaryFile(display, location, None, error)
    if facts is None:
        return None
    return BinaryFile(display, location, facts, None)


def read_disk_file(path: Path, display: str, names: Collection[str]) -> BinaryFile | None:
    """Facts of one file on disk (mmap), or None when it is not ELF."""
    try:
        with path.open("rb") as handle:
            if handle.read(4) != ELF_MAGIC:
                return None
            size = os.fstat(handle.fileno()).st_size
            with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as mapped:
                binary = _read(mapped, display, names)
    except OSError as error:
        raise InputError(f"{display}: cannot read: {error.strerror or error}") from None
    if binary is None:
        return None
    return dataclasses.replace(binary, location=PurePosixPath(path.resolve().as_posix()))


def _walk(root: Path) -> Iterator[Path]:
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED_FOLDERS)
        for name in sorted(files):
            yield Path(folder) / name


def _folder_roots(path: Path) -> tuple[str, list[Path]]:
    if (path / "CMakeCache.txt").is_file():
        # A CMake build tree: only its outputs, never object files or wheel build folders.
        return "build-tree", [p for p in (path / "lib", path / "bin") if p.is_dir()]
    roots = [path]
    grafted = path.parent / f"{path.name}.libs"
    if grafted.is_dir():
        # An installed package: auditwheel puts grafted libraries beside it in <pkg>.libs/.
        roots.append(grafted)
    return "folder", roots


def read_folder(path: Path, names: Collection[str]) -> InputSet:
    """Every ELF file under a folder (symlinks recorded as aliases, not read twice)."""
    kind, roots = _folder_roots(path)
    files: list[BinaryFile] = []
    aliases: dict[PurePosixPath, PurePosixPath] = {}
    for root in roots:
        for candidate in _walk(root):
            if candidate.is_symlink():
                target = candidate.resolve()
                if target.is_file():
                    location = PurePosixPath(candidate.parent.resolve().as_posix()) / candidate.name
                    aliases[location] = PurePosixPath(target.as_posix())
                continue
            if not stat.S_ISREG(candidate.lstat().st_mode):
                continue
            binary = read_disk_file(candidate, str(candidate), names)
            if binary is not None:
                files.append(binary)
    return InputSet(kind, str(path), tuple(files), aliases)


def _member_is_regular_file(info: zipfile.ZipInfo) -> bool:
    mode = info.external_attr >> 16
    return not info.is_dir() and not stat.S_ISLNK(mode)


def read_wheel(path: Path, names: Collection[str]) -> InputSet:
    """Every ELF member of a wheel, decompressed in memory."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as error:
        raise InputError(f"{path}: not a readable wheel (zip) file: {error}") from None
    files: list[BinaryFile] = []
    with archive:
        for info in archive.infolist():
            if not _member_is_regular_file(info):
                continue
            display = f"{path}{WHEEL_SEPARATOR}{info.filename}"
            try:
                with archive.open(info) as member:
                    if member.read(4) != ELF_MAGIC:
                        continue
                data = archive.read(info)
            except (OSError, zipfile.BadZipFile, EOFError, ValueError) as error:
                raise InputError(f"{display}: cannot read the member: {error}") from None
            binary = _read(data, display, names)
            if binary is not None:
                location = PurePosixPath("/") / info.filename
                files.append(dataclasses.replace(binary, location=location))
    return InputSet("wheel", str(path), tuple(files), {})


def read_input(path: Path, names: Collection[str]) -> InputSet:
    """One PATH argument: a ``.whl``, a folder, or a single file."""
    if path.is_dir():
        return read_folder(path, names)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.suffix == ".whl":
        return read_wheel(path, names)
    binary = read_disk_file(path, str(path), names)
    if binary is None:
        raise InputError(f"{path}: not an ELF file (expected a shared library or executable)")
    return InputSet("file", str(path), (binary,), {})
