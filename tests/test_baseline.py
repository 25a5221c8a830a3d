"""Size changes between two builds: the baseline report, per-library deltas in every format, and
the growth budget (BT131). The builds are real: the example, and a copy with one more source
file compiled into its runtime."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest

from buildtool.cmake.configure import generated_files, plan_recipe, write_generated
from buildtool.errors import InputError, RecipeError
from buildtool.linkage.checks.growth import (
    Baseline,
    BaselineSize,
    Growth,
    growth_findings,
    load_baseline,
    match_baseline,
    parse_baseline,
)
from buildtool.linkage.checks.policy import LibraryRule, LinkagePolicy
from buildtool.recipe.load import load_recipe
from buildtool.resources import schema_path
from tests.conftest import DEMO_RECIPE, REPO, CliRunner

GROWTH_SOURCE = """\
// What a pull request that grows the runtime adds: code and 32 KiB of initialised data.
namespace demo {
namespace growth {
int table[8192] = {1, 2, 3};
int Checksum(int n) {
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += table[i % 8192] * i;
  return sum;
}
}  // namespace growth
}  // namespace demo
"""


# --- the baseline file ----------------------------------------------------------------------


def sizes_document(*sizes: dict[str, object]) -> str:
    return json.dumps({"version": 1, "findings": [], "sizes": list(sizes)})


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("{", "invalid JSON at line 1 column 2", id="not-json"),
        pytest.param("[]", "the document is list, not an object", id="not-an-object"),
        pytest.param('{"version": 1, "steps": []}', "a buildtool ci report", id="ci-report"),
        pytest.param('{"version": 2, "sizes": []}', '"version" is 2, not 1', id="version"),
        pytest.param('{"version": 1, "sizes": {}}', 'no "sizes" and "findings"', id="no-arrays"),
        pytest.param(
            sizes_document(
                {"path": "a.so", "file_size": -1, "code_size": 0, "exported_symbols": 0}
            ),
            "sizes[0].file_size is -1, not a whole number >= 0",
            id="negative-size",
        ),
        pytest.param(sizes_document({"file_size": 1}), "sizes[0].path is missing", id="no-path"),
    ],
)
def test_a_foreign_or_broken_baseline_is_refused_naming_the_file(text: str, problem: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_baseline(text, "previous.json")
    message = str(caught.value)
    assert message.startswith("previous.json: not a baseline: ")
    assert problem in message
    assert "expected a JSON report of an earlier run (buildtool verify-linkage --format json)" in (
        message
    )


def test_bad_baseline_on_the_command_line_is_exit_2_before_any_work(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    foreign = tmp_path / "buildtool-ci.json"
    foreign.write_text('{"version": 1, "steps": []}', encoding="utf-8")
    result = run_cli(
        "verify-linkage", str(tmp_path / "nothing-here"), "--no-recipe", "--baseline", str(foreign)
    )
    assert result.exit_code == 2
    assert f"{foreign}: not a baseline: this is a buildtool ci report" in result.stderr
    assert "Traceback" not in result.stderr
    missing = run_cli("verify-linkage", "--no-recipe", "--baseline", str(tmp_path / "gone.json"))
    assert missing.exit_code == 2
    assert "gone.json: cannot read the baseline" in missing.stderr


def test_libraries_match_by_file_name_unless_a_name_is_ambiguous() -> None:
    def size(path: str) -> BaselineSize:
        return BaselineSize(path, 1, 1, 1)

    baseline = Baseline(
        "b.json",
        (size("old/lib/liba.so"), size("old/lib/libb.so"), size("x.whl!/p/lib/libb.so")),
    )
    matched = match_baseline(["new/lib/liba.so", "new/lib/libb.so", "new/lib/libc.so"], baseline)
    assert matched == {"new/lib/liba.so": size("old/lib/liba.so")}  # libb.so: two in the baseline
    exact = match_baseline(["x.whl!/p/lib/libb.so"], baseline)
    assert exact == {"x.whl!/p/lib/libb.so": size("x.whl!/p/lib/libb.so")}


def growth_policy(percent: float) -> LinkagePolicy:
    rule = LibraryRule("runtime", "libdemo_runtime.so", False, (), (), (), (), None, percent)
    return dataclasses.replace(LinkagePolicy.empty(), source="r.toml", libraries=(rule,))


@pytest.mark.parametrize(
    ("old", "new", "allowed", "fails"),
    [
        pytest.param(1000, 1100, 10.0, False, id="exactly-the-allowance"),
        pytest.param(1000, 1101, 10.0, True, id="one-byte-more"),
        pytest.param(1000, 500, 0.0, False, id="shrinking"),
        pytest.param(0, 1, 1000.0, True, id="from-nothing"),
        pytest.param(0, 0, 0.0, False, id="nothing-to-nothing"),
    ],
)
def test_growth_budget_boundaries(old: int, new: int, allowed: float, fails: bool) -> None:
    growth = Growth(
        "b/lib/libdemo_runtime.so", new, BaselineSize("a/libdemo_runtime.so", old, 0, 0)
    )
    findings = list(growth_findings([growth], growth_policy(allowed), "previous.json"))
    assert [f.check_id for f in findings] == (["BT131"] if fails else [])


def test_only_budgeted_libraries_are_held_to_a_growth_budget() -> None:
    other = Growth("b/lib/libdemo_ffi.so", 2000, BaselineSize("a/libdemo_ffi.so", 1000, 0, 0))
    assert list(growth_findings([other], growth_policy(1.0), "previous.json")) == []


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ("{ runtim = 5.0 }", "verify.max-growth-percent.runtim: expected the name of a library"),
        ("{ runtime = -1 }", "verify.max-growth-percent.runtime: expected a percentage >= 0"),
        ('{ runtime = "5%" }', "verify.max-growth-percent.runtime"),
    ],
)
def test_bad_growth_budget_is_a_recipe_error(tmp_path: Path, table: str, problem: str) -> None:
    recipe = tmp_path / "policy.toml"
    recipe.write_text(
        f'[project]\nname = "demo"\n[libraries.runtime]\n[verify]\nmax-growth-percent = {table}\n',
        encoding="utf-8",
    )
    with pytest.raises(RecipeError, match=problem.replace(".", r"\.")):
        load_recipe(recipe)


# --- two real builds ----------------------------------------------------------------------------


def grown_copy(folder: Path) -> Path:
    """A copy of the example with one more source file in the runtime (generated files updated);
    returns its recipe."""
    shutil.copytree(REPO / "recipes", folder / "recipes")
    shutil.copytree(REPO / "src", folder / "src", ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "src" / "runtime" / "growth.cc").write_text(GROWTH_SOURCE, encoding="utf-8")
    recipe = folder / "recipes" / "demo.toml"
    loaded = load_recipe(recipe)
    write_generated(loaded, generated_files(loaded, plan_recipe(loaded)))
    return recipe


def with_growth_budget(recipe: Path, name: str, percent: float) -> Path:
    """A sibling of ``recipe`` (same sources) that allows the runtime ``percent`` growth."""
    text = recipe.read_text(encoding="utf-8")
    assert text.count("\n[verify]\n") == 1
    assert "max-growth-percent" not in text
    budget = f"\n[verify]\nmax-growth-percent = {{ runtime = {percent} }}\n"
    policy = recipe.with_name(name)
    policy.write_text(text.replace("\n[verify]\n", budget), encoding="utf-8")
    return policy


@pytest.fixture(scope="module")
def two_builds(
    good_build: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, Path]:
    """(the baseline JSON of the example's build, the grown copy's build, its recipe)."""
    from buildtool.cli import main

    folder = tmp_path_factory.mktemp("grown")
    baseline = folder / "previous.json"
    argv = ["verify-linkage", str(good_build), "--recipe", str(DEMO_RECIPE), "--format", "json"]
    assert main([*argv, "--output", str(baseline)]) == 0
    recipe = grown_copy(folder / "project")
    build_dir = folder / "build"
    assert main(["-q", "build", "--recipe", str(recipe), "--build-dir", str(build_dir)]) == 0
    return baseline, build_dir, recipe


@pytest.mark.integration
def test_deltas_between_two_builds_in_json(
    run_cli: CliRunner, two_builds: tuple[Path, Path, Path]
) -> None:
    baseline, build_dir, recipe = two_builds
    result = run_cli(
        "verify-linkage", str(build_dir), "--recipe", str(recipe), "--baseline", str(baseline),
        "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, json.loads(schema_path("report").read_text(encoding="utf-8")))
    assert document["baseline"] == {"source": str(baseline), "gone": []}
    assert "BT131" in document["checks_run"]
    sizes = {Path(entry["path"]).name: entry for entry in document["sizes"]}
    runtime = sizes["libdemo_runtime.so"]
    before = runtime["previous"]["file_size"]
    assert runtime["delta"]["file_size"] == runtime["file_size"] - before
    assert runtime["delta"]["file_size"] > 32 * 1024  # the table alone is 32 KiB
    assert runtime["delta"]["file_size_percent"] == pytest.approx(
        runtime["delta"]["file_size"] * 100 / before, abs=1e-3
    )
    assert runtime["delta"]["code_size"] > 0  # Checksum
    assert sizes["libdemo_ffi.so"]["delta"]["file_size"] == 0  # untouched


@pytest.mark.integration
def test_growth_beyond_the_budget_fails_with_bt131(
    run_cli: CliRunner, two_builds: tuple[Path, Path, Path]
) -> None:
    baseline, build_dir, recipe = two_builds
    tight = with_growth_budget(recipe, "tight.toml", 10.0)
    result = run_cli(
        "verify-linkage", str(build_dir), "--recipe", str(tight), "--baseline", str(baseline)
    )
    assert result.exit_code == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    bt131 = [line for line in lines if "BT131" in line and "grew" in line]
    assert len(bt131) == 1
    assert "  error   BT131 size-growth-exceeded: 1 finding in 1 file" in lines  # the tally
    assert "error BT131 size-growth-exceeded: grew " in bt131[0]
    assert f"against {baseline}, more than the 10% allowed" in bt131[0]
    assert lines[lines.index(bt131[0]) - 1].endswith("libdemo_runtime.so")
    runtime_line = next(line for line in lines if "libdemo_runtime.so: " in line)
    assert "; since the baseline: file +" in runtime_line
    assert runtime_line.endswith(", exported ±0")
    assert "ffi.so: " in result.stdout
    assert "file ±0 B (±0.00%)" in result.stdout  # ffi did not change


@pytest.mark.integration
def test_growth_within_a_large_enough_budget_passes(
    run_cli: CliRunner, two_builds: tuple[Path, Path, Path], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    baseline, build_dir, recipe = two_builds
    loose = with_growth_budget(recipe, "loose.toml", 1000.0)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = run_cli(
        "verify-linkage", str(build_dir), "--recipe", str(loose), "--baseline", str(baseline),
        "--format", "github",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "BT131" not in result.stdout
    notice = next(line for line in result.stdout.splitlines() if line.startswith("::notice"))
    assert notice.startswith("::notice title=library sizes against ")
    assert "libdemo_runtime.so: +" in notice
    markdown = summary.read_text(encoding="utf-8")
    assert "| library | file | code | exported | budget | change |" in markdown
    runtime_row = next(row for row in markdown.splitlines() if "libdemo_runtime.so" in row)
    assert "| +" in runtime_row
    assert "%) |" in runtime_row

    page = tmp_path / "report.html"
    html = run_cli(
        "verify-linkage", str(build_dir), "--recipe", str(loose), "--baseline", str(baseline),
        "--format", "html", "--output", str(page),
    )  # fmt: skip
    assert html.exit_code == 0
    text = page.read_text(encoding="utf-8")
    assert '<div class="small grew">+' in text  # the runtime's growth under its bar
    assert '<line class="previous"' in text  # the baseline marked on the bars
    assert re.search(
        r"<dt>libraries</dt><dd>3, [0-9.]+ kB in all \(\+[0-9,]+ B, \+[0-9.]+% since", text
    )


# --- buildtool ci --baseline ------------------------------------------------------------------


def test_ci_refuses_a_bad_baseline_before_any_step(run_cli: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "previous.json"
    bad.write_text('{"version": 1, "sizes": "none"}', encoding="utf-8")
    out_dir = tmp_path / "dist"
    result = run_cli(
        "ci", "--recipe", str(DEMO_RECIPE), "--build-dir", str(tmp_path / "build"),
        "--out-dir", str(out_dir), "--baseline", str(bad),
    )  # fmt: skip
    assert result.exit_code == 2
    assert f'{bad}: not a baseline: no "sizes" and "findings" arrays' in result.stderr
    assert not out_dir.exists()  # nothing ran, nothing written


@pytest.mark.integration
def test_ci_verify_build_compares_with_the_baseline(
    two_builds: tuple[Path, Path, Path],
) -> None:
    from buildtool.ci import pipeline, reports

    baseline, build_dir, recipe = two_builds
    loaded = load_recipe(with_growth_budget(recipe, "ci-tight.toml", 10.0))
    request = pipeline.CiRequest(
        loaded, build_dir.parent / "dist", build_dir, baseline=load_baseline(baseline)
    )
    workspace = pipeline.Workspace(request, plan_recipe(loaded))
    step = pipeline.Step("verify-build", "", pipeline.step_verify_build)
    result = pipeline.CiResult(str(recipe), "none", (pipeline.run_step(step, workspace),))
    verify = result.steps[0]
    assert verify.status == "failed"
    assert [f.check_id for f in verify.findings] == ["BT131"]
    markdown = reports.render_markdown(result)
    assert "### library sizes (verify-build)" in markdown
    assert "| library | file | code | exported | budget | change |" in markdown
    page = reports.render_html(result)
    assert page is not None
    assert "<h2>verify-build: " in page
    assert "size-growth-exceeded" in page
