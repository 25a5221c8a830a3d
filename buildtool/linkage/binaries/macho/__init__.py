"""Mach-O facts for ``verify-linkage``: a struct decoder (``decoder``)
and a reference reader on macholib (``reference``, ``--reader pyelftools``) that shares no
decoding of load commands or symbols with it. Thin and fat (universal) files, 32 and
64 bit, either byte order; the facts' fields as Mach-O fills them are described in
``decoder``'s doc. Import the names below from the package."""

from __future__ import annotations

from buildtool.linkage.binaries.macho.decoder import MalformedMachO, read_macho_facts

__all__ = ["MalformedMachO", "read_macho_facts"]
