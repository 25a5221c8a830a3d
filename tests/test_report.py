"""Rendering of verify-linkage reports, the JSON schema, and the generated check reference."""

from __future__ import annotations

import json

import jsonschema

from buildtool.linkage.findings import CHECKS, Finding, render_checks_doc
from buildtool.linkage.report import (
    Report,
    SizeEntry,
    github_annotation,
    render_github,
    render_json,
    render_text,
)
from buildtool.resources import schema_path
from tests.conftest import REPO

REPORT = Report(
    inputs=("build",),
    recipe="recipes/demo.toml",
    files_checked=3,
    findings=(
        Finding("BT101", "build/bin/minrpc", "does not need libdemo_runtime.so", "DT_NEEDED: a, b"),
        Finding("BT111", "build/lib/libx.so", "uses DT_RPATH", "RPATH: $ORIGIN"),
    ),
    sizes=(SizeEntry("build/lib/libx.so", 2_500_000, 1_000_000, 12, 5_000_000),),
)


def test_json_report_matches_the_committed_schema() -> None:
    schema = json.loads(schema_path("report").read_text(encoding="utf-8"))
    document = json.loads(render_json(REPORT))
    jsonschema.validate(document, schema)
    assert document["version"] == 1
    assert document["summary"] == {"errors": 1, "warnings": 1}
    assert document["findings"][0]["name"] == "required-needed-missing"


def test_empty_report_also_matches_the_schema() -> None:
    empty = Report((), "", 0, (), ())
    schema = json.loads(schema_path("report").read_text(encoding="utf-8"))
    jsonschema.validate(json.loads(render_json(empty)), schema)


def test_text_groups_findings_under_their_file() -> None:
    text = render_text(REPORT)
    assert text.splitlines()[:4] == [
        "build/bin/minrpc",
        "  error BT101 required-needed-missing: does not need libdemo_runtime.so",
        "    evidence: DT_NEEDED: a, b",
        "    fix: " + CHECKS[1].hint,
    ]
    assert "  build/lib/libx.so: 2.50 MB file, 1.00 MB code, 12 exported (budget 5.00 MB)" in text
    assert text.endswith("3 ELF files checked, 21 checks: 1 errors, 1 warnings\n")


def test_github_annotations_escape_their_fields() -> None:
    finding = Finding("BT110", "a,b:c.so", "entry '%x'\nnext", "")
    line = github_annotation(finding)
    assert line.startswith("::error file=a%2Cb%3Ac.so,title=BT110 runpath-not-origin::")
    assert "entry '%25x'%0Anext" in line
    assert "\n" not in line
    assert render_github(REPORT).splitlines()[1].startswith("::warning file=build/lib/libx.so")


def test_check_ids_and_names_are_unique() -> None:
    assert len({c.id for c in CHECKS}) == len(CHECKS)
    assert len({c.name for c in CHECKS}) == len(CHECKS)


def test_committed_check_reference_is_current() -> None:
    committed = (REPO / "docs" / "checks.md").read_text(encoding="utf-8")
    assert committed == render_checks_doc(), "regenerate docs/checks.md (nox -s schema)"


def test_checks_run_are_those_the_recipe_turns_on() -> None:
    hardening = {check.id for check in CHECKS if check.hardening}
    needs_recipe = {check.id for check in CHECKS if check.needs_recipe}
    every = {check.id for check in CHECKS}
    assert hardening == {f"BT{n}" for n in range(140, 146)}
    without_recipe = Report((), "", 0, (), ())
    assert set(without_recipe.checks_run) == every - needs_recipe
    assert set(REPORT.checks_run) == every - hardening  # a recipe, hardening off
    hardened = Report((), "recipes/demo.toml", 0, (), (), hardening=True)
    assert set(hardened.checks_run) == every
