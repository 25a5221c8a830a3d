"""The command line: parse, dispatch, and turn buildtool's exceptions into exit codes.

Exit codes: 0 success, 1 checks or a tool failed, 2 bad usage or bad input, 130 interrupted
(Ctrl-C), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType, ModuleType
from typing import Any, NoReturn

from buildtool import __version__
from buildtool.console import install_log_handler
from buildtool.errors import (
    BuildtoolError,
    Interrupted,
    Terminated,
    TerminationRequested,
    UsageError,
)

log = logging.getLogger("buildtool")

COMMANDS: dict[str, tuple[str, str]] = {
    "configure": ("configure", "generate CMake from the recipe and configure a Ninja build"),
    "build": ("build", "compile with ninja (configures first when needed)"),
    "verify-linkage": ("verify_linkage", "check the split on real binaries, folders and wheels"),
    "wheel": ("wheel", "build installable wheels (full, or runtime plus compiler add-on)"),
    "repair": (
        "repair",
        "repair a wheel (auditwheel, delocate, delvewheel) without grafting the project's own "
        "libraries, then verify it: cibuildwheel's repair-wheel-command",
    ),
    "ci": ("ci", "the whole chain as one CI step: build, test, verify, wheels, install, import"),
    "check-cmake": ("check_cmake", "check a project's own CMake build tree for split mistakes"),
    "init": ("init", "write a starter policy recipe (--from-cmake BUILD_DIR)"),
    "migrate": ("migrate", "find and fix the names a split removed or renamed ([migrate])"),
    "schema": ("schema", "print the recipe JSON Schema"),
}
"""Each command: its module under ``buildtool.commands`` (imported only when it runs, or for a
full parser: ``verify-linkage`` need not load the build and wheel machinery) and its summary."""


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f"buildtool.commands.{COMMANDS[name][0]}")


class ArgumentsRejected(UsageError):
    """argparse refused the command line; ``usage`` is the usage line of the parser that did
    (a subcommand's own, for its options)."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is a ``UsageError`` (exit 2 through ``main``)."""

    commands: dict[str, argparse.ArgumentParser]
    """The top parser's subcommand parsers, by name (empty on theirs)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = {}

    def parse_args_strictly(self, arguments: list[str]) -> argparse.Namespace:
        """``parse_args``, but an argument no parser took is refused by the subcommand's parser,
        so the message carries that command's usage line, not the top one's."""
        args, extra = self.parse_known_args(arguments)
        if extra:
            self.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
        return args

    def error(self, message: str) -> NoReturn:
        raise ArgumentsRejected(f"{self.prog}: {message}", self.format_usage())


def _add_verbosity(parser: argparse.ArgumentParser, dest_prefix: str = "") -> None:
    """``-v``/``-q``, before the command or after it (``buildtool build -v``): a command's own
    count under another name, as argparse lets a subcommand's defaults overwrite the top's."""
    parser.add_argument(
        "-v", "--verbose", dest=f"{dest_prefix}verbose", action="count", default=0,
        help="show debug output (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "-q", "--quiet", dest=f"{dest_prefix}quiet", action="count", default=0,
        help="only warnings and errors (repeatable)",
    )  # fmt: skip


def verbosity(args: argparse.Namespace) -> int:
    """The ``-v`` count less the ``-q`` count, wherever on the command line they were."""
    loud: int = args.verbose + getattr(args, "command_verbose", 0)
    quiet: int = args.quiet + getattr(args, "command_quiet", 0)
    return loud - quiet


def make_parser(only: str | None = None) -> _Parser:
    """The whole parser; with ``only``, that command's options and the others' names."""
    parser = _Parser(
        prog="buildtool",
        description="Declarative runtime/compiler library splits: generate, package, prove.",
    )
    parser.add_argument("--version", action="version", version=f"buildtool {__version__}")
    _add_verbosity(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    for name, (_module, summary) in COMMANDS.items():
        sub = subparsers.add_parser(name, help=summary, description=summary)
        _add_verbosity(sub, "command_")
        parser.commands[name] = sub
        if only is None or name == only:
            module = command_module(name)
            populate: Callable[[argparse.ArgumentParser], None] = module.populate_parser
            populate(sub)
    return parser


def _requested_command(argv: Sequence[str]) -> str | None:
    """The command named in ``argv``, when it is one: the global options take no values, so it
    is the first argument that is not an option."""
    first = next((argument for argument in argv if not argument.startswith("-")), None)
    return first if first in COMMANDS else None


def _raise_termination(_signum: int, _frame: FrameType | None) -> None:
    # once: a second SIGTERM must not cut short the cleanup the first one started
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise TerminationRequested


@contextlib.contextmanager
def _termination_as_interrupt() -> Iterator[None]:
    """SIGTERM (what CI runners send on cancel) unwinds like Ctrl-C while ``main`` runs; the
    handler that was there before comes back afterwards (``main`` also runs inside tests)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may handle signals
        return
    previous = signal.signal(signal.SIGTERM, _raise_termination)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_command(args: argparse.Namespace) -> int:
    try:
        module = command_module(args.command)
        result: int = module.run(args)
    except TerminationRequested:
        raise Terminated("terminated (SIGTERM); outputs were left as they were") from None
    except KeyboardInterrupt:
        raise Interrupted("interrupted; outputs were left as they were") from None
    return result


def _parse(arguments: list[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code of a usage error."""
    parser = make_parser(_requested_command(arguments))
    try:
        return parser.parse_args_strictly(arguments)
    except ArgumentsRejected as error:
        sys.stderr.write(f"{error.usage}error: {error}\n")
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run buildtool; return the exit code."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    with _termination_as_interrupt():
        try:
            args = _parse(arguments)
        except TerminationRequested:  # while the command modules are imported
            return Terminated.exit_code
        except KeyboardInterrupt:
            return Interrupted.exit_code
        if isinstance(args, int):
            return args
        install_log_handler(sys.stderr, verbosity(args))
        try:
            return _run_command(args)
        except BuildtoolError as error:
            if str(error):  # ChecksFailed() after a report that said it all: nothing to add
                log.error("%s", error)
            return error.exit_code


def console() -> NoReturn:
    """The ``buildtool`` command and ``python -m buildtool``: ``main``, then an immediate exit.

    When ``main`` returns, every file a command wrote is closed and every process it started
    has ended; what would remain is the interpreter freeing its objects one by one, which no one
    waits for gladly (after verify-linkage on torch/lib: about 20 ms of CPU, 3-5% of the run;
    ``benchmarks/verify_torch.py`` measures it beside an ordinary teardown, row "os._exit after
    main"). So the logs and the standard streams are flushed, and the process ends with
    ``os._exit``.
    """
    code = main()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        # a reader that went away (| head) or a closed stream: nothing more can be written
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
