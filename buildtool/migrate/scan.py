"""Text -> stale references, with line and column. Pure.

The boundary rule for names is defined in ``rules``; this module applies it, finds renamed headers
where they can be (``#include`` directives; CMake and Python string literals), and numbers what it
finds.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Literal

from buildtool.migrate.rules import Rule, Rules

FileKind = Literal["c", "cmake", "python", "shell", "yaml", "markdown", "rst", "text"]

_SUFFIXES: dict[str, FileKind] = {
    **dict.fromkeys((".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".tcc", ".cuh"), "c"),
    **dict.fromkeys((".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".m", ".mm"), "c"),
    ".cmake": "cmake",
    **dict.fromkeys((".py", ".pyi", ".pyx", ".pxd"), "python"),
    **dict.fromkeys((".sh", ".bash", ".zsh"), "shell"),
    **dict.fromkeys((".yml", ".yaml"), "yaml"),
    **dict.fromkeys((".md", ".markdown"), "markdown"),
    ".rst": "rst",
}

_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"\r\n]+)[>\"]", re.MULTILINE)
"""An ``#include`` directive; group 2 is the path."""

_STRING = {
    "python": re.compile(r"""(["'])((?:\\.|(?!\1)[^\\\r\n])*)\1"""),
    "cmake": re.compile(r'(")((?:\\.|[^"\\\r\n])*)"'),
}
"""Single-line string literals; group 2 is the text between the quotes."""


def file_kind(path: str) -> FileKind:
    """What a file holds, from its name (``CMakeLists.txt``, ``x.cmake.in`` are CMake)."""
    name = PurePosixPath(path).name
    if name.removesuffix(".in") == "CMakeLists.txt" or name.endswith((".cmake", ".cmake.in")):
        return "cmake"
    suffix = PurePosixPath(name.removesuffix(".in")).suffix.lower()
    return _SUFFIXES.get(suffix, "text")


@dataclasses.dataclass(frozen=True)
class Match:
    """One stale reference in a text."""

    rule: Rule
    """The ``[migrate]`` entry it matches."""

    start: int
    """Offset of its first character in the text."""

    end: int
    """Offset just past its last character."""

    line: int
    """Line number, from 1."""

    column: int
    """Column of its first character (in characters, not bytes), from 1."""


def _name_spans(text: str, rules: Rules) -> Iterator[tuple[Rule, int, int]]:
    if rules.name_pattern is None:
        return
    for found in rules.name_pattern.finditer(text):
        yield rules.names[found.group()], found.start(), found.end()


def _include_spans(text: str, rules: Rules) -> Iterator[tuple[Rule, int, int]]:
    for found in _INCLUDE.finditer(text):
        rule = rules.headers.get(found.group(2))
        if rule is not None:
            yield rule, found.start(2), found.end(2)


def _string_spans(text: str, rules: Rules, kind: FileKind) -> Iterator[tuple[Rule, int, int]]:
    pattern = _STRING.get(kind)
    if pattern is None:
        return
    for found in pattern.finditer(text):
        content = found.group(2)
        for old, rule in rules.headers.items():
            if content == old or content.endswith("/" + old):
                yield rule, found.end(2) - len(old), found.end(2)


def _non_overlapping(spans: list[tuple[Rule, int, int]]) -> list[tuple[Rule, int, int]]:
    """The earliest, then longest, of overlapping matches."""
    kept: list[tuple[Rule, int, int]] = []
    for span in sorted(spans, key=lambda s: (s[1], s[1] - s[2])):
        if not kept or span[1] >= kept[-1][2]:
            kept.append(span)
    return kept


def scan_text(text: str, rules: Rules, kind: FileKind = "text") -> tuple[Match, ...]:
    """Every stale reference in ``text``, in order, never two overlapping."""
    if rules.empty:
        return ()
    spans = [*_name_spans(text, rules)]
    if rules.headers:
        spans += [*_include_spans(text, rules), *_string_spans(text, rules, kind)]
    if not spans:
        return ()
    starts = [0] + [found.end() for found in re.finditer("\n", text)]
    matches = []
    for rule, start, end in _non_overlapping(spans):
        line = bisect.bisect_right(starts, start)
        matches.append(Match(rule, start, end, line, start - starts[line - 1] + 1))
    return tuple(matches)
