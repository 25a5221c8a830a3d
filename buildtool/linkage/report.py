"""verify-linkage results and their three renderings: text, JSON (versioned) and GitHub."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from buildtool.linkage.findings import CHECKS, Finding

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
            if (self.recipe or not check.needs_recipe) and (self.hardening or not check.hardening)
        )


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.2f} MB"


def _summary_line(report: Report) -> str:
    return (
        f"{report.files_checked} ELF files checked, {len(report.checks_run)} checks: "
        f"{report.count('error')} errors, {report.count('warning')} warnings"
    )


def _recipe_line(report: Report) -> str:
    """Which recipe the run applied, or that it applied none."""
    if report.recipe:
        return f"recipe: {report.recipe}"
    return "no recipe: checks that need a linkage policy were skipped"


def render_text(report: Report, paint: Callable[[str, str], str] | None = None) -> str:
    """Findings grouped per file, then the size table and a one-line verdict."""
    style = paint or (lambda text, _style: text)
    colours = {"error": "red", "warning": "yellow", "info": "cyan"}
    lines: list[str] = []
    for path in sorted({finding.path for finding in report.findings}):
        lines.append(style(path, "bold"))
        for finding in (f for f in report.findings if f.path == path):
            check = finding.check
            label = style(f"{check.severity} {check.id} {check.name}", colours[check.severity])
            lines.append(f"  {label}: {finding.message}")
            if finding.evidence:
                lines.append(f"    evidence: {finding.evidence}")
            lines.append(f"    fix: {check.hint}")
    if report.sizes:
        lines.append(style("library sizes", "bold"))
        for entry in report.sizes:
            budget = f" (budget {_megabytes(entry.budget)})" if entry.budget else ""
            lines.append(
                f"  {entry.path}: {_megabytes(entry.file_size)} file, "
                f"{_megabytes(entry.code_size)} code, {entry.exported_symbols} exported{budget}"
            )
            if entry.identical_to:
                lines.append(
                    f"    identical to {entry.identical_to}: {_megabytes(entry.file_size)} wasted"
                )
        wasted = sum(entry.file_size for entry in report.sizes if entry.identical_to)
        if wasted:
            lines.append(f"  identical copies of one library: {_megabytes(wasted)} wasted")
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
        "sizes": [dataclasses.asdict(entry) for entry in report.sizes],
    }


def render_json(report: Report) -> str:
    import json  # only this format needs it

    return json.dumps(report_json(report), indent=2) + "\n"


def escape_data(text: str) -> str:
    """A GitHub workflow command's message, escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(finding: Finding) -> str:
    """One workflow command: ``::error file=...,title=...::message``."""
    level = {"error": "error", "warning": "warning", "info": "notice"}[finding.severity]
    title = f"{finding.check_id} {finding.check.name}"
    body = finding.message + (f"\nevidence: {finding.evidence}" if finding.evidence else "")
    body += f"\nfix: {finding.check.hint}"
    return (
        f"::{level} file={_escape_property(finding.path)},title={_escape_property(title)}"
        f"::{escape_data(body)}"
    )


def render_github(report: Report) -> str:
    """GitHub Actions annotations, then the recipe and the plain verdict line."""
    lines = [github_annotation(finding) for finding in report.findings]
    lines.append(_recipe_line(report))
    lines.append(_summary_line(report))
    return "\n".join(lines) + "\n"
