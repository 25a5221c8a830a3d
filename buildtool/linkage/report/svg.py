"""The link graph and the size bars as SVG, from a ``Report``. Pure.

Every string from the inputs (file names come from wheels anyone can make) goes through
``xml_text``: escaped, and with characters XML cannot hold shown as escapes, so the SVG is always
well-formed XML and the page around it can never be broken into.
"""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Sequence
from functools import cached_property

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.report.graph import EXTENSION_SUFFIX, GraphEdge, GraphNode
from buildtool.linkage.report.groups import FoldedGraph, Unit, fold
from buildtool.linkage.report.layout import Box, Drawing, Route, clustered, layered
from buildtool.linkage.report.model import Report, SizeEntry, human_size

SVG_NS = "http://www.w3.org/2000/svg"

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
"""What XML 1.0 cannot hold (or should not: C1 controls), and lone surrogates (undecodable
bytes of a file name), which no UTF-8 file can hold."""

SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
NAME_CHARACTERS = 28
"""File names longer than this are drawn smaller to fit a node, whole up to ``NAME_MOST``."""
NAME_SMALL_CHARACTERS = 34
"""What fits in the smaller type; a longer name is also drawn narrower (``textLength``)."""
NAME_MOST = 56
"""Longer names lose their end (the tooltip and the file lists have them whole)."""
NAME_WIDTH = 208
"""What a node's name may take, in SVG units (the box less its stripe and padding)."""


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name (surrogateescape)
        code -= 0xDC00
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def xml_text(text: str) -> str:
    """``text`` for XML/HTML content and attribute values: escaped, and what XML cannot hold
    shown as a Python-style escape (``\\x01``; an undecodable byte of a file name as ``\\xff``)."""
    return html.escape(_NOT_XML.sub(_shown, text), quote=True)


def shorten(text: str, limit: int = NAME_CHARACTERS) -> str:
    """``text`` cut at its end to ``limit`` characters: the start of a name says what it is."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shorten_start(text: str, limit: int = NAME_CHARACTERS) -> str:
    """``text`` cut at its start: a folder's last parts say which it is."""
    return text if len(text) <= limit else "…" + text[1 - limit :]


def shown_name(node: GraphNode) -> str:
    """A node's name as drawn: an extension module by its module name (its kind is on the next
    line, the ABI tag in the tooltip), anything else by its file name."""
    if node.kind == "extension":
        return EXTENSION_SUFFIX.sub("", node.name)
    return node.name


def name_text(name: str, x: float, y: float) -> str:
    """A node's name line: a long one in smaller type, a longer one also narrower
    (``textLength``), so it is never cut in the middle; only an extremely long one loses its
    end."""
    shown = shorten(name, NAME_MOST)
    if len(shown) <= NAME_CHARACTERS:
        return f'<text class="name" x="{x:.1f}" y="{y:.1f}">{xml_text(shown)}</text>'
    squeeze = ""
    if len(shown) > NAME_SMALL_CHARACTERS:
        squeeze = f' textLength="{NAME_WIDTH}" lengthAdjust="spacingAndGlyphs"'
    return f'<text class="name long" x="{x:.1f}" y="{y:.1f}"{squeeze}>{xml_text(shown)}</text>'


megabytes = human_size
"""The one way sizes are written (``model.human_size``)."""


@dataclasses.dataclass(frozen=True)
class Anchors:
    """Element ids of one report's nodes and findings (a prefix keeps two reports on one page
    apart)."""

    report: Report
    """The report drawn."""
    prefix: str = ""
    """Put before every id (``r0-``) when several reports share a page."""

    def node(self, index: int) -> str:
        return f"{self.prefix}node-{index}"

    def finding(self, index: int) -> str:
        return f"{self.prefix}finding-{index}"

    def group(self, index: int) -> str:
        """A group's node in the graph (``index``: its unit)."""
        return f"{self.prefix}group-{index}"

    def group_files(self, index: int) -> str:
        """The list of a group's files, under the graph."""
        return f"{self.prefix}group-{index}-files"

    @cached_property
    def folded(self) -> FoldedGraph:
        return fold(self.report.graph, self.report.inputs)

    def findings_of_unit(self, unit: Unit) -> list[tuple[int, Finding]]:
        """Findings about any file of ``unit``, in report order."""
        nodes = self.report.graph.nodes
        found = [
            f
            for m in unit.members
            if nodes[m].kind != "missing"
            for f in self.findings_of(nodes[m].path)
        ]
        return sorted(found, key=lambda item: item[0])

    def node_of(self, path: str) -> str | None:
        index = self._nodes.get(path)
        return None if index is None else self.node(index)

    def findings_of(self, path: str, needed: str | None = None) -> list[tuple[int, Finding]]:
        """Findings about a node (``needed`` None) or about one of its NEEDED edges."""
        return [
            (index, finding)
            for index, finding in self._findings.get(path, ())
            if needed is None or finding.needed == needed
        ]

    def size_of(self, path: str) -> SizeEntry | None:
        return self._sizes.get(path)

    @cached_property
    def _nodes(self) -> dict[str, int]:
        return {node.path: index for index, node in enumerate(self.report.graph.nodes)}

    @cached_property
    def _findings(self) -> dict[str, list[tuple[int, Finding]]]:
        by_path: dict[str, list[tuple[int, Finding]]] = {}
        for index, finding in enumerate(self.report.findings):
            for path in finding.paths:
                by_path.setdefault(path, []).append((index, finding))
        return by_path

    @cached_property
    def _sizes(self) -> dict[str, SizeEntry]:
        return {entry.path: entry for entry in self.report.sizes}


def worst(findings: Sequence[tuple[int, Finding]]) -> str:
    """The most severe severity among ``findings``, or "" for none."""
    ranked = sorted((SEVERITY_RANK[f.severity], f.severity) for _, f in findings)
    return ranked[0][1] if ranked else ""


# --- the link graph --------------------------------------------------------------------------


def _role_line(node: GraphNode) -> str:
    if node.kind == "missing":
        return "not found by the loader"
    kind = {"library": "library", "executable": "executable", "extension": "extension module"}
    role = {"required": "required", "optional": "optional", "executable": ""}.get(node.role, "")
    words = [node.recipe_name, role, kind[node.kind]]
    return " · ".join(word for word in words if word)


def _detail_line(node: GraphNode, size: SizeEntry | None) -> str:
    parts = []
    if size is not None:
        parts.append(megabytes(size.file_size))
        parts.append(f"{size.exported_symbols:,} exported")
    if node.outside:
        parts.append(f"+{len(node.outside)} system")
    return " · ".join(parts)


def _node_title(node: GraphNode, findings: Sequence[tuple[int, Finding]]) -> str:
    lines = [node.path, _role_line(node)]
    if node.outside:
        lines.append("also needs (outside the inputs): " + ", ".join(node.outside))
    lines += [f"{f.severity} {f.check_id} {f.check.name}: {f.message}" for _, f in findings]
    return "\n".join(lines)


def _badge(box: Box, findings: Sequence[tuple[int, Finding]], anchors: Anchors) -> str:
    if not findings:
        return ""
    x, y = box.x + box.width - 4, box.y + 4
    first = anchors.finding(findings[0][0])
    return (
        f'<a href="#{first}" class="badge sev-{worst(findings)}">'
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="11"/>'
        f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle">{len(findings)}</text></a>'
    )


def _node_svg(index: int, node: GraphNode, box: Box, anchors: Anchors) -> str:
    findings = anchors.findings_of(node.path) if node.kind != "missing" else []
    size = anchors.size_of(node.path)
    classes = ["node", f"kind-{node.kind}", f"role-{node.role or 'none'}"]
    if findings:
        classes.append(f"sev-{worst(findings)}")
    left = box.x + 16
    return (
        f'<g id="{anchors.node(index)}" class="{" ".join(classes)}" data-kind="{node.kind}" '
        f'data-path="{xml_text(node.path)}" data-findings="{len(findings)}">'
        f"<title>{xml_text(_node_title(node, findings))}</title>"
        f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" '
        f'height="{box.height:.1f}" rx="8"/>'
        f'<rect class="stripe" x="{box.x:.1f}" y="{box.y:.1f}" width="6" '
        f'height="{box.height:.1f}" rx="3"/>'
        f"{name_text(shown_name(node), left, box.y + 24)}"
        f'<text class="role" x="{left:.1f}" y="{box.y + 43:.1f}">'
        f"{xml_text(_role_line(node))}</text>"
        f'<text class="detail" x="{left:.1f}" y="{box.y + 61:.1f}">'
        f"{xml_text(_detail_line(node, size))}</text>"
        f"{_badge(box, findings, anchors)}</g>"
    )


KIND_PLURAL = {
    "library": "libraries",
    "executable": "executables",
    "extension": "extension modules",
}


def _with(files: int, severity: str) -> str:
    return f"{files} with {severity}s"


def group_counts(unit: Unit, anchors: Anchors) -> dict[str, int]:
    """Per severity, how many of ``unit``'s files have a finding of it (worst first)."""
    nodes = anchors.report.graph.nodes
    counts: dict[str, int] = {}
    for member in unit.members:
        for severity in {f.severity for _, f in anchors.findings_of(nodes[member].path)}:
            counts[severity] = counts.get(severity, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: SEVERITY_RANK[item[0]]))


def group_label(unit: Unit, anchors: Anchors) -> str:
    """``123 executables in torch/bin/, 2 with errors, 68 with warnings``."""
    words = [f"{len(unit.members)} {KIND_PLURAL[unit.kind]} in {unit.folder}"]
    words += [_with(files, severity) for severity, files in group_counts(unit, anchors).items()]
    return ", ".join(words)


def _group_badge(box: Box, unit: Unit, anchors: Anchors) -> str:
    """The error findings' count (else all findings'), linked to the first of them."""
    findings = anchors.findings_of_unit(unit)
    errors = [item for item in findings if item[1].severity == "error"]
    return _badge(box, errors or findings, anchors)


def _group_svg(index: int, unit: Unit, box: Box, anchors: Anchors) -> str:
    findings = anchors.findings_of_unit(unit)
    classes = ["node", "group", f"kind-{unit.kind}", "role-none"]
    if findings:
        classes.append(f"sev-{worst(findings)}")
    counts = group_counts(unit, anchors)
    detail = " · ".join(_with(n, severity) for severity, n in counts.items()) or "no findings"
    names = [anchors.report.graph.nodes[m].name for m in unit.members]
    shown = names[:12] + ([f"… and {len(names) - 12} more"] if len(names) > 12 else [])
    title = "\n".join([group_label(unit, anchors), *shown, "(click: the list of files)"])
    left = box.x + 16
    return (
        f'<g id="{anchors.group(index)}" class="{" ".join(classes)}" data-kind="{unit.kind}" '
        f'data-members="{len(unit.members)}" data-findings="{len(findings)}" '
        f'data-errors="{counts.get("error", 0)}"><title>{xml_text(title)}</title>'
        f'<a href="#{anchors.group_files(index)}">'
        f'<rect class="behind" x="{box.x + 6:.1f}" y="{box.y - 6:.1f}" width="{box.width:.1f}" '
        f'height="{box.height:.1f}" rx="8"/>'
        f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" '
        f'height="{box.height:.1f}" rx="8"/>'
        f'<rect class="stripe" x="{box.x:.1f}" y="{box.y:.1f}" width="6" '
        f'height="{box.height:.1f}" rx="3"/>'
        f'<text class="name" x="{left:.1f}" y="{box.y + 24:.1f}">'
        f"{len(unit.members)} {KIND_PLURAL[unit.kind]}</text>"
        f'<text class="role" x="{left:.1f}" y="{box.y + 43:.1f}">'
        f"in {xml_text(shorten_start(unit.folder))}</text>"
        f'<text class="detail" x="{left:.1f}" y="{box.y + 61:.1f}">{xml_text(detail)}</text></a>'
        f"{_group_badge(box, unit, anchors)}</g>"
    )


def _path_data(points: Sequence[tuple[float, float]]) -> str:
    """A smooth line through ``points``: vertical tangents at each one (a cubic per segment)."""
    (x, y), rest = points[0], points[1:]
    data = [f"M{x:.1f},{y:.1f}"]
    for nx, ny in rest:
        bend = (ny - y) / 2
        data.append(f"C{x:.1f},{y + bend:.1f} {nx:.1f},{ny - bend:.1f} {nx:.1f},{ny:.1f}")
        x, y = nx, ny
    return " ".join(data)


def _edge_title(edges: Sequence[GraphEdge], findings: Sequence[tuple[int, Finding]]) -> str:
    lines = [
        f"{e.source} NEEDED {e.needed}" if e.present
        else f"{e.source} lacks NEEDED {e.needed}, which the recipe requires"
        for e in edges[:EDGES_NAMED]
    ]  # fmt: skip
    if len(edges) > EDGES_NAMED:
        lines.append(f"… and {len(edges) - EDGES_NAMED} more")
    lines += [f"{f.severity} {f.check_id} {f.check.name}" for _, f in findings[:EDGES_NAMED]]
    return "\n".join(lines)


EDGES_NAMED = 8
"""NEEDED entries a folded edge's tooltip names (the list of files under the graph has all)."""


def _edge_svg(
    edges: Sequence[GraphEdge], route: Route, anchors: Anchors, target: GraphNode | None
) -> str:
    """One line for ``edges`` (several when it joins groups); ``target`` the needed node when it
    is a lone one."""
    findings = sorted(
        (f for e in edges for f in anchors.findings_of(e.source, e.needed)), key=lambda f: f[0]
    )
    present = all(edge.present for edge in edges)
    unresolved = target is not None and target.kind == "missing"
    classes = ["edge"]
    if not present:
        classes.append("absent")
    if unresolved:
        classes.append("unresolved")
    if len(edges) > 1:
        classes.append("folded")
    if findings:
        classes.append(f"sev-{worst(findings)}")
    severity = worst(findings)
    marker = "arrow-bad" if severity == "error" or not present else "arrow"
    marker = "arrow-warning" if severity == "warning" else marker
    marker = "arrow-bad" if unresolved and not severity else marker
    body = (
        f"<title>{xml_text(_edge_title(edges, findings))}</title>"
        f'<path d="{_path_data(route.points)}" marker-end="url(#{anchors.prefix}{marker})"/>'
    )
    if findings:
        body = f'<a href="#{anchors.finding(findings[0][0])}">{body}</a>'
    needed = " ".join(dict.fromkeys(edge.needed for edge in edges))
    return (
        f'<g class="{" ".join(classes)}" data-needed="{xml_text(needed)}" '
        f'data-edges="{len(edges)}" data-findings="{len(findings)}">{body}</g>'
    )


def _markers(prefix: str) -> str:
    return "".join(
        f'<marker id="{prefix}{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto-start-reverse"><path class="{name}" '
        f'd="M0,1 L10,5 L0,9 z"/></marker>'
        for name in ("arrow", "arrow-bad", "arrow-warning")
    )


def _drawing(folded: FoldedGraph) -> Drawing:
    pairs = [(edge.source, edge.target) for edge in folded.edges]
    if len(folded.clusters) > 1:
        return clustered([unit.cluster for unit in folded.units], pairs)
    return layered(len(folded.units), pairs)


def _frames(folded: FoldedGraph, drawing: Drawing) -> str:
    """The clusters' frames, each with its distribution's name (none for a single cluster)."""
    if not drawing.frames:
        return ""
    return "".join(
        f'<g class="cluster"><rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" '
        f'height="{box.height:.1f}" rx="10"/><text x="{box.x + 12:.1f}" y="{box.y + 22:.1f}">'
        f"{xml_text(name or 'no distribution')}</text></g>"
        for name, box in zip(folded.clusters, drawing.frames, strict=True)
    )


def _unit_svg(index: int, unit: Unit, box: Box, anchors: Anchors) -> str:
    if unit.grouped:
        return _group_svg(index, unit, box, anchors)
    member = unit.members[0]
    return _node_svg(member, anchors.report.graph.nodes[member], box, anchors)


def render_graph(anchors: Anchors) -> str:
    """The link graph as one ``<svg>`` element (a standalone, well-formed XML document too):
    look-alike files folded into groups (``groups.fold``), clustered by distribution when the
    inputs hold several. The page scales it down to its width."""
    graph, folded = anchors.report.graph, anchors.folded
    drawing = _drawing(folded)
    edges = []
    for joined, route in zip(folded.edges, drawing.routes, strict=True):
        target = folded.units[joined.target]
        lone = None if target.grouped else graph.nodes[target.members[0]]
        edges.append(_edge_svg([graph.edges[e] for e in joined.edges], route, anchors, lone))
    units = [
        _unit_svg(i, unit, box, anchors)
        for i, (unit, box) in enumerate(zip(folded.units, drawing.boxes, strict=True))
    ]
    width, height = max(drawing.width, 320), max(drawing.height, 60)
    label = f"Link graph: {len(graph.nodes)} files, {len(graph.edges)} NEEDED edges"
    return (
        f'<svg xmlns="{SVG_NS}" class="graph" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" style="max-width: {width:.0f}px" role="img" '
        f'aria-label="{label}"><defs>{_markers(anchors.prefix)}</defs>'
        f'<g class="clusters">{_frames(folded, drawing)}</g>'
        f'<g class="edges">{"".join(edges)}</g><g class="nodes">{"".join(units)}</g></svg>'
    )


# --- size bars ---------------------------------------------------------------------------------

BAR_WIDTH = 170
BAR_HEIGHT = 16


def render_bar(value: int, scale: int, budget: int | None, previous: int | None) -> str:
    """One horizontal bar: ``value`` of ``scale``, the budget as a red line, the baseline's
    value as a dark one."""

    def x(amount: int) -> float:
        return BAR_WIDTH * amount / scale if scale else 0.0

    over = budget is not None and value > budget
    parts = [
        f'<svg xmlns="{SVG_NS}" class="bar" width="{BAR_WIDTH + 4}" height="{BAR_HEIGHT + 8}" '
        f'viewBox="-2 -4 {BAR_WIDTH + 4} {BAR_HEIGHT + 8}">',
        f'<rect class="track" x="0" y="0" width="{BAR_WIDTH}" height="{BAR_HEIGHT}" rx="3"/>',
        f'<rect class="fill{" over" if over else ""}" x="0" y="0" width="{x(value):.1f}" '
        f'height="{BAR_HEIGHT}" rx="3"/>',
    ]
    if previous is not None:
        parts.append(
            f'<line class="previous" x1="{x(previous):.1f}" y1="-2" x2="{x(previous):.1f}" '
            f'y2="{BAR_HEIGHT + 2}"/>'
        )
    if budget is not None:
        parts.append(
            f'<line class="budget" x1="{x(budget):.1f}" y1="-4" x2="{x(budget):.1f}" '
            f'y2="{BAR_HEIGHT + 4}"/>'
        )
    parts.append("</svg>")
    return "".join(parts)
