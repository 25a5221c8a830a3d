"""check-cmake results: the target graph and the findings, as text, JSON or GitHub annotations.

The findings render the way verify-linkage's do (same fields, same annotations)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from buildtool.cmakecheck.codemodel import LIBRARY_TYPES
from buildtool.cmakecheck.rules import Graph
from buildtool.linkage.checks.catalogue import CMAKE_CHECKS, Finding
from buildtool.linkage.report.github import github_annotation
from buildtool.linkage.report.json_report import finding_json
from buildtool.linkage.report.text import finding_lines

REPORT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class GraphEntry:
    """One shared library or OBJECT library of the target graph."""

    name: str
    """CMake target name."""
    type: str
    """CMake target type."""
    files: tuple[str, ...]
    """File names it builds (none for OBJECT libraries)."""
    links: tuple[str, ...]
    """Targets of the build tree on its link line (libraries); targets holding its object
    files (OBJECT libraries)."""


@dataclasses.dataclass(frozen=True)
class CmakeReport:
    """One check-cmake run."""

    build_dir: str
    """The build folder checked."""
    recipe: str
    """The recipe, or "" without one."""
    targets: int
    """Targets in the code model."""
    findings: tuple[Finding, ...]
    """What the checks found."""
    graph: tuple[GraphEntry, ...]
    """Shared libraries and object libraries, with who links what."""
    as_needed_default: bool = False
    """Whether the toolchain links with --as-needed by default."""
    recipe_reason: str = ""
    """Why ``recipe`` applies, or why no recipe does."""

    def count(self, severity: str) -> int:
        return sum(1 for finding in self.findings if finding.severity == severity)

    @property
    def failed(self) -> bool:
        return self.count("error") > 0

    @property
    def checks_run(self) -> tuple[str, ...]:
        return tuple(c.id for c in CMAKE_CHECKS if self.recipe or not c.needs_recipe)


def graph_entries(graph: Graph) -> tuple[GraphEntry, ...]:
    """The libraries and object libraries of ``graph``, in the code model's order."""
    entries = []
    for target in graph.model.targets:
        if target.type in LIBRARY_TYPES:
            links = graph.linked.get(target.name, ())
            entries.append(GraphEntry(target.name, target.type, target.file_names, links))
        elif target.type == "OBJECT_LIBRARY":
            holders = graph.holders.get(target.name, ())
            entries.append(GraphEntry(target.name, target.type, (), holders))
    return tuple(entries)


def _summary_line(report: CmakeReport) -> str:
    return (
        f"{report.targets} CMake targets checked, {len(report.checks_run)} checks: "
        f"{report.count('error')} errors, {report.count('warning')} warnings"
    )


def _graph_lines(report: CmakeReport) -> list[str]:
    lines = ["target graph"]
    for entry in report.graph:
        if entry.type == "OBJECT_LIBRARY":
            holders = ", ".join(entry.links) or "nothing"
            lines.append(f"  object library {entry.name}: objects linked into {holders}")
        else:
            kind = "module" if entry.type == "MODULE_LIBRARY" else "shared library"
            links = f" -> {', '.join(entry.links)}" if entry.links else ""
            lines.append(f"  {kind} {entry.name} ({', '.join(entry.files)}){links}")
    return lines


def recipe_line(report: CmakeReport) -> str:
    """Which recipe the run applied and why, or why none."""
    why = f" ({report.recipe_reason})" if report.recipe_reason else ""
    if report.recipe:
        return f"recipe: {report.recipe}{why}"
    return f"no recipe{why}: checks that need a linkage policy were skipped"


def render_text(report: CmakeReport, paint: Callable[[str, str], str] | None = None) -> str:
    """Findings grouped per CMake file, the target graph (without a recipe), then a verdict."""
    style = paint or (lambda text, _style: text)
    lines = finding_lines(report.findings, style)
    if not report.recipe:
        lines += _graph_lines(report)
    lines.append(recipe_line(report))
    lines.append(style(_summary_line(report), "red" if report.failed else "green"))
    return "\n".join(lines) + "\n"


def report_json(report: CmakeReport) -> dict[str, Any]:
    """The JSON document (schema: buildtool/schemas/check-cmake.schema.json)."""
    return {
        "version": REPORT_VERSION,
        "recipe": report.recipe or None,
        "recipe_reason": report.recipe_reason,
        "build_dir": report.build_dir,
        "targets": report.targets,
        "as_needed_default": report.as_needed_default,
        "checks_run": list(report.checks_run),
        "summary": {"errors": report.count("error"), "warnings": report.count("warning")},
        "findings": [finding_json(finding) for finding in report.findings],
        "graph": [dataclasses.asdict(entry) for entry in report.graph],
    }


def render_json(report: CmakeReport) -> str:
    import json

    return json.dumps(report_json(report), indent=2) + "\n"


def render_github(report: CmakeReport) -> str:
    lines = [github_annotation(finding) for finding in report.findings]
    lines.append(recipe_line(report))
    lines.append(_summary_line(report))
    return "\n".join(lines) + "\n"
