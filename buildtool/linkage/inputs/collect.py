"""Collecting the ELF files verify-linkage reads: build trees, folders, installed packages, wheels.

Every file is read once (mmap for files on disk, one decompression for wheel members) and turned
into ``BinaryFacts``, by every CPU for a big input (see ``reading``); non-ELF files are skipped,
malformed ones become findings. Wheels are read straight from the zip: nothing is extracted to
disk.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from buildtool.errors import InputError
from buildtool.linkage.binaries import BinaryFacts, Decoder
from buildtool.linkage.binaries.facts import MalformedBinary, named_as_library
from buildtool.linkage.inputs import pool
from buildtool.linkage.inputs.decoding import Source, read_source
from buildtool.linkage.inputs.dll_directories import dll_directories
from buildtool.linkage.inputs.pool import available_cpus, nothing, read_sources

if TYPE_CHECKING:  # the wheel modules (zipfile, hashlib, ISA-L) load for wheel inputs only
    from buildtool.linkage.inputs.archive import WheelArchive
    from buildtool.linkage.inputs.head_start import HeadStart
    from buildtool.linkage.inputs.wheel_archive import CheckedMember, WheelLimits

WHEEL_SEPARATOR = "!/"
"""Joins a wheel's path and a member's name in display paths: ``dist/x.whl!/demo/lib/liba.so``."""

SKIPPED_FOLDERS = frozenset({".git", "__pycache__", "CMakeFiles", ".cmake", "skb", ".nox", ".venv"})
"""Folders never walked: version control, caches, and CMake's object files."""


@dataclasses.dataclass(frozen=True)
class BinaryFile:
    """One binary (ELF, Mach-O or PE) of an input."""

    display: str
    """How findings name it (path as given, or ``wheel!/member``)."""
    location: PurePosixPath
    """Where it lies for ``$ORIGIN`` and layout: absolute on disk, or ``/<member>`` in a wheel."""
    facts: BinaryFacts | None
    malformed: MalformedBinary | None
    source: Source | None = None
    """Where its bytes are, to read them again (a finding that names functions does)."""

    def __hash__(self) -> int:
        # The checks key dicts and sets by files and pairs of files (some 90k times on
        # tensorflow-cpu's wheel): the generated hash would hash every field of the facts each
        # time. Equal files have equal names, and a str keeps its hash.
        return hash(self.display)


@dataclasses.dataclass(frozen=True)
class Distribution:
    """A Python distribution: what a wheel, or a ``*.dist-info`` folder of an installed one, says
    in its ``METADATA``."""

    name: str
    """``Name``, normalized (PEP 503: lower case, runs of ``-_.`` as one ``-``)."""
    requires: frozenset[str]
    """Normalized names of its ``Requires-Dist`` entries, less those of extras (other markers
    ignored)."""


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


_REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA_MARKER = re.compile(r";.*\bextra\s*==")
"""An optional requirement (``scipy ; extra == 'scipy'``): installed only when asked for."""


def parse_metadata(text: str) -> Distribution | None:
    """Name and Requires-Dist of a core metadata file (RFC 822 headers); None without a Name."""
    name = ""
    requires: set[str] = set()
    for line in text.split("\n"):
        if not line.strip():
            break  # the headers end at the first empty line; the description follows
        key, _, value = line.partition(":")
        if key == "Name":
            name = normalized(value.strip())
        elif key == "Requires-Dist" and not _EXTRA_MARKER.search(value):
            match = _REQUIREMENT_NAME.match(value)
            if match:
                requires.add(normalized(match.group(1)))
    return Distribution(name, frozenset(requires)) if name else None


@dataclasses.dataclass(frozen=True)
class InputSet:
    """The ELF files of one PATH argument and the names they can be found by."""

    kind: str
    """``build-tree``, ``folder``, ``wheel`` or ``file``."""
    label: str
    files: tuple[BinaryFile, ...]
    aliases: dict[PurePosixPath, PurePosixPath]
    """Symlinks inside the input: link location -> target location (``libx.so -> libx.so.1``)."""
    distribution: Distribution | None = None
    """What a wheel input installs (None for other inputs, or a wheel without metadata)."""
    owners: Mapping[PurePosixPath, Distribution] = dataclasses.field(default_factory=dict)
    """An installed folder's files by the distribution whose ``*.dist-info/RECORD`` lists them
    (a site-packages folder holds many)."""
    dll_directories: tuple[PurePosixPath, ...] = ()
    """Folders the input's packages add with ``os.add_dll_directory`` (``dll_directories``),
    located like ``files``."""
    root: PurePosixPath | None = None
    """Where the input's files lie, located like ``files``: the folder given, a wheel's install
    root, a single file's folder (None: unknown)."""
    install_rpaths: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """A CMake build tree's files by name -> the RPATH ``cmake --install`` gives them
    (``cmake_install.cmake``; ``""``: none), which replaces CMake's build RPATH."""
    install_folders: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """A CMake build tree's files by name -> the folder ``cmake --install`` puts them in,
    relative to the install prefix (``lib``, ``lib/backends``), which is where they are judged
    to sit."""

    @property
    def in_wheel(self) -> bool:
        return self.kind == "wheel"


def _binary(
    source: Source, location: PurePosixPath, outcome: BinaryFacts | MalformedBinary
) -> BinaryFile:
    if isinstance(outcome, MalformedBinary):
        return BinaryFile(source.display, location, None, outcome, source)
    return BinaryFile(source.display, location, outcome, None, source)


def _disk_location(path: Path) -> PurePosixPath:
    return PurePosixPath(path.resolve().as_posix())


def read_disk_file(
    path: Path, display: str, names: Collection[str], decoder: Decoder = "fast"
) -> BinaryFile | None:
    """Facts of one file on disk (mmap), or None when it is not ELF."""
    try:
        size = path.stat().st_size
    except OSError as error:
        raise InputError(f"{display}: cannot read: {error.strerror or error}") from None
    source = Source(str(path), display, size)
    outcome = read_source(source, names, decoder)
    return None if outcome is None else _binary(source, _disk_location(path), outcome)


def _walk(root: Path, skipped: Callable[[os.DirEntry[str]], bool]) -> Iterator[Path]:
    """Files under ``root`` in ``os.walk``'s top-down order, sorted, without recursion (a folder
    nested a thousand deep must not exhaust Python's stack); no folder ``skipped`` says is
    entered."""
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue  # unreadable or gone: os.walk skips it too
        subfolders = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not skipped(entry):
                    subfolders.append(Path(entry.path))
            else:
                yield Path(entry.path)
        pending.extend(reversed(subfolders))


def _not_output(entry: os.DirEntry[str]) -> bool:
    """Folders no input's binaries live in: ``SKIPPED_FOLDERS`` and virtual environments (a
    ``pyvenv.cfg``: the interpreter and its packages, not the project's)."""
    return entry.name in SKIPPED_FOLDERS or (Path(entry.path) / "pyvenv.cfg").is_file()


def _not_build_output(entry: os.DirEntry[str]) -> bool:
    """What a build tree holds besides its outputs: other builds nested in it (their own
    ``CMakeCache.txt``: scikit-build-core's, ExternalProject's, FetchContent's ``-subbuild``) and
    the sources FetchContent downloads (``_deps/<name>-src``, which may ship prebuilt or test
    binaries of their own). ``_deps/<name>-build`` is walked: it is built by this build, and its
    shared libraries load with the project's."""
    if _not_output(entry):
        return True
    folder = Path(entry.path)
    if entry.name.endswith("-src") and folder.parent.name == "_deps":
        return True
    return (folder / "CMakeCache.txt").is_file()


BUILD_TREE_SEARCH = (
    "every folder but CMakeFiles/, virtual environments, nested builds and FetchContent sources"
)
FOLDER_SEARCH = "every folder but CMakeFiles/, caches and virtual environments"


def _folder_roots(path: Path) -> tuple[str, list[Path]]:
    if (path / "CMakeCache.txt").is_file():
        # A CMake build tree: its outputs lie wherever the project puts them (lib/, src/,
        # python/), so the whole tree is searched; _not_build_output says what is not output.
        return "build-tree", [path]
    roots = [path]
    grafted = path.parent / f"{path.name}.libs"
    if grafted.is_dir():
        # An installed package: auditwheel puts grafted libraries beside it in <pkg>.libs/.
        roots.append(grafted)
    return "folder", roots


NOT_LOADABLE = frozenset({"relocatable", "core"})
"""File types no loader opens: object files (``.o``, ET_REL) and core dumps."""


def _loadable(outcome: BinaryFacts | MalformedBinary | None) -> bool:
    """Whether a file read is one to check: a binary a loader opens, or a malformed one."""
    if outcome is None:
        return False
    return isinstance(outcome, MalformedBinary) or outcome.file_type not in NOT_LOADABLE


def _folder_candidates(
    roots: Collection[Path], skipped: Callable[[os.DirEntry[str]], bool]
) -> tuple[list[tuple[Path, int]], dict[PurePosixPath, PurePosixPath]]:
    """The regular files under ``roots`` with their sizes, and the symlinks among them."""
    candidates: list[tuple[Path, int]] = []
    aliases: dict[PurePosixPath, PurePosixPath] = {}
    for root in roots:
        for candidate in _walk(root, skipped):
            if candidate.is_symlink():
                # os.path, not Path.resolve: a symlink loop is a dead link here, not an error
                target = os.path.realpath(candidate)
                if Path(target).is_file():
                    location = PurePosixPath(candidate.parent.resolve().as_posix()) / candidate.name
                    aliases[location] = PurePosixPath(target)
                continue
            status = candidate.lstat()
            if stat.S_ISREG(status.st_mode):
                candidates.append((candidate, status.st_size))
    return candidates, aliases


def _nothing_to_check(path: Path, kind: str, objects: int) -> InputError:
    """Exit 2 for an input that holds no binary: a pass on nothing checked is no pass."""
    if kind == "build-tree":
        where = f"in this CMake build tree (searched {BUILD_TREE_SEARCH})"
    else:
        where = f"in this folder or in {path.name}.libs beside it (searched {FOLDER_SEARCH})"
    found = f"; its {objects} object files (.o) are not loaded by anything" if objects else ""
    return InputError(
        f"{path}: nothing to check: no shared library, executable or extension module "
        f"(ELF, Mach-O or PE) {where}{found}. Give the folder that holds the built binaries, "
        "an installed package or a wheel."
    )


def read_folder(
    path: Path,
    names: Collection[str],
    jobs: int | None = None,
    decoder: Decoder = "fast",
    *,
    meanwhile: Callable[[], object] = nothing,
) -> InputSet:
    """Every binary under a folder (symlinks recorded as aliases, not read twice); a build tree
    is searched whole, less what is not its output (``_not_build_output``). A folder without
    one is an ``InputError``. ``meanwhile``: see ``read_sources``."""
    kind, roots = _folder_roots(path)
    skipped = _not_build_output if kind == "build-tree" else _not_output
    candidates, aliases = _folder_candidates(roots, skipped)
    sources = [Source(str(candidate), str(candidate), size) for candidate, size in candidates]
    outcomes = read_sources(sources, names, jobs, decoder, meanwhile=meanwhile)
    files = tuple(
        _binary(source, _disk_location(Path(source.path)), outcome)
        for source, outcome in zip(sources, outcomes, strict=True)
        if outcome is not None and _loadable(outcome)
    )
    if not files:
        objects = sum(1 for outcome in outcomes if outcome is not None)
        raise _nothing_to_check(path, kind, objects)
    owners = _installed_owners(path, {b.location for b in files}) if kind == "folder" else {}
    scripts = _disk_scripts([candidate for candidate, _size in candidates])
    folders = dll_directories(scripts, [b.location for b in files])
    rpaths, destinations = _install_scripts(roots) if kind == "build-tree" else ({}, {})
    return InputSet(kind, str(path), files, aliases, owners=owners, dll_directories=folders,
                    install_rpaths=rpaths, install_folders=destinations,
                    root=_disk_location(path))  # fmt: skip


def _install_scripts(roots: Collection[Path]) -> tuple[dict[str, str], dict[str, str]]:
    """What every ``cmake_install.cmake`` of a build tree says about RPATHs and destination
    folders (an unreadable script says nothing: that file is judged where it lies)."""
    from buildtool.linkage.inputs.cmake_install import install_folders, install_rpaths

    rpaths: dict[str, str] = {}
    destinations: dict[str, str] = {}
    for root in roots:
        for script in sorted(root.rglob("cmake_install.cmake")):
            try:
                text = script.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            rpaths.update(install_rpaths(text))
            destinations.update(install_folders(text))
    return rpaths, destinations


def _disk_scripts(candidates: Collection[Path]) -> list[tuple[PurePosixPath, str]]:
    """The loader scripts among a folder's files, with their locations."""
    scripts = []
    for candidate in candidates:
        if candidate.name in LOADER_SCRIPTS:
            try:
                if candidate.stat().st_size > LOADER_SCRIPT_BYTES:
                    continue
                text = candidate.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            scripts.append((_disk_location(candidate), text))
    return scripts


def _installed_owners(
    path: Path, locations: set[PurePosixPath]
) -> dict[PurePosixPath, Distribution]:
    """Which distribution installed each of ``locations``: the ``*.dist-info`` folders in
    ``path`` (a site-packages folder) or beside it (an installed package's folder)."""
    owners: dict[PurePosixPath, Distribution] = {}
    for site in (path, path.parent):
        for info in sorted(site.glob("*.dist-info")):
            try:
                metadata = (info / "METADATA").read_text(encoding="utf-8", errors="replace")
                record = (info / "RECORD").read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue  # an incomplete install: its files stay unattributed
            distribution = parse_metadata(metadata)
            if distribution is not None:
                _attribute(site.resolve(), record, distribution, locations, owners)
    return owners


def _attribute(
    site: Path,
    record: str,
    distribution: Distribution,
    locations: set[PurePosixPath],
    owners: dict[PurePosixPath, Distribution],
) -> None:
    import csv  # only installed folders have a RECORD to read

    for row in csv.reader(record.splitlines()):
        if row:
            location = PurePosixPath(os.path.normpath(site / row[0]))
            if location in locations:
                owners.setdefault(location, distribution)


def _not_a_library(source: Source, location: PurePosixPath, reason: str) -> BinaryFile:
    malformed = MalformedBinary(source.display, 0, reason)
    return BinaryFile(source.display, location, None, malformed, source)


def _wheel_binary(
    source: Source, outcome: BinaryFacts | MalformedBinary | None
) -> BinaryFile | None:
    """A wheel member to check: a loadable binary, a malformed one, or a file named like a shared
    library that no loader can open (malformed too); None for any other member."""
    assert source.member is not None
    if not _loadable(outcome) and not named_as_library(source.member.name):
        return None  # no path object for each of the members that are none (12k in torch's)
    location = PurePosixPath(f"/{source.member.name}")
    if _loadable(outcome):
        assert outcome is not None
        return _binary(source, location, outcome)
    if outcome is None:
        reason = "named like a shared library, but starts with no ELF, Mach-O or PE magic"
    else:
        reason = (
            "named like a shared library, but is an object file or core dump: no loader opens it"
        )
    return _not_a_library(source, location, reason)


LOADER_SCRIPTS = frozenset({"__init__.py", "_distributor_init.py", "libinfo.py"})
"""The Python files read for ``os.add_dll_directory`` calls: where delvewheel, torch and
apache-tvm-ffi make them."""
LOADER_SCRIPT_BYTES = 1 << 20


def _wheel_scripts(
    path: Path, members: Collection[CheckedMember]
) -> list[tuple[PurePosixPath, str]]:
    """The loader scripts, read from a mapping of the wheel (torch's 359 in a third of the time
    ``zipfile`` takes); a broken one is left out here and reported when it is read with the
    other members."""
    from buildtool.linkage.inputs.inflate import member_bytes
    from buildtool.linkage.inputs.wheel_archive import map_wheel

    scripts = []
    with map_wheel(path) as mapping:
        for member in members:
            # the base name by a string split: a path object per member costs more (12k in torch's)
            base = member.name.rpartition("/")[2]
            if base in LOADER_SCRIPTS and member.span.file_size <= LOADER_SCRIPT_BYTES:
                content = member_bytes(mapping, member.span)
                if content is not None:
                    text = content.decode("utf-8", "replace")
                    scripts.append((PurePosixPath("/") / member.name, text))
    return scripts


def _wheel_sources(
    path: Path, archive: WheelArchive, limits: WheelLimits
) -> tuple[list[Source], Distribution | None, list[tuple[PurePosixPath, str]]]:
    """A source for every member to read, once the headers and RECORD passed; what the
    wheel's ``*.dist-info/METADATA`` says it installs; and its loader scripts."""
    from buildtool.linkage.inputs.wheel_archive import checked_members

    members = checked_members(str(path), archive, limits)
    distribution = _wheel_distribution(archive, members)
    scripts = _wheel_scripts(path, members)
    sources = [
        Source(str(path), f"{path}{WHEEL_SEPARATOR}{member.name}", member.span.file_size, member)
        for member in members
    ]
    return sources, distribution, scripts


def _head_start(
    path: Path, limits: WheelLimits, jobs: int | None, decoder: Decoder
) -> HeadStart | None:
    """The biggest member's inflation, started before the wheel is read (see ``head_start``)."""
    from buildtool.linkage.inputs import head_start

    pool.wait_for_workers()  # an earlier input's, exiting on threads: none may run at a fork
    if not head_start.can_fork(available_cpus() if jobs is None else jobs, decoder):
        return None
    member = head_start.candidate(path, limits, pool.SPLIT_MIN_BYTES)
    return None if member is None else head_start.start(path, member)


_METADATA = re.compile(r"[^/]+\.dist-info/METADATA")


def _wheel_distribution(
    archive: WheelArchive, members: Collection[CheckedMember]
) -> Distribution | None:
    """The one top-level ``*.dist-info/METADATA`` (its size already checked with every member)."""
    from buildtool.linkage.inputs.wheel_archive import ZIP_ERRORS

    names = {member.name for member in members if _METADATA.fullmatch(member.name)}
    found = [info for info in archive.infolist() if info.filename in names]
    if len(found) != 1:
        return None
    try:
        text = archive.read(found[0]).decode("utf-8", "replace")
    except ZIP_ERRORS:
        return None  # a broken member is reported when it is read with the others
    return parse_metadata(text)


def read_wheel(
    path: Path,
    names: Collection[str],
    limits: WheelLimits | None = None,
    jobs: int | None = None,
    decoder: Decoder = "fast",
    *,
    meanwhile: Callable[[], object] = nothing,
) -> InputSet:
    """Every ELF member of a wheel, checked (see ``wheel_archive``) and decompressed member by
    member (see ``reading``); a non-ELF member named like a shared library is a malformed file.
    ``limits``: default ``wheel_archive.DEFAULT_LIMITS``. ``meanwhile``: see ``read_sources``."""
    from buildtool.linkage.inputs.wheel_archive import DEFAULT_LIMITS, open_wheel

    limits = DEFAULT_LIMITS if limits is None else limits
    head = _head_start(path, limits, jobs, decoder)
    try:
        with open_wheel(path) as archive:
            sources, distribution, scripts = _wheel_sources(path, archive, limits)
        outcomes = read_sources(sources, names, jobs, decoder, head, meanwhile=meanwhile)
    finally:
        if head is not None:
            head.end()
    files = [
        binary
        for source, outcome in zip(sources, outcomes, strict=True)
        if (binary := _wheel_binary(source, outcome)) is not None
    ]
    folders = dll_directories(scripts, [b.location for b in files], in_wheel=True)
    return InputSet(
        "wheel",
        str(path),
        tuple(files),
        {},
        distribution,
        dll_directories=folders,
        root=PurePosixPath("/"),
    )


def binary_free_wheel(entry: InputSet) -> InputError:
    """Exit 2 for a run whose only inputs are wheels without a binary: a pass on nothing
    checked is no pass. Beside other inputs such a wheel is valid: its ``Requires-Dist``
    counts (polars beside polars-runtime-32)."""
    return InputError(
        f"{entry.label}: nothing to check: the wheel holds no shared library, executable or "
        "extension module (ELF, Mach-O or PE) in any of its members; a pure-Python wheel has "
        "no linkage to verify (give it together with the wheels it requires)"
    )


def read_input(
    path: Path,
    names: Collection[str],
    jobs: int | None = None,
    decoder: Decoder = "fast",
    *,
    meanwhile: Callable[[], object] = nothing,
) -> InputSet:
    """One PATH argument: a ``.whl``, a folder, or a single file. ``jobs``: processes that may
    read, ``decoder``: what decodes the facts, ``meanwhile``: the caller's work for this
    process while workers read (see ``pool.read_sources``)."""
    if path.is_dir():
        return read_folder(path, names, jobs, decoder, meanwhile=meanwhile)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if not path.is_file():
        # a FIFO would block the read forever; a device is no binary
        raise InputError(f"{path}: not a regular file, a folder or a wheel")
    if path.suffix == ".whl":
        return read_wheel(path, names, jobs=jobs, decoder=decoder, meanwhile=meanwhile)
    binary = read_disk_file(path, str(path), names, decoder)
    if binary is None:
        raise InputError(
            f"{path}: not an ELF, Mach-O or PE file (expected a shared library or executable)"
        )
    return InputSet("file", str(path), (binary,), {}, root=binary.location.parent)
