"""``Subject.defined_among``: the names a loaded object defines among a few asked about, looked
up key by key, are exactly what cutting the version off every definition gives
(``definition_names``), on this machine's versioned libraries."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.binaries.read import read_binary_file
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.checks.subject import Subject
from tests.conftest import require

VERSIONED = (
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
    "/lib/x86_64-linux-gnu/libgcc_s.so.1",
)
"""Libraries whose definitions carry versions, default (``@@``) and hidden (``@``), and (the
C++ library) weak ones."""


def _facts(path: str) -> BinaryFacts:
    require(Path(path).exists(), f"{path} is not installed")
    facts = read_binary_file(path, path)
    assert facts is not None, path
    assert facts.versioned_definitions, path
    return facts


def _subject() -> Subject:
    return Subject(files=(), closures={}, policy=LinkagePolicy.empty(), in_input=frozenset())


def _asked(facts: BinaryFacts, rng: random.Random, count: int) -> frozenset[str]:
    """Names a check could ask about: defined ones (some of them only weakly), unknown ones,
    and whole keys with a version (which no bare name equals)."""
    keys = sorted(facts.defined)
    bare = [key.partition("@")[0] for key in keys]
    weak = sorted(facts.weak_defined) or keys
    weakly, whole_key = rng.choice(weak).partition("@")[0], rng.choice(keys)
    return frozenset((*rng.sample(bare, count), weakly, whole_key, f"absent_{count}", ""))


@pytest.mark.parametrize("path", VERSIONED)
@pytest.mark.parametrize("strong", [False, True])
def test_a_few_names_are_looked_up_as_the_whole_set_gives_them(path: str, strong: bool) -> None:
    facts = _facts(path)
    rng = random.Random(path)
    for _ in range(200):
        asked = _asked(facts, rng, rng.randrange(1, 12))
        expected = asked & _subject().definition_names(facts, strong=strong)
        assert _subject().defined_among(asked, facts, strong=strong) == expected, sorted(asked)


def test_every_bare_name_of_a_library_is_found_and_weak_ones_only_when_not_strong() -> None:
    facts = _facts("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
    names = sorted({key.partition("@")[0] for key in facts.defined})
    subject = _subject()
    found: set[str] = set()
    for start in range(0, len(names), 4):  # a few at a time: looked up key by key
        found |= subject.defined_among(frozenset(names[start : start + 4]), facts)
    assert found == set(names)
    only_weak = {key.partition("@")[0] for key in facts.weak_defined} - {
        key.partition("@")[0] for key in facts.defined - facts.weak_defined
    }
    assert only_weak, "libstdc++ defines some names only weakly"
    sample = frozenset(sorted(only_weak)[:5])
    assert subject.defined_among(sample, facts) == sample
    assert subject.defined_among(sample, facts, strong=True) == frozenset()
