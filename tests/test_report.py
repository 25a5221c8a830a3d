"""Rendering of verify-linkage reports, the JSON schema, and the generated check reference."""

from __future__ import annotations

import json

import jsonschema

from buildtool.linkage.checks.catalogue import CHECKS, Finding, render_checks_doc
from buildtool.linkage.report.github import github_annotation, render_github
from buildtool.linkage.report.json_report import render_json
from buildtool.linkage.report.model import Report, SizeEntry
from buildtool.linkage.report.text import render_text
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


def test_text_groups_findings_under_their_input_and_file() -> None:
    text = render_text(REPORT)
    assert text.splitlines()[:9] == [
        "build",
        "  bin/minrpc",
        "    error BT101 required-needed-missing: does not need libdemo_runtime.so",
        "      evidence: DT_NEEDED: a, b",
        "      fix: " + CHECKS[1].hint,
        "  lib/libx.so",
        "    warning BT111 rpath-not-runpath: uses DT_RPATH",
        "      evidence: RPATH: $ORIGIN",
        "      fix: " + next(c.hint for c in CHECKS if c.id == "BT111"),
    ]
    # a recipe's size budget brings the table along
    assert "  lib/libx.so: 2.50 MB file, 1.00 MB code, 12 exported (budget 5.00 MB)" in text
    assert text.endswith("3 ELF files checked, 29 checks: 1 errors, 1 warnings\n")


def test_text_lists_errors_first_and_sizes_only_when_asked() -> None:
    import dataclasses

    wheel = "dist/demo-1.0-cp311-cp311-linux_x86_64.whl"
    report = Report(
        inputs=(wheel, "site/demo"),
        recipe="",
        files_checked=3,
        findings=(
            Finding("BT111", f"{wheel}!/demo/lib/liba.so", "uses DT_RPATH", ""),
            Finding("BT111", f"{wheel}!/demo/lib/libz.so", "uses DT_RPATH", ""),
            Finding("BT106", f"{wheel}!/demo/lib/libz.so", "undefined: _ZN2sp6answerEi", ""),
            Finding("BT109", "site/demo.libs/libc-1a2b.so", "needs libgone.so", ""),
            Finding("BT109", "/usr/lib/libq.so", "needs libgone.so", ""),
        ),
        sizes=(SizeEntry(f"{wheel}!/demo/lib/liba.so", 2_500_000, 1_000_000, 12, None),),
    )
    names = {"_ZN2sp6answerEi": "sp::answer(int)"}
    headers = [line for line in render_text(report, names=names).splitlines() if "fix:" not in line]
    assert headers[:10] == [
        "/usr/lib/libq.so",  # in no input: named in full, before the inputs
        "  error BT109 needed-not-shipped: needs libgone.so",
        wheel,
        "  demo/lib/libz.so",  # the file with an error before the one with warnings only
        "    error BT106 undefined-symbol: undefined: sp::answer(int)",
        "    warning BT111 rpath-not-runpath: uses DT_RPATH",
        "  demo/lib/liba.so",
        "    warning BT111 rpath-not-runpath: uses DT_RPATH",
        "site/demo",
        "  ../demo.libs/libc-1a2b.so",
    ]
    assert "library sizes" not in render_text(report)  # no budget, not asked for
    single = dataclasses.replace(report, inputs=(wheel,))
    assert "\n  demo/lib/liba.so: 2.50 MB file" in render_text(single, sizes=True)
    # JSON keeps the findings' text and paths as the checks wrote them
    document = json.loads(render_json(report))
    assert document["findings"][2]["message"] == "undefined: _ZN2sp6answerEi"  # in given order
    assert document["findings"][0]["path"].startswith(wheel)


def test_mangled_names_are_demangled_by_cxxfilt() -> None:
    import shutil

    from buildtool.linkage.report.demangle import demangle, mangled_names, readable

    found = mangled_names(["needs _ZN2sp6answerEi and __ZN2sp7versionEv.", "std::x, _Zbogus1"])
    assert found == {"_ZN2sp6answerEi", "__ZN2sp7versionEv", "_Zbogus1"}
    if shutil.which("c++filt") is None:
        assert demangle(found) == {}  # left mangled, never an error
        return
    names = demangle(found)
    assert names == {"_ZN2sp6answerEi": "sp::answer(int)", "__ZN2sp7versionEv": "sp::version()"}
    text = readable("needs _ZN2sp6answerEi and __ZN2sp7versionEv.", names)
    assert text == "needs sp::answer(int) and sp::version()."


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
    baseline = {check.id for check in CHECKS if check.needs_baseline}
    assert baseline == {"BT131"}
    assert set(REPORT.checks_run) == every - hardening - baseline  # a recipe, hardening off
    hardened = Report((), "recipes/demo.toml", 0, (), (), hardening=True)
    assert set(hardened.checks_run) == every - baseline
    compared = Report((), "recipes/demo.toml", 0, (), (), hardening=True, baseline="old.json")
    assert set(compared.checks_run) == every


def test_sizes_against_a_baseline_in_text_json_github_and_markdown() -> None:
    import dataclasses

    from buildtool.linkage.checks.growth import BaselineSize
    from buildtool.linkage.report.github import render_markdown

    previous = BaselineSize("old/lib/libx.so", 2_000_000, 1_000_000, 10)
    entry = dataclasses.replace(REPORT.sizes[0], previous=previous)
    gone = BaselineSize("old/lib/liby.so", 1_000, 500, 1)
    report = dataclasses.replace(REPORT, sizes=(entry,), baseline="old.json", gone=(gone,))
    text = render_text(report)
    assert "library sizes (against old.json)" in text
    assert "; since the baseline: file +500,000 B (+25.00%), code ±0 B, exported +2" in text
    assert "  old/lib/liby.so: gone since the baseline (was 0.00 MB)" in text
    document = json.loads(render_json(report))
    jsonschema.validate(document, json.loads(schema_path("report").read_text(encoding="utf-8")))
    assert document["sizes"][0]["delta"] == {
        "file_size": 500_000,
        "file_size_percent": 25.0,
        "code_size": 0,
        "code_size_percent": 0.0,
        "exported_symbols": 2,
    }
    assert document["baseline"]["gone"][0]["path"] == "old/lib/liby.so"
    notice = render_github(report).splitlines()[2]
    assert notice == (
        "::notice title=library sizes against old.json::"
        "build/lib/libx.so: +500,000 B (+25.00%25)%0Aold/lib/liby.so: gone"
    )
    markdown = render_markdown(report)
    assert "| `build/lib/libx.so` | 2.50 MB | 1.00 MB | 12 | 5.00 MB | +500,000 B (+25.00%) |" in (
        markdown
    )
    # without a baseline nothing of it shows, and the JSON says so
    plain = json.loads(render_json(REPORT))
    assert plain["baseline"] is None
    assert "previous" not in plain["sizes"][0]
    assert "::notice" not in render_github(REPORT)
