"""What the checks look at: one run's ELF files, their NEEDED closures and the policy. Pure.

Its own module so that ``checks`` and ``hardening`` both depend on it and not on each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import PurePosixPath

from buildtool.linkage.elf import ElfFacts
from buildtool.linkage.inputs import BinaryFile
from buildtool.linkage.policy import LinkagePolicy
from buildtool.linkage.resolve import Closure, DefinitionIndex, index_object

FunctionNames = Callable[[BinaryFile, frozenset[int]], Mapping[int, str]]
"""The names of some of a file's ``.symtab`` functions by digest (see
``ElfFacts.symtab_functions``). The shell reads the file again: only a duplicate-code finding,
which shows them, needs names."""


def digests_as_names(_binary: BinaryFile, digests: frozenset[int]) -> dict[int, str]:
    """A ``FunctionNames`` that reads nothing: it shows the digests."""
    return {digest: f"#{digest:016x}" for digest in digests}


@dataclasses.dataclass(frozen=True)
class Subject:
    """What the checks look at: the input's ELF files, their closures and the policy."""

    files: tuple[BinaryFile, ...]
    """Well-formed ELF files of the inputs (malformed ones are findings already)."""
    closures: Mapping[PurePosixPath, Closure]
    """Each file's NEEDED closure, by location."""
    policy: LinkagePolicy
    in_input: frozenset[str]
    """Base names of every file (and symlink) in the inputs."""
    function_names: FunctionNames = digests_as_names
    """How duplicate-code findings name the functions two libraries share."""

    def facts(self, binary: BinaryFile) -> ElfFacts:
        assert binary.facts is not None
        return binary.facts

    @property
    def shared(self) -> tuple[BinaryFile, ...]:
        return tuple(b for b in self.files if self.facts(b).file_type == "shared")

    def needs(self, a: BinaryFile, b: BinaryFile) -> bool:
        """Whether loading ``a`` loads ``b``."""
        closure = self.closures.get(a.location)
        return closure is not None and str(b.location) in closure.objects

    def co_loaded(self, a: BinaryFile, b: BinaryFile) -> bool:
        """Whether one process may load both: one needs the other, or a third needs both."""
        loaders = self._loaders
        return not loaders.get(str(a.location), frozenset()).isdisjoint(
            loaders.get(str(b.location), ())
        )

    @cached_property
    def _loaders(self) -> dict[str, set[PurePosixPath]]:
        """Object path -> the roots whose closure loads it."""
        loaders: dict[str, set[PurePosixPath]] = {}
        for root, closure in self.closures.items():
            for path in closure.objects:
                loaders.setdefault(path, set()).add(root)
        return loaders

    def definitions(self, path: str, facts: ElfFacts) -> DefinitionIndex:
        """The dynamic definitions of one loaded object, indexed once for every closure."""
        index = self._indexes.get(path)
        if index is None:
            index = self._indexes[path] = index_object(facts)
        return index

    @cached_property
    def _indexes(self) -> dict[str, DefinitionIndex]:
        return {}
