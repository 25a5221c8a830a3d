"""``buildtool build``: compile with ninja; configures first when the folder is not configured
or when the command line asks for a configure setting."""

from __future__ import annotations

import argparse
import logging

from buildtool.cmake import configure
from buildtool.commands.common import (
    add_configure_options,
    add_jobs_option,
    build_jobs,
    configure_defines,
    resolve_recipe,
)

log = logging.getLogger("buildtool")


def populate_parser(parser: argparse.ArgumentParser) -> None:
    add_configure_options(parser)
    add_jobs_option(parser)
    parser.add_argument(
        "--variant",
        choices=configure.VARIANTS,
        default=None,
        help="configure with this variant first (default: keep the folder's, or full)",
    )


def run(args: argparse.Namespace) -> int:
    jobs = build_jobs(args)
    asked = args.variant or args.launcher or args.toolchain or args.defines
    if asked or not configure.is_configured(args.build_dir):
        loaded = resolve_recipe(args)
        defines = configure_defines(args, loaded)
        configure.configure(loaded, args.build_dir, args.variant or "full", defines)
    configure.build(args.build_dir, jobs)
    log.info("built %s; libraries in %s", args.build_dir, args.build_dir / "lib")
    return 0
