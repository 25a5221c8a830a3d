"""The processes of this machine as the tests see them, read from /proc."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


def processes() -> Iterator[tuple[int, int, str]]:
    """(pid, parent pid, command name) of every process, from /proc."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        yield int(entry.name), ppid, name


def descendants(root: int) -> dict[int, str]:
    """pid -> command name of every process below ``root``."""
    parents = {pid: (ppid, name) for pid, ppid, name in processes()}
    found: dict[int, str] = {}
    frontier = {root}
    while frontier:
        frontier = {pid for pid, (ppid, _) in parents.items() if ppid in frontier} - found.keys()
        found.update({pid: parents[pid][1] for pid in frontier})
    return found
