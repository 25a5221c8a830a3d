"""The load closure of a Mach-O or PE root: the same breadth-first walk as ld.so's
(``closure``), with dyld's or the Windows loader's search rules (``dyld``, ``windows``)."""

from __future__ import annotations

import posixpath
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.loaders import dyld, windows
from buildtool.linkage.loaders.glibc import FactsLookup
from buildtool.linkage.loaders.loaded import Closure, NeededEdge

WEAK: Final = "weak"
"""The ``via`` of a weak (Mach-O) or delay-loaded (PE) library that is not found: the load
itself goes on without it."""


@dataclass
class _Walk:
    root_path: str
    root: BinaryFacts
    read: FactsLookup
    dll_directories: Sequence[str]
    objects: dict[str, BinaryFacts] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    parents: dict[str, str | None] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    edges: list[NeededEdge] = field(default_factory=list)

    def key(self, name: str) -> str:
        return name.lower() if self.root.format == "pe" else name

    def chain(self, path: str) -> list[tuple[str, Sequence[str]]]:
        chain: list[tuple[str, Sequence[str]]] = []
        current: str | None = path
        while current is not None:
            chain.append((posixpath.dirname(current), self.objects[current].rpath or ()))
            current = self.parents.get(current)
        return chain


def _provided(walk: _Walk, name: str) -> str | None:
    if walk.root.format == "pe":
        return windows.provided(name, walk.root.machine)
    if dyld.is_system_library(name):
        return dyld.SYSTEM
    executable = walk.root.file_type == "executable"
    if name.startswith("@executable_path") and not executable:
        return dyld.UNKNOWN_EXECUTABLE
    return None


def _candidates(walk: _Walk, path: str, name: str) -> Iterable[tuple[str, str]]:
    if walk.root.format == "pe":
        folders = [("dll_load_dir", posixpath.dirname(walk.root_path))]
        folders += [("add_dll_directory", folder) for folder in walk.dll_directories]
        spellings = dict.fromkeys((name, name.lower()))
        return [
            (how, posixpath.join(folder, spelled))
            for how, folder in folders
            for spelled in spellings
        ]
    executable = posixpath.dirname(walk.root_path) if walk.root.file_type == "executable" else None
    return dyld.candidates(name, posixpath.dirname(path), walk.chain(path), executable)


def _found(walk: _Walk, path: str, name: str) -> tuple[str, str, BinaryFacts] | None:
    for how, candidate in _candidates(walk, path, name):
        facts = walk.objects.get(candidate) or walk.read(candidate)
        if (
            facts is not None
            and facts.format == walk.root.format
            and facts.machine == walk.root.machine
        ):
            return how, candidate, facts
    return None


def _load(walk: _Walk, requester: str, name: str) -> None:
    known = walk.names.get(walk.key(name))
    if known is not None:
        walk.edges.append(NeededEdge(requester, name, known, "loaded"))
        return
    provided = _provided(walk, name)
    if provided is not None:
        walk.edges.append(NeededEdge(requester, name, None, provided))
        return
    hit = _found(walk, requester, name)
    if hit is None:
        weak = name in walk.objects[requester].weak_needed
        walk.edges.append(NeededEdge(requester, name, None, WEAK if weak else "not found"))
        return
    how, path, facts = hit
    walk.edges.append(NeededEdge(requester, name, path, how))
    walk.names[walk.key(name)] = path
    if path not in walk.objects:
        walk.objects[path] = facts
        walk.order.append(path)
        walk.parents[path] = requester
        walk.names.setdefault(walk.key(facts.soname or posixpath.basename(path)), path)


def resolve_foreign_closure(
    root_path: str,
    root: BinaryFacts,
    read: FactsLookup,
    dll_directories: Sequence[str] = (),
    max_objects: int = 100_000,
) -> Closure:
    """``root``'s load closure by dyld's (Mach-O) or the Windows loader's (PE) rules;
    ``dll_directories``: the folders ``os.add_dll_directory`` adds (PE only)."""
    root_path = posixpath.normpath(root_path)
    walk = _Walk(root_path, root, read, dll_directories)
    walk.objects[root_path] = root
    walk.order.append(root_path)
    walk.parents[root_path] = None
    walk.names[walk.key(root.soname or posixpath.basename(root_path))] = root_path
    if root.format == "pe":
        walk.names.setdefault(walk.key(posixpath.basename(root_path)), root_path)
    queue = deque([root_path])
    while queue and len(walk.order) <= max_objects:
        path = queue.popleft()
        before = len(walk.order)
        for name in walk.objects[path].needed:
            _load(walk, path, name)
        queue.extend(walk.order[before:])
    return Closure(root_path, tuple(walk.order), walk.objects, tuple(walk.edges), walk.names)
