"""How buildtool looks in a terminal: colour decisions and the log handler the CLI installs."""

from __future__ import annotations

import logging
import os
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
    logger.setLevel(levels[max(-1, min(1, verbosity))])
    return handler
