"""The command line: parse, dispatch, and turn buildtool's exceptions into exit codes.

Exit codes: 0 success, 1 checks or a tool failed, 2 bad usage or bad input, 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import NoReturn

from buildtool import __version__
from buildtool.commands import build, ci, configure, schema, verify_linkage, wheel
from buildtool.console import install_log_handler
from buildtool.errors import BuildtoolError, Interrupted

log = logging.getLogger("buildtool")

COMMANDS: dict[str, tuple[ModuleType, str]] = {
    "configure": (configure, "generate CMake from the recipe and configure a Ninja build"),
    "build": (build, "compile with ninja (configures first when needed)"),
    "verify-linkage": (verify_linkage, "check the split on real binaries, folders and wheels"),
    "wheel": (wheel, "build installable wheels (full, or runtime plus compiler add-on)"),
    "ci": (ci, "the whole chain as one CI step: build, test, verify, wheels, install, import"),
    "schema": (schema, "print the recipe JSON Schema"),
}


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is a ``UsageError`` (exit 2 through ``main``)."""

    def error(self, message: str) -> NoReturn:
        raise _ArgumentError(f"{self.prog}: {message}")


class _ArgumentError(BuildtoolError):
    """Bad command-line arguments."""


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="buildtool",
        description="Declarative runtime/compiler library splits: generate, package, prove.",
    )
    parser.add_argument("--version", action="version", version=f"buildtool {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="show debug output")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="only warnings and errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    for name, (module, summary) in COMMANDS.items():
        sub = subparsers.add_parser(name, help=summary, description=summary)
        populate: Callable[[argparse.ArgumentParser], None] = module.populate_parser
        populate(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run buildtool; return the exit code."""
    parser = make_parser()
    try:
        args = parser.parse_args(argv)
    except _ArgumentError as error:
        sys.stderr.write(f"{parser.format_usage()}error: {error}\n")
        return 2
    install_log_handler(sys.stderr, args.verbose - args.quiet)
    module = COMMANDS[args.command][0]
    try:
        try:
            result: int = module.run(args)
        except KeyboardInterrupt:
            raise Interrupted("interrupted; outputs were left as they were") from None
    except BuildtoolError as error:
        log.error("%s", error)
        return error.exit_code
    return result
