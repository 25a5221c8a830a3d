"""``buildtool build`` after the recipe changed: the folder is configured again from the recipe
and variant it was configured with (its stamp says which), and the change is in the binaries; an
unchanged recipe builds without a configure, and a file buildtool did not write is never
replaced."""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

import pytest

from buildtool.cmake.stamp import STAMP
from tests.adoption_project import INCLUDE_LINE
from tests.conftest import CliRunner

pytestmark = pytest.mark.integration

RECIPE = """\
[project]
name = "acme"

[libraries.core]
sources = ["core/core.c"]

[libraries.extra]
sources = ["extra/extra.c"]
links = ["core"]
optional = true
"""

CMAKE_RUN = "cmake -S "


def write_project(root: Path, cmakelists: str | None = None) -> Path:
    public = '__attribute__((visibility("default")))'
    sources = {
        "core/core.c": f"{public} int core(void) {{ return 1; }}\n",
        "core/more.c": f"{public} int more(void) {{ return 7; }}\n",
        "extra/extra.c": f"int core(void);\n{public} int extra(void) {{ return core() + 1; }}\n",
    }
    for relative, text in sources.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    if cmakelists is not None:
        (root / "CMakeLists.txt").write_text(cmakelists)
    recipe = root / "buildtool.toml"
    recipe.write_text(RECIPE)
    return recipe


def build(run_cli: CliRunner, build_dir: Path, *argv: str) -> str:
    result = run_cli("build", "--build-dir", str(build_dir), *argv)
    assert result.exit_code == 0, result.stderr
    return result.stderr


def edit_recipe(recipe: Path) -> None:
    """A source more and another file name for the runtime library."""
    recipe.write_text(
        RECIPE.replace(
            'sources = ["core/core.c"]\n', 'sources = ["core/*.c"]\noutput-name = "acmecore"\n'
        )
    )


def test_a_changed_recipe_is_configured_again_from_another_folder(
    tmp_path: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe = write_project(tmp_path / "p")
    build_dir = tmp_path / "p" / "build"
    build(run_cli, build_dir, "--recipe", str(recipe))
    assert sorted(p.name for p in (build_dir / "lib").iterdir()) == [
        "libacme_core.so",
        "libacme_extra.so",
    ]
    # From elsewhere and without --recipe: the folder remembers its recipe; nothing changed.
    monkeypatch.chdir(tmp_path)
    assert CMAKE_RUN not in build(run_cli, build_dir)
    edit_recipe(recipe)
    log = build(run_cli, build_dir)
    assert f"{build_dir}: {recipe} changed since it was configured; configuring it again" in log
    assert CMAKE_RUN in log
    assert sorted(p.name for p in (build_dir / "lib").iterdir()) == [
        "libacme_extra.so",
        "libacmecore.so",
    ], "the renamed library is built and the old file removed"
    core = ctypes.CDLL(str(build_dir / "lib" / "libacmecore.so"))
    assert core.more() == 7, "the new source is in the library"
    extra = ctypes.CDLL(str(build_dir / "lib" / "libacme_extra.so"))
    assert extra.extra() == 2
    assert CMAKE_RUN not in build(run_cli, build_dir), "current again"


def test_the_folders_variant_is_kept_and_a_project_cmakelists_is_left_alone(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    own = f"cmake_minimum_required(VERSION 3.24)\nproject(acme LANGUAGES C)\n{INCLUDE_LINE}\n"
    recipe = write_project(tmp_path, own)
    build_dir = tmp_path / "build"
    build(run_cli, build_dir, "--recipe", str(recipe), "--variant", "runtime")
    assert sorted(p.name for p in (build_dir / "lib").iterdir()) == ["libacme_core.so"]
    edit_recipe(recipe)
    log = build(run_cli, build_dir, "--recipe", str(recipe))
    assert "changed since it was configured; configuring it again" in log
    assert sorted(p.name for p in (build_dir / "lib").iterdir()) == ["libacmecore.so"]
    assert json.loads((build_dir / STAMP).read_text())["variant"] == "runtime"
    assert (tmp_path / "CMakeLists.txt").read_text() == own
    targets = (tmp_path / "cmake" / "buildtool" / "targets.cmake").read_text()
    assert "OUTPUT_NAME acmecore" in targets


def test_a_stamp_buildtool_did_not_write_is_never_replaced(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    recipe = write_project(tmp_path)
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    (build_dir / STAMP).write_text('{"mine": true}\n')
    result = run_cli("configure", "--recipe", str(recipe), "--build-dir", str(build_dir))
    assert result.exit_code == 2
    assert result.stderr.endswith(
        f"error: {build_dir / STAMP}: exists and was not written by buildtool, which never "
        "replaces such a file; move it away, then run the command again\n"
    )
    assert (build_dir / STAMP).read_text() == '{"mine": true}\n'
    assert not (build_dir / "CMakeCache.txt").exists()


def test_a_remembered_recipe_that_is_gone_is_a_usage_error(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    recipe = write_project(tmp_path)
    build_dir = tmp_path / "build"
    build(run_cli, build_dir, "--recipe", str(recipe))
    recipe.rename(tmp_path / "moved.toml")
    result = run_cli("build", "--build-dir", str(build_dir))
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {build_dir}: configured from the recipe {recipe}, which is gone; name the "
        "recipe with --recipe\n"
    )
    moved = str(tmp_path / "moved.toml")
    log = build(run_cli, build_dir, "--recipe", moved)
    assert f"{build_dir}: it was configured from {recipe}; configuring it again" in log
