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
- a shared-library name ``lib<stem>.so`` also stands for its other platforms' file names:
  ``lib<stem>.dylib`` (macOS), ``<stem>.dll`` and ``lib<stem>.dll`` (Windows: MSVC and MinGW),
  and the bare ``lib<stem>`` when it is the whole of a quoted string (a loader's
  ``runtime="libdemo"``), each with the same boundaries; a rename rewrites each into the same
  platform's name of the replacement;
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

    variant_of: str = ""
    """The recipe's ``lib<stem>.so`` name this platform file name (``lib<stem>.dylib``,
    ``<stem>.dll``, a bare ``lib<stem>``) was derived from; empty for the recipe's own names."""

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


_LIBRARY = re.compile(r"lib(?P<stem>[A-Za-z0-9_][A-Za-z0-9_.+-]*?)\.so\Z")


def platform_names(name: str) -> dict[str, str]:
    """``libdemo.so`` -> {``libdemo.dylib``: "dylib", ``demo.dll``: "dll", ``libdemo.dll``:
    "libdll", ``libdemo``: "stem"}; {} for a name that is not ``lib<stem>.so``."""
    found = _LIBRARY.match(name)
    if found is None:
        return {}
    stem = found["stem"]
    return {
        f"lib{stem}.dylib": "dylib",
        f"{stem}.dll": "dll",
        f"lib{stem}.dll": "libdll",
        f"lib{stem}": "stem",
    }


def _platform_name(name: str, kind: str) -> str:
    """The ``kind`` platform name of ``name`` (``platform_names``), or "" when it has none."""
    return next((other for other, k in platform_names(name).items() if k == kind), "")


def _variants(rules: dict[str, Rule]) -> dict[str, Rule]:
    """The platform names of every library rule, unless the recipe names them itself; a rename
    whose replacement is not a ``lib<stem>.so`` name has no platform names to rewrite to."""
    found: dict[str, Rule] = {}
    for old, rule in rules.items():
        for variant, kind in platform_names(old).items():
            new = _platform_name(rule.new, kind) if rule.kind == "renamed" else ""
            if variant in rules or (rule.kind == "renamed" and not new):
                continue
            found[variant] = dataclasses.replace(rule, old=variant, new=new, variant_of=old)
    return found


def _regex_of(name: str, rule: Rule) -> str:
    if rule.variant_of and not name.endswith((".dll", ".dylib")):
        quote = "[\"']"
        return f"{re.escape(name)}(?<={quote}{re.escape(name)})(?={quote})"
    return name_regex(name)


def _names_pattern(names: dict[str, Rule]) -> re.Pattern[str] | None:
    if not names:
        return None
    # Longest first: where two names start at one place, the longer one is the reference.
    ordered = sorted(names, key=lambda name: (-len(name), name))
    return re.compile("|".join(f"(?:{_regex_of(name, names[name])})" for name in ordered))


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
    names.update(_variants(names))
    pattern = _names_pattern(names)
    rules = Rules(names=names, headers=headers, name_pattern=pattern, exclude=migrate.exclude)
    if pattern is not None:
        for old, rule in names.items():
            again = pattern.search(rule.new) if rule.kind == "renamed" else None
            if again:
                key = key_path("migrate.renamed", rule.variant_of or old)
                new = rule.new
                raise RecipeError(
                    source,
                    key,
                    f"the replacement {new!r} contains the old name {again.group()!r} as a whole "
                    "name, so a second --fix would rewrite it again",
                )
    return rules
