"""``buildtool check-cmake``: a project's own CMake, checked from its code model."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from buildtool.cmakecheck.check import check_build_dir
from buildtool.cmakecheck.report import CmakeReport, render_github, render_json, render_text
from buildtool.console import paint, use_colour
from buildtool.errors import ChecksFailed, UsageError
from buildtool.fsutil import write_atomic

if TYPE_CHECKING:
    from buildtool.recipe.load import LoadedRecipe

log = logging.getLogger("buildtool")


def populate_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "build_dir",
        type=Path,
        metavar="BUILD_DIR",
        help="a configured CMake build folder (any generator); the File API query is written "
        "and cmake re-run there when its reply is missing or stale",
    )
    parser.add_argument(
        "--recipe",
        type=Path,
        metavar="FILE",
        help="policy recipe (see 'buildtool init --from-cmake'; default: the working folder's, "
        "as for verify-linkage, when BUILD_DIR lies inside it); without one only the checks "
        "that need no policy run, and the target graph is printed",
    )
    parser.add_argument(
        "--no-recipe",
        action="store_true",
        help="run only the checks that need no policy, whatever recipe the working folder has",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json", "github", "html"),
        default="text",
        help="text, json (versioned), github (workflow annotations) or html (one "
        "self-contained page: the findings and the target graph)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the report to FILE instead of stdout (renamed into place)",
    )


def _recipe(args: argparse.Namespace) -> tuple[LoadedRecipe | None, str]:
    """The recipe applied to the build folder and why, or none and why."""
    if args.no_recipe:
        if args.recipe is not None:
            raise UsageError("--recipe and --no-recipe exclude each other")
        return None, "--no-recipe"
    from buildtool.recipe.choice import named_recipe, searched_recipe

    if args.recipe is not None:
        choice = named_recipe(args.recipe)
    else:
        choice = searched_recipe([args.build_dir], Path.cwd())
    return choice.loaded, choice.reason


def _render(report: CmakeReport, output_format: str, colour: bool) -> str:
    if output_format == "json":
        return render_json(report)
    if output_format == "github":
        return render_github(report)
    if output_format == "html":
        from buildtool.cmakecheck.html import render_html

        return render_html(report)
    return render_text(report, lambda text, style: paint(text, style, colour))


def run(args: argparse.Namespace) -> int:
    loaded, reason = _recipe(args)
    report = check_build_dir(args.build_dir, loaded, reason)
    if args.output is None:
        sys.stdout.write(_render(report, args.format, use_colour(sys.stdout)))
    else:
        write_atomic(args.output, _render(report, args.format, colour=False))
        log.info("report written to %s", args.output)
    if report.failed:
        raise ChecksFailed()
    return 0
