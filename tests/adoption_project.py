"""A small project to adopt buildtool in, shared by the adoption tests: a recipe, a C++ and a C
source, and maybe a hand-written CMakeLists.txt."""

from __future__ import annotations

import textwrap
from pathlib import Path

HAND_WRITTEN_CMAKELISTS = """\
cmake_minimum_required(VERSION 3.24)
project(acme LANGUAGES C CXX)
option(ACME_EXTRA "the project's own option" OFF)
"""


INCLUDE_LINE = "include(cmake/buildtool/targets.cmake)"


def write_project(root: Path, recipe: str, cmakelists: str | None = None) -> Path:
    """A small project: a recipe, a C++ and a C source, maybe a hand-written CMakeLists.txt."""
    (root / "core").mkdir(parents=True)
    (root / "core" / "core.cc").write_text(
        'extern "C" int acme_c(void);\nint core() { return 1; }\n'
    )
    (root / "core" / "helper.c").write_text("int acme_c(void) { return 2; }\n")
    if cmakelists is not None:
        (root / "CMakeLists.txt").write_text(cmakelists)
    recipe_path = root / "buildtool.toml"
    recipe_path.write_text(textwrap.dedent(recipe))
    return recipe_path


MINIMAL = """\
[project]
name = "acme"

[libraries.core]
sources = ["core/*.cc", "core/*.c"]
"""


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }
