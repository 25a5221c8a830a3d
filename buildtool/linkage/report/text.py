"""The text report for a person."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.report.demangle import demangle, mangled_names, readable
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
        placed = relative_path(entry.path, report.inputs) if len(report.inputs) == 1 else None
        shown = dataclasses.replace(entry, path=placed[1]) if placed else entry
        lines.append(_size_line(shown, bool(report.baseline)))
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
    why = f" ({report.recipe_reason})" if report.recipe_reason else ""
    if report.recipe:
        return f"recipe: {report.recipe}{why}"
    return f"no recipe{why}: checks that need a linkage policy were skipped"


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


SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def relative_path(path: str, inputs: Sequence[str]) -> tuple[str, str] | None:
    """The input a finding's path lies in and the path relative to it (``bin/minrpc`` in
    ``build``, ``demo/lib/liba.so`` in ``dist/x.whl``, ``../demo.libs/liba.so`` beside an
    installed ``demo``); None for a path of no input (a single file given, a system file)."""
    for label in sorted(inputs, key=len, reverse=True):
        base = label.rstrip("/")
        for separator in ("!/", "/"):
            if path.startswith(base + separator) and len(path) > len(base) + len(separator):
                return label, path[len(base) + len(separator) :]
        grafted = f"{base}.libs/"
        if path.startswith(grafted):
            return label, f"../{base.rsplit('/', 1)[-1]}.libs/{path[len(grafted) :]}"
    return None


def _worst(findings: Sequence[Finding]) -> int:
    return min(SEVERITY_RANK[finding.severity] for finding in findings)


def _file_groups(findings: Sequence[Finding]) -> list[tuple[str, list[Finding]]]:
    """Findings per file, the files with errors first, errors before warnings in each."""
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        by_file.setdefault(finding.path, []).append(finding)
    for listed in by_file.values():
        listed.sort(key=lambda finding: SEVERITY_RANK[finding.severity])  # stable: catalogue order
    return sorted(by_file.items(), key=lambda item: (_worst(item[1]), item[0]))


def _finding_block(
    finding: Finding, indent: str, style: Callable[[str, str], str], names: Mapping[str, str]
) -> list[str]:
    check = finding.check
    label = style(f"{check.severity} {check.id} {check.name}", SEVERITY_COLOURS[check.severity])
    lines = [f"{indent}{label}: {readable(finding.message, names)}"]
    if finding.evidence:
        lines.append(f"{indent}  evidence: {readable(finding.evidence, names)}")
    lines.append(f"{indent}  fix: {check.hint}")
    return lines


def _input_groups(report: Report) -> list[tuple[str | None, list[Finding]]]:
    """The findings per input, in the order the inputs were given; those of no input first."""
    groups: dict[str | None, list[Finding]] = {None: []}
    groups.update({label: [] for label in report.inputs})
    for finding in report.findings:
        placed = relative_path(finding.path, report.inputs)
        groups[placed[0] if placed else None].append(finding)
    return [(label, found) for label, found in groups.items() if found]


def report_findings(
    report: Report, style: Callable[[str, str], str], names: Mapping[str, str]
) -> list[str]:
    """The findings under the input they lie in, by file relative to it; a file that is an
    input itself (or lies in none) is named in full."""
    lines: list[str] = []
    for label, found in _input_groups(report):
        indent = "  " if label is not None else ""
        if label is not None:
            lines.append(style(label, "bold"))
        for path, in_file in _file_groups(found):
            placed = relative_path(path, report.inputs) if label is not None else None
            lines.append(indent + style(placed[1] if placed else path, "bold"))
            for finding in in_file:
                lines += _finding_block(finding, indent + "  ", style, names)
    return lines


def shows_sizes(report: Report, sizes: bool) -> bool:
    """Whether the size table belongs in the text: asked for (``--sizes``), or the recipe sets
    budgets, or a baseline is compared with."""
    if not (report.sizes or report.gone):
        return False
    return sizes or bool(report.baseline) or any(entry.budget for entry in report.sizes)


def render_text(
    report: Report,
    paint: Callable[[str, str], str] | None = None,
    *,
    sizes: bool = False,
    names: Mapping[str, str] | None = None,
) -> str:
    """Findings first (per input, per file relative to it, errors first; ``names``: demangled
    forms of the mangled names in them), then the size table when ``shows_sizes``, the recipe
    and a one-line verdict."""
    style = paint or (lambda text, _style: text)
    lines = report_findings(report, style, names or {})
    if shows_sizes(report, sizes):
        against = f" (against {report.baseline})" if report.baseline else ""
        lines.append(style(f"library sizes{against}", "bold"))
        lines += _size_lines(report)
        lines += _identical_lines(report)
    lines.append(recipe_line(report))
    verdict = summary_line(report)
    lines.append(style(verdict, "red" if report.failed else "green"))
    return "\n".join(lines) + "\n"


def demangled_names(report: Report) -> dict[str, str]:
    """The demangled forms of the mangled names in the report's findings (runs ``c++filt``)."""
    texts = [text for finding in report.findings for text in (finding.message, finding.evidence)]
    return demangle(mangled_names(texts))
