"""The ``[migrate]`` table as compiled matchers. Pure.

The name-boundary rule, the one place it is defined (README, "buildtool migrate"):

- a name whose first character is an identifier character (``[A-Za-z0-9_]``) matches only where
  the character before it is not one, and is not a ``.`` or ``::`` that follows one: ``libdemo.so``
  is not in ``mylibdemo.so``, ``testing.GetShapeElem`` is not in ``rpc.testing.GetShapeElem`` nor
  ``foo`` in ``ns::foo``. The one exception is a ``-D`` or ``-U`` flag right before it
  (``-DBUILD_DUMMY_LIB=ON``);
- a name whose last character is an identifier character matches only where the character after
  it is not one, and is not a ``.`` followed by one: ``libdemo.so`` is not in
  ``libdemo.so_old``, ``rpc.testing`` is not in ``rpc.testing.GetShapeElem``. A sentence may end
  right after a name (``see libdemo.so.``);
- a shared-library name (ending in ``.so``) also matches before a version suffix: ``libdemo.so.0``
  and ``libdemo.so.0.1`` are versioned sonames of ``libdemo.so``, so they are references to it
  (a rename rewrites the name and keeps the suffix);
- a renamed header matches only as the path of an ``#include`` directive (in any file: C and C++
  sources, and code samples in documentation), and in CMake and Python string literals whose
  whole text is the path or ends with ``/`` and the path.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Literal

from buildtool.errors import RecipeError
from buildtool.recipe.load import key_path
from buildtool.recipe.model import MigrateSettings

RuleKind = Literal["renamed", "removed", "renamed-header"]

_IDENTIFIER = "A-Za-z0-9_"
_RIGHT = rf"(?![{_IDENTIFIER}])(?!\.[{_IDENTIFIER}])"
"""Where a name that ends with an identifier character may end."""
_VERSION_SUFFIX = r"(?=\.[0-9])"
"""What may follow a shared-library name besides the end of a name: ``.0`` of ``libdemo.so.0``."""


@dataclasses.dataclass(frozen=True)
class Rule:
    """One entry of ``[migrate]``."""

    kind: RuleKind
    """Which table it comes from: ``renamed``, ``removed`` or ``renamed-header``
    (``renamed-headers``)."""

    old: str
    """The old name or include path, as written in the recipe."""

    new: str = ""
    """The replacement (renamed names and headers); empty for a removed name."""

    advice: str = ""
    """What to do instead (removed names only)."""

    @property
    def fixable(self) -> bool:
        """``--fix`` rewrites it (a rename); a removal is only reported."""
        return self.kind != "removed"


@dataclasses.dataclass(frozen=True)
class Rules:
    """Every rule of a recipe, compiled."""

    names: dict[str, Rule]
    """Renamed and removed names, by old name."""

    headers: dict[str, Rule]
    """Renamed headers, by old include path."""

    name_pattern: re.Pattern[str] | None
    """Matches any old name where the boundary rule allows it; None without names."""

    exclude: tuple[str, ...] = ()
    """Globs (relative to the project root) of files never scanned."""

    @property
    def empty(self) -> bool:
        """The recipe names nothing to look for."""
        return not self.names and not self.headers


def _left(body: str) -> str:
    """After ``body``: where a name that starts with an identifier character may start.

    The checks look back from the end of the name rather than ahead of its start: a pattern that
    begins with the name's first character lets the regex engine skip every position where it
    cannot start, about 40 times faster on a tree of C headers than lookbehinds in front.
    """
    return (
        rf"(?:(?<=(?<![{_IDENTIFIER}])-[DU]{body})"
        rf"|(?<![{_IDENTIFIER}]{body})(?<![{_IDENTIFIER}]\.{body})(?<![{_IDENTIFIER}]::{body}))"
    )


def name_regex(name: str) -> str:
    """The pattern of one name, with the boundary rule applied at each edge."""
    body = re.escape(name)
    left = _left(body) if re.match(f"[{_IDENTIFIER}]", name) else ""
    right = ""
    if re.search(f"[{_IDENTIFIER}]\\Z", name):
        right = f"(?:{_VERSION_SUFFIX}|{_RIGHT})" if name.endswith(".so") else _RIGHT
    return body + left + right


def _names_pattern(names: list[str]) -> re.Pattern[str] | None:
    if not names:
        return None
    # Longest first: where two names start at one place, the longer one is the reference.
    ordered = sorted(names, key=lambda name: (-len(name), name))
    return re.compile("|".join(f"(?:{name_regex(name)})" for name in ordered))


def compile_rules(migrate: MigrateSettings, source: str) -> Rules:
    """Compile ``[migrate]`` (already checked by the recipe loader for empty names, paths and
    duplicates); refuse a replacement in which an old name would match again, since a second
    ``--fix`` would then change it again."""
    names: dict[str, Rule] = {
        old: Rule("renamed", old, new=new) for old, new in migrate.renamed.items()
    }
    names.update(
        {old: Rule("removed", old, advice=advice) for old, advice in migrate.removed.items()}
    )
    headers: dict[str, Rule] = {
        old: Rule("renamed-header", old, new=new) for old, new in migrate.renamed_headers.items()
    }
    pattern = _names_pattern(list(names))
    rules = Rules(names=names, headers=headers, name_pattern=pattern, exclude=migrate.exclude)
    if pattern is not None:
        for old, new in migrate.renamed.items():
            again = pattern.search(new)
            if again:
                key = key_path("migrate.renamed", old)
                raise RecipeError(
                    source,
                    key,
                    f"the replacement {new!r} contains the old name {again.group()!r} as a whole "
                    "name, so a second --fix would rewrite it again",
                )
    return rules
