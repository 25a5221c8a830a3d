"""``buildtool repair -w DEST WHEEL``: cibuildwheel's ``repair-wheel-command`` for a split.

auditwheel, delocate or delvewheel (by the wheel's platform) with the recipe's libraries
excluded, then verify-linkage on the repaired wheel with the recipe as the policy. The repaired
wheel reaches DEST only when both pass.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from buildtool.commands.common import add_recipe_option, append_step_summary, resolve_recipe
from buildtool.errors import ChecksFailed
from buildtool.linkage.report.github import render_github, render_markdown
from buildtool.linkage.report.json_report import render_json
from buildtool.linkage.report.model import Report, renamed_inputs
from buildtool.linkage.report.text import demangled_names, render_text
from buildtool.linkage.verify import verify_paths
from buildtool.packaging import repair
from buildtool.plan import LinkPlan
from buildtool.recipe.load import LoadedRecipe
from buildtool.verification import plan_for_policy, policy_from_plan

log = logging.getLogger("buildtool")


def populate_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "wheel", type=Path, metavar="WHEEL", help="the wheel as built (cibuildwheel: {wheel})"
    )
    parser.add_argument(
        "-w",
        "--wheel-dir",
        dest="dest",
        type=Path,
        required=True,
        metavar="DEST",
        help="where the repaired wheel goes (cibuildwheel: {dest_dir}); nothing is written "
        "there unless the repair and verify-linkage pass",
    )
    add_recipe_option(parser)
    parser.add_argument(
        "--plat",
        metavar="TAG",
        default=None,
        help="Linux: the platform tag auditwheel gives the wheel (default: the recipe's [wheel] "
        "platform-tag when it pins one, else auditwheel's own: $AUDITWHEEL_PLAT, which the "
        "manylinux images set, else the most compatible one)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json", "github"),
        default="text",
        help="the verify-linkage report on stdout: text, json (versioned) or github (workflow "
        "annotations, and the size table appended to $GITHUB_STEP_SUMMARY)",
    )


def _platform_tag(args: argparse.Namespace, loaded: LoadedRecipe) -> str | None:
    if args.plat is not None:
        return str(args.plat)
    pinned = loaded.recipe.wheel.platform_tag
    return None if pinned == "auto" else pinned


def _render(report: Report, output_format: str) -> str:
    if output_format == "json":
        return render_json(report)
    if output_format == "github":
        append_step_summary(render_markdown(report))
        return render_github(report)
    return render_text(report, names=demangled_names(report))


def _verifier(loaded: LoadedRecipe, output_format: str, dest: Path) -> repair.Verifier:
    def verify(wheels: Sequence[Path], plan: LinkPlan, /, published: Sequence[Path] = ()) -> None:
        report = verify_paths(wheels, policy_from_plan(plan, loaded.recipe.verify))
        shown = {str(old): str(new) for old, new in zip(wheels, published, strict=False)}
        report = renamed_inputs(report, shown)
        sys.stdout.write(_render(report, output_format))
        if report.failed:
            repaired = ", ".join(wheel.name for wheel in wheels)
            raise ChecksFailed(
                f"verify-linkage failed on the repaired {repaired}; nothing was written to {dest}"
            )

    return verify


def run(args: argparse.Namespace) -> int:
    loaded = resolve_recipe(args)
    request = repair.RepairRequest(
        wheel=args.wheel,
        dest=args.dest,
        plan=plan_for_policy(loaded),
        platform_tag=_platform_tag(args, loaded),
    )
    repair.repair_into(request, _verifier(loaded, args.format, args.dest))
    return 0
