"""``buildtool configure``: generate the CMake files and configure a Ninja build folder."""

from __future__ import annotations

import argparse
import logging

from buildtool import configure
from buildtool.commands.common import (
    add_build_dir_option,
    add_launcher_option,
    add_recipe_option,
    resolve_recipe,
)
from buildtool.launcher import resolve_launcher_defines

log = logging.getLogger("buildtool")


def populate_parser(parser: argparse.ArgumentParser) -> None:
    add_recipe_option(parser)
    add_build_dir_option(parser)
    add_launcher_option(parser)
    parser.add_argument(
        "--variant",
        choices=configure.VARIANTS,
        default="full",
        help="full builds every library; runtime leaves out the optional ones (default: full)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only check that the generated files are current; exit 1 when they are stale",
    )
    parser.add_argument(
        "-D",
        dest="defines",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra CMake cache entry (repeatable)",
    )


def parse_defines(items: list[str], parser_error: type[Exception]) -> dict[str, str]:
    defines = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise parser_error(f"-D expects NAME=VALUE, found {item!r}")
        defines[name] = value
    return defines


def run(args: argparse.Namespace) -> int:
    from buildtool.errors import UsageError

    loaded = resolve_recipe(args)
    if args.check:
        configure.check_generated(loaded)
        return 0
    defines = {
        **resolve_launcher_defines(args.launcher, loaded),
        **parse_defines(args.defines, UsageError),
    }
    targets = configure.configure(loaded, args.build_dir, args.variant, defines)
    built = [t.name for t in targets if t.type in ("SHARED_LIBRARY", "EXECUTABLE")]
    log.info("configured %s (%s variant): %s", args.build_dir, args.variant, ", ".join(built))
    return 0
