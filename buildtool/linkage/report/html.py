"""The verify-linkage report as one self-contained HTML page. Pure.

Three parts per report: the link graph (SVG drawn by ``svg``: nodes are the input's files with
the recipe's roles, edges their DT_NEEDED entries, findings marked on both), the library sizes as
bars with their budgets (and the change since a baseline), and the findings table, linked both
ways with the graph. No script, no external font, stylesheet or image: the page carries a
Content-Security-Policy that forbids every request, so nothing in it (not even a hostile file
name) can make the browser fetch anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from buildtool import __version__
from buildtool.linkage.checks.catalogue import CHECKS, CMAKE_CHECKS
from buildtool.linkage.checks.growth import file_name, percent
from buildtool.linkage.report.model import (
    Report,
    SizeEntry,
    signed_bytes,
    signed_count,
    signed_percent,
)
from buildtool.linkage.report.svg import (
    Anchors,
    group_label,
    megabytes,
    render_bar,
    render_graph,
    worst,
    xml_text,
)
from buildtool.linkage.report.text import relative_path

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
)
"""Inline styles only: no script, no request of any kind."""

STYLE = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --paper: #ffffff; --wash: #f6f8fa;
  --required: #0969da; --optional: #8250df; --exe: #1a7f37; --ext: #bf8700; --other: #6e7781;
  --error: #cf222e; --warning: #bc4c00; --ok: #1a7f37; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI",
  "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: var(--paper); }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 32px 0 8px; padding-bottom: 4px;
  border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 24px 0 4px; }
.verdict { display: inline-block; margin: 6px 0 10px; padding: 4px 12px; border-radius: 14px;
  font-weight: 600; color: #fff; background: var(--ok); }
.verdict.failed { background: var(--error); }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; margin: 0;
  color: var(--muted); }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; font-family: ui-monospace, monospace; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 4px 0 10px; color: var(--muted);
  font-size: 13px; }
.legend span::before { content: ""; display: inline-block; width: 12px; height: 12px;
  margin-right: 6px; vertical-align: -1px; border-radius: 3px; background: var(--c); }
.legend .line::before { height: 0; border-top: 2px var(--s, solid) var(--c); border-radius: 0;
  background: none; vertical-align: 3px; width: 22px; }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 8px;
  background: var(--wash); padding: 8px; }
svg.graph { display: block; margin: 0 auto; font-size: 13px; width: 100%; height: auto; }
.cluster rect { fill: #fff; fill-opacity: .5; stroke: var(--line); stroke-width: 1.5; }
.cluster text { fill: var(--muted); font-weight: 700; }
.node.group .behind { fill: #fff; stroke: var(--line); stroke-width: 1.5; }
.groups { margin-top: 8px; } .groups details { margin: 4px 0; }
.groups summary { cursor: pointer; font-weight: 600; }
.groups details.sev-error > summary { color: var(--error); }
.groups details.sev-warning > summary { color: var(--warning); }
.groups ul { margin: 4px 0 8px; padding-left: 22px; columns: 3 320px; }
.groups li { break-inside: avoid; } .groups li:target { background: #fff8c5; }
.groups li a.sev { margin-left: 6px; }
.node > rect, .node.group > a > rect { fill: #fff; stroke: var(--line); stroke-width: 1.5; }
.node .stripe, .node.group > a > .stripe { stroke: none; fill: var(--c, var(--other)); }
.node.role-required { --c: var(--required); } .node.role-optional { --c: var(--optional); }
.node.kind-executable { --c: var(--exe); } .node.kind-extension { --c: var(--ext); }
.node.kind-missing > rect { stroke: var(--error); stroke-dasharray: 5 4; fill: #fff5f5; }
.node.kind-missing { --c: var(--error); }
.node.sev-error > rect:first-of-type, .node.group.sev-error > a > rect:nth-of-type(2) {
  stroke: var(--error); stroke-width: 3; }
.node.sev-warning > rect:first-of-type, .node.group.sev-warning > a > rect:nth-of-type(2) {
  stroke: var(--warning); stroke-width: 3; }
.node:target > rect:first-of-type, .node.group:target > a > rect:nth-of-type(2) {
  stroke: #000; stroke-width: 4; }
.node text { fill: var(--ink); } .node .name { font-weight: 700; }
.node .name.long { font-size: 11px; }
.node .role { fill: var(--c, var(--muted)); font-size: 12px; }
.node .detail { fill: var(--muted); font-size: 12px; }
.badge circle { stroke: #fff; stroke-width: 2; fill: var(--error); }
.badge.sev-warning circle { fill: var(--warning); } .badge.sev-info circle { fill: var(--other); }
.badge text { fill: #fff; font-size: 11px; font-weight: 700; }
.edge path { fill: none; stroke: #8c959f; stroke-width: 1.6; }
.edge.sev-error path, .edge.absent path, .edge.unresolved path { stroke: var(--error);
  stroke-width: 2.4; }
.edge.sev-warning path { stroke: var(--warning); stroke-width: 2.4; }
.edge.absent path, .edge.unresolved path { stroke-dasharray: 6 5; }
marker .arrow { fill: #8c959f; } marker .arrow-bad { fill: var(--error); }
marker .arrow-warning { fill: var(--warning); }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; vertical-align: top; padding: 6px 10px;
  border-bottom: 1px solid var(--line); }
th { background: var(--wash); font-weight: 600; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.bar { white-space: nowrap; } td.bar svg { display: block; }
.bar .track { fill: #eaeef2; } .bar .fill { fill: var(--required); }
.bar .fill.over { fill: var(--error); } .bar .previous { stroke: #24292f; stroke-width: 2.5; }
.bar .budget { stroke: #82071e; stroke-width: 3; }
table.sizes td:first-child { min-width: 200px; max-width: 320px; }
table.sizes tr.input th { background: #fff; padding-top: 14px; font-weight: 600;
  color: var(--muted); }
table.findings td:nth-child(2) { min-width: 150px; }
table.findings td:nth-child(3) { min-width: 190px; max-width: 300px; }
.small { color: var(--muted); font-size: 12px; }
.grew { color: var(--error); } .shrank { color: var(--ok); }
code, .path { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12px; word-break: break-all; }
.file { font-weight: 600; word-break: break-all; }
a { color: var(--required); text-decoration: none; } a:hover { text-decoration: underline; }
tr:target { background: #fff8c5; }
.sev { font-weight: 700; text-transform: uppercase; font-size: 11px; letter-spacing: .04em; }
.sev.error { color: var(--error); } .sev.warning { color: var(--warning); }
.sev.info { color: var(--muted); }
.none { color: var(--muted); font-style: italic; }
.status { font-weight: 700; } .status.passed { color: var(--ok); }
.status.failed { color: var(--error); } .status.skipped { color: var(--warning); }
table.steps td:first-child { white-space: nowrap; }
table.steps .detail { white-space: pre-wrap; font-family: ui-monospace, monospace;
  font-size: 12px; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
"""

ROLES_LEGEND = (
    '<span class="role-key" style="--c: var(--required)">required library (runtime)</span>'
    '<span class="role-key" style="--c: var(--optional)">optional library (compiler)</span>'
)
"""The recipe's roles: in the legend only when a recipe gave the nodes roles."""


def legend(with_recipe: bool) -> str:
    """What the graph's colours and lines mean; the recipe's roles only with a recipe."""
    kinds = (ROLES_LEGEND if with_recipe else '<span style="--c: var(--other)">library</span>') + (
        '<span style="--c: var(--exe)">executable</span>'
        '<span style="--c: var(--ext)">extension module</span>'
    )
    if with_recipe:
        kinds += '<span style="--c: var(--other)">not in the recipe</span>'
    absent = "required but absent, or not found" if with_recipe else "not found"
    return (
        f'<div class="legend">{kinds}'
        '<span class="line" style="--c: #8c959f">NEEDED</span>'
        '<span class="line" style="--c: var(--error)">NEEDED with a finding</span>'
        f'<span class="line" style="--c: var(--error); --s: dashed">{absent}</span>'
        "<span>red outline, badge: findings (click to jump)</span></div>"
    )


def _summary(report: Report) -> str:
    errors, warnings = report.count("error"), report.count("warning")
    state = "failed" if report.failed else "passed"
    verdict = f"{state}: {errors} errors, {warnings} warnings"
    facts = [
        ("inputs", ", ".join(report.inputs) or "none"),
        ("files checked", report.files_checked),
    ]
    facts.append(("recipe", recipe_fact(report.recipe, report.recipe_reason)))
    if report.baseline:
        facts.append(("baseline", report.baseline))
    if report.sizes:
        facts.append(("libraries", _total(report)))
    facts.append(("checks run", " ".join(report.checks_run)))
    rows = "".join(f"<dt>{xml_text(k)}</dt><dd>{xml_text(str(v))}</dd>" for k, v in facts)
    return f'<div class="verdict {state}">{verdict}</div><dl class="facts">{rows}</dl>'


def recipe_fact(recipe: str, reason: str) -> str:
    """The recipe applied and why, or that none was and why."""
    why = f" ({reason})" if reason else ""
    if recipe:
        return f"{recipe}{why}"
    return f"none{why}: checks that need a policy were skipped"


def _total(report: Report) -> str:
    """The libraries' summed file size, and its change since the baseline (new and gone
    libraries included)."""
    total = sum(entry.file_size for entry in report.sizes)
    text = f"{len(report.sizes)}, {megabytes(total)} in all"
    if report.baseline:
        before = sum(e.previous.file_size for e in report.sizes if e.previous is not None)
        before += sum(gone.file_size for gone in report.gone)
        change = signed_bytes(total - before)
        text += f" ({change}, {signed_percent(percent(total, before))} since the baseline)"
    return text


def _graph(anchors: Anchors) -> str:
    if not anchors.report.graph.nodes:
        return '<p class="none">No ELF files.</p>'
    return (
        legend(bool(anchors.report.recipe))
        + f'<div class="scroll">{render_graph(anchors)}{_group_lists(anchors)}</div>'
    )


def _member(index: int, group: str, anchors: Anchors) -> str:
    """One file of a group: it holds the file's anchor, so links to the file open the group."""
    node = anchors.report.graph.nodes[index]
    links = "".join(
        f'<a class="sev {f.severity}" href="#{anchors.finding(i)}">{f.check_id}</a>'
        for i, f in anchors.findings_of(node.path)
    )
    return (
        f'<li id="{anchors.node(index)}" data-path="{xml_text(node.path)}" data-group="{group}">'
        f'<a class="file" href="#{group}">{xml_text(node.name)}</a>{links}</li>'
    )


def _group_lists(anchors: Anchors) -> str:
    """Each group's files, folded: opening one (or following a link to one of its files) shows
    them without any script."""
    parts = []
    for index, unit in enumerate(anchors.folded.units):
        if not unit.grouped:
            continue
        group = anchors.group(index)
        severity = worst(anchors.findings_of_unit(unit))
        members = "".join(_member(m, group, anchors) for m in unit.members)
        parts.append(
            f'<details class="group{f" sev-{severity}" if severity else ""}" data-group="{group}">'
            f"<summary>{xml_text(group_label(unit, anchors))}</summary>"
            f'<ul id="{anchors.group_files(index)}">{members}</ul></details>'
        )
    return f'<div class="groups">{"".join(parts)}</div>' if parts else ""


def _change(new: int, old: int | None, unit: str) -> str:
    if old is None:
        return ""
    delta, grown = new - old, percent(new, old)
    kind = "grew" if delta > 0 else "shrank" if delta < 0 else ""
    amount = signed_bytes(delta) if unit == "B" else signed_count(delta)
    return f'<div class="small {kind}">{amount} ({signed_percent(grown)})</div>'


def _size_cells(value: int, scale: int, budget: int | None, old: int | None, unit: str) -> str:
    shown = megabytes(value) if unit == "B" else f"{value:,}"
    limit = ""
    if budget:
        used = f"{value * 100 / budget:.0f}% used"
        limit = f'<div class="small">budget {megabytes(budget)} · {used}</div>'
        budget = budget if budget <= scale else None  # off the scale: named, not drawn
    return (
        f'<td class="bar">{render_bar(value, scale, budget, old)}</td>'
        f'<td class="num">{shown}{limit}{_change(value, old, unit)}</td>'
    )


def _where(path: str, report: Report) -> str:
    """Where a file lies, for under its name: its path in its input (the input named too when
    there are several), or its whole path when it lies in no input."""
    placed = relative_path(path, report.inputs)
    if placed is None:
        return path
    label, inside = placed
    folder = inside.rpartition("/")[0]
    where = f"{folder}/" if folder else ""
    if len(report.inputs) > 1:
        where += f" in {PurePosixPath(label.rstrip('/')).name}"
    return where.strip()


def _file_cell(path: str, anchors: Anchors, where: str | None = None) -> str:
    """The file name (linked to its node) over where it lies (``_where``; the whole path is its
    tooltip)."""
    node = anchors.node_of(path)
    name = xml_text(file_name(path))
    shown = f'<a class="file" href="#{node}">{name}</a>' if node else f'<b class="file">{name}</b>'
    where = _where(path, anchors.report) if where is None else where
    line = f'<div class="path small">{xml_text(where)}</div>' if where else ""
    return f'<span title="{xml_text(path)}">{shown}</span>{line}'


def _size_row(entry: SizeEntry, anchors: Anchors, scales: tuple[int, int, int]) -> str:
    placed = relative_path(entry.path, anchors.report.inputs)
    folder = placed[1].rpartition("/")[0] if placed else entry.path.rpartition("/")[0]
    link = _file_cell(entry.path, anchors, f"{folder}/" if folder else "")
    old = entry.previous
    if anchors.report.baseline and old is None:
        link += '<div class="small grew">new since the baseline</div>'
    olds = (None, None, None) if old is None else (
        old.file_size, old.code_size, old.exported_symbols
    )  # fmt: skip
    return (
        f"<tr><td>{link}</td>"
        + _size_cells(entry.file_size, scales[0], entry.budget, olds[0], "B")
        + _size_cells(entry.code_size, scales[1], None, olds[1], "B")
        + _size_cells(entry.exported_symbols, scales[2], None, olds[2], "symbols")
        + "</tr>"
    )


def _by_input(report: Report) -> list[tuple[str | None, list[SizeEntry]]]:
    """The libraries per input, in input order (with a label only when there are several, or
    the one input is a folder or wheel they lie in); those of no input last."""
    groups: dict[str | None, list[SizeEntry]] = {label: [] for label in report.inputs}
    groups[None] = []
    for entry in report.sizes:
        placed = relative_path(entry.path, report.inputs)
        groups[placed[0] if placed else None].append(entry)
    return [(label, entries) for label, entries in groups.items() if entries]


BUDGET_ON_SCALE = 2
"""A budget more than this many times the largest library is left off the bars' scale (the
bars would be slivers); the cell still names it and how much of it is used."""


def _scales(report: Report) -> tuple[int, int, int]:
    entries = report.sizes
    olds = [e.previous for e in entries if e.previous is not None]
    largest = max([e.file_size for e in entries] + [o.file_size for o in olds], default=0)
    budgets = [e.budget for e in entries if e.budget and e.budget <= BUDGET_ON_SCALE * largest]
    return (
        max([largest, *budgets]),
        max([e.code_size for e in entries] + [o.code_size for o in olds], default=0),
        max([e.exported_symbols for e in entries] + [o.exported_symbols for o in olds], default=0),
    )  # fmt: skip


def _sizes(anchors: Anchors) -> str:
    report = anchors.report
    if not report.sizes and not report.gone:
        return '<p class="none">No shared libraries.</p>'
    scales = _scales(report)
    rows = []
    for label, entries in _by_input(report):
        if label is not None:  # the input's path once, over its libraries
            rows.append(
                f'<tr class="input"><th colspan="7" class="path">{xml_text(label)}</th></tr>'
            )
        rows += [_size_row(entry, anchors, scales) for entry in entries]
    rows += [
        f'<tr><td><span class="path">{xml_text(g.path)}</span>'
        f'<div class="small shrank">gone since the baseline (was {megabytes(g.file_size)})</div>'
        "</td><td></td><td></td><td></td><td></td><td></td><td></td></tr>"
        for g in report.gone
    ]
    note = "Bars share one scale per column; the dark red line is the budget (a red bar is over it)"
    if report.baseline:
        note += ", the black line the size in the baseline"
    return (
        f'<p class="small">{note}.</p><table class="sizes"><thead><tr><th>library</th>'
        '<th colspan="2">file size</th><th colspan="2">code size</th>'
        '<th colspan="2">exported symbols</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table>"
    )


def _findings(anchors: Anchors) -> str:
    report = anchors.report
    if not report.findings:
        return '<p class="none">No findings.</p>'
    rows = []
    for index, finding in enumerate(report.findings):
        check = finding.check
        where = "<br>".join(_file_cell(path, anchors) for path in finding.paths)
        evidence = (
            f'<div class="small">evidence: <code>{xml_text(finding.evidence)}</code></div>'
            if finding.evidence
            else ""
        )
        rows.append(
            f'<tr id="{anchors.finding(index)}" class="finding {check.severity}">'
            f'<td><span class="sev {check.severity}">{check.severity}</span></td>'
            f'<td><a href="#check-{check.id}"><code>{check.id}</code></a><br>'
            f"{xml_text(check.name)}</td><td>{where}</td>"
            f"<td>{xml_text(finding.message)}{evidence}</td><td>{xml_text(check.hint)}</td></tr>"
        )
    return (
        '<table class="findings"><thead><tr><th>severity</th><th>check</th><th>file</th>'
        "<th>what is wrong</th><th>fix</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _section(anchors: Anchors, heading: str) -> str:
    title = f"<h2>{xml_text(heading)}</h2>" if heading else ""
    sub = "h3" if heading else "h2"
    return (
        f'<section class="report">{title}{_summary(anchors.report)}'
        f"<{sub}>Link graph</{sub}>{_graph(anchors)}"
        f"<{sub}>Library sizes</{sub}>{_sizes(anchors)}"
        f"<{sub}>Findings</{sub}>{_findings(anchors)}</section>"
    )


def checks_reference(check_ids: Sequence[str]) -> str:
    """The reference of the checks that ran (what each catches, its fix), each row the target
    of the findings' check links: the page explains itself without a network."""
    rows = []
    for check in (c for c in (*CHECKS, *CMAKE_CHECKS) if c.id in set(check_ids)):
        rows.append(
            f'<tr id="check-{check.id}"><td><code>{check.id}</code><br>{xml_text(check.name)}'
            f'</td><td><span class="sev {check.severity}">{check.severity}</span></td>'
            f"<td>{xml_text(check.summary)}</td><td>{xml_text(check.hint)}</td></tr>"
        )
    return (
        '<h2 id="checks">The checks that ran</h2><table class="checks"><thead><tr><th>check</th>'
        "<th>severity</th><th>what it catches</th><th>fix</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def page(title: str, body: str) -> str:
    """The whole document around ``body``: the policy that forbids every request, the style,
    the title and the footer (which links to the reference of the checks, when the body has
    one)."""
    checks = '<a href="#checks">the checks that ran</a> · ' if 'id="checks"' in body else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{xml_text(title)}</title><style>{STYLE}</style></head>"
        f"<body><h1>{xml_text(title)}</h1>{body}"
        f"<footer>buildtool {xml_text(__version__)} · {checks}every check: docs/checks.md in "
        "buildtool's documentation</footer>"
        "</body></html>\n"
    )


def render_html(
    reports: Sequence[tuple[str, Report]], title: str = "verify-linkage report", preface: str = ""
) -> str:
    """One page for one or more reports (``buildtool ci``: the build tree's and the wheels',
    after a ``preface``: the table of its steps). Each report is ``(heading, report)``; a single
    report may have an empty heading."""
    several = len(reports) > 1
    sections = [
        _section(Anchors(report, f"r{i}-" if several else ""), heading)
        for i, (heading, report) in enumerate(reports)
    ]
    ran = sorted({check for _, report in reports for check in report.checks_run})
    reference = checks_reference(ran) if ran else ""
    return page(title, preface + "".join(sections) + reference)


def render_report_html(report: Report) -> str:
    """``verify-linkage --format html``."""
    return render_html([("", report)])
