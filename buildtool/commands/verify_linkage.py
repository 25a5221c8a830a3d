"""``buildtool verify-linkage``: prove the split on real binaries (build trees, folders, wheels)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from buildtool.commands.common import add_recipe_option
from buildtool.console import paint, use_colour
from buildtool.errors import UsageError
from buildtool.linkage.report import Report, render_github, render_json, render_text
from buildtool.linkage.verify import policy_for_recipe, verify_paths
from buildtool.recipe import LoadedRecipe, find_default_recipe, load_recipe


def populate_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="build trees, folders, installed package folders, ELF files or .whl files "
        "(default: ./build)",
    )
    add_recipe_option(parser)
    parser.add_argument(
        "--no-recipe",
        action="store_true",
        help="run only the checks that need no linkage policy",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json", "github"),
        default="text",
        help="text (grouped per file), json (versioned, see buildtool/schemas/report.schema.json)"
        " or github (workflow annotations)",
    )
    parser.add_argument(
        "--ld-library-path",
        action="store_true",
        help="let LD_LIBRARY_PATH take part in resolving NEEDED entries (off by default: users' "
        "machines do not have the build's)",
    )


def _recipe(args: argparse.Namespace) -> LoadedRecipe | None:
    if args.no_recipe:
        if args.recipe is not None:
            raise UsageError("--recipe and --no-recipe exclude each other")
        return None
    if args.recipe is not None:
        return load_recipe(args.recipe, str(args.recipe))
    try:
        path = find_default_recipe(Path.cwd())
    except UsageError:
        return None  # no recipe around: the generic checks still run
    return load_recipe(path, str(path))


def _render(report: Report, output_format: str) -> str:
    if output_format == "json":
        return render_json(report)
    if output_format == "github":
        return render_github(report)
    colour = use_colour(sys.stdout)
    return render_text(report, lambda text, style: paint(text, style, colour))


def run(args: argparse.Namespace) -> int:
    paths: list[Path] = args.paths or [Path("build")]
    ld_library_path = None
    if args.ld_library_path:
        ld_library_path = [entry for entry in os.environ.get("LD_LIBRARY_PATH", "").split(":")]
    report = verify_paths(paths, policy_for_recipe(_recipe(args)), ld_library_path)
    sys.stdout.write(_render(report, args.format))
    return 1 if report.failed else 0
