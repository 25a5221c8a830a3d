"""One binary on disk -> its facts, by whichever format's reader knows the file."""

from __future__ import annotations

import os
from collections.abc import Collection

from buildtool.linkage.binaries.facts import BinaryFacts, Decoder


def read_binary_file(
    path: str | os.PathLike[str],
    display_path: str,
    registration_names: Collection[str] = (),
    decoder: Decoder = "fast",
) -> BinaryFacts | None:
    """The facts of a file; None for a file no reader knows (or an empty one). Raises the
    format's ``InputError`` (``MalformedElf``) for a corrupt file."""
    from buildtool.linkage.binaries.elf import read_elf_facts_pyelftools, read_elf_file

    if decoder == "pyelftools":
        return read_elf_facts_pyelftools(path, display_path, registration_names)
    return read_elf_file(path, display_path, registration_names)
