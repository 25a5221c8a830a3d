"""check-cmake's report as one self-contained HTML page (``--format html``). Pure.

The same page shell as verify-linkage's (style, Content-Security-Policy: no script, no request):
the verdict and what was checked, the findings, the target graph as a table, and the reference
of the checks that ran.
"""

from __future__ import annotations

from buildtool.cmakecheck.report import CmakeReport, GraphEntry
from buildtool.linkage.report.html import checks_reference, page, recipe_fact
from buildtool.linkage.report.svg import xml_text


def _summary(report: CmakeReport) -> str:
    errors, warnings = report.count("error"), report.count("warning")
    state = "failed" if report.failed else "passed"
    facts = [
        ("build folder", report.build_dir),
        ("CMake targets", str(report.targets)),
        ("recipe", recipe_fact(report.recipe, report.recipe_reason)),
        ("--as-needed by default", "yes" if report.as_needed_default else "no"),
        ("checks run", " ".join(report.checks_run)),
    ]
    rows = "".join(f"<dt>{xml_text(k)}</dt><dd>{xml_text(v)}</dd>" for k, v in facts)
    return (
        f'<div class="verdict {state}">{state}: {errors} errors, {warnings} warnings</div>'
        f'<dl class="facts">{rows}</dl>'
    )


def _findings(report: CmakeReport) -> str:
    if not report.findings:
        return '<p class="none">No findings.</p>'
    rows = []
    for finding in report.findings:
        check = finding.check
        paths = "<br>".join(f'<span class="path">{xml_text(p)}</span>' for p in finding.paths)
        evidence = (
            f'<div class="small">evidence: <code>{xml_text(finding.evidence)}</code></div>'
            if finding.evidence
            else ""
        )
        rows.append(
            f'<tr class="finding {check.severity}">'
            f'<td><span class="sev {check.severity}">{check.severity}</span></td>'
            f'<td><a href="#check-{check.id}"><code>{check.id}</code></a><br>'
            f"{xml_text(check.name)}</td>"
            f"<td>{paths}</td>"
            f"<td>{xml_text(finding.message)}{evidence}</td><td>{xml_text(check.hint)}</td></tr>"
        )
    return (
        '<table class="findings"><thead><tr><th>severity</th><th>check</th><th>where</th>'
        "<th>what is wrong</th><th>fix</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _graph_row(entry: GraphEntry) -> str:
    if entry.type == "OBJECT_LIBRARY":
        kind, links = (
            "object library",
            "objects linked into " + (", ".join(entry.links) or "nothing"),
        )
    else:
        kind = "module" if entry.type == "MODULE_LIBRARY" else "shared library"
        links = ", ".join(entry.links) or "nothing of the build"
    return (
        f"<tr><td><b>{xml_text(entry.name)}</b></td><td>{kind}</td>"
        f'<td><span class="path">{xml_text(", ".join(entry.files))}</span></td>'
        f"<td>{xml_text(links)}</td></tr>"
    )


def _graph(report: CmakeReport) -> str:
    if not report.graph:
        return '<p class="none">No shared or object libraries.</p>'
    return (
        '<table class="targets"><thead><tr><th>target</th><th>kind</th><th>files</th>'
        "<th>links</th></tr></thead><tbody>"
        + "".join(_graph_row(entry) for entry in report.graph)
        + "</tbody></table>"
    )


def render_html(report: CmakeReport) -> str:
    """``check-cmake --format html``."""
    body = (
        f"{_summary(report)}<h2>Findings</h2>{_findings(report)}"
        f"<h2>Target graph</h2>{_graph(report)}{checks_reference(report.checks_run)}"
    )
    return page("check-cmake report", body)
