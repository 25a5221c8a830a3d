"""Initializers read again after the read (``checking._InitializerReads``): a file whose
initializers some pairs want walked whole is read again once, for every shape a pair it is in
may ask, and each question gets what it asked for, as if asked alone; a read that stops at the
first initializer reaching out stands for the whole read only when it read them all."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import PurePosixPath

from buildtool.linkage.binaries import InitializerReach
from buildtool.linkage.binaries.code_walk import FirstReaching
from buildtool.linkage.checking import _InitializerReads
from buildtool.linkage.inputs.collect import BinaryFile
from buildtool.linkage.inputs.decoding import Source
from tests.test_resolve import fake

SHALLOW = (
    InitializerReach("one", 40, frozenset({"a"}), complete=False),
    InitializerReach("two", 40, frozenset({"b"}), complete=False),
    InitializerReach("done", 40, frozenset({"c"})),
    InitializerReach("two", 40, frozenset({"d"}), complete=False),
)


def _deep(init: InitializerReach) -> InitializerReach:
    return dataclasses.replace(init, reaches=init.reaches | {"registry"}, complete=True)


class _CountingLookup:
    """Stands in for ``InitializerLookup``: the file's initializers, those asked walked whole."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, ...] | FirstReaching | None] = []

    def __call__(
        self, _source: Source, deep: Sequence[int] | FirstReaching | None = None
    ) -> tuple[InitializerReach, ...]:
        if isinstance(deep, FirstReaching):
            self.asked.append(deep)
            ends = [p + 1 for p, init in enumerate(SHALLOW) if deep.met_by(init)]
            return SHALLOW[: min(ends, default=len(SHALLOW))]
        self.asked.append(None if deep is None else tuple(deep))
        return SHALLOW if deep is None else tuple(_deep(SHALLOW[p]) for p in deep)


def _library(initializers: tuple[InitializerReach, ...] | None = SHALLOW) -> BinaryFile:
    facts = fake(initializers=initializers)
    return BinaryFile("lib.so", PurePosixPath("/lib.so"), facts, None, Source("w", "lib.so", 1))


def test_a_file_is_read_again_once_for_the_shapes_asked_later_too() -> None:
    lookup = _CountingLookup()
    deep = _InitializerReads(lookup).deep  # type: ignore[arg-type]
    library = _library()
    later = frozenset({"one", "two"})
    first = deep(library, frozenset({"one"}), later)
    second = deep(library, frozenset({"two"}), later)
    assert lookup.asked == [(0, 1, 3)]  # "done" is complete: never read again
    assert first == (_deep(SHALLOW[0]), *SHALLOW[1:])
    assert second == (SHALLOW[0], _deep(SHALLOW[1]), SHALLOW[2], _deep(SHALLOW[3]))


def test_each_question_gets_what_it_asked_alone() -> None:
    library = _library()
    for shapes in (frozenset({"one"}), frozenset({"two"}), frozenset({"one", "two"})):
        alone = _CountingLookup()
        expected = _InitializerReads(alone).deep(library, shapes, shapes)  # type: ignore[arg-type]
        together = _CountingLookup()
        deep = _InitializerReads(together).deep  # type: ignore[arg-type]
        deep(library, frozenset({"one", "two"}) - shapes or shapes, frozenset({"one", "two"}))
        assert deep(library, shapes, frozenset({"one", "two"})) == expected
        assert len(together.asked) == 1


def test_a_read_stopped_early_is_not_taken_for_the_whole_read() -> None:
    """Unread initializers (None) asked up to the first reaching beyond "a": the first one
    does, so the answer is it alone, and the whole read is still made when asked for."""
    lookup = _CountingLookup()
    reads = _InitializerReads(lookup)  # type: ignore[arg-type]
    library = _library(None)
    assert reads.until(library, frozenset()) == SHALLOW[:1]
    assert reads.initializers(library) == SHALLOW
    assert lookup.asked == [FirstReaching(frozenset()), None]


def test_a_read_that_found_nothing_beyond_is_the_whole_read() -> None:
    """Nothing reaches beyond "a" to "d": the read went to the end, and is the file's."""
    lookup = _CountingLookup()
    reads = _InitializerReads(lookup)  # type: ignore[arg-type]
    library = _library(None)
    everything = frozenset("abcd")
    assert reads.until(library, everything) == SHALLOW
    assert reads.initializers(library) == SHALLOW
    assert reads.until(library, frozenset()) == SHALLOW  # held whole now: no read stops early
    assert lookup.asked == [FirstReaching(everything)]


def test_initializers_the_facts_hold_are_never_read_again() -> None:
    lookup = _CountingLookup()
    assert _InitializerReads(lookup).until(_library(), frozenset()) == SHALLOW  # type: ignore[arg-type]
    assert lookup.asked == []
