"""``buildtool init --from-cmake BUILD_DIR``: a starter policy recipe for a project that keeps its
own CMake."""

from __future__ import annotations

import argparse
import logging
import os
import shlex
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
    root = os.path.relpath(model.source_dir, output.resolve().parent)
    write_atomic(output, starter_recipe(model, str(args.from_cmake), Path(root).as_posix()))
    log.info("starter recipe written to %s", output)
    log.info("next: %s", next_command(output, args.from_cmake))
    log.info(
        "  (review its decide: lines first) ci configures the project's own CMake, checks the "
        "split before anything compiles, builds, runs its tests, verifies the binaries and, "
        "with a pyproject.toml, builds, repairs, verifies and imports its wheel"
    )
    _say_what_it_shadows(output)
    return 0


def next_command(output: Path, build_dir: Path) -> str:
    """The ``buildtool ci`` line that picks up the new recipe (named unless the default search
    from here finds it) and the build folder init read."""
    command = ["buildtool", "ci"]
    if output.resolve() != (Path.cwd() / DEFAULT_OUTPUT).resolve():
        command += ["--recipe", str(output)]
    if build_dir.resolve() != (Path.cwd() / "build").resolve():
        command += ["--build-dir", str(build_dir)]
    return shlex.join(command)


def _say_what_it_shadows(output: Path) -> None:
    """A ``buildtool.toml`` in the working folder is the recipe every command here now finds
    first: say so when it takes the place of another one."""
    if output.resolve() != (Path.cwd() / DEFAULT_OUTPUT).resolve():
        return
    others = sorted(Path("recipes").glob("*.toml"))
    if others:
        log.warning(
            "%s is now the recipe commands run here find first, before %s; "
            "pass --recipe to use another",
            output,
            ", ".join(str(path) for path in others),
        )
