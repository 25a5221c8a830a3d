"""Options shared by several subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from buildtool.recipe.load import LoadedRecipe


def add_recipe_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--recipe",
        type=Path,
        metavar="FILE",
        help="recipe TOML or a pyproject.toml with [tool.buildtool] (default: ./buildtool.toml, "
        "else ./pyproject.toml if it has that table, else the only ./recipes/*.toml)",
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
    from buildtool.cmake.launcher import LAUNCHERS  # here: verify-linkage needs no launcher

    parser.add_argument(
        "--launcher",
        choices=LAUNCHERS,
        default=None,
        help="compiler launcher for every C/C++ compile: a cache (ccache, sccache) or distcc "
        "(default: the recipe's build.launcher, else none)",
    )


COMPILE_JOBS_HELP = (
    "run N compile jobs at once (default: CMAKE_BUILD_PARALLEL_LEVEL, else ninja's own choice: "
    "the number of cores plus two)"
)


def add_jobs_option(parser: argparse.ArgumentParser, help_text: str = COMPILE_JOBS_HELP) -> None:
    """``-j N``/``--jobs N``: how many things at once, on every command that does several (compiles
    on build, wheel and ci; reader processes on verify-linkage)."""
    parser.add_argument(
        "-j", "--jobs", type=_positive, default=None, metavar="N", help=help_text
    )  # fmt: skip


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, found {text!r}")
    return int(text)


def build_jobs(args: argparse.Namespace) -> int | None:
    """The ``-j`` of the command line, else ``CMAKE_BUILD_PARALLEL_LEVEL``, else None."""
    import os

    from buildtool.cmake.run import parallel_jobs

    return parallel_jobs(args.jobs, os.environ)


def resolve_recipe(args: argparse.Namespace) -> LoadedRecipe:
    """The recipe named by --recipe, or the default one."""
    from buildtool.errors import UsageError
    from buildtool.recipe.load import NO_RECIPE_FOUND, find_default_recipe, load_recipe

    path: Path | None = args.recipe
    if path is None:
        path = find_default_recipe(Path.cwd())
    if path is None:
        raise UsageError(NO_RECIPE_FOUND)
    return load_recipe(path, str(path))


def add_configure_options(parser: argparse.ArgumentParser) -> None:
    """What every command that configures a build folder accepts: recipe, build folder,
    launcher, toolchain and extra cache entries."""
    add_recipe_option(parser)
    add_build_dir_option(parser)
    add_launcher_option(parser)
    add_toolchain_option(parser)
    add_define_option(parser)


def add_toolchain_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--toolchain",
        metavar="NAME|FILE",
        default=None,
        help="cross-compile with a toolchain buildtool ships (mingw-w64-x86_64: Windows x64 "
        "DLLs and executables; aarch64-linux-gnu: Linux aarch64) or a CMake toolchain file of "
        "the project's; a build folder keeps the toolchain of its first configure",
    )


def add_define_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-D",
        dest="defines",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra CMake cache entry for the configure and every wheel build, passed to CMake "
        "as it is (repeatable; wins over the recipe's and the environment's)",
    )


def parse_defines(items: list[str]) -> dict[str, str]:
    """``-D NAME=VALUE`` arguments as a mapping; a malformed one is a usage error."""
    from buildtool.errors import UsageError

    defines = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"-D expects NAME=VALUE, found {item!r}")
        defines[name] = value
    return defines


def configure_defines(args: argparse.Namespace, loaded: LoadedRecipe) -> dict[str, str]:
    """The cache entries a configure gets: the launcher's, the toolchain's, then ``-D`` (which
    win)."""
    from buildtool.cmake.launcher import resolve_launcher_defines
    from buildtool.cmake.toolchains import toolchain_defines

    # wheel and ci take no --toolchain: a cross-built wheel would carry this machine's tag
    toolchain = toolchain_defines(getattr(args, "toolchain", None))
    launcher = resolve_launcher_defines(args.launcher, loaded)
    return {**launcher, **toolchain, **parse_defines(args.defines)}


def append_step_summary(markdown: str) -> None:
    """Append to the GitHub step summary (``$GITHUB_STEP_SUMMARY``) when there is one."""
    import os

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with Path(summary).open("a", encoding="utf-8") as handle:
            handle.write(markdown)
