"""``buildtool init --from-cmake BUILD_DIR``: a starter policy recipe for a project that keeps its
own CMake."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from buildtool.errors import UsageError
from buildtool.fsutil import write_atomic

log = logging.getLogger("buildtool")

DEFAULT_OUTPUT = Path("buildtool.toml")


def populate_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from-cmake",
        type=Path,
        required=True,
        metavar="BUILD_DIR",
        help="a configured CMake build folder: its code model describes the libraries, object "
        "libraries and executables",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        metavar="FILE",
        help=f"where to write the recipe (default: {DEFAULT_OUTPUT}); an existing file is never "
        "overwritten",
    )


def run(args: argparse.Namespace) -> int:
    from buildtool.cmakecheck.query import load_codemodel
    from buildtool.cmakecheck.starter import starter_recipe

    output: Path = args.output
    if output.exists() or output.is_symlink():
        raise UsageError(f"{output}: already exists; init never overwrites a file (--output FILE)")
    model = load_codemodel(args.from_cmake)
    write_atomic(output, starter_recipe(model, str(args.from_cmake)))
    log.info("starter recipe written to %s", output)
    return 0
