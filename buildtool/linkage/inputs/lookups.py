"""Reading files again after the read, for the checks and findings that need more than the facts
hold: ``.symtab`` function names to show, initializers a sparse read left unread or a check walks
whole, the Python files that import an extension module. A wheel is mapped once however many of
its members are read."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from buildtool.errors import InputError
from buildtool.linkage.binaries import InitializerReach
from buildtool.linkage.binaries.code_walk import (
    Depth,
    FirstReaching,
    OverBudget,
    OwnCodePart,
    joined_parts,
)
from buildtool.linkage.binaries.read import read_function_names_again, read_initializers_again
from buildtool.linkage.inputs.decoding import Source, SourceBytes, SourceDecoder
from buildtool.linkage.inputs.forked import Forked, can_fork
from buildtool.linkage.inputs.python_imports import (
    ImportSite,
    ImportStatement,
    ModuleImports,
    import_statements,
    is_test_file,
    module_of,
    sites_in,
)

if TYPE_CHECKING:  # the wheel modules load for wheel inputs only
    import mmap

    from buildtool.linkage.inputs.collect import BinaryFile
    from buildtool.linkage.inputs.inflate import MemberSpan


class FunctionNameLookup:
    """Reads the function names of files again (ELF's ``.symtab``, Mach-O's symbol table), for
    the findings that show them; a wheel is opened once however many of its members are read."""

    def __init__(self) -> None:
        self._reader = SourceDecoder(again=True)

    def __call__(self, source: Source, digests: Collection[int]) -> dict[int, str]:
        """The names whose digests are ``digests``, by digest."""
        found = self._reader.decode(
            source,
            lambda raw: read_function_names_again(
                raw.data, source.display, digests, size=raw.size, file_backed=raw.file_backed
            ),
        )
        return found or {}

    def close(self) -> None:
        self._reader.close()


SPLIT_WALK_MIN_BYTES: Final = 64 << 20
"""Files at least this big have their initializers walked in two processes when read ahead
(``InitializerLookup``'s ``split``): tensorflow-cpu's libtensorflow_cc.so.2 (751 MB, 4,531
initializers) took 1.6 s to walk on one CPU while the other waited."""


class InitializerLookup:
    """Reads files' initializers again, whole, for the checks that need those a sparse read
    left unread (``BinaryFacts.initializers`` None); those of some files read ahead by a child
    (``read_ahead``). ``split``: a big file's initializers are walked in two processes, for a
    process that has the CPUs to itself (the child reading ahead, while the checks wait)."""

    def __init__(self, split: bool = False) -> None:
        self._reader = SourceDecoder(whole=True, again=True)
        self._split = split
        self._ahead: Forked[dict[str, tuple[InitializerReach, ...]]] | None = None
        self._read_ahead: frozenset[str] = frozenset()

    def read_ahead(self, sources: Sequence[Source], jobs: int) -> None:
        """Start reading the initializers of ``sources`` (as the facts hold them) in a forked
        child while this process goes on: a check asking for one waits for the child. Nothing
        is read ahead where no child may be forked (``can_fork``)."""
        if sources and self._ahead is None and can_fork(jobs):
            self._ahead = Forked.start(lambda: _initializers_of(sources), dict)
            self._read_ahead = frozenset(source.display for source in sources)

    def __call__(
        self, source: Source, deep: Sequence[int] | FirstReaching | None = None
    ) -> tuple[InitializerReach, ...]:
        """Each initializer as a read's facts hold it; ``deep``: only those at these positions
        of the initializer array, walked whole, in that order (none when the file has fewer),
        or those up to the first that reaches beyond some imports (all of them when read
        ahead)."""
        shallow = deep is None or isinstance(deep, FirstReaching)
        held = self._held_ahead(source) if shallow else None
        if held is not None:
            return held
        depth: Depth = deep if isinstance(deep, FirstReaching) else False
        if deep is not None and not isinstance(deep, FirstReaching):
            depth = tuple(deep)
        found = self._reader.decode(source, lambda raw: self._walked(raw, source.display, depth))
        return found or ()

    def _walked(self, raw: SourceBytes, display: str, depth: Depth) -> tuple[InitializerReach, ...]:
        def read(deep: Depth) -> tuple[InitializerReach, ...]:
            return read_initializers_again(
                raw.data, display, size=raw.size, file_backed=raw.file_backed, deep=deep
            )

        if depth is False and self._split and raw.size >= SPLIT_WALK_MIN_BYTES and can_fork(2):
            return _walked_in_two(read)
        return read(depth)

    def _held_ahead(self, source: Source) -> tuple[InitializerReach, ...] | None:
        """The source's initializers as the child read them ahead; None when it did not (it
        failed, or the source is unreadable: read here, for the error a read gives)."""
        if self._ahead is None or source.display not in self._read_ahead:
            return None
        found = self._ahead.result()
        return None if found is None else found.get(source.display)

    def close(self) -> None:
        if self._ahead is not None:
            self._ahead.end()
        self._reader.close()


def _walked_in_two(
    read: Callable[[Depth], tuple[InitializerReach, ...]],
) -> tuple[InitializerReach, ...]:
    """A file's initializers, each walked in its own code (``read(False)``), every other one
    by a child while this process walks the rest (``code_walk.OwnCodePart``): the same walks.
    A half that spends its share of the budget, or a child that fails, leaves the whole walk to
    this process."""
    second = Forked.start(lambda: read(OwnCodePart(1, 2)), tuple)
    if second is None:
        return read(False)
    first: tuple[InitializerReach, ...] | None = None
    rest: tuple[InitializerReach, ...] | None = None
    try:
        first, rest = read(OwnCodePart(0, 2)), second.result()
    except OverBudget:
        pass  # this half spent its share: the whole walk below
    finally:
        second.end()  # whatever this process's half raised (once reaped, nothing is left)
    return read(False) if first is None or rest is None else joined_parts((first, rest))


def _initializers_of(sources: Sequence[Source]) -> dict[str, tuple[InitializerReach, ...]]:
    """A child's work for ``InitializerLookup.read_ahead``: the initializers of each source
    that can be read, by display path (it has the CPUs to itself: the checks wait for it)."""
    lookup = InitializerLookup(split=True)
    found: dict[str, tuple[InitializerReach, ...]] = {}
    try:
        for source in sources:
            with contextlib.suppress(InputError):
                found[source.display] = lookup(source)
    finally:
        lookup.close()
    return found


PYTHON_SOURCE_BYTES: Final = 4 << 20
"""Python files bigger than this are not read for imports: an import there is not known, so
the module is not taken for optional. A package's own sources are far smaller."""

_WHEEL_DATA: Final = re.compile(r"[^/]+\.data/(?:purelib|platlib)/")
"""Where a wheel keeps files it installs into site-packages itself."""


class ImportLookup:
    """Reads the Python files of an extension module's package, for where they import it
    (``Subject.optional_module``): a wheel's members (each wheel's list read once), or the
    files on disk of a folder's package."""

    def __init__(self) -> None:
        self._members: dict[str, list[tuple[str, MemberSpan]]] = {}
        self._texts: dict[tuple[str, str], bytes | None] = {}
        """Python files read already, by (wheel, member): a package's modules that cannot load
        are often several (cupy's nine), and each is looked for in the same files."""
        self._parsed: dict[tuple[str, str], tuple[ImportStatement, ...] | None] = {}

    def __call__(self, binary: BinaryFile) -> ModuleImports | None:
        source = binary.source
        if source is None:
            return None
        try:
            if source.member is None:
                return _imports_on_disk(Path(source.path))
            place = module_of(_installed_name(source.member.name))
            return None if place is None else self._imports_in(source.path, place[0])
        except (InputError, OSError):
            return None  # the wheel changed or went away since it was read; a folder unreadable

    def _imports_in(self, wheel: str, module: str) -> ModuleImports:
        """The import sites of ``module`` in the Python files of its top-level package in the
        wheel (every package's, for a module at the top), outside tests."""
        top = module.partition(".")[0] if "." in module else None  # a top-level module: any
        found = _Found(module)
        mapping = None
        try:
            for name, span in self._python_members(wheel):
                if (top and name.partition("/")[0] != top) or is_test_file(name):
                    continue
                if (wheel, name) not in self._texts:
                    if mapping is None:
                        mapping = _mapped(wheel)
                    self._texts[(wheel, name)] = _member_text(mapping, span)
                content = self._texts[(wheel, name)]
                if content is None or found.last in content:
                    found.add(name, self._statements(wheel, name, content))
        finally:
            if mapping is not None:
                mapping.close()
        return found.imports()

    def _statements(
        self, wheel: str, name: str, content: bytes | None
    ) -> tuple[ImportStatement, ...] | None:
        """A member's import statements, parsed once for every module looked for in it."""
        key = (wheel, name)
        if key not in self._parsed:
            self._parsed[key] = None if content is None else _parsed(name, content)
        return self._parsed[key]

    def _python_members(self, wheel: str) -> list[tuple[str, MemberSpan]]:
        from buildtool.linkage.inputs.inflate import MemberSpan
        from buildtool.linkage.inputs.wheel_archive import open_wheel

        known = self._members.get(wheel)
        if known is None:
            with open_wheel(Path(wheel)) as archive:
                known = [
                    (_installed_name(info.filename), MemberSpan.of(info))
                    for info in archive.infolist()
                    if info.filename.endswith(".py") and not info.is_dir()
                ]
            self._members[wheel] = known
        return known

    def close(self) -> None:
        self._members.clear()
        self._texts.clear()
        self._parsed.clear()


def _imports_on_disk(module: Path) -> ModuleImports | None:
    """The import sites of an extension module on disk in the Python files of its top-level
    package (the folders above it that hold an ``__init__.py``), outside tests; None when it
    lies in no package."""
    top = module.parent
    if not (top / "__init__.py").is_file():
        return None
    while (top.parent / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    root = top.parent
    place = module_of(module.relative_to(root).as_posix())
    if place is None:
        return None
    found = _Found(place[0])
    for folder, _folders, files in os.walk(top):  # symbolic links to folders not followed
        for file_name in sorted(name for name in files if name.endswith(".py")):
            path = Path(folder, file_name)
            name = path.relative_to(root).as_posix()
            if is_test_file(name):
                continue
            content = _python_text(path)
            if content is None or found.last in content:
                found.add(name, None if content is None else _parsed(name, content))
    return found.imports()


def _python_text(path: Path) -> bytes | None:
    """A Python file's bytes; None when it is too big or cannot be read."""
    try:
        if path.stat().st_size > PYTHON_SOURCE_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


class _Found:
    """The import sites of one module, gathered file by file."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.last = module.rpartition(".")[2].encode("utf-8")
        """The module's own name: a file without it does not import the module."""
        self._sites: list[ImportSite] = []
        self._unread: list[str] = []

    def add(self, name: str, statements: tuple[ImportStatement, ...] | None) -> None:
        """One Python file's import statements (None: it could not be read, or not as Python,
        which makes it a file that cannot be told)."""
        if statements is None:
            self._unread.append(name)
        else:
            self._sites += sites_in(statements, name, self.module)

    def imports(self) -> ModuleImports:
        return ModuleImports(tuple(self._sites), tuple(self._unread))


def _parsed(name: str, content: bytes) -> tuple[ImportStatement, ...] | None:
    return import_statements(content.decode("utf-8", "replace"), name)


def _installed_name(member: str) -> str:
    """Where a wheel member lies in site-packages (``<name>.data/purelib/`` dropped)."""
    return _WHEEL_DATA.sub("", member, count=1) if _WHEEL_DATA.match(member) else member


def _mapped(wheel: str) -> mmap.mmap:
    from buildtool.linkage.inputs.wheel_archive import map_wheel

    return map_wheel(Path(wheel))


def _member_text(mapping: mmap.mmap, span: MemberSpan) -> bytes | None:
    """A Python member's bytes; None when it is too big or broken."""
    from buildtool.linkage.inputs.inflate import member_bytes

    return member_bytes(mapping, span) if span.file_size <= PYTHON_SOURCE_BYTES else None
