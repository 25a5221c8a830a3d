"""The NEEDED closure of a root, in ld.so's breadth-first load order."""

from __future__ import annotations

import posixpath
import stat
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from buildtool.linkage.binaries import BinaryFacts, Decoder
from buildtool.linkage.binaries.read import read_binary_file
from buildtool.linkage.loaders.glibc import (
    LD_SO_CACHE,
    FactsLookup,
    LdSoCache,
    default_system_dirs,
    effective_rpath,
    expand_entries,
    needed_path,
    search_steps,
)
from buildtool.linkage.loaders.loaded import Closure, NeededEdge
from buildtool.linkage.loaders.platform import Platform, platform_library

# --- the NEEDED closure ---------------------------------------------------------------------


@dataclass(frozen=True)
class Environment:
    """What ld.so would take from the running system."""

    cache: LdSoCache = field(default_factory=LdSoCache)
    system_dirs: Sequence[str] | None = None
    """None: default_system_dirs for the root's class and machine."""
    ld_library_path: Sequence[str] | None = None
    platform: Platform | None = None
    """The platform the root targets (its wheel's tag): a NEEDED found nowhere else that the
    platform provides loads its stand-in (``platform_library``, via ``platform``). For a foreign
    platform the caller also leaves out this machine's cache and default directories."""
    dll_directories: Sequence[str] = ()
    """Folders the inputs' packages add with ``os.add_dll_directory`` (PE roots only)."""
    policy_only: bool = False
    """Take from this machine's cache and default folders only the libraries ``platform``
    provides (a manylinux wheel: this machine's libz stands for every compliant system's, its
    libgomp for nothing)."""


@dataclass
class _Walk:
    """Mutable state of one breadth-first walk (local to resolve_closure)."""

    root: BinaryFacts
    objects: dict[str, BinaryFacts]
    order: list[str]
    parents: dict[str, str | None]
    names: dict[str, str]
    edges: list[NeededEdge]
    system: tuple[str, ...]
    """The default directories for the root's class and machine."""
    steps: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    """Each loaded object's search steps: the same for all of its NEEDED entries."""
    preloaded: Mapping[str, BinaryFacts] = field(default_factory=dict)
    """Objects loaded before the root was opened (its host's closure, for a plugin), by path:
    a NEEDED matching one of their names is that object, which joins the root's scope."""


def _compatible(root: BinaryFacts, candidate: BinaryFacts) -> bool:
    return (candidate.format, candidate.elf_class, candidate.machine, candidate.little_endian) == (
        root.format,
        root.elf_class,
        root.machine,
        root.little_endian,
    )


def _chain_rpaths(walk: _Walk, path: str) -> list[tuple[str, ...]]:
    """Effective RPATHs of the loaders of ``path`` (nearest first), each with its own $ORIGIN."""
    chain: list[tuple[str, ...]] = []
    loader = walk.parents.get(path)
    while loader is not None:
        chain.append(effective_rpath(walk.objects[loader], posixpath.dirname(loader)))
        loader = walk.parents.get(loader)
    return chain


def _steps(walk: _Walk, path: str, env: Environment) -> tuple[tuple[str, str], ...]:
    steps = walk.steps.get(path)
    if steps is None:
        chain = _chain_rpaths(walk, path)
        origin = posixpath.dirname(path)
        steps = search_steps(walk.objects[path], origin, chain, env.ld_library_path, walk.system)
        walk.steps[path] = steps
    return steps


def _candidates(walk: _Walk, path: str, name: str, env: Environment) -> Iterable[tuple[str, str]]:
    facts, system = walk.objects[path], walk.system
    for step, directory in _steps(walk, path, env):
        if directory != LD_SO_CACHE:
            yield step, posixpath.join(directory, name)
            continue
        for cached in env.cache.paths(name, walk.root.elf_class, walk.root.machine):
            if not (facts.nodeflib and posixpath.dirname(cached) in system):
                yield step, cached


def _find(
    walk: _Walk, path: str, name: str, env: Environment, read: FactsLookup
) -> tuple[str, str, BinaryFacts] | None:
    if needed_path(name) == "relative":
        return None  # opened from the process's working directory: unknown here
    if "/" in name:
        facts = walk.objects[path]
        target = posixpath.normpath(expand_entries((name,), facts, posixpath.dirname(path))[0])
        candidates: Iterable[tuple[str, str]] = [("path", target)]
    else:
        candidates = _candidates(walk, path, name, env)
    for step, candidate in candidates:
        if env.policy_only and step in _SYSTEM_STEPS and not _provided(env, name):
            continue
        found = walk.objects.get(candidate) or read(candidate)
        if found is not None and _compatible(walk.root, found):
            return (step, candidate, found)
    return None


_SYSTEM_STEPS = frozenset({"cache", "default"})


def _provided(env: Environment, name: str) -> bool:
    return env.platform is not None and env.platform.provides(name)


def _platform_hit(walk: _Walk, name: str, env: Environment) -> tuple[str, str, BinaryFacts] | None:
    if env.platform is None or not env.platform.provides(name):
        return None
    stand_in = platform_library(name, env.platform, walk.root)
    return ("platform", stand_in.path, stand_in)


def _load(walk: _Walk, requester: str, name: str, env: Environment, read: FactsLookup) -> None:
    known = walk.names.get(name)
    if known is not None:
        walk.edges.append(NeededEdge(requester, name, known, "loaded"))
        if known not in walk.objects:  # loaded before the root: now in the root's scope too
            walk.objects[known] = walk.preloaded[known]
            walk.order.append(known)
            walk.parents[known] = requester
        return
    hit = _find(walk, requester, name, env, read) or _platform_hit(walk, name, env)
    if hit is None:
        walk.edges.append(NeededEdge(requester, name, None, "not found"))
        return
    step, path, facts = hit
    walk.edges.append(NeededEdge(requester, name, path, step))
    walk.names[name] = path
    if path not in walk.objects:
        walk.objects[path] = facts
        walk.order.append(path)
        walk.parents[path] = requester
        if facts.soname:
            walk.names.setdefault(facts.soname, path)


def resolve_closure(
    root_path: str,
    root: BinaryFacts,
    read: FactsLookup,
    env: Environment | None = None,
    max_objects: int = 100_000,
    *,
    loaded: Closure | None = None,
) -> Closure:
    """Load ``root``'s NEEDED closure breadth-first, as ld.so would, reading facts via ``read``.

    ``root_path`` is where ``root`` lives (its directory is ``$ORIGIN``); the reader may raise
    (e.g. MalformedElf for a corrupt candidate), which ends the walk. ``loaded``: what the
    process has loaded before ``root`` is opened (a plugin's host's closure): ld.so matches a
    NEEDED name against the names of loaded objects before it searches, so those are found
    whatever ``root``'s search path says.
    """
    env = env or Environment()
    if root.format != "elf":
        from buildtool.linkage.loaders.foreign import resolve_foreign_closure

        return resolve_foreign_closure(root_path, root, read, env.dll_directories, max_objects)
    root_path = posixpath.normpath(root_path)
    system = (
        env.system_dirs
        if env.system_dirs is not None
        else default_system_dirs(root.elf_class, root.machine)
    )
    walk = _Walk(root, {root_path: root}, [root_path], {root_path: None}, {}, [], tuple(system))
    if loaded is not None:
        walk.names.update(loaded.names)
        walk.preloaded = loaded.objects
    if root.soname:
        walk.names[root.soname] = root_path
    queue = deque([root_path])
    while queue and len(walk.order) <= max_objects:
        path = queue.popleft()
        before = len(walk.order)
        for name in walk.objects[path].needed:
            _load(walk, path, name, env, read)
        queue.extend(walk.order[before:])
    names = walk.names
    if loaded is not None:  # the loaded objects the root does not reach stay out of its scope
        names = {name: path for name, path in names.items() if path in walk.objects}
    return Closure(root_path, tuple(walk.order), walk.objects, tuple(walk.edges), names)


def filesystem_lookup(
    registration_names: Sequence[str] = (), decoder: Decoder = "fast"
) -> FactsLookup:
    """A memoizing lookup of real files: None for missing, unreadable or unknown paths.
    ``decoder``: what decodes them."""
    seen: dict[str, BinaryFacts | None] = {}

    def read(path: str) -> BinaryFacts | None:
        if path not in seen:
            try:
                # a NEEDED entry may name any path: a FIFO there would block the read forever
                regular = stat.S_ISREG(Path(path).stat().st_mode)
                seen[path] = (
                    read_binary_file(
                        path, path, registration_names, decoder, loader_facts_only=True
                    )
                    if regular
                    else None
                )
            except OSError:  # missing, unreadable, a name too long, a symlink loop, unmappable
                seen[path] = None
        return seen[path]

    return read
