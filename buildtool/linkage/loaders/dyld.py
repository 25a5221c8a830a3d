"""How dyld finds a Mach-O file's libraries (``dyld(1)``, "DYNAMIC LIBRARY LOADING"): the
candidate paths for one load command's name, and the libraries the system provides.

* ``@rpath/x``: each ``LC_RPATH`` of the file that loads it, then of the file that loaded that
  one, and so on up the chain to the root (dyld searches the whole loading chain's run paths);
  ``@loader_path`` in an ``LC_RPATH`` is the folder of the file the entry belongs to.
* ``@loader_path/x``: the folder of the file whose load command it is.
* ``@executable_path/x``: the main executable's folder. For an executable root that is its own
  folder; for a library or an extension module it is the interpreter's (python's), which no
  input says: such an entry is ``UNKNOWN_EXECUTABLE`` and never judged.
* an absolute path under ``/usr/lib/`` or ``/System/Library/``: the operating system's own
  libraries (on current macOS they live in the shared cache, not as files): ``SYSTEM``.
* any other path: that path.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from typing import Final

SYSTEM: Final = "system"
"""The ``via`` of a library the operating system provides."""
UNKNOWN_EXECUTABLE: Final = "executable-path-unknown"
"""The ``via`` of an ``@executable_path`` entry when the executable is not an input."""
SYSTEM_PREFIXES: Final = ("/usr/lib/", "/System/Library/", "/System/iOSSupport/")


def is_system_library(name: str) -> bool:
    return name.startswith(SYSTEM_PREFIXES)


def expand(entry: str, loader_folder: str, executable_folder: str | None) -> str | None:
    """``@loader_path`` and ``@executable_path`` replaced; None when the executable's folder is
    needed and unknown."""
    if entry.startswith("@loader_path"):
        return posixpath.normpath(loader_folder + entry[len("@loader_path") :])
    if entry.startswith("@executable_path"):
        if executable_folder is None:
            return None
        return posixpath.normpath(executable_folder + entry[len("@executable_path") :])
    return posixpath.normpath(entry) if entry else None


def candidates(
    name: str,
    loader_folder: str,
    chain_rpaths: Sequence[tuple[str, Sequence[str]]],
    executable_folder: str | None,
) -> Iterator[tuple[str, str]]:
    """(how, path) dyld tries for load command ``name``; ``chain_rpaths``: (folder, LC_RPATHs)
    of the file that loads it, then of its loaders up to the root."""
    if name.startswith("@rpath/"):
        rest = name[len("@rpath/") :]
        for folder, rpaths in chain_rpaths:
            for entry in rpaths:
                expanded = expand(entry, folder, executable_folder)
                if expanded is not None and not expanded.startswith("@"):
                    yield "rpath", posixpath.join(expanded, rest)
        return
    if name.startswith(("@loader_path", "@executable_path")):
        expanded = expand(name, loader_folder, executable_folder)
        if expanded is not None:
            yield "loader_path" if name.startswith("@loader_path") else "executable_path", expanded
        return
    if name.startswith("/"):
        yield "path", posixpath.normpath(name)
