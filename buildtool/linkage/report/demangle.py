"""C++ names a person can read: the mangled names in findings' text, demangled by binutils'
``c++filt`` in a child process that ``buildtool.process`` runs (a crafted name that crashes or
hangs the demangler costs that process only). The JSON report keeps the mangled names: they are
what ``nm`` and the linker print."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Mapping

from buildtool.process import filter_text

MANGLED = re.compile(r"(?<![\w$.])_?_Z[\w$.]*\w")
"""An Itanium-mangled name (``_ZN2sp6answerEi``; ``__Z...`` as Mach-O spells it), with its
clone suffixes (``.cold``); a sentence's full stop after it is not part of it."""
LONGEST_NAME = 4096
"""Longer names stay mangled: no message needs them readable, and they are where demanglers
have had their worst bugs."""
MOST_NAMES = 10_000
DEMANGLER_SECONDS = 10.0


def mangled_names(texts: Iterable[str]) -> set[str]:
    """The mangled names in ``texts`` (at most ``MOST_NAMES``, each at most ``LONGEST_NAME``)."""
    found: set[str] = set()
    for text in texts:
        found.update(n for n in MANGLED.findall(text) if len(n) <= LONGEST_NAME)
        if len(found) >= MOST_NAMES:
            break
    return set(sorted(found)[:MOST_NAMES])


def demangle(names: Iterable[str]) -> dict[str, str]:
    """Each name that ``c++filt`` demangles -> its demangled form; nothing when ``c++filt`` is
    not installed or fails (the names then stay as they are)."""
    wanted = sorted(names)
    program = shutil.which("c++filt")
    if not wanted or program is None:
        return {}
    # c++filt takes ELF's spelling; Mach-O's extra leading underscore goes for the call
    spelled = [name[1:] if name.startswith("__Z") else name for name in wanted]
    output = filter_text(
        [program], "\n".join(spelled) + "\n", timeout=DEMANGLER_SECONDS, env={"LC_ALL": "C"}
    )
    if output is None:
        return {}
    readable = output.split("\n")[: len(wanted)]
    if len(readable) != len(wanted):
        return {}
    return {
        name: text
        for name, spelling, text in zip(wanted, spelled, readable, strict=True)
        if text and text != spelling
    }


def readable(text: str, names: Mapping[str, str]) -> str:
    """``text`` with every mangled name ``names`` knows replaced by its demangled form."""
    if not names:
        return text
    return MANGLED.sub(lambda match: names.get(match.group(0), match.group(0)), text)
