"""The text report for a person."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.report.model import (
    Report,
    SizeEntry,
    as_megabytes,
    delta_text,
    signed_bytes,
    signed_count,
)


def _size_line(entry: SizeEntry, baseline: bool) -> str:
    budget = f" (budget {as_megabytes(entry.budget)})" if entry.budget else ""
    line = (
        f"  {entry.path}: {as_megabytes(entry.file_size)} file, "
        f"{as_megabytes(entry.code_size)} code, {entry.exported_symbols} exported{budget}"
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
        lines.append(f"  {gone.path}: gone since the baseline (was {as_megabytes(gone.file_size)})")
    return lines


def _files_checked(report: Report) -> str:
    formats = dict(report.files_by_format)
    if set(formats) <= {"ELF"}:
        return f"{report.files_checked} ELF files checked"
    counted = ", ".join(f"{count} {name}" for name, count in report.files_by_format)
    return f"{report.files_checked} files checked ({counted})"


def summary_line(report: Report) -> str:
    return (
        f"{_files_checked(report)}, {len(report.checks_run)} checks: "
        f"{report.count('error')} errors, {report.count('warning')} warnings"
    )


def _identical_lines(report: Report) -> list[str]:
    """Byte-for-byte copies of one library under several names: ld.so maps one of them."""
    copies = [entry for entry in report.sizes if entry.identical_to]
    lines = [
        f"  {entry.path}: identical to {entry.identical_to}, {as_megabytes(entry.file_size)} wasted"
        for entry in copies
    ]
    wasted = sum(entry.file_size for entry in copies)
    if wasted:
        lines.append(f"  identical copies of one library: {as_megabytes(wasted)} wasted")
    return lines


def recipe_line(report: Report) -> str:
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
    lines.append(recipe_line(report))
    verdict = summary_line(report)
    lines.append(style(verdict, "red" if report.failed else "green"))
    return "\n".join(lines) + "\n"
