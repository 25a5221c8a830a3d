"""``buildtool wheel``: installable wheels of the recipe's project, repaired and verified."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from buildtool import wheel
from buildtool.commands.common import add_launcher_option, add_recipe_option, resolve_recipe
from buildtool.distributions import WHEEL_VARIANTS
from buildtool.launcher import resolve_launcher_defines
from buildtool.linkage.verify import verify_wheels
from buildtool.plan import LinkPlan
from buildtool.recipe import LoadedRecipe

log = logging.getLogger("buildtool")


def populate_parser(parser: argparse.ArgumentParser) -> None:
    add_recipe_option(parser)
    add_launcher_option(parser)
    parser.add_argument(
        "--variant",
        choices=WHEEL_VARIANTS,
        default="full",
        help="full: one wheel with every library; split: <name>-runtime plus a <name>-compiler "
        "add-on (default: full)",
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
        "--build-root",
        type=Path,
        default=Path("build"),
        metavar="DIR",
        help="wheel builds go in DIR/skb/<distribution>/<wheel tag>, apart from the CMake build "
        "folder of `buildtool build` (default: build)",
    )
    parser.add_argument(
        "--sdist", action="store_true", help="also build the sdist of the full distribution"
    )


def linkage_verifier(loaded: LoadedRecipe) -> wheel.WheelVerifier:
    """verify-linkage over all wheels of the variant, with the recipe's policy."""

    def verify(wheels: Sequence[Path], plan: LinkPlan) -> None:
        report = verify_wheels(wheels, plan, loaded)
        log.info(
            "verify-linkage: %d ELF files in %d wheels, no errors",
            report.files_checked,
            len(wheels),
        )

    return verify


def run(args: argparse.Namespace) -> int:
    loaded = resolve_recipe(args)
    request = wheel.WheelRequest(
        loaded=loaded,
        variant=args.variant,
        out_dir=args.out_dir,
        build_root=args.build_root,
        sdist=args.sdist,
        defines=tuple(sorted(resolve_launcher_defines(args.launcher, loaded).items())),
    )
    wheel.build_wheels(request, verify=linkage_verifier(loaded))
    return 0
