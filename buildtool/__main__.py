"""``python -m buildtool`` and the ``buildtool`` command: its first moments.

Ctrl-C or SIGTERM while the command line's modules are still being imported ends the run as
it would later: quietly, with 130 or 143 (there is nothing to clean up yet). Only the standard
library's ``os`` and ``signal`` come before that guard; what runs before this module (the
interpreter's own start) is out of its reach.
"""

from __future__ import annotations

import os
import signal
from types import FrameType
from typing import NoReturn

INTERRUPTED = 130
TERMINATED = 143


def _exit_terminated(_signum: int, _frame: FrameType | None) -> None:
    os._exit(TERMINATED)


def console() -> NoReturn:
    """Install the early SIGTERM handler, import the command line, run it."""
    signal.signal(signal.SIGTERM, _exit_terminated)  # cli.main installs its own while it runs
    try:
        from buildtool.cli import console as run

        run()
    except KeyboardInterrupt:  # before main took over, or after it returned
        os._exit(INTERRUPTED)


if __name__ == "__main__":
    console()
