"""verify-linkage results and their renderings: text, JSON (versioned), GitHub annotations and
a Markdown step summary (the HTML page is ``linkage.html``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from buildtool.console import escape_data, escape_property
from buildtool.linkage.baseline import BaselineSize, percent
from buildtool.linkage.findings import CHECKS, Finding
from buildtool.linkage.graph import LinkGraph

REPORT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class SizeEntry:
    """Footprint of one shared library: why the split exists."""

    path: str
    file_size: int
    code_size: int
    exported_symbols: int
    budget: int | None
    identical_to: str | None = None
    """The library this file is a byte-for-byte copy of (one SONAME under several names): ld.so
    maps one of them, so the file's size is wasted."""
    previous: BaselineSize | None = None
    """The same library in the baseline report; None without one, or when it is new."""

    @property
    def file_delta(self) -> int | None:
        return None if self.previous is None else self.file_size - self.previous.file_size

    @property
    def file_percent(self) -> float | None:
        return None if self.previous is None else percent(self.file_size, self.previous.file_size)


@dataclasses.dataclass(frozen=True)
class Report:
    """Everything one verify-linkage run found."""

    inputs: tuple[str, ...]
    recipe: str
    files_checked: int
    findings: tuple[Finding, ...]
    sizes: tuple[SizeEntry, ...]
    hardening: bool = False
    """Whether the hardening checks ran (the recipe turned them on)."""
    graph: LinkGraph = dataclasses.field(default_factory=LinkGraph)
    """The files and their NEEDED edges, for the HTML report."""
    baseline: str = ""
    """The baseline report sizes were compared with (``--baseline``), or ""."""
    gone: tuple[BaselineSize, ...] = ()
    """Libraries of the baseline that this run no longer has."""

    def count(self, severity: str) -> int:
        return sum(1 for finding in self.findings if finding.severity == severity)

    @property
    def failed(self) -> bool:
        return self.count("error") > 0

    @property
    def checks_run(self) -> tuple[str, ...]:
        return tuple(
            check.id
            for check in CHECKS
            if (self.recipe or not check.needs_recipe)
            and (self.hardening or not check.hardening)
            and (self.baseline or not check.needs_baseline)
        )


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.2f} MB"


def signed_bytes(delta: int) -> str:
    """``+12,345 B``, ``-1,024 B``, ``±0 B``."""
    return f"{delta:+,d} B" if delta else "±0 B"


def signed_count(delta: int) -> str:
    """``+12``, ``-3``, ``±0``."""
    return f"{delta:+,d}" if delta else "±0"


def signed_percent(value: float | None) -> str:
    """``+1.23%``; ``new`` when there was nothing to grow from."""
    if value is None:
        return "new"
    return f"{value:+.2f}%" if value else "±0.00%"


def delta_text(entry: SizeEntry) -> str:
    """The change since the baseline in a few words: ``+12,345 B (+1.23%)``."""
    if entry.previous is None:
        return "new since the baseline"
    assert entry.file_delta is not None
    return f"{signed_bytes(entry.file_delta)} ({signed_percent(entry.file_percent)})"


def _size_line(entry: SizeEntry, baseline: bool) -> str:
    budget = f" (budget {_megabytes(entry.budget)})" if entry.budget else ""
    line = (
        f"  {entry.path}: {_megabytes(entry.file_size)} file, "
        f"{_megabytes(entry.code_size)} code, {entry.exported_symbols} exported{budget}"
    )
    if not baseline:
        return line
    if entry.previous is None:
        return line + "; new since the baseline"
    code = entry.code_size - entry.previous.code_size
    exported = entry.exported_symbols - entry.previous.exported_symbols
    return (
        f"{line}; since the baseline: file {delta_text(entry)}, "
        f"code {signed_bytes(code)}, exported {signed_count(exported)}"
    )


def _size_lines(report: Report) -> list[str]:
    lines = []
    for entry in report.sizes:
        lines.append(_size_line(entry, bool(report.baseline)))
    for gone in report.gone:
        lines.append(f"  {gone.path}: gone since the baseline (was {_megabytes(gone.file_size)})")
    return lines


def _summary_line(report: Report) -> str:
    return (
        f"{report.files_checked} ELF files checked, {len(report.checks_run)} checks: "
        f"{report.count('error')} errors, {report.count('warning')} warnings"
    )


def _identical_lines(report: Report) -> list[str]:
    """Byte-for-byte copies of one library under several names: ld.so maps one of them."""
    copies = [entry for entry in report.sizes if entry.identical_to]
    lines = [
        f"  {entry.path}: identical to {entry.identical_to}, {_megabytes(entry.file_size)} wasted"
        for entry in copies
    ]
    wasted = sum(entry.file_size for entry in copies)
    if wasted:
        lines.append(f"  identical copies of one library: {_megabytes(wasted)} wasted")
    return lines


def _recipe_line(report: Report) -> str:
    """Which recipe the run applied, or that it applied none."""
    if report.recipe:
        return f"recipe: {report.recipe}"
    return "no recipe: checks that need a linkage policy were skipped"


SEVERITY_COLOURS = {"error": "red", "warning": "yellow", "info": "cyan"}


def finding_lines(findings: Sequence[Finding], style: Callable[[str, str], str]) -> list[str]:
    """Findings grouped per file (or CMake file): message, evidence and fix of each."""
    lines: list[str] = []
    for path in sorted({finding.path for finding in findings}):
        lines.append(style(path, "bold"))
        for finding in (f for f in findings if f.path == path):
            check = finding.check
            label = style(
                f"{check.severity} {check.id} {check.name}", SEVERITY_COLOURS[check.severity]
            )
            lines.append(f"  {label}: {finding.message}")
            if finding.evidence:
                lines.append(f"    evidence: {finding.evidence}")
            lines.append(f"    fix: {check.hint}")
    return lines


def render_text(report: Report, paint: Callable[[str, str], str] | None = None) -> str:
    """Findings grouped per file, then the size table and a one-line verdict."""
    style = paint or (lambda text, _style: text)
    lines = finding_lines(report.findings, style)
    if report.sizes or report.gone:
        against = f" (against {report.baseline})" if report.baseline else ""
        lines.append(style(f"library sizes{against}", "bold"))
        lines += _size_lines(report)
        lines += _identical_lines(report)
    lines.append(_recipe_line(report))
    verdict = _summary_line(report)
    lines.append(style(verdict, "red" if report.failed else "green"))
    return "\n".join(lines) + "\n"


def finding_json(finding: Finding) -> dict[str, Any]:
    """One finding as the JSON reports carry it."""
    return {
        "id": finding.check_id,
        "name": finding.check.name,
        "severity": finding.severity,
        "path": finding.path,
        "message": finding.message,
        "evidence": finding.evidence,
        "hint": finding.check.hint,
    }


def report_json(report: Report) -> dict[str, Any]:
    """The JSON document (schema: buildtool/schemas/report.schema.json)."""
    return {
        "version": REPORT_VERSION,
        "recipe": report.recipe or None,
        "inputs": list(report.inputs),
        "files_checked": report.files_checked,
        "checks_run": list(report.checks_run),
        "summary": {"errors": report.count("error"), "warnings": report.count("warning")},
        "findings": [finding_json(finding) for finding in report.findings],
        "sizes": [_size_json(entry, bool(report.baseline)) for entry in report.sizes],
        "baseline": _baseline_json(report),
    }


def _size_json(entry: SizeEntry, baseline: bool) -> dict[str, Any]:
    document: dict[str, Any] = {
        "path": entry.path,
        "file_size": entry.file_size,
        "code_size": entry.code_size,
        "exported_symbols": entry.exported_symbols,
        "budget": entry.budget,
    }
    if baseline:
        previous = entry.previous
        document["previous"] = None if previous is None else dataclasses.asdict(previous)
        document["delta"] = None if previous is None else _delta_json(entry, previous)
    return document


def _delta_json(entry: SizeEntry, previous: BaselineSize) -> dict[str, Any]:
    return {
        "file_size": entry.file_size - previous.file_size,
        "file_size_percent": _rounded(percent(entry.file_size, previous.file_size)),
        "code_size": entry.code_size - previous.code_size,
        "code_size_percent": _rounded(percent(entry.code_size, previous.code_size)),
        "exported_symbols": entry.exported_symbols - previous.exported_symbols,
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _baseline_json(report: Report) -> dict[str, Any] | None:
    if not report.baseline:
        return None
    return {"source": report.baseline, "gone": [dataclasses.asdict(g) for g in report.gone]}


def render_json(report: Report) -> str:
    import json  # only this format needs it

    return json.dumps(report_json(report), indent=2) + "\n"


def github_annotation(finding: Finding) -> str:
    """One workflow command: ``::error file=...,title=...::message``."""
    level = {"error": "error", "warning": "warning", "info": "notice"}[finding.severity]
    title = f"{finding.check_id} {finding.check.name}"
    body = finding.message + (f"\nevidence: {finding.evidence}" if finding.evidence else "")
    body += f"\nfix: {finding.check.hint}"
    return (
        f"::{level} file={escape_property(finding.path)},title={escape_property(title)}"
        f"::{escape_data(body)}"
    )


def size_notice(report: Report) -> str | None:
    """One ``::notice`` with every library's change since the baseline; None without one."""
    if not report.baseline:
        return None
    changes = [f"{entry.path}: {delta_text(entry)}" for entry in report.sizes]
    changes += [f"{gone.path}: gone" for gone in report.gone]
    title = escape_property(f"library sizes against {report.baseline}")
    body = "\n".join(changes) or "no libraries"
    return f"::notice title={title}::{escape_data(body)}"


def render_github(report: Report) -> str:
    """GitHub Actions annotations (the size changes as a notice), then the recipe and the plain
    verdict line."""
    lines = [github_annotation(finding) for finding in report.findings]
    notice = size_notice(report)
    if notice is not None:
        lines.append(notice)
    lines.append(_recipe_line(report))
    lines.append(_summary_line(report))
    return "\n".join(lines) + "\n"


def markdown_cell(text: str) -> str:
    """Text for a Markdown table cell: pipes, backticks and newlines cannot break the table."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'").replace("\n", " ")


def markdown_sizes(report: Report) -> list[str]:
    """The size table in Markdown (with a change column against a baseline); no lines when the
    report has no libraries."""
    if not report.sizes and not report.gone:
        return []
    against = f" (against `{markdown_cell(report.baseline)}`)" if report.baseline else ""
    lines = [f"Library sizes{against}:", ""]
    head = "| library | file | code | exported | budget |"
    rule = "|---|---:|---:|---:|---:|"
    if report.baseline:
        head, rule = head + " change |", rule + "---:|"
    lines += [head, rule]
    for entry in report.sizes:
        budget = _megabytes(entry.budget) if entry.budget else ""
        row = (
            f"| `{markdown_cell(entry.path)}` | {_megabytes(entry.file_size)} | "
            f"{_megabytes(entry.code_size)} | {entry.exported_symbols} | {budget} |"
        )
        lines.append(row + (f" {delta_text(entry)} |" if report.baseline else ""))
    lines += [f"| `{markdown_cell(gone.path)}` | | | | | gone |" for gone in report.gone]
    return [*lines, ""]


def render_markdown(report: Report) -> str:
    """The GitHub step summary: the verdict, the size table (with the changes since the
    baseline) and the findings."""
    lines = [f"### verify-linkage: {_summary_line(report)}", "", *markdown_sizes(report)]
    for finding in report.findings:
        lines.append(
            f"- **{finding.severity}** `{finding.check_id}` {finding.check.name} in "
            f"`{markdown_cell(finding.path)}`: {markdown_cell(finding.message)}"
        )
    return "\n".join(lines) + "\n"
