"""``python -m buildtool``."""

from __future__ import annotations

from buildtool.cli import console

if __name__ == "__main__":
    console()
