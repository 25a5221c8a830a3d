"""Which CPython an extension module is built for, and what that CPython exports.

An extension module binds its ``Py*`` references against the interpreter that imports it, so
they are judged against the CPython its name or its wheel's tags promise, never against the
interpreter that runs the check: ``properties.cpython-311-x86_64-linux-gnu.so`` against 3.11's
libpython (``loaders.cpython_exports``), an ``abi3`` module against the stable ABI from the
oldest release its tag names on (abi3info's data: the members of CPython's
``Misc/stable_abi.toml`` and the release that added each; only the data is read, through its
public mappings). Pure, except that ``stable_abi`` imports abi3info the first time it is asked.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from typing import Final

from buildtool.linkage.loaders.cpython_exports import CPYTHON_EXPORTS, RELEASES

Version = tuple[int, int]

_SUFFIX: Final = re.compile(r"\.cpython-3(\d+)([a-z]*)-[^.]+\.so\Z|\.abi3\.so\Z")
_PYTHON_TAG: Final = re.compile(r"cp3(\d+)\Z")
_ABI_TAG: Final = re.compile(r"cp3(\d+)(m?)\Z")


@dataclasses.dataclass(frozen=True)
class CPythonTarget:
    """The CPython a binary is built for."""

    version: Version
    """The release (3, 11); for ``abi3``, the oldest release the wheel's tag names."""
    abi3: bool
    """Built for the stable ABI: every release from ``version`` on imports it."""
    said_by: str
    """What says so, for messages (``its name (cpython-311)``, ``the wheel tag cp311``)."""

    @property
    def shown(self) -> str:
        release = f"{self.version[0]}.{self.version[1]}"
        return f"CPython {release}+ (abi3)" if self.abi3 else f"CPython {release}"


def _from_name(match: re.Match[str], tags: Sequence[str]) -> CPythonTarget | None:
    """From the file's suffix: a target, or None for a build no list describes (debug,
    free-threaded)."""
    if match.group(1) is None:  # .abi3.so: the oldest release comes from the tag
        tagged = _from_tags(tags)
        return tagged if tagged is not None and tagged.abi3 else None
    if match.group(2) not in ("", "m"):
        return None
    shown = f"its name (cpython-3{match.group(1)}{match.group(2)})"
    return CPythonTarget((3, int(match.group(1))), abi3=False, said_by=shown)


def _from_tags(tags: Sequence[str]) -> CPythonTarget | None:
    """From a wheel's ``python-abi`` tags (``cp311``/``cp311``, ``cp39``/``abi3``): one target,
    or None when they name none or several."""
    if len(tags) != 2 or "." in tags[0] or "." in tags[1]:
        return None
    python, abi = tags
    if abi == "abi3":
        match = _PYTHON_TAG.match(python)
        if match is None:
            return None
        return CPythonTarget((3, int(match.group(1))), True, f"the wheel tag {python}-abi3")
    found = _ABI_TAG.match(abi)
    if found is None:
        return None
    return CPythonTarget((3, int(found.group(1))), False, f"the wheel tag {abi}")


def target_of(file_name: str, wheel_tags: Sequence[str]) -> CPythonTarget | None:
    """The CPython ``file_name`` is built for: its suffix's, else its wheel's ``python-abi``
    tags' (``wheel_tags``: () outside a wheel); None when neither says, or when they name a
    build no list describes."""
    match = _SUFFIX.search(file_name)
    return _from_name(match, wheel_tags) if match else _from_tags(wheel_tags)


def wheel_interpreter_tags(file_name: str) -> tuple[str, ...]:
    """The ``python`` and ``abi`` tags of a wheel file name, or ()."""
    if not file_name.endswith(".whl"):
        return ()
    parts = file_name[: -len(".whl")].split("-")
    return (parts[-3], parts[-2]) if len(parts) >= 5 else ()


def _key(version: str) -> Version:
    major, minor = version.split(".")
    return (int(major), int(minor))


KNOWN: Final[Mapping[Version, frozenset[str]]] = {
    _key(minor): names for minor, names in CPYTHON_EXPORTS.items()
}
"""Each release with an export list -> the C-API names its libpython exports."""


def release_read(version: Version) -> str:
    """The full release a version's list was read from (``3.11.7``)."""
    return RELEASES[f"{version[0]}.{version[1]}"]


def releases_lacking(name: str, since: Version) -> tuple[Version, ...]:
    """The releases from ``since`` on, among those with a list, whose libpython lacks ``name``."""
    return tuple(v for v in sorted(KNOWN) if v >= since and name not in KNOWN[v])


def releases_exporting(name: str) -> tuple[Version, ...]:
    return tuple(v for v in sorted(KNOWN) if name in KNOWN[v])


@functools.cache
def stable_abi() -> Mapping[str, Version] | None:
    """Each stable-ABI name (functions and data, ``abi_only`` ones included) -> the release
    that added it, from abi3info; None when abi3info is not installed (then ``abi3`` modules
    are judged by the export lists alone)."""
    try:
        import abi3info
    except ImportError:
        return None
    members = [*abi3info.FUNCTIONS.values(), *abi3info.DATAS.values()]
    return {m.symbol.name: (m.added.major, m.added.minor) for m in members}


def shown_versions(versions: Sequence[Version]) -> str:
    """``3.6-3.8, 3.11``: runs of consecutive minor versions folded."""
    runs: list[list[Version]] = []
    for version in sorted(versions):
        if runs and version == (runs[-1][-1][0], runs[-1][-1][1] + 1):
            runs[-1].append(version)
        else:
            runs.append([version])
    return ", ".join(
        f"{r[0][0]}.{r[0][1]}" + (f"-{r[-1][0]}.{r[-1][1]}" if len(r) > 1 else "") for r in runs
    )
