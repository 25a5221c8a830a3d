"""Which recipe a check applies, and why: a recipe describes its own project's binaries, so
inputs from elsewhere, and third-party wheels copied into the project, are checked without it
unless ``--recipe`` names it; every report says which recipe it used and why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.builders import lib, write_wheel
from tests.conftest import CliRunner, require

POLICY = """\
[project]
name = "demo"

[libraries.runtime]

[verify]
hardening = true
"""
"""A policy recipe that turns the hardening checks on: a library gcc links without BIND_NOW
(Debian's default) is BT140 under it, and clean of BT140 without it."""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder (the working folder) with one recipe in recipes/."""
    require(shutil.which("gcc") is not None, "no C compiler")
    root = tmp_path / "project"
    (root / "recipes").mkdir(parents=True)
    (root / "recipes" / "demo.toml").write_text(POLICY, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def lazy_wheel(folder: Path, dist: str) -> Path:
    """A wheel of ``dist`` holding one library linked without BIND_NOW."""
    folder.mkdir(parents=True, exist_ok=True)
    library = lib(folder, "thing", "int thing(void) { return 1; }\n", "-Wl,-z,lazy")
    name = f"{dist.replace('-', '_')}-1.0-py3-none-linux_x86_64.whl"
    package = dist.replace("-", "_")
    return write_wheel(folder / name, dist, {f"{package}/libthing.so": library.read_bytes()})


def report_of(run_cli: CliRunner, *argv: str) -> tuple[int, dict[str, object], str]:
    as_json = run_cli("verify-linkage", *argv, "--format", "json")
    text = run_cli("verify-linkage", *argv)
    document = json.loads(as_json.stdout)
    return as_json.exit_code, document, text.stdout


def ids(document: dict[str, object]) -> set[str]:
    findings = document["findings"]
    assert isinstance(findings, list)
    return {finding["id"] for finding in findings}


def test_a_third_party_wheel_in_the_project_is_checked_without_its_recipe(
    run_cli: CliRunner, project: Path
) -> None:
    wheel = lazy_wheel(project / "dist", "pandaslike").relative_to(project)
    _, document, text = report_of(run_cli, str(wheel))
    assert "BT140" not in ids(document)
    assert document["recipe"] is None
    reason = (
        f"recipes/demo.toml not applied: {wheel.name} is the distribution pandaslike, not one "
        "of the recipe's (demo, demo-runtime, demo-compiler); --recipe applies it"
    )
    assert document["recipe_reason"] == reason
    assert f"no recipe ({reason}): checks that need a linkage policy were skipped" in text
    # named, the recipe applies to it, and its hardening rule catches the lazy binding
    code, named, text = report_of(run_cli, str(wheel), "--recipe", "recipes/demo.toml")
    assert code == 1
    assert "BT140" in ids(named)
    assert "recipe: recipes/demo.toml (named with --recipe)" in text


def test_the_projects_own_wheel_gets_the_recipe_found_in_the_working_folder(
    run_cli: CliRunner, project: Path
) -> None:
    wheel = lazy_wheel(project / "dist", "demo-runtime").relative_to(project)
    code, document, text = report_of(run_cli, str(wheel))
    assert code == 1
    assert "BT140" in ids(document)
    reason = "found in the working folder: the only ./recipes/*.toml"
    assert document["recipe_reason"] == reason
    assert f"recipe: recipes/demo.toml ({reason})" in text


def test_inputs_from_elsewhere_start_no_search_so_several_recipes_do_not_stop_them(
    run_cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    (project / "recipes" / "other.toml").write_text(POLICY, encoding="utf-8")
    wheel = lazy_wheel(tmp_path / "elsewhere", "demo-runtime")  # even a name the recipe knows
    code, document, text = report_of(run_cli, str(wheel))
    assert code == 0
    assert "BT140" not in ids(document)
    assert "no recipe (the inputs lie outside the working folder; --recipe applies one)" in text
    # inside the project, two recipes are ambiguous: which one is meant?
    inside = lazy_wheel(project / "dist", "demo-runtime").relative_to(project)
    result = run_cli("verify-linkage", str(inside))
    assert result.exit_code == 2
    assert "no recipe given and 2 found: recipes/demo.toml, recipes/other.toml" in result.stderr


def test_a_recipe_that_init_wrote_says_it_comes_before_the_recipes_folder(
    run_cli: CliRunner, project: Path
) -> None:
    (project / "buildtool.toml").write_text(POLICY, encoding="utf-8")
    wheel = lazy_wheel(project / "dist", "demo-runtime").relative_to(project)
    _, document, text = report_of(run_cli, str(wheel))
    assert document["recipe"] == "buildtool.toml"
    assert (
        "recipe: buildtool.toml (found in the working folder: ./buildtool.toml comes first, "
        "before recipes/demo.toml)" in text
    )


def test_no_recipe_says_so_and_never_searches(run_cli: CliRunner, project: Path) -> None:
    (project / "recipes" / "other.toml").write_text(POLICY, encoding="utf-8")  # ambiguous
    wheel = lazy_wheel(project / "dist", "demo-runtime").relative_to(project)
    code, document, text = report_of(run_cli, str(wheel), "--no-recipe")
    assert code == 0
    assert document["recipe_reason"] == "--no-recipe"
    assert "no recipe (--no-recipe): checks that need a linkage policy were skipped" in text
