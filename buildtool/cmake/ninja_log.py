"""What ninja ran in a build folder, from its own record (``.ninja_log``): which objects a
command compiled, told without trusting anyone's output.

ninja appends a line for every command it runs (``start end mtime output hash``, tab-separated)
and, now and then, rewrites the file keeping the last line of each output. The last entry of an
output therefore says when it was last made; an object whose entry changed between two reads was
compiled in between. The parsing is pure (``entries``); ``read`` touches the disk.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath

OBJECT_SUFFIXES = (".o", ".obj")

LOG_NAME = ".ninja_log"


def entries(text: str) -> dict[str, str]:
    """Output path -> its last entry (end time, mtime and command hash), from the log's text;
    comment lines and lines of another shape are left out."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if line.startswith("#") or len(fields) != 5:
            continue
        _, end, mtime, output, digest = fields
        found[output] = f"{end} {mtime} {digest}"
    return found


def read(build_dir: Path) -> dict[str, str]:
    """The entries of ``build_dir``'s log; empty when ninja never built there."""
    try:
        return entries((build_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return {}


def compiled_between(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """The objects made between two reads of a log (new, or with a new entry), sorted."""
    return sorted(
        output
        for output, entry in after.items()
        if output.endswith(OBJECT_SUFFIXES) and before.get(output) != entry
    )


def targets_of(objects: list[str]) -> list[str]:
    """The CMake targets the objects belong to (``CMakeFiles/<target>.dir/...``), sorted."""
    names = set()
    for output in objects:
        parts = PurePosixPath(output).parts
        for part in parts:
            if part.endswith(".dir") and part != ".dir":
                names.add(part.removesuffix(".dir"))
                break
    return sorted(names)
