"""``buildtool ci``: the whole chain as one CI step, rendered the way the CI system expects.

Under GitHub Actions (``GITHUB_ACTIONS=true``) each step is a ``::group::``, verify-linkage
findings become ``::error file=...::`` annotations and the summary goes to
``$GITHUB_STEP_SUMMARY``; elsewhere the output is plain, coloured when NO_COLOR/FORCE_COLOR and
the terminal allow. Everything (tool output included) goes to stdout, so folds and the lines
they hold stay in order.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from buildtool.ci import pipeline, policy_only, reports
from buildtool.cmake.launcher import chosen_launcher
from buildtool.commands.common import (
    add_build_dir_option,
    add_define_option,
    add_jobs_option,
    add_launcher_option,
    add_recipe_option,
    append_step_summary,
    build_jobs,
    configure_defines,
    resolve_recipe,
)
from buildtool.console import escape_data, install_log_handler, paint, use_colour
from buildtool.errors import Interrupted, Terminated
from buildtool.fsutil import check_folder_possible, write_atomic
from buildtool.linkage.checks.growth import load_baseline
from buildtool.linkage.report.github import github_annotation
from buildtool.linkage.report.text import readable_findings


def populate_parser(parser: argparse.ArgumentParser) -> None:
    add_recipe_option(parser)
    add_build_dir_option(parser)
    add_launcher_option(parser)
    add_jobs_option(parser)
    add_define_option(parser)
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=Path("dist"),
        metavar="DIR",
        help=f"wheels, {reports.JSON_NAME}, {reports.JUNIT_NAME} and {reports.HTML_NAME} go here "
        "(default: dist)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="JSON",
        help="an earlier verify-linkage --format json report (e.g. of the target branch): "
        "verify-build shows each library's size change against it and fails growth beyond "
        "[verify] max-growth-percent (BT131)",
    )


class ConsoleRenderer:
    """Plain or coloured step headers and results."""

    def __init__(self, stream: TextIO, colour: bool) -> None:
        self.stream = stream
        self.colour = colour

    def paint(self, text: str, style: str) -> str:
        return paint(text, style, self.colour)

    def write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def step_started(self, step: pipeline.Step, number: int, total: int) -> None:
        self.write(self.paint(f"==> [{number}/{total}] {step.name}: {step.summary}", "bold"))

    def step_finished(self, result: pipeline.StepResult) -> None:
        style = reports.STATUS_STYLES[result.status]
        status = self.paint(result.status, style)
        self.write(f"<== {result.name} {status} in {result.seconds:.2f} s")
        if result.detail:
            shown = (
                result.detail if result.status == "failed" else reports.first_line(result.detail)
            )
            self.write(f"    {shown}")


class GitHubRenderer(ConsoleRenderer):
    """Workflow commands: a fold per step, annotations for findings and failures."""

    def step_started(self, step: pipeline.Step, number: int, total: int) -> None:
        self.write(f"::group::[{number}/{total}] {step.name}: {step.summary}")

    def step_finished(self, result: pipeline.StepResult) -> None:
        self.write("::endgroup::")
        for finding in readable_findings(result.findings):
            self.write(github_annotation(finding))
        if result.status == "failed" and not result.findings:
            self.write(f"::error title=buildtool ci {result.name}::{escape_data(result.detail)}")
        super().step_finished(result)


def on_github() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def write_reports(result: pipeline.CiResult, out_dir: Path) -> list[Path]:
    """``buildtool-ci.json``, ``buildtool-ci.junit.xml`` and ``buildtool-ci.html`` (the steps,
    and the verify-linkage reports once verify-linkage ran), each replaced atomically."""
    json_path = out_dir / reports.JSON_NAME
    junit_path = out_dir / reports.JUNIT_NAME
    write_atomic(json_path, reports.render_json(result))
    write_atomic(junit_path, reports.render_junit(result))
    written = [json_path, junit_path]
    html_path = out_dir / reports.HTML_NAME
    write_atomic(html_path, reports.render_html(result))
    written.append(html_path)
    return written


def _render_end(renderer: ConsoleRenderer, result: pipeline.CiResult, written: list[Path]) -> None:
    renderer.write("")
    renderer.write(reports.render_table(result, renderer.paint).rstrip("\n"))
    renderer.write(f"reports: {', '.join(str(path) for path in written)}")
    style = "green" if result.passed else "red"
    renderer.write(renderer.paint(reports.verdict(result), style))


def run(args: argparse.Namespace) -> int:
    loaded = resolve_recipe(args)
    launcher, _ = chosen_launcher(args.launcher, loaded)
    baseline = load_baseline(args.baseline) if args.baseline is not None else None
    for folder in (args.out_dir, args.build_dir):  # before any step: exit 2, nothing half-run
        check_folder_possible(folder)
    request = pipeline.CiRequest(
        loaded=loaded,
        out_dir=args.out_dir,
        build_dir=args.build_dir,
        launcher=launcher,
        defines=tuple(sorted(configure_defines(args, loaded).items())),
        baseline=baseline,
        jobs=build_jobs(args),
    )
    # A recipe without sources: the project's own CMake and pyproject.toml (bad input: exit 2)
    own = policy_only.prepare(request) if policy_only.is_policy_only(loaded) else None
    # Usage errors above went to stderr; from here on one stream keeps folds and lines in order.
    stream = sys.stdout
    install_log_handler(stream, args.verbose - args.quiet)
    github = on_github()
    renderer_type = GitHubRenderer if github else ConsoleRenderer
    renderer = renderer_type(stream, use_colour(stream))
    if own is None:
        result = pipeline.run_ci(request, renderer)
    else:
        workspace, steps = own
        result = pipeline.run_ci(request, renderer, steps, workspace)
    written = write_reports(result, args.out_dir)
    if github:
        append_step_summary(reports.render_markdown(result))
    _render_end(renderer, result, written)
    if result.terminated:
        raise Terminated("terminated; the reports name the step that was running")
    if result.interrupted:
        raise Interrupted("interrupted; the reports name the step that was running")
    return 0 if result.passed else 1
