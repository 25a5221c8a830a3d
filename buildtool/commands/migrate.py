"""``buildtool migrate``: find (and with ``--fix`` rewrite) the names a split removed or renamed,
as the recipe's ``[migrate]`` table lists them; ``--shims`` writes forwarding headers."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from buildtool.commands.common import add_recipe_option, resolve_recipe
from buildtool.errors import ChecksFailed, UsageError
from buildtool.migrate import report
from buildtool.migrate.files import ScanResult
from buildtool.migrate.fix import apply_rewrites, plan_fixes, render_diff
from buildtool.migrate.rules import Rules
from buildtool.migrate.run import project_rules, scan_project, write_project_shims
from buildtool.recipe.load import LoadedRecipe

log = logging.getLogger("buildtool")

_RENDERERS = {
    "text": report.render_text,
    "json": report.render_json,
    "github": report.render_github,
}


def populate_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="files and folders to scan (default: the recipe's project root); in a git checkout "
        "a folder's files are those git tracks, elsewhere all but what .gitignore ignores",
    )
    add_recipe_option(parser)
    parser.add_argument(
        "--fix",
        action="store_true",
        help="rewrite renamed names and headers in place (removed names are only reported)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="show what --fix would change as a unified diff; write nothing",
    )
    parser.add_argument(
        "--shims",
        nargs="?",
        const=False,  # not a string, so argparse leaves it unconverted: the recipe's folder
        type=Path,
        metavar="DIR",
        help="write a forwarding header at each renamed header's old path under DIR (default: "
        "the recipe's migrate.shims) instead of scanning",
    )
    parser.add_argument(
        "--format",
        choices=tuple(_RENDERERS),
        default="text",
        help='text (file:line:column lines), json ("version": 1) or github (annotations)',
    )


def _shims(loaded: LoadedRecipe, rules: Rules, folder: Path | bool) -> int:
    done = write_project_shims(loaded, rules, folder if isinstance(folder, Path) else None)
    total = len(done.written) + len(done.current)
    sys.stdout.write(
        f"migrate --shims: {total} forwarding headers, {len(done.written)} written, "
        f"{len(done.current)} already current\n"
    )
    return 0


def _fix(result: ScanResult, args: argparse.Namespace) -> str:
    rewrites = plan_fixes(result)
    if args.dry_run:
        sys.stdout.write(render_diff(rewrites))
    else:
        apply_rewrites(rewrites)
    spans = sum(rewrite.spans for rewrite in rewrites)
    return report.fix_summary(result, len(rewrites), spans, dry_run=args.dry_run)


def run(args: argparse.Namespace) -> int:
    if args.dry_run and args.format == "json":
        raise UsageError("--dry-run prints a diff, which is not JSON: use --format text or github")
    loaded = resolve_recipe(args)
    rules = project_rules(loaded)
    if args.shims is not None:
        return _shims(loaded, rules, args.shims)
    if rules.empty:
        log.warning("%s has no [migrate] entries: nothing to look for", loaded.source)
    result = scan_project(loaded, rules, args.paths)
    fixing = args.fix or args.dry_run
    fix_line = _fix(result, args) if fixing else ""
    applied = args.fix and not args.dry_run
    sys.stdout.write(_RENDERERS[args.format](result, fixed=applied))
    if fix_line and args.format != "json":
        sys.stdout.write(fix_line + "\n")
    left = [m for e in result.files for m in e.matches if not (applied and m.rule.fixable)]
    if left:
        raise ChecksFailed()
    return 0
