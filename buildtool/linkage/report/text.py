"""The text report for a person."""

from __future__ import annotations

import dataclasses
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.report.demangle import demangle, mangled_names, readable
from buildtool.linkage.report.folding import fold, tally
from buildtool.linkage.report.model import (
    Report,
    SizeEntry,
    delta_text,
    human_size,
    signed_bytes,
    signed_count,
)


def _size_line(entry: SizeEntry, baseline: bool) -> str:
    budget = f" (budget {human_size(entry.budget)})" if entry.budget else ""
    line = (
        f"  {entry.path}: {human_size(entry.file_size)} file, "
        f"{human_size(entry.code_size)} code, {entry.exported_symbols} exported{budget}"
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
    """Each library's sizes, by its path in its input; with several inputs, under each input's
    name (a wheel's file name, not the staging folder it was checked in)."""
    lines = []
    heading = None
    several = len(report.inputs) > 1
    for entry in report.sizes:
        placed = relative_path(entry.path, report.inputs)
        if several and placed is not None and placed[0] != heading:
            heading = placed[0]
            name = heading.rsplit("/", 1)[-1] if heading.endswith(".whl") else heading
            lines.append(f"  {name}")
        shown = dataclasses.replace(entry, path=placed[1]) if placed else entry
        line = _size_line(shown, bool(report.baseline))
        lines.append(f"  {line}" if several and placed is not None else line)
    for gone in report.gone:
        lines.append(f"  {gone.path}: gone since the baseline (was {human_size(gone.file_size)})")
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
        f"  {entry.path}: identical to {entry.identical_to}, {human_size(entry.file_size)} wasted"
        for entry in copies
    ]
    wasted = sum(entry.file_size for entry in copies)
    if wasted:
        lines.append(f"  identical copies of one library: {human_size(wasted)} wasted")
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
            if finding.also:
                lines.append(f"    also in: {', '.join(finding.also)}")
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


@dataclasses.dataclass(frozen=True)
class _Shown:
    """How the findings of one input are written: names demangled, paths relative to it."""

    style: Callable[[str, str], str]
    names: Mapping[str, str]
    label: str | None
    """The input the findings lie in; None for findings of no input (paths in full)."""

    def text(self, text: str) -> str:
        """``text`` with names demangled and this input's paths in it made relative (a path
        that starts with the input's, not one that merely contains it)."""
        if self.label is not None:
            base = re.escape(self.label.rstrip("/"))
            text = re.sub(rf"(?<![\w./-]){base}!?/(?=\S)", "", text)
        return readable(text, self.names)

    def path(self, path: str) -> str:
        placed = relative_path(path, [self.label]) if self.label is not None else None
        return placed[1] if placed else path


def _finding_block(finding: Finding, indent: str, shown: _Shown, files: str = "") -> list[str]:
    check = finding.check
    label = f"{check.severity} {check.id} {check.name}"
    lines = [f"{indent}{shown.style(label, SEVERITY_COLOURS[check.severity])}: "
             f"{shown.text(finding.message)}"]  # fmt: skip
    if files:
        lines.append(files)
    if finding.evidence:
        lines.append(f"{indent}  evidence: {shown.text(finding.evidence)}")
    lines.append(f"{indent}  fix: {check.hint}")
    return lines


def _file_list(paths: Sequence[str], indent: str, shown: _Shown) -> str:
    """``in 44 files: a.so, b.so, ...``, wrapped at the report's width."""
    listed = ", ".join(shown.path(path) for path in paths)
    return textwrap.fill(
        f"in {len(paths)} files: {listed}",
        width=WIDTH,
        initial_indent=indent + "  ",
        subsequent_indent=indent + "    ",
        break_long_words=False,
        break_on_hyphens=False,
    )


WIDTH = 100
"""Where the folded file lists wrap."""

_Block = tuple[tuple[int, str], list[str]]
"""A file's findings or one folded finding: its sort key (worst severity, name) and its lines."""


def _blocks(found: Sequence[Finding], indent: str, shown: _Shown) -> list[_Block]:
    """The findings of one input: one block per file for the findings only it has, one per
    finding that several files share (listing them); errors first."""
    folds = fold(found)
    singles = [finding for entry in folds if not entry.folded for finding in entry.findings]
    blocks: list[_Block] = []
    for path, in_file in _file_groups(singles):
        lines = [indent + shown.style(shown.path(path), "bold")]
        for finding in in_file:
            lines += _finding_block(finding, indent + "  ", shown)
        blocks.append(((_worst(in_file), shown.path(path)), lines))
    for entry in (entry for entry in folds if entry.folded):
        files = _file_list(entry.paths, indent, shown)
        lines = _finding_block(entry.first, indent, shown, files)
        blocks.append(((_worst(entry.findings), shown.path(entry.paths[0])), lines))
    return sorted(blocks, key=lambda block: block[0])


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
    """The findings under the input they lie in, by file relative to it (a file that is an
    input itself, or lies in none, is named in full); the same finding in several files of an
    input is one entry listing them."""
    lines: list[str] = []
    for label, found in _input_groups(report):
        indent = "  " if label is not None else ""
        if label is not None:
            lines.append(style(label, "bold"))
        for _key, block in _blocks(found, indent, _Shown(style, names, label)):
            lines += block
    return lines


def tally_lines(report: Report, style: Callable[[str, str], str]) -> list[str]:
    """``findings by check``: how many findings each check made, in how many files."""
    if not report.findings:
        return []
    lines = [style("findings by check", "bold")]
    for counted in tally(report.findings):
        check = counted.check
        label = style(
            f"{check.severity:<7} {check.id} {check.name}", SEVERITY_COLOURS[check.severity]
        )
        lines.append(f"  {label}: {_counted(counted.findings, 'finding')} in "
                     f"{_counted(counted.files, 'file')}")  # fmt: skip
    return lines


def _counted(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


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
    lines += tally_lines(report, style)
    lines.append(recipe_line(report))
    verdict = summary_line(report)
    lines.append(style(verdict, "red" if report.failed else "green"))
    return "\n".join(lines) + "\n"


def demangled_names(report: Report) -> dict[str, str]:
    """The demangled forms of the mangled names in the report's findings (runs ``c++filt``)."""
    return findings_names(report.findings)


def findings_names(findings: Sequence[Finding]) -> dict[str, str]:
    """The demangled forms of the mangled names in ``findings`` (runs ``c++filt``)."""
    return demangle(mangled_names(text for f in findings for text in (f.message, f.evidence)))


def readable_findings(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """``findings`` with the C++ names in their text demangled: what a person reads (text,
    GitHub annotations, HTML). JSON keeps the names ``nm`` and the linker print."""
    names = findings_names(findings)
    if not names:
        return tuple(findings)
    return tuple(
        dataclasses.replace(
            finding,
            message=readable(finding.message, names),
            evidence=readable(finding.evidence, names),
        )
        for finding in findings
    )


def readable_report(report: Report) -> Report:
    """The report with its findings' C++ names demangled (``readable_findings``)."""
    return dataclasses.replace(report, findings=readable_findings(report.findings))
