"""Small helpers the check families share."""

from __future__ import annotations

import re
from collections.abc import Iterable

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.inputs.collect import BinaryFile

SHOWN = 8
"""How many symbols or names a finding lists before it says "and N more"."""


def listed(items: Iterable[str]) -> str:
    ordered = sorted(items)
    shown = ", ".join(ordered[:SHOWN])
    return shown + (f" and {len(ordered) - SHOWN} more" if len(ordered) > SHOWN else "")


def base_name(binary: BinaryFile) -> str:
    return binary.location.name


GRAFT_SUFFIX = re.compile(r"(?:-[0-9a-f]{8})+(?=\.so)|-[0-9a-f]{32}(?=\.dll\Z)", re.IGNORECASE)
"""auditwheel renames grafted copies ``libx.so`` -> ``libx-1a2b3c4d.so`` (a copy grafted twice,
by two repairs, gets two hashes); delvewheel ``x.dll`` -> ``x-<32 hex digits>.dll``."""


def static_inits(facts: BinaryFacts) -> frozenset[str]:
    # GCC splits cold paths into "<fn>.cold": the same initializer, not another one.
    return frozenset(name.removesuffix(".cold") for name in facts.static_initializers)


def binds_own_calls(facts: BinaryFacts) -> bool:
    """Whether the library's own calls to the functions it exports stay within it, whatever
    else a process loads: ELF linked ``-Bsymbolic``, and every Mach-O file, whose static linker
    calls its own (non-weak) functions directly, leaving dyld nothing to bind."""
    return facts.symbolic or facts.format == "macho"


def own_calls_kept_by(facts: BinaryFacts) -> str:
    """Why ``binds_own_calls`` holds, for the evidence."""
    return "Mach-O calls its own functions directly" if facts.format == "macho" else "-Bsymbolic"


def is_grafted(facts: BinaryFacts) -> bool:
    """A copy a repair tool grafted: by its SONAME (auditwheel), or its file name (delvewheel
    renames the file, not the export directory's name; delocate's ``.dylibs/`` keeps names)."""
    names = (facts.soname or "", facts.path.rsplit("/", 1)[-1])
    return any(GRAFT_SUFFIX.search(name) for name in names) or "/.dylibs/" in facts.path
