"""How buildtool looks in a terminal: colour decisions and the log handler the CLI installs."""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from typing import TextIO

RESET = "\033[0m"
STYLES = {
    "bold": "\033[1m",
    "dim": "\033[2m",
    "red": "\033[31m",
    "green": "\033[32m",
    "yellow": "\033[33m",
    "cyan": "\033[36m",
}


def use_colour(stream: TextIO) -> bool:
    """NO_COLOR wins, then FORCE_COLOR, then whether the stream is a terminal."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


def paint(text: str, style: str, enabled: bool) -> str:
    return f"{STYLES[style]}{text}{RESET}" if enabled else text


class ConsoleFormatter(logging.Formatter):
    """Commands in cyan, warnings and errors prefixed, tool output dimmed."""

    def __init__(self, colour: bool) -> None:
        super().__init__()
        self.colour = colour

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.levelno >= logging.ERROR:
            return paint("error: ", "red", self.colour) + message
        if record.levelno >= logging.WARNING:
            return paint("warning: ", "yellow", self.colour) + message
        if message.startswith("$ "):
            return paint(message, "cyan", self.colour)
        if message.startswith("  "):
            return paint(message, "dim", self.colour) if record.levelno < logging.INFO else message
        return message


def install_log_handler(stream: TextIO, verbosity: int) -> logging.Handler:
    """Route the ``buildtool`` logger to ``stream``; -v shows debug, -q only warnings."""
    logger = logging.getLogger("buildtool")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(ConsoleFormatter(use_colour(stream)))
    logger.handlers = [handler]
    logger.propagate = False
    levels = {-1: logging.WARNING, 0: logging.INFO, 1: logging.DEBUG}
    level = levels[max(-1, min(1, verbosity))]
    handler.setLevel(level)
    # The logger still passes tool output (INFO) under -q: warnings among it are counted.
    logger.setLevel(min(level, logging.INFO))
    return handler


TOOL_WARNING = re.compile(r"\bwarning:|\bCMake (Deprecation )?Warning\b", re.IGNORECASE)
"""A warning in a tool's output: a compiler's or linker's (``a.cc:3:5: warning: ...``,
``ld: warning: ...``) or CMake's (``CMake Warning (dev) at ...``)."""

TOOL_OUTPUT_PREFIX = "  "
"""How ``process.run`` logs the lines of a tool's output."""


class WarningCollector(logging.Handler):
    """Collects the warnings logged while it is installed: buildtool's own (level WARNING) and
    the warning lines of the tools it runs."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        own = logging.WARNING <= record.levelno < logging.ERROR
        tool = message.startswith(TOOL_OUTPUT_PREFIX) and TOOL_WARNING.search(message)
        if own or tool:
            self.lines.append(message.strip())


@contextlib.contextmanager
def collecting_warnings() -> Iterator[WarningCollector]:
    """Count the warnings logged inside the ``with`` block (see ``WarningCollector``)."""
    logger = logging.getLogger("buildtool")
    collector = WarningCollector()
    level = logger.level
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)  # tool output is logged at INFO
    logger.addHandler(collector)
    try:
        yield collector
    finally:
        logger.removeHandler(collector)
        logger.setLevel(level)


def warnings_summary(lines: list[str], shown: int = 20) -> str:
    """``3 warnings:`` and the first ``shown`` of them, one per line."""
    listed = "".join(f"\n  {line}" for line in lines[:shown])
    more = f"\n  ... and {len(lines) - shown} more" if len(lines) > shown else ""
    return f"{len(lines)} warning{'s' if len(lines) != 1 else ''}:{listed}{more}"


def escape_data(text: str) -> str:
    """A GitHub workflow command's message, escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A GitHub workflow command's property value (``file=``, ``title=``), escaped."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")
