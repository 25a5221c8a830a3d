"""verify-linkage results and their renderings: text, JSON (versioned), GitHub annotations and
a Markdown step summary (the HTML page is ``linkage.html``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from buildtool.linkage.checks.catalogue import CHECKS, Finding
from buildtool.linkage.checks.growth import BaselineSize, percent
from buildtool.linkage.report.graph import LinkGraph

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
    files_by_format: tuple[tuple[str, int], ...] = ()
    """Well-formed files read, by format name (``ELF``, ``Mach-O``, ``PE``), most first."""
    recipe_reason: str = ""
    """Why ``recipe`` applies, or why no recipe does ("named with --recipe", "none found in the
    working folder ...")."""

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


def human_size(size: int) -> str:
    """``2.50 MB``, ``18.3 kB``, ``512 B``: small libraries are not ``0.00 MB``."""
    if size >= 1_000_000:
        return f"{size / 1_000_000:.2f} MB"
    if size >= 1000:
        return f"{size / 1000:.1f} kB"
    return f"{size} B"


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


def renamed_inputs(report: Report, names: Mapping[str, str]) -> Report:
    """``report`` with each input path in ``names`` (and every file path inside it) shown as
    its new name: wheels verified in a staging folder, reported where they are published."""
    if not names:
        return report

    def shown(text: str) -> str:
        for old, new in names.items():
            text = text.replace(old, new)
        return text

    findings = tuple(
        dataclasses.replace(f, path=shown(f.path), message=shown(f.message),
                            evidence=shown(f.evidence), also=tuple(map(shown, f.also)))
        for f in report.findings
    )  # fmt: skip
    sizes = tuple(
        dataclasses.replace(s, path=shown(s.path),
                            identical_to=shown(s.identical_to) if s.identical_to else None)
        for s in report.sizes
    )  # fmt: skip
    graph = LinkGraph(
        tuple(dataclasses.replace(n, path=shown(n.path)) for n in report.graph.nodes),
        tuple(dataclasses.replace(e, source=shown(e.source), target=shown(e.target))
              for e in report.graph.edges),
    )  # fmt: skip
    inputs = tuple(shown(i) for i in report.inputs)
    return dataclasses.replace(report, inputs=inputs, findings=findings, sizes=sizes, graph=graph)
