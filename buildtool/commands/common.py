"""Options shared by several subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from buildtool.recipe import LoadedRecipe


def add_recipe_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--recipe",
        type=Path,
        metavar="FILE",
        help="recipe TOML or a pyproject.toml with [tool.buildtool] "
        "(default: ./pyproject.toml if it has one, else recipes/demo.toml, the bundled example)",
    )


def add_build_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--build-dir",
        type=Path,
        default=Path("build"),
        metavar="DIR",
        help="CMake build folder (default: build); libraries land in DIR/lib",
    )


def add_launcher_option(parser: argparse.ArgumentParser) -> None:
    from buildtool.launcher import LAUNCHERS  # here: verify-linkage needs no launcher

    parser.add_argument(
        "--launcher",
        choices=LAUNCHERS,
        default=None,
        help="compiler launcher for every C/C++ compile: a cache (ccache, sccache) or distcc "
        "(default: the recipe's build.launcher, else none)",
    )


def resolve_recipe(args: argparse.Namespace) -> LoadedRecipe:
    """The recipe named by --recipe, or the default one."""
    from buildtool.recipe import find_default_recipe, load_recipe

    path: Path | None = args.recipe
    if path is None:
        path = find_default_recipe(Path.cwd())
    return load_recipe(path, str(path))
