"""``buildtool wheel``: installable wheels of the recipe's project, repaired and verified."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from buildtool import wheel
from buildtool.commands.common import add_recipe_option, resolve_recipe
from buildtool.distributions import WHEEL_VARIANTS

VERIFY_MODULE = "buildtool.linkage"
VERIFY_FUNCTION = "verify_wheel"
"""verify-linkage's hook: ``buildtool.linkage.verify_wheel(wheel, plan)``, see ``WheelVerifier``."""


def populate_parser(parser: argparse.ArgumentParser) -> None:
    add_recipe_option(parser)
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


def linkage_verifier() -> wheel.WheelVerifier | None:
    """verify-linkage's wheel check when this buildtool has one, else None."""
    try:
        module = importlib.import_module(VERIFY_MODULE)
    except ImportError:
        return None
    verifier: wheel.WheelVerifier | None = getattr(module, VERIFY_FUNCTION, None)
    return verifier


def run(args: argparse.Namespace) -> int:
    request = wheel.WheelRequest(
        loaded=resolve_recipe(args),
        variant=args.variant,
        out_dir=args.out_dir,
        build_root=args.build_root,
        sdist=args.sdist,
    )
    wheel.build_wheels(request, verify=linkage_verifier())
    return 0
