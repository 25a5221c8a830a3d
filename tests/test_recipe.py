"""Recipe loading and planning refusals: one sample recipe per failure mode, exact messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildtool.errors import PlanError, RecipeError
from buildtool.plan import make_plan
from buildtool.recipe.load import load_recipe, parse_recipe
from buildtool.recipe.sources import expand_sources
from buildtool.recipe.values import cmake_version
from tests.conftest import DEMO_RECIPE, PACKAGES, CliRunner

SAMPLES = sorted((PACKAGES / "recipes").glob("*.toml"))


def expected_message(sample: Path) -> str:
    first = sample.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), f"{sample} lacks its '# expect:' line"
    tiny = (PACKAGES / "tiny").resolve()
    return first.removeprefix("# expect: ").replace("{tiny}", str(tiny))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_bad_recipe_exits_2_with_its_message(
    sample: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(sample.parent)
    result = run_cli("configure", "--check", "--recipe", sample.name)
    assert result.exit_code == 2
    assert result.stderr == f"error: {expected_message(sample)}\n"
    assert "Traceback" not in result.stderr


def test_every_failure_mode_has_a_sample() -> None:
    assert len(SAMPLES) >= 19


def test_symlink_leading_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    outside = tmp_path / "outside.cc"
    outside.write_text("int x;\n")
    (root / "src" / "link.cc").symlink_to(outside)
    recipe = root / "recipe.toml"
    recipe.write_text('[project]\nname = "p"\n[libraries.core]\nsources = ["src/*.cc"]\n')
    loaded = load_recipe(recipe, "recipe.toml")
    with pytest.raises(RecipeError, match=r"src/link.cc leads outside the project root"):
        expand_sources(loaded)


def test_pyproject_tool_table_is_a_recipe(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "other"\n[tool.buildtool.project]\nname = "split"\nenv-prefix = "SP"\n'
    )
    loaded = load_recipe(tmp_path / "pyproject.toml")
    assert loaded.recipe.project.name == "split"
    assert loaded.recipe.project.package == "split"
    assert loaded.recipe.project.env_prefix == "SP"
    assert loaded.root == tmp_path.resolve()


def test_pyproject_without_tool_table_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n')
    with pytest.raises(RecipeError, match=r"tool.buildtool: expected a \[tool.buildtool\] table"):
        load_recipe(tmp_path / "pyproject.toml")


def test_a_broken_pyproject_holding_the_recipe_is_reported_not_skipped(
    run_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.buildtool.project]\nname = "x\n')
    monkeypatch.chdir(tmp_path)
    result = run_cli("configure", "--check")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {tmp_path / 'pyproject.toml'}: not valid TOML: ")
    (tmp_path / "pyproject.toml").write_text("[tool.ruff\n")  # someone else's: not a recipe
    assert "no recipe given and none found" in run_cli("configure", "--check").stderr


def test_defaults_are_filled_in() -> None:
    recipe = parse_recipe({"project": {"name": "my-proj"}}, "r.toml")
    assert recipe.project.package == "my_proj"
    assert recipe.project.env_prefix == "MY_PROJ"
    assert recipe.project.library_prefix == "my_proj_"
    unprefixed = parse_recipe({"project": {"name": "my-proj", "library-prefix": ""}}, "r.toml")
    assert unprefixed.project.library_prefix == ""
    assert unprefixed.project.target_prefix == ""


def test_missing_recipe_file_is_a_usage_error(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli("configure", "--check", "--recipe", str(tmp_path / "nope.toml"))
    assert result.exit_code == 2
    assert result.stderr == f"error: {tmp_path / 'nope.toml'}: recipe file not found\n"


def test_no_recipe_anywhere_explains_the_choices(
    run_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("configure", "--check")
    assert result.exit_code == 2
    assert "pass --recipe FILE" in result.stderr


def demo_plan_libraries() -> list[str]:
    loaded = load_recipe(DEMO_RECIPE)
    plan = make_plan(loaded.recipe, loaded.source, expand_sources(loaded))
    return [lib.name for lib in plan.libraries]


def test_demo_recipe_plans_in_link_order() -> None:
    assert demo_plan_libraries() == ["ffi", "runtime", "compiler"]


def test_plan_error_is_a_recipe_error() -> None:
    # The CLI maps both to exit 2; plan refusals must not escape as another kind.
    assert issubclass(PlanError, RecipeError)


@pytest.mark.parametrize(
    ("given", "normal", "cmake"),
    [
        ("0.19.dev0", "0.19.dev0", "0.19"),
        ("1.0.0rc1", "1.0.0rc1", "1.0.0"),
        ("1.0.0-RC1", "1.0.0rc1", "1.0.0"),
        ("1.0.0+cu121", "1.0.0+cu121", "1.0.0"),
        ("2.1.post3", "2.1.post3", "2.1"),
        ("1.2.3.4.5", "1.2.3.4.5", "1.2.3.4"),
    ],
)
def test_any_pep440_version_is_accepted_and_normalized(given: str, normal: str, cmake: str) -> None:
    data = {"project": {"name": "v", "version": given}, "libraries": {"runtime": {}}}
    recipe = parse_recipe(data, "v.toml")
    assert recipe.project.version == normal
    assert cmake_version(recipe.project.version) == cmake


@pytest.mark.parametrize("given", ["1.0-rc1.x", "v 1", "1..2", "latest", ""])
def test_a_version_pep440_refuses_is_named_by_its_key(given: str) -> None:
    data = {"project": {"name": "v", "version": given}, "libraries": {"runtime": {}}}
    with pytest.raises(RecipeError, match=r"^v\.toml: project\.version: expected a PEP 440"):
        parse_recipe(data, "v.toml")
