"""``python -m buildtool``."""

from __future__ import annotations

from buildtool.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
