"""PE/COFF facts for ``verify-linkage``: a struct decoder (``decoder``);
there is no second, independent reader yet (``--reader pyelftools`` reads these files with it
too). PE32 and PE32+ (DLLs, ``.pyd`` extension
modules, executables); the facts' fields as PE fills them are described in ``decoder``'s doc.
Import the names below from the package."""

from __future__ import annotations

from buildtool.linkage.binaries.pe.decoder import DOS_MAGIC, MalformedPE, read_pe_facts

__all__ = ["DOS_MAGIC", "MalformedPE", "read_pe_facts"]
