"""The JSON report (``"version": 1``, a published schema)."""

from __future__ import annotations

import dataclasses
from typing import Any

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.growth import BaselineSize, percent
from buildtool.linkage.report.model import REPORT_VERSION, Report, SizeEntry


def finding_json(finding: Finding) -> dict[str, Any]:
    """One finding as the JSON reports carry it."""
    return {
        "id": finding.check_id,
        "name": finding.check.name,
        "severity": finding.severity,
        "path": finding.path,
        "files": list(finding.paths),
        "message": finding.message,
        "evidence": finding.evidence,
        "hint": finding.check.hint,
    }


def report_json(report: Report) -> dict[str, Any]:
    """The JSON document (schema: buildtool/schemas/report.schema.json)."""
    return {
        "version": REPORT_VERSION,
        "recipe": report.recipe or None,
        "recipe_reason": report.recipe_reason,
        "inputs": list(report.inputs),
        "files_checked": report.files_checked,
        "files_by_format": dict(report.files_by_format),
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
