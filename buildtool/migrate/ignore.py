"""``.gitignore`` patterns and the recipe's ``exclude`` globs, as regular expressions. Pure.

Used where a project is not a git checkout (a source archive, a copied folder): git itself
answers inside a checkout. The subset implemented is what ``.gitignore`` files hold in practice:
comments, ``!`` negation, a trailing ``/`` for folders only, patterns anchored by a ``/``, ``*``,
``?``, ``[...]`` and ``**``; the last matching pattern wins, and nothing inside an ignored folder
can be re-included (as in git).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence


def glob_regex(pattern: str) -> str:
    """A ``/``-separated glob as a regex over a whole relative path (``**`` spans folders)."""
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        else:
            index = _one(pattern, index, out)
    return "".join(out)


def _one(pattern: str, index: int, out: list[str]) -> int:
    char = pattern[index]
    if char == "*":
        out.append("[^/]*")
    elif char == "?":
        out.append("[^/]")
    elif char == "[" and "]" in pattern[index + 2 :]:
        end = pattern.index("]", index + 2)
        body = pattern[index + 1 : end]
        body = "^" + body[1:] if body.startswith("!") else body
        out.append("[" + body.replace("\\", "\\\\") + "]")
        return end + 1
    elif char == "\\" and index + 1 < len(pattern):
        out.append(re.escape(pattern[index + 1]))
        return index + 2
    else:
        out.append(re.escape(char))
    return index + 1


@dataclasses.dataclass(frozen=True)
class IgnoreRule:
    """One line of a ``.gitignore``."""

    base: str
    """Folder of the ``.gitignore``, relative to the walk's root (``""`` for the root)."""
    pattern: re.Pattern[str]
    """Matches a path relative to ``base`` (anchored patterns) or a bare file name."""
    anchored: bool
    """The pattern holds a ``/``: it matches paths from ``base``, not names at any depth."""
    negated: bool
    """``!pattern``: re-includes what an earlier line ignored."""
    folders_only: bool
    """``pattern/``: matches folders only."""


def parse_gitignore(text: str, base: str) -> list[IgnoreRule]:
    """The rules of one ``.gitignore`` file found in folder ``base``."""
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[1:] if negated else line.removeprefix("\\")
        folders_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        line = line.lstrip("/")
        if line:
            regex = re.compile(glob_regex(line) + r"\Z")
            rules.append(IgnoreRule(base, regex, anchored, negated, folders_only))
    return rules


def is_ignored(path: str, is_folder: bool, rules: Sequence[IgnoreRule]) -> bool:
    """Whether ``path`` (relative to the walk's root, ``/``-separated) is ignored; folders above
    it are the caller's to prune."""
    ignored = False
    for rule in rules:
        if rule.folders_only and not is_folder:
            continue
        prefix = rule.base + "/" if rule.base else ""
        if not path.startswith(prefix):
            continue
        relative = path[len(prefix) :]
        subject = relative if rule.anchored else relative.rsplit("/", 1)[-1]
        if rule.pattern.match(subject):
            ignored = not rule.negated
    return ignored


def excluded(path: str, globs: Sequence[str]) -> bool:
    """Whether ``path`` (relative to the project root) matches one of the recipe's ``exclude``."""
    return any(re.match(glob_regex(glob) + r"\Z", path) for glob in globs)
