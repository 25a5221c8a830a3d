"""PE/COFF facts for ``verify-linkage``: a struct decoder (``decoder``)
and a reference reader on pefile (``reference``, ``--reader pyelftools``) that shares no
decoding with it. PE32 and PE32+ (DLLs, ``.pyd`` extension
modules, executables); the facts' fields as PE fills them are described in ``decoder``'s doc.
Import the names below from the package."""

from __future__ import annotations

from buildtool.linkage.binaries.pe.decoder import MalformedPE, read_pe_facts

__all__ = ["MalformedPE", "read_pe_facts"]
