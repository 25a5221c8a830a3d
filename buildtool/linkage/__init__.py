"""verify-linkage, knowing nothing of recipes: ``inputs`` (getting the bytes), ``binaries``
(format-neutral facts; ``binaries.elf`` the only place that knows ELF), ``loaders`` (how a
platform's loader finds dependencies and binds symbols), ``checks`` (the catalogue and the
checks, on facts and a loader only), ``report`` (text, JSON, GitHub, HTML) and ``verify`` (the
pipeline on top).

Submodules are imported explicitly (``from buildtool.linkage.binaries import BinaryFacts``) so
that importing the package stays cheap and free of cycles.
"""

from __future__ import annotations
