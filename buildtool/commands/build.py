"""``buildtool build``: compile with ninja; configures first when the folder is not configured."""

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
        default=None,
        help="configure with this variant first (default: keep the folder's, or full)",
    )


def run(args: argparse.Namespace) -> int:
    if args.variant or args.launcher or not configure.is_configured(args.build_dir):
        loaded = resolve_recipe(args)
        defines = resolve_launcher_defines(args.launcher, loaded)
        configure.configure(loaded, args.build_dir, args.variant or "full", defines)
    configure.build(args.build_dir)
    log.info("built %s; libraries in %s", args.build_dir, args.build_dir / "lib")
    return 0
