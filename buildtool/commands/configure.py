"""``buildtool configure``: generate the CMake files and configure a Ninja build folder."""

from __future__ import annotations

import argparse
import logging

from buildtool.cmake import configure
from buildtool.commands.common import add_configure_options, configure_defines, resolve_recipe

log = logging.getLogger("buildtool")


def populate_parser(parser: argparse.ArgumentParser) -> None:
    add_configure_options(parser)
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


def run(args: argparse.Namespace) -> int:
    loaded = resolve_recipe(args)
    if args.check:
        configure.check_generated(loaded)
        return 0
    defines = configure_defines(args, loaded)
    targets = configure.configure(loaded, args.build_dir, args.variant, defines)
    built = [t.name for t in targets if t.type in ("SHARED_LIBRARY", "EXECUTABLE")]
    log.info(
        "configured the build folder %s/ (%s variant) for %s",
        args.build_dir,
        args.variant,
        ", ".join(built),
    )
    return 0
