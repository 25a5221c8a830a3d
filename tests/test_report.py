"""Rendering of verify-linkage reports, the JSON schema, and the generated check reference."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema

from buildtool.linkage.checks.catalogue import CHECKS, Finding, render_checks_doc
from buildtool.linkage.checks.causes import merged_evidence, one_per_cause
from buildtool.linkage.report.github import github_annotation, render_github, render_markdown
from buildtool.linkage.report.json_report import render_json
from buildtool.linkage.report.model import Report, SizeEntry, renamed_inputs
from buildtool.linkage.report.text import render_text
from buildtool.resources import schema_path
from tests.conftest import REPO, CliRunner, require

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
    assert text.endswith("3 ELF files checked, 34 checks: 1 errors, 1 warnings\n")


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
    assert headers[:9] == [
        "/usr/lib/libq.so",  # in no input: named in full, before the inputs
        "  error BT109 needed-not-shipped: needs libgone.so",
        wheel,
        "  demo/lib/libz.so",  # the file with an error before the finding of warnings only
        "    error BT106 undefined-symbol: undefined: sp::answer(int)",
        "  warning BT111 rpath-not-runpath: uses DT_RPATH",  # one finding, both files
        "    in 2 files: demo/lib/liba.so, demo/lib/libz.so",
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
    assert "  old/lib/liby.so: gone since the baseline (was 1.0 kB)" in text
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


def repeated_report(files: int) -> Report:
    """``files`` libraries of one wheel with the same BT140, one of them with a BT124 that
    names another file of the wheel by its whole path."""
    wheel = "dist/pandaslike-1.0-cp311-cp311-linux_x86_64.whl"
    lazy = [
        Finding("BT140", f"{wheel}!/pkg/_libs/mod{i:02d}.so", "partial RELRO only", "no BIND_NOW")
        for i in range(files)
    ]
    copy = Finding(
        "BT124",
        f"{wheel}!/pkg.libs/libb.so",
        f"contains a private copy of object code also in {wheel}!/pkg.libs/liba.so",
        "",
    )
    return Report((wheel,), "r.toml", files + 2, (*lazy, copy), ())


def test_the_same_finding_in_many_files_is_one_entry_and_a_tally_ends_the_report() -> None:
    text = render_text(repeated_report(44))
    lines = text.splitlines()
    assert lines.count("  error BT140 relro-not-full: partial RELRO only") == 1
    listed = text.split("in 44 files: ", 1)[1].split("evidence:", 1)[0]
    assert [name.strip() for name in listed.split(",")] == [
        f"pkg/_libs/mod{i:02d}.so" for i in range(44)
    ]
    assert all(len(line) <= 100 for line in lines if "mod" in line)  # wrapped
    assert text.count("evidence: no BIND_NOW") == 1
    assert len(lines) < 30  # 44 findings at four lines each were 179
    tally = lines[lines.index("findings by check") + 1 : -2]
    assert tally == [
        "  error   BT140 relro-not-full: 44 findings in 44 files",
        "  warning BT124 private-static-copy: 1 finding in 1 file",
    ]


def test_a_path_in_a_message_is_relative_like_the_rest_of_the_report() -> None:
    text = render_text(repeated_report(1))
    assert "contains a private copy of object code also in pkg.libs/liba.so" in text
    assert ".whl!/" not in text.split("\n", 1)[1]  # only the input's own line names the wheel
    # JSON keeps the paths as the checks wrote them
    document = json.loads(render_json(repeated_report(1)))
    assert (
        "pandaslike-1.0-cp311-cp311-linux_x86_64.whl!/pkg.libs/liba.so"
        in (document["findings"][-1]["message"])
    )


def test_findings_of_one_file_each_stay_under_their_file() -> None:
    text = render_text(REPORT)
    assert "in 2 files" not in text
    assert "findings by check" in text
    assert "  error   BT101 required-needed-missing: 1 finding in 1 file" in text


def test_mangled_names_are_demangled_in_every_format_a_person_reads() -> None:
    import shutil

    from buildtool.linkage.report.html import render_report_html
    from buildtool.linkage.report.text import readable_report

    require(shutil.which("c++filt") is not None, "no c++filt (binutils)")
    report = Report(
        ("build",),
        "",
        1,
        (Finding("BT106", "build/lib/liba.so", "undefined: _Z9common_fnv", ""),),
        (),
    )
    shown = readable_report(report)
    for rendered in (render_github(shown), render_report_html(shown), render_text(shown)):
        assert "common_fn()" in rendered
        assert "_Z9common_fnv" not in rendered
    assert "_Z9common_fnv" in render_json(report)


def test_a_real_undefined_cxx_symbol_reads_demangled_in_github_and_html(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    """A library that calls ``sp::answer(int)`` which nothing defines (BT106): the annotation and
    the page name the function as C++ does, the JSON as ``nm`` does."""
    import shutil

    from tests.builders import gcc

    require(shutil.which("g++") is not None and shutil.which("c++filt") is not None, "no g++")
    folder = tmp_path / "lib"
    source = "namespace sp { int answer(int); }\nint call() { return sp::answer(42); }\n"
    gcc(folder, folder / "libcalls.so", source, "-Wl,-soname,libcalls.so", cxx=True)
    outputs = {
        form: run_cli("verify-linkage", "--no-recipe", str(folder), "--format", form)
        for form in ("github", "html", "json", "text")
    }
    assert all(result.exit_code == 1 for result in outputs.values())
    for form in ("github", "html", "text"):
        assert "sp::answer(int)" in outputs[form].stdout, form
        assert "_ZN2sp6answerEi" not in outputs[form].stdout, form
    assert "_ZN2sp6answerEi" in outputs["json"].stdout


def test_small_libraries_have_sizes_a_person_can_read() -> None:
    from buildtool.linkage.report.model import human_size

    assert [human_size(n) for n in (2_500_000, 18_300, 999, 0)] == [
        "2.50 MB",
        "18.3 kB",
        "999 B",
        "0 B",
    ]
    small = Report(("build",), "", 1, (), (SizeEntry("build/lib/liba.so", 27_300, 7_200, 8, None),))
    assert "  lib/liba.so: 27.3 kB file, 7.2 kB code, 8 exported" in render_text(small, sizes=True)


def test_only_paths_that_start_with_the_input_are_made_relative() -> None:
    finding = Finding(
        "BT124", "build/lib/libb.so", "a copy also in build/lib/liba.so, not in ../x/build/lib/c.so"
    )
    text = render_text(Report(("build",), "", 2, (finding,), ()))
    assert "a copy also in lib/liba.so, not in ../x/build/lib/c.so" in text


def test_sizes_of_several_wheels_stand_under_each_wheels_name() -> None:
    staged = "dist/.buildtool-wheel-x1/repaired"
    runtime = f"{staged}/demo-runtime/demo_runtime-0.1.0-py3-none-linux_x86_64.whl"
    compiler = f"{staged}/demo-compiler/demo_compiler-0.1.0-py3-none-linux_x86_64.whl"
    sizes = (
        SizeEntry(f"{runtime}!/demo/lib/libdemo_runtime.so", 28_400, 6_400, 2, None),
        SizeEntry(f"{compiler}!/demo/lib/libdemo_compiler.so", 18_300, 2_700, 2, None),
    )
    text = render_text(Report((runtime, compiler), "", 2, (), sizes), sizes=True)
    assert text.splitlines()[:5] == [
        "library sizes",
        "  demo_runtime-0.1.0-py3-none-linux_x86_64.whl",
        "    demo/lib/libdemo_runtime.so: 28.4 kB file, 6.4 kB code, 2 exported",
        "  demo_compiler-0.1.0-py3-none-linux_x86_64.whl",
        "    demo/lib/libdemo_compiler.so: 18.3 kB file, 2.7 kB code, 2 exported",
    ]


def _missing(path: str, needed: str, evidence: str, check_id: str = "BT109") -> Finding:
    message = f"needs {needed}, which no input ships and nothing provides: loading it fails"
    return Finding(check_id, path, message, evidence, needed=needed)


def test_one_cause_is_one_finding_listing_its_files() -> None:
    """A library missing for three files is one finding; another library, another check's
    findings (BT107: each file's own search path) and a finding with no NEEDED stay apart."""
    searched = "searched RUNPATH {}, ld.so.cache and the default directories"
    findings = [
        _missing(
            "b/lib/liba.so", "libbase.so.0", "this machine has it; " + searched.format("$ORIGIN")
        ),
        _missing(
            "b/lib/libb.so", "libbase.so.0", "this machine has it; " + searched.format("$ORIGIN")
        ),
        _missing(
            "b/bin/prog",
            "libbase.so.0",
            "this machine has it; " + searched.format("$ORIGIN/../lib"),
        ),
        _missing("b/lib/libb.so", "libother.so.1", searched.format("$ORIGIN")),
        _missing("b/lib/liba.so", "libbase.so.0", "x", check_id="BT107"),
        _missing("b/lib/libb.so", "libbase.so.0", "x", check_id="BT107"),
        Finding("BT140", "b/lib/liba.so", "partial RELRO only"),
        Finding("BT140", "b/lib/libb.so", "partial RELRO only"),
    ]
    merged = one_per_cause(findings)
    assert [(f.check_id, f.paths) for f in merged] == [
        ("BT109", ("b/lib/liba.so", "b/lib/libb.so", "b/bin/prog")),
        ("BT109", ("b/lib/libb.so",)),
        ("BT107", ("b/lib/liba.so",)),
        ("BT107", ("b/lib/libb.so",)),
        ("BT140", ("b/lib/liba.so",)),
        ("BT140", ("b/lib/libb.so",)),
    ]
    assert merged[0].evidence == (
        "this machine has it; per file: " + searched.format("$ORIGIN") + " | "
        + searched.format("$ORIGIN/../lib")
    )  # fmt: skip
    assert merged[1] == findings[3]


def test_many_differing_searches_are_quoted_a_few() -> None:
    evidence = merged_evidence([f"shared; searched {n}" for n in range(10)])
    assert evidence == "shared; per file: searched 0 | searched 1 | searched 2 | 7 more"
    assert merged_evidence(["same", "same"]) == "same"


def test_a_finding_of_several_files_in_every_format() -> None:
    finding = _missing("build/lib/liba.so", "libbase.so.0", "searched")
    merged = dataclasses.replace(finding, also=("build/lib/libb.so", "build/bin/prog"))
    report = Report(("build",), "", 3, (merged,), ())
    document = json.loads(render_json(report))
    jsonschema.validate(document, json.loads(schema_path("report").read_text(encoding="utf-8")))
    (entry,) = document["findings"]
    assert entry["files"] == ["build/lib/liba.so", "build/lib/libb.so", "build/bin/prog"]
    assert entry["path"] == "build/lib/liba.so"
    assert document["summary"]["errors"] == 1
    text = render_text(report)
    assert "    in 3 files: lib/liba.so, lib/libb.so, bin/prog" in text
    assert "  error   BT109 needed-not-shipped: 1 finding in 3 files" in text
    (annotation,) = render_github(report).splitlines()[:1]
    assert annotation.startswith("::error file=build/lib/liba.so,")
    assert "%0Ain 3 files: build/lib/liba.so, build/lib/libb.so, build/bin/prog%0A" in annotation
    assert "in `build/lib/liba.so`, `build/lib/libb.so`, `build/bin/prog`:" in render_markdown(
        report
    )
    named = renamed_inputs(report, {"build": "out"})
    assert named.findings[0].paths == ("out/lib/liba.so", "out/lib/libb.so", "out/bin/prog")


def test_json_without_files_from_an_earlier_release_is_still_valid() -> None:
    """``files`` was added to version 1: a report written before it still validates (a
    ``--baseline`` may be one)."""
    document = json.loads(render_json(REPORT))
    for entry in document["findings"]:
        del entry["files"]
    jsonschema.validate(document, json.loads(schema_path("report").read_text(encoding="utf-8")))
