"""One binary -> its facts, by whichever format's reader knows the file (``magic``)."""

from __future__ import annotations

import mmap
import os
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from buildtool.linkage.binaries.bounded import Buffer
from buildtool.linkage.binaries.facts import BinaryFacts, Decoder, InitializerReach
from buildtool.linkage.binaries.magic import HEAD_BYTES, binary_format

if TYPE_CHECKING:
    from buildtool.linkage.binaries.code_walk import Depth


def read_other_format(
    data: Buffer,
    display_path: str,
    registration_names: Collection[str] = (),
    *,
    size: int | None = None,
    decoder: Decoder = "fast",
    read_code: bool = True,
) -> BinaryFacts | None:
    """The facts of a Mach-O or PE file's bytes (ELF has its own, richer entry points: parts,
    sparse reads); None for any other file. Raises the format's ``MalformedBinary``.
    ``decoder``: ``pyelftools`` reads them with the reference readers (macholib, pefile);
    ``read_code=False``: a Mach-O library's initializers are left unread (``read_macho_facts``)."""
    kind = binary_format(bytes(data[:HEAD_BYTES]))
    if kind == "macho" and decoder == "pyelftools":
        from buildtool.linkage.binaries.macho.reference import read_macho_reference

        return read_macho_reference(data, display_path, registration_names, size)
    if kind == "macho":
        from buildtool.linkage.binaries.macho import read_macho_facts

        return read_macho_facts(data, display_path, registration_names, size, read_code=read_code)
    if kind == "pe" and decoder == "pyelftools":
        from buildtool.linkage.binaries.pe.reference import read_pe_reference

        return read_pe_reference(data, display_path, registration_names, size)
    if kind == "pe":
        from buildtool.linkage.binaries.pe import read_pe_facts

        return read_pe_facts(data, display_path, registration_names, size)
    return None


def read_binary_file(
    path: str | os.PathLike[str],
    display_path: str,
    registration_names: Collection[str] = (),
    decoder: Decoder = "fast",
    *,
    loader_facts_only: bool = False,
) -> BinaryFacts | None:
    """The facts of a file; None for a file no reader knows (or an empty one). Raises the
    format's ``MalformedBinary`` (``MalformedElf``, ``MalformedMachO``, ``MalformedPE``) for a
    corrupt file. ``loader_facts_only``: an ELF file read to resolve a closure, without what
    only the inputs' checks read (``read_elf_file``)."""
    from buildtool.linkage.binaries.elf import read_elf_facts_pyelftools, read_elf_file

    with Path(path).open("rb") as stream:
        kind = binary_format(stream.read(HEAD_BYTES))
    if kind is None:
        return None
    if kind == "elf":
        if decoder == "pyelftools":
            return read_elf_facts_pyelftools(path, display_path, registration_names)
        return read_elf_file(
            path, display_path, registration_names, loader_facts_only=loader_facts_only
        )
    with (
        Path(path).open("rb") as stream,
        mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped,
    ):
        return read_other_format(mapped, display_path, registration_names, decoder=decoder)


def read_function_names_again(
    data: Buffer,
    display_path: str,
    digests: Collection[int],
    *,
    size: int | None = None,
    file_backed: bool = False,
) -> dict[int, str]:
    """The names of a file's functions (``BinaryFacts.symtab_functions``) whose digests are in
    ``digests``, by digest: ELF's ``.symtab``, Mach-O's external symbols; none for PE."""
    kind = binary_format(bytes(data[:HEAD_BYTES]))
    if kind == "elf":
        from buildtool.linkage.binaries.elf import read_function_names

        return read_function_names(data, display_path, digests, size=size, file_backed=file_backed)
    if kind == "macho":
        from buildtool.linkage.binaries.macho.decoder import read_macho_function_names

        return read_macho_function_names(data, display_path, digests, size=size)
    return {}


def read_initializers_again(
    data: Buffer,
    display_path: str,
    *,
    size: int | None = None,
    file_backed: bool = False,
    deep: Depth = True,
) -> tuple[InitializerReach, ...]:
    """Only a file's initializers, read again (``deep``: as ``code_walk.walk_initializers``
    takes it); none for a file of no format read here."""
    kind = binary_format(bytes(data[:HEAD_BYTES]))
    if kind == "elf":
        from buildtool.linkage.binaries.elf import read_elf_initializers

        return read_elf_initializers(
            data, display_path, size=size, file_backed=file_backed, deep=deep
        )
    if kind == "macho":
        from buildtool.linkage.binaries.macho.decoder import read_macho_initializers

        return read_macho_initializers(data, display_path, size=size, deep=deep)
    if kind == "pe":
        from buildtool.linkage.binaries.pe.decoder import read_pe_initializers

        return read_pe_initializers(data, display_path, size=size, deep=deep)
    return ()
