"""A ``buildtool ci`` run as text: the summary table, JSON (versioned), JUnit XML, Markdown, and
the HTML page of its verify-linkage reports.

Pure functions of a ``CiResult``; the command module writes and prints them.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from buildtool import __version__
from buildtool.ci.pipeline import CiResult, StepResult
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.report.github import markdown_cell, markdown_files, markdown_sizes
from buildtool.linkage.report.json_report import finding_json
from buildtool.linkage.report.text import readable_findings, readable_report

CI_REPORT_VERSION = 1
"""``version`` of ``buildtool-ci.json`` (schema: buildtool/schemas/ci.schema.json)."""

JSON_NAME = "buildtool-ci.json"
JUNIT_NAME = "buildtool-ci.junit.xml"
HTML_NAME = "buildtool-ci.html"
"""The verify-linkage reports of the run as one page (link graph, sizes, findings)."""

Paint = Callable[[str, str], str]
STATUS_STYLES = {"passed": "green", "failed": "red", "skipped": "yellow"}
STATUS_ICONS = {"passed": "✅", "failed": "❌", "skipped": "⏭️"}


def _plain(text: str, style: str) -> str:
    del style
    return text


def first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


def verdict(result: CiResult) -> str:
    """One line: passed, or the step that failed and why."""
    failed = result.failed_step
    if result.interrupted:
        return f"buildtool ci: interrupted during {failed.name if failed else 'a step'}"
    if failed is None:
        return f"buildtool ci: passed ({len(result.steps)} steps, {result.seconds:.1f} s)"
    return f"buildtool ci: failed at step {failed.name}: {first_line(failed.detail)}"


def render_table(result: CiResult, paint: Paint = _plain) -> str:
    """The summary table: step, status, seconds, then the total."""
    width = max(len("total"), *(len(step.name) for step in result.steps))
    lines = [paint(f"{'step':<{width}}  {'status':<7}  {'seconds':>7}", "bold")]
    for step in result.steps:
        status = paint(f"{step.status:<7}", STATUS_STYLES[step.status])
        lines.append(f"{step.name:<{width}}  {status}  {step.seconds:>7.2f}")
    lines.append(f"{'total':<{width}}  {'':<7}  {result.seconds:>7.2f}")
    if result.compile_cache is not None:
        lines.append(f"compile cache: {result.compile_cache.summary(result.launcher)}")
    return "\n".join(lines) + "\n"


def _step_json(step: StepResult) -> dict[str, Any]:
    return {
        "name": step.name,
        "status": step.status,
        "seconds": step.seconds,
        "detail": step.detail,
        "findings": [finding_json(finding) for finding in step.findings],
    }


def report_json(result: CiResult) -> dict[str, Any]:
    """The JSON document of ``buildtool-ci.json``."""
    failed = result.failed_step
    return {
        "version": CI_REPORT_VERSION,
        "buildtool": __version__,
        "recipe": result.recipe,
        "launcher": result.launcher,
        "passed": result.passed,
        "interrupted": result.interrupted,
        "failed_step": failed.name if failed else None,
        "seconds": result.seconds,
        "steps": [_step_json(step) for step in result.steps],
        "compile_cache": _cache_json(result),
    }


def _cache_json(result: CiResult) -> dict[str, Any] | None:
    stats = result.compile_cache
    if stats is None:
        return None
    rate = round(stats.hits / stats.lookups, 4) if stats.lookups else None
    return {
        "hits": stats.hits,
        "misses": stats.misses,
        "errors": stats.errors,
        "hit_rate": rate,
        "location": stats.location,
    }


def render_json(result: CiResult) -> str:
    return json.dumps(report_json(result), indent=2) + "\n"


def _finding_line(finding: Finding) -> str:
    line = (
        f"{finding.severity} {finding.check_id} {finding.check.name}: {', '.join(finding.paths)}: "
    )
    return line + finding.message


def _junit_case(suite: ET.Element, step: StepResult) -> None:
    case = ET.SubElement(
        suite, "testcase", classname="buildtool.ci", name=step.name, time=f"{step.seconds:.2f}"
    )
    if step.status == "failed":
        failure = ET.SubElement(case, "failure", message=first_line(step.detail), type="failed")
        tail = [f"--- last lines of its output ---\n{step.output_tail}"] if step.output_tail else []
        failure.text = "\n".join([step.detail, *tail, *(_finding_line(f) for f in step.findings)])
    elif step.status == "skipped":
        ET.SubElement(case, "skipped", message=first_line(step.detail))
    elif step.detail:
        ET.SubElement(case, "system-out").text = step.detail


def render_junit(result: CiResult) -> str:
    """JUnit XML: one test case per step; a failed step carries its message and findings."""
    counts = {
        "tests": str(len(result.steps)),
        "failures": str(sum(step.status == "failed" for step in result.steps)),
        "errors": "0",
        "skipped": str(sum(step.status == "skipped" for step in result.steps)),
        "time": f"{result.seconds:.2f}",
    }
    root = ET.Element("testsuites", {"name": "buildtool ci", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": f"buildtool ci {result.recipe}", **counts})
    for step in result.steps:
        _junit_case(suite, step)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def render_markdown(result: CiResult) -> str:
    """The GitHub step summary: verdict, the table, and every finding."""
    lines = [f"## {verdict(result)}", "", "| step | status | seconds |", "|---|---|---:|"]
    for step in result.steps:
        status = f"{STATUS_ICONS[step.status]} {step.status}"
        lines.append(f"| `{step.name}` | {status} | {step.seconds:.2f} |")
    if result.compile_cache is not None:
        lines += [
            "",
            f"compile cache: {markdown_cell(result.compile_cache.summary(result.launcher))}",
        ]
    findings = [
        (step.name, finding)
        for step in result.steps
        for finding in readable_findings(step.findings)
    ]
    if findings:
        lines += ["", "### verify-linkage findings", ""]
        for step_name, finding in findings:
            lines.append(
                f"- **{finding.severity}** `{finding.check_id}` {finding.check.name} in "
                f"{markdown_files(finding)} ({step_name}): "
                f"{markdown_cell(finding.message)}  \n"
                f"  fix: {markdown_cell(finding.check.hint)}"
            )
    build = next((s.report for s in result.steps if s.name == "verify-build" and s.report), None)
    if build is not None and build.sizes:
        lines += ["", "### library sizes (verify-build)", "", *markdown_sizes(build)]
    failed = result.failed_step
    if failed is not None and not failed.findings:
        shown = [failed.detail.strip(), *([failed.output_tail] if failed.output_tail else [])]
        lines += ["", f"### `{failed.name}` failed", "", "```", *shown, "```"]
    return "\n".join(lines).rstrip("\n") + "\n"


def _html_tail(step: StepResult) -> str:
    """A failed tool's last lines, folded under its step."""
    if not step.output_tail:
        return ""
    from buildtool.linkage.report.svg import xml_text

    return (
        "<details><summary>last lines of its output</summary>"
        f'<pre class="detail">{xml_text(step.output_tail)}</pre></details>'
    )


def _html_steps(result: CiResult) -> str:
    """The table of the run's steps: status, seconds and what each did or why it failed."""
    from buildtool.linkage.report.svg import xml_text

    rows = "".join(
        f'<tr class="step {step.status}"><td><code>{xml_text(step.name)}</code></td>'
        f'<td><span class="status {step.status}">{step.status}</span></td>'
        f'<td class="num">{step.seconds:.2f}</td>'
        f'<td><span class="detail">{xml_text(step.detail.strip())}</span>{_html_tail(step)}</td>'
        "</tr>"
        for step in result.steps
    )
    state = "passed" if result.passed else "failed"
    return (
        f'<div class="verdict {state}">{xml_text(verdict(result))}</div>'
        '<h2>Steps</h2><table class="steps"><thead><tr><th>step</th><th>status</th>'
        f"<th>seconds</th><th>what it did</th></tr></thead><tbody>{rows}"
        f'<tr><td>total</td><td></td><td class="num">{result.seconds:.2f}</td><td></td></tr>'
        "</tbody></table>"
    )


def render_html(result: CiResult) -> str:
    """The run as one HTML page: the table of its steps, then the verify-linkage reports it
    made (the build tree's, the wheels'), their C++ names demangled."""
    from buildtool.linkage.report.html import render_html as render_page

    parts = [
        (
            f"{step.name}: {', '.join(PurePath(i).name for i in step.report.inputs)}",
            readable_report(step.report),
        )
        for step in result.steps
        if step.report is not None
    ]
    title = f"buildtool ci ({result.recipe})"
    return render_page(parts, title=title, preface=_html_steps(result))
