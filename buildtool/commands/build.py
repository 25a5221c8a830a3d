"""``buildtool build``: compile with ninja; configures first when the folder is not configured,
when the command line asks for a configure setting, or when the recipe changed since the
folder was configured."""

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
from buildtool.recipe.load import LoadedRecipe, load_recipe

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


def _folder_recipe(args: argparse.Namespace) -> LoadedRecipe:
    """``--recipe``, else the recipe the folder was configured from, else the default one."""
    if args.recipe is None:
        remembered = configure.remembered_recipe(args.build_dir)
        if remembered is not None:
            return load_recipe(remembered, str(remembered))
    return resolve_recipe(args)


def _why_configure(args: argparse.Namespace) -> str | None:
    """Whether the folder is configured before this build: a reason (always), empty (when
    ``configure.reconfiguration`` finds the recipe changed), None (never: built as it is)."""
    if args.variant or args.launcher or args.toolchain or args.defines:
        return "asked"
    if not configure.is_configured(args.build_dir):
        return "not configured yet"
    if args.recipe is None and configure.remembered_recipe(args.build_dir) is None:
        return None  # configured by something else (plain cmake, an older buildtool): as it is
    return ""


def run(args: argparse.Namespace) -> int:
    jobs = build_jobs(args)
    why = _why_configure(args)
    if why is not None:
        loaded = _folder_recipe(args)
        reason = why or configure.reconfiguration(loaded, args.build_dir)
        if reason:
            if not why:
                log.info("%s: %s; configuring it again", args.build_dir, reason)
            variant = args.variant or configure.folder_variant(args.build_dir) or "full"
            defines = configure_defines(args, loaded)
            configure.configure(loaded, args.build_dir, variant, defines)
    configure.build(args.build_dir, jobs)
    log.info("compiled in %s/; libraries in %s/", args.build_dir, args.build_dir / "lib")
    return 0
