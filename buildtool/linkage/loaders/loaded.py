"""What a load gives: the objects a root loads and the NEEDED edges between them, whichever
loader's rules found them (ld.so's in ``closure``, dyld's and Windows' in ``foreign``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from buildtool.linkage.binaries import BinaryFacts


@dataclass(frozen=True, slots=True)
class NeededEdge:
    """One DT_NEEDED entry and where ld.so would find it."""

    requester: str
    """Path of the object whose DT_NEEDED this is."""
    needed: str
    path: str | None
    """The resolved path; None when nothing was found."""
    via: str
    """loaded (an object already loaded), path (the name has a ``/``), rpath, ld_library_path,
    runpath, cache, default, platform (the target platform provides it), or "not found"."""


@dataclass(frozen=True)
class Closure:
    """The objects one root loads, in ld.so's breadth-first order."""

    root: str
    load_order: tuple[str, ...]
    objects: Mapping[str, BinaryFacts]
    edges: tuple[NeededEdge, ...]
    names: Mapping[str, str]
    """Every name an object was requested as, and each SONAME -> its path."""

    @property
    def missing(self) -> tuple[NeededEdge, ...]:
        """Edges nothing was found for, less what the platform provides (``PROVIDED_VIAS``)."""
        return tuple(
            edge for edge in self.edges if edge.path is None and edge.via not in PROVIDED_VIAS
        )

    def provider(self, name: str) -> BinaryFacts | None:
        """The loaded object a NEEDED name or SONAME refers to."""
        path = self.names.get(name)
        return self.objects[path] if path is not None else None


PROVIDED_VIAS = frozenset({"system", "executable-path-unknown", "interpreter", "weak"})
"""``NeededEdge.via`` of an edge without a path that is no missing library: what dyld or Windows
provide (``loaders.foreign``)."""
