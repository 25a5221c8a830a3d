"""``buildtool verify-linkage``: prove the split on real binaries (build trees, folders, wheels)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from buildtool.commands.common import add_jobs_option, add_recipe_option, append_step_summary
from buildtool.console import paint, use_colour
from buildtool.errors import ChecksFailed, UsageError
from buildtool.fsutil import write_atomic
from buildtool.linkage.binaries import DECODERS
from buildtool.linkage.verify import verify_paths
from buildtool.verification import policy_for_recipe

if TYPE_CHECKING:
    from buildtool.linkage.report.model import Report
    from buildtool.recipe.load import LoadedRecipe

log = logging.getLogger("buildtool")


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
        choices=("text", "json", "github", "html"),
        default="text",
        help="text (grouped per file), json (versioned, see buildtool/schemas/report.schema.json),"
        " github (workflow annotations; the size table is appended to $GITHUB_STEP_SUMMARY when"
        " set) or html (one self-contained page: link graph, size bars, findings)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="JSON",
        help="the --format json report of an earlier run: every format shows how each library's "
        "size changed, and [verify] max-growth-percent fails growth beyond it (BT131)",
    )
    parser.add_argument(
        "--sizes",
        action="store_true",
        help="text: show the library size table (shown anyway when the recipe sets size budgets "
        "or --baseline is given; json, github and html always carry the sizes)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the report to FILE instead of stdout (a temporary file renamed into place: "
        "never a half-written report)",
    )
    add_jobs_option(
        parser,
        "read the files in N processes at once (default: every CPU available; 1 reads them in "
        "this process). Small inputs are always read in this process.",
    )
    parser.add_argument(
        "--ld-library-path",
        action="store_true",
        help="let LD_LIBRARY_PATH take part in resolving NEEDED entries (off by default: users' "
        "machines do not have the build's)",
    )
    parser.add_argument(
        "--reader",
        choices=DECODERS,
        default="fast",
        help="what decodes the files: fast (default) or pyelftools (tens of times slower, "
        "independent of the fast decoder: a cross-check of its facts; pyelftools for ELF, "
        "macholib for Mach-O, pefile for PE)",
    )


def _recipe(args: argparse.Namespace, paths: list[Path]) -> tuple[LoadedRecipe | None, str]:
    """The recipe applied to ``paths`` and why (``buildtool.recipe.choice``), or none and why."""
    if args.no_recipe:
        if args.recipe is not None:
            raise UsageError("--recipe and --no-recipe exclude each other")
        return None, "--no-recipe"  # and the recipe modules are never imported
    from buildtool.recipe.choice import named_recipe, searched_recipe

    choice = named_recipe(args.recipe) if args.recipe else searched_recipe(paths, Path.cwd())
    return choice.loaded, choice.reason


def _option_values(paths: list[Path], loaded: LoadedRecipe | None) -> dict[str, bool]:
    """The recipe options' values of the configured build folders among ``paths``."""
    if loaded is None or not loaded.recipe.options:
        return {}
    from buildtool.cmake.run import cached_option_values

    values: dict[str, bool] = {}
    for path in paths:
        values.update(cached_option_values(path, list(loaded.recipe.options)))
    return values


def _render(report: Report, output_format: str, colour: bool, sizes: bool) -> str:
    """``report`` as ``output_format``; all but JSON get it with its C++ names demangled (JSON
    keeps them as ``nm`` and the linker print them)."""
    # The report modules come with the checks (``verify`` imports them while the read runs).
    from buildtool.linkage.report.github import render_github
    from buildtool.linkage.report.json_report import render_json
    from buildtool.linkage.report.text import render_text

    if output_format == "json":
        return render_json(report)
    if output_format == "github":
        return render_github(report)
    if output_format == "html":
        from buildtool.linkage.report.html import render_report_html

        return render_report_html(report)
    return render_text(report, lambda text, style: paint(text, style, colour), sizes=sizes)


def run(args: argparse.Namespace) -> int:
    paths: list[Path] = args.paths or [Path("build")]
    ld_library_path = None
    if args.ld_library_path:
        ld_library_path = [entry for entry in os.environ.get("LD_LIBRARY_PATH", "").split(":")]
    baseline = None
    if args.baseline is not None:
        from buildtool.linkage.checks.growth import load_baseline

        baseline = load_baseline(args.baseline)  # before the work: a bad file fails fast
    loaded, reason = _recipe(args, paths)
    policy = policy_for_recipe(loaded, _option_values(paths, loaded), reason)
    report = verify_paths(
        paths,
        policy,
        ld_library_path,
        args.jobs,
        decoder=args.reader,
        baseline=baseline,
        with_graph=args.format == "html",
    )
    from buildtool.linkage.report.github import render_markdown
    from buildtool.linkage.report.text import readable_report

    shown = report if args.format == "json" else readable_report(report)  # one c++filt run
    if args.format == "github":
        append_step_summary(render_markdown(shown))
    if args.output is None:
        sys.stdout.write(_render(shown, args.format, use_colour(sys.stdout), args.sizes))
    else:
        write_atomic(args.output, _render(shown, args.format, colour=False, sizes=args.sizes))
        log.info("report written to %s", args.output)
    if report.failed:
        raise ChecksFailed()
    return 0
