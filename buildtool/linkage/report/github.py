"""GitHub workflow annotations and the Markdown step summary."""

from __future__ import annotations

from buildtool.console import escape_data, escape_property
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.report.model import Report, delta_text, human_size
from buildtool.linkage.report.text import recipe_line, summary_line


def github_annotation(finding: Finding) -> str:
    """One workflow command: ``::error file=...,title=...::message``."""
    level = {"error": "error", "warning": "warning", "info": "notice"}[finding.severity]
    title = f"{finding.check_id} {finding.check.name}"
    body = finding.message + (f"\nin {len(finding.paths)} files: {', '.join(finding.paths)}"
                              if finding.also else "")  # fmt: skip
    body += f"\nevidence: {finding.evidence}" if finding.evidence else ""
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
    lines.append(recipe_line(report))
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"


def markdown_cell(text: str) -> str:
    """Text for a Markdown table cell: pipes, backticks and newlines cannot break the table."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'").replace("\n", " ")


def markdown_files(finding: Finding) -> str:
    """The files a finding is about, each as Markdown code: ```a.so``, ``b.so````."""
    return ", ".join(f"`{markdown_cell(path)}`" for path in finding.paths)


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
        budget = human_size(entry.budget) if entry.budget else ""
        row = (
            f"| `{markdown_cell(entry.path)}` | {human_size(entry.file_size)} | "
            f"{human_size(entry.code_size)} | {entry.exported_symbols} | {budget} |"
        )
        lines.append(row + (f" {delta_text(entry)} |" if report.baseline else ""))
    lines += [f"| `{markdown_cell(gone.path)}` | | | | | gone |" for gone in report.gone]
    return [*lines, ""]


def render_markdown(report: Report) -> str:
    """The GitHub step summary: the verdict, the size table (with the changes since the
    baseline) and the findings."""
    lines = [f"### verify-linkage: {summary_line(report)}", "", *markdown_sizes(report)]
    for finding in report.findings:
        lines.append(
            f"- **{finding.severity}** `{finding.check_id}` {finding.check.name} in "
            f"{markdown_files(finding)}: {markdown_cell(finding.message)}"
        )
    return "\n".join(lines) + "\n"
