"""Linkage verification: ELF facts (``elf``), ld.so-style resolution (``resolve``), rules, report.

Submodules are imported explicitly (``from buildtool.linkage.elf import read_elf_facts``) so that
importing the package stays cheap and free of cycles.
"""

from __future__ import annotations
