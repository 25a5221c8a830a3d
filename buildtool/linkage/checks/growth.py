"""Size changes against an earlier run: the baseline report, matching libraries, growth budgets.

The baseline is the JSON report of an earlier ``verify-linkage`` run (``--format json``). Its
libraries are matched to this run's by file name (``libdemo_runtime.so``), so two build trees,
a build tree and a wheel, or two wheels compare; a file name that occurs more than once in either
report (a grafted second copy) is matched by its whole path instead, or not at all. Pure but for
``load_baseline``, which reads the file.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from buildtool.errors import InputError
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import base_name
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.checks.subject import Subject

MEMBER_SEPARATOR = "!/"


@dataclasses.dataclass(frozen=True)
class BaselineSize:
    """One library's footprint in the baseline report."""

    path: str
    """Its path as the baseline report names it."""
    file_size: int
    """Bytes on disk."""
    code_size: int
    """Bytes of executable sections."""
    exported_symbols: int
    """Defined, default-visibility dynamic symbols."""


@dataclasses.dataclass(frozen=True)
class Baseline:
    """The sizes of an earlier run."""

    source: str
    """The baseline file, as given."""
    sizes: tuple[BaselineSize, ...]
    """Its libraries, in its order."""


def file_name(path: str) -> str:
    """The base name of a report path (``dist/x.whl!/demo/lib/liba.so`` -> ``liba.so``)."""
    return path.rsplit(MEMBER_SEPARATOR, 1)[-1].rstrip("/").rsplit("/", 1)[-1]


def percent(new: int, old: int) -> float | None:
    """Growth of ``new`` over ``old`` in percent; None when ``old`` is 0."""
    return (new - old) * 100 / old if old else None


# --- reading the baseline file --------------------------------------------------------------------

_EXPECTED = "a JSON report of an earlier run (buildtool verify-linkage --format json)"
_SIZE_FIELDS = ("file_size", "code_size", "exported_symbols")


def _refuse(source: str, problem: str) -> InputError:
    return InputError(f"{source}: not a baseline: {problem}; expected {_EXPECTED}")


def _size(source: str, index: int, item: object) -> BaselineSize:
    where = f"sizes[{index}]"
    if not isinstance(item, dict):
        raise _refuse(source, f"{where} is {type(item).__name__}, not an object")
    path = item.get("path")
    if not isinstance(path, str):
        raise _refuse(source, f"{where}.path is missing or not a string")
    numbers = []
    for key in _SIZE_FIELDS:
        value = item.get(key)
        if type(value) is not int or value < 0:
            raise _refuse(source, f"{where}.{key} is {value!r}, not a whole number >= 0")
        numbers.append(value)
    return BaselineSize(path, *numbers)


def _document(text: str, source: str) -> Mapping[str, Any]:
    import json  # only a run with --baseline reads one; every run imports this module

    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise _refuse(source, f"invalid JSON at line {error.lineno} column {error.colno}") from None
    if not isinstance(document, dict):
        raise _refuse(source, f"the document is {type(document).__name__}, not an object")
    if "steps" in document and "sizes" not in document:
        raise _refuse(source, "this is a buildtool ci report")
    if document.get("version") != 1:
        raise _refuse(source, f'"version" is {document.get("version")!r}, not 1')
    return document


def parse_baseline(text: str, source: str) -> Baseline:
    """The sizes of a JSON report; ``InputError`` (exit 2) naming ``source`` and the key when it
    is not one."""
    document = _document(text, source)
    sizes = document.get("sizes")
    if not isinstance(sizes, list) or not isinstance(document.get("findings"), list):
        raise _refuse(source, 'no "sizes" and "findings" arrays')
    return Baseline(source, tuple(_size(source, i, item) for i, item in enumerate(sizes)))


def load_baseline(path: Path) -> Baseline:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot read the baseline: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _refuse(str(path), f"not UTF-8 (byte {error.start})") from None
    return parse_baseline(text, str(path))


# --- matching and budgets ----------------------------------------------------------------------


def match_baseline(paths: Sequence[str], baseline: Baseline) -> dict[str, BaselineSize]:
    """This run's library path -> the same library in the baseline, for those found there."""
    ours = Counter(file_name(path) for path in paths)
    theirs = Counter(file_name(entry.path) for entry in baseline.sizes)
    by_name = {file_name(entry.path): entry for entry in baseline.sizes}
    by_path = {entry.path: entry for entry in baseline.sizes}
    matched = {}
    for path in paths:
        name = file_name(path)
        if ours[name] == 1 and theirs[name] == 1:
            matched[path] = by_name[name]
        elif path in by_path:
            matched[path] = by_path[path]
    return matched


def unmatched(baseline: Baseline, matched: Mapping[str, BaselineSize]) -> tuple[BaselineSize, ...]:
    """Libraries of the baseline that this run no longer has."""
    used = {id(entry) for entry in matched.values()}
    return tuple(entry for entry in baseline.sizes if id(entry) not in used)


@dataclasses.dataclass(frozen=True)
class Growth:
    """One library's file size now and in the baseline."""

    path: str
    """The library in this run."""
    file_size: int
    """Its file size in this run."""
    previous: BaselineSize
    """The same library in the baseline."""


def growth_findings(
    growths: Sequence[Growth], policy: LinkagePolicy, baseline: str
) -> Iterator[Finding]:
    """BT131 for every library that grew more than its ``max-growth-percent``."""
    for growth in growths:
        rule = policy.library_by_file(file_name(growth.path))
        if rule is None or rule.max_growth_percent is None:
            continue
        old, new = growth.previous.file_size, growth.file_size
        grown = percent(new, old)
        if grown is None:
            grown = math.inf if new > old else 0.0
        if grown > rule.max_growth_percent:
            yield Finding(
                "BT131",
                growth.path,
                f"grew {grown:.2f}% against {baseline}, more than the "
                f"{rule.max_growth_percent:g}% allowed",
                f"file size {old} -> {new} bytes ({new - old:+d})",
            )


def check_size_budgets(subject: Subject) -> Iterator[Finding]:
    for rule in subject.policy.libraries:
        for binary in subject.shared:
            size = subject.facts(binary).file_size
            if rule.matches(base_name(binary)) and rule.size_budget and size > rule.size_budget:
                yield Finding(
                    "BT130",
                    binary.display,
                    f"is {size / 1e6:.2f} MB, over its budget of {rule.size_budget / 1e6:.2f} MB",
                    f"file size {size} bytes",
                )
