"""``buildtool wheel``: installable wheels of the recipe's project, repaired and verified."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from buildtool.commands.common import (
    add_define_option,
    add_jobs_option,
    add_launcher_option,
    add_recipe_option,
    build_jobs,
    configure_defines,
    resolve_recipe,
)
from buildtool.console import collecting_warnings, warnings_summary
from buildtool.linkage.report.model import Report
from buildtool.linkage.report.text import demangled_names, render_text
from buildtool.packaging import wheel
from buildtool.plan import option_values_from_defines
from buildtool.verification import wheel_verifier

log = logging.getLogger("buildtool")


def populate_parser(parser: argparse.ArgumentParser) -> None:
    add_recipe_option(parser)
    add_launcher_option(parser)
    add_define_option(parser)
    add_jobs_option(parser)
    parser.add_argument(
        "--split",
        dest="variant",
        action="store_const",
        const="split",
        default="full",
        help="build <name>-runtime (the package and the required libraries) plus a "
        "<name>-compiler add-on (the optional ones) instead of one full wheel",
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=Path("dist"),
        metavar="DIR",
        help="where the wheels go; nothing is written there unless every wheel passes "
        "(default: dist)",
    )
    parser.add_argument(
        "--build-dir",
        "--build-root",  # its name before the wheels came from `buildtool build`'s folder
        dest="build_dir",
        type=Path,
        default=Path("build"),
        metavar="DIR",
        help="the CMake build folder every wheel comes from, the one `buildtool build` compiles "
        "(configured for the full build first when it is not; default: build)",
    )
    parser.add_argument(
        "--sdist", action="store_true", help="also build the sdist of the full distribution"
    )


def log_wheel_report(report: Report) -> None:
    """The staged wheels' verify-linkage report: the full text when anything was found."""
    errors, warnings = report.count("error"), report.count("warning")
    if errors or warnings:
        log.info("%s", render_text(report, names=demangled_names(report)).rstrip("\n"))
    log.info(
        "verify-linkage: %d ELF files checked: %d errors, %d warnings",
        report.files_checked,
        errors,
        warnings,
    )


def run(args: argparse.Namespace) -> int:
    loaded = resolve_recipe(args)
    request = wheel.WheelRequest(
        loaded=loaded,
        variant=args.variant,
        out_dir=args.out_dir,
        build_dir=args.build_dir,
        sdist=args.sdist,
        defines=tuple(sorted(configure_defines(args, loaded).items())),
        jobs=build_jobs(args),
    )
    option_values = option_values_from_defines(request.defines)
    with collecting_warnings() as warnings:
        wheel.build_wheels(request, verify=wheel_verifier(loaded, log_wheel_report, option_values))
    if warnings.lines:
        log.warning("wheel: %s", warnings_summary(warnings.lines))
    else:
        log.info("wheel: no warnings from the builds, the repairs or the checks")
    return 0
