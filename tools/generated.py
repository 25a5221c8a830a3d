"""What the generators under ``tools/`` share: the lines every generated data module starts its
code with, and how it wraps a long list of names into string literals."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

IMPORTS = [
    "from __future__ import annotations",
    "",
    "from collections.abc import Mapping",
    "from typing import Final",
    "",
]
"""The imports of a generated data module, after its docstring."""


def wrapped(words: Iterable[str]) -> str:
    """``words`` joined by spaces, as indented string literals of at most 90 columns (one
    string once joined: a module splits it at spaces)."""
    lines = textwrap.wrap(" ".join(words), 86, break_on_hyphens=False)
    return "\n".join(f'    "{line} "' for line in lines)
