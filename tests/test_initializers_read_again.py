"""Initializers read again after the read (``verify._initializers``): a file whose initializers
some pairs want walked whole is read again once, for every shape a pair it is in may ask, and
each question gets what it asked for, as if asked alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import PurePosixPath

from buildtool.linkage.binaries import InitializerReach
from buildtool.linkage.inputs.collect import BinaryFile
from buildtool.linkage.inputs.decoding import Source
from buildtool.linkage.verify import _initializers
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
        self.asked: list[tuple[int, ...] | None] = []

    def __call__(
        self, _source: Source, deep: Sequence[int] | None = None
    ) -> tuple[InitializerReach, ...]:
        self.asked.append(None if deep is None else tuple(deep))
        return SHALLOW if deep is None else tuple(_deep(SHALLOW[p]) for p in deep)


def _library() -> BinaryFile:
    facts = fake(initializers=SHALLOW)
    return BinaryFile("lib.so", PurePosixPath("/lib.so"), facts, None, Source("w", "lib.so", 1))


def test_a_file_is_read_again_once_for_the_shapes_asked_later_too() -> None:
    lookup = _CountingLookup()
    _, deep = _initializers(lookup)  # type: ignore[arg-type]
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
        expected = _initializers(alone)[1](library, shapes, shapes)  # type: ignore[arg-type]
        together = _CountingLookup()
        _, deep = _initializers(together)  # type: ignore[arg-type]
        deep(library, frozenset({"one", "two"}) - shapes or shapes, frozenset({"one", "two"}))
        assert deep(library, shapes, frozenset({"one", "two"})) == expected
        assert len(together.asked) == 1
