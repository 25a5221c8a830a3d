"""buildtool: declarative runtime/compiler library splits, generated, packaged and proven."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
