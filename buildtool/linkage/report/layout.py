"""A layered drawing of a directed graph: where each node and each edge's bends go. Pure.

The classic layered scheme, kept small: every node gets a layer (roots on top, each node one
layer below the lowest node that needs it, so every edge points down); an edge that spans several
layers gets a bend point in each layer it crosses; nodes and bend points are ordered within their
layers by the mean position of their neighbours, sweeping down and up a few times (fewer
crossings); then spread evenly and centred. Everything is deterministic: ties keep the order of
the input.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence

SWEEPS = 4
"""Down-and-up ordering passes: enough for graphs the size of a wheel's libraries."""


@dataclasses.dataclass(frozen=True)
class Box:
    """A node's place: the top-left corner and size."""

    x: float
    """Left edge."""
    y: float
    """Top edge (y grows downwards, as in SVG)."""
    width: float
    """0 for nothing; a bend point's box is as wide as ``Spacing.bend_width``."""
    height: float
    """0 for a bend point."""

    @property
    def centre_x(self) -> float:
        return self.x + self.width / 2

    @property
    def bottom(self) -> float:
        return self.y + self.height


@dataclasses.dataclass(frozen=True)
class Route:
    """One edge: from a node to another (a node's bottom to the next layer's top, within a
    layered drawing) through its bend points."""

    source: int
    """Index of the node the edge leaves."""
    target: int
    """Index of the node it enters."""
    points: tuple[tuple[float, float], ...]
    """Start, bend points, end."""


@dataclasses.dataclass(frozen=True)
class Drawing:
    """A laid-out graph."""

    boxes: tuple[Box, ...]
    """One per node, in the order given."""
    routes: tuple[Route, ...]
    """One per edge, in the order given."""
    width: float
    """Of the whole drawing, margins included."""
    height: float
    """Of the whole drawing, margins included."""
    frames: tuple[Box, ...] = ()
    """One per cluster (``clustered``), in cluster order: the frame around its nodes."""


@dataclasses.dataclass(frozen=True)
class Spacing:
    """Sizes and distances of a drawing, in SVG user units (pixels)."""

    node_width: float = 240
    """Of every node's box."""
    node_height: float = 72
    """Of every node's box."""
    gap: float = 36
    """Between neighbours in a layer."""
    layer_gap: float = 84
    """Between layers (room for the edges)."""
    bend_width: float = 16
    """What a bend point takes in its layer."""
    margin: float = 16
    """Around the drawing."""
    per_row: int = 8
    """Most nodes side by side: a wider layer continues on the next row."""
    max_width: float = 2400
    """Widest drawing, margins included: a layer whose nodes and bend points would not fit
    continues on the next row (bend points count, so many long edges cannot widen it)."""
    cluster_padding: float = 12
    """Inside a cluster's frame, around its drawing."""
    cluster_label: float = 26
    """Above a cluster's drawing, inside its frame: room for its name."""


def _acyclic(count: int, edges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The edges less self-loops and those closing a cycle (found depth first, in order)."""
    children: dict[int, list[int]] = {}
    for a, b in edges:
        if a != b:
            children.setdefault(a, []).append(b)
    state = [0] * count  # 0 new, 1 on the stack, 2 done
    back: set[tuple[int, int]] = set()
    for root in range(count):
        if state[root]:
            continue
        stack = [(root, iter(children.get(root, ())))]
        state[root] = 1
        while stack:
            node, pending = stack[-1]
            child = next(pending, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state[child] == 1:
                back.add((node, child))
            elif state[child] == 0:
                state[child] = 1
                stack.append((child, iter(children.get(child, ()))))
    return [(a, b) for a, b in edges if a != b and (a, b) not in back]


def assign_layers(count: int, edges: Sequence[tuple[int, int]]) -> list[int]:
    """Each node's layer: 0 for nodes nothing points to, else one below its lowest parent."""
    kept = _acyclic(count, edges)
    parents: dict[int, list[int]] = {}
    indegree = [0] * count
    for a, b in kept:
        parents.setdefault(b, []).append(a)
        indegree[b] += 1
    children: dict[int, list[int]] = {}
    for a, b in kept:
        children.setdefault(a, []).append(b)
    layer = [0] * count
    ready = [n for n in range(count) if indegree[n] == 0]
    while ready:
        node = ready.pop(0)
        for child in children.get(node, ()):
            layer[child] = max(layer[child], layer[node] + 1)
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    return layer


@dataclasses.dataclass
class _Chains:
    """Nodes plus bend points ("virtual" nodes, numbered after the real ones)."""

    layer: list[int]
    """Each node's and bend point's layer."""
    chains: list[list[int]]
    """Per edge: source, its bend points, target."""
    neighbours_up: dict[int, list[int]]
    """For each node or bend point, those one layer above it that it is linked to."""
    neighbours_down: dict[int, list[int]]
    """For each node or bend point, those one layer below it that it is linked to."""


def _chains(edges: Sequence[tuple[int, int]], layer: list[int]) -> _Chains:
    layers = list(layer)
    chains: list[list[int]] = []
    up: dict[int, list[int]] = {}
    down: dict[int, list[int]] = {}
    for a, b in edges:
        chain = [a]
        if layer[a] < layer[b]:
            for level in range(layer[a] + 1, layer[b]):
                layers.append(level)
                chain.append(len(layers) - 1)
        chain.append(b)
        chains.append(chain)
        if layer[a] >= layer[b]:
            continue  # drawn, but does not steer the order (a cycle's back edge, a self-loop)
        for upper, lower in itertools.pairwise(chain):
            down.setdefault(upper, []).append(lower)
            up.setdefault(lower, []).append(upper)
    return _Chains(layers, chains, up, down)


def _order(chains: _Chains) -> list[list[int]]:
    depth = max(chains.layer, default=-1) + 1
    rows: list[list[int]] = [[] for _ in range(depth)]
    for node, level in enumerate(chains.layer):
        rows[level].append(node)
    for sweep in range(SWEEPS * 2):
        downward = sweep % 2 == 0
        neighbours = chains.neighbours_up if downward else chains.neighbours_down
        levels = range(1, depth) if downward else range(depth - 2, -1, -1)
        for level in levels:
            other = rows[level - 1] if downward else rows[level + 1]
            where = {node: i for i, node in enumerate(other)}
            rows[level] = _by_barycentre(rows[level], neighbours, where)
    return rows


def _by_barycentre(
    row: list[int], neighbours: Mapping[int, list[int]], where: Mapping[int, int]
) -> list[int]:
    def key(item: tuple[int, int]) -> tuple[float, int]:
        position, node = item
        linked = [where[n] for n in neighbours.get(node, ()) if n in where]
        return (sum(linked) / len(linked) if linked else float(position), position)

    return [node for _, node in sorted(enumerate(row), key=key)]


def _wrap(rows: list[list[int]], real: int, spacing: Spacing) -> list[list[int]]:
    """Layers with more than ``per_row`` nodes, or wider than ``max_width``, split into several
    rows, in order (a folder of a thousand libraries stays as wide as a screen); bend points go
    with their neighbours and take their room."""
    room = spacing.max_width - 2 * spacing.margin
    wrapped: list[list[int]] = []
    for row in rows:
        current: list[int] = []
        nodes, width = 0, -spacing.gap
        for node in row:
            size = (spacing.node_width if node < real else spacing.bend_width) + spacing.gap
            full = node < real and nodes == spacing.per_row
            if current and (full or width + size > room):
                wrapped.append(current)
                current, nodes, width = [], 0, -spacing.gap
            current.append(node)
            nodes += node < real
            width += size
        wrapped.append(current)
    return wrapped


def _place(rows: list[list[int]], real: int, spacing: Spacing) -> tuple[dict[int, Box], float]:
    widths = [
        sum(spacing.node_width if n < real else spacing.bend_width for n in row)
        + spacing.gap * max(len(row) - 1, 0)
        for row in rows
    ]
    total = max(widths, default=0.0) + 2 * spacing.margin
    boxes: dict[int, Box] = {}
    for level, row in enumerate(rows):
        x = (total - widths[level]) / 2
        y = spacing.margin + level * (spacing.node_height + spacing.layer_gap)
        for node in row:
            width = spacing.node_width if node < real else spacing.bend_width
            height = spacing.node_height if node < real else 0.0
            offset = 0.0 if node < real else spacing.node_height / 2
            boxes[node] = Box(x, y + offset, width, height)
            x += width + spacing.gap
    return boxes, total


def _ports(
    edges: Sequence[tuple[int, int]], chains: list[list[int]], boxes: Mapping[int, Box]
) -> tuple[dict[int, float], dict[int, float]]:
    """Where each edge leaves its source and enters its target: spread along the box's edge,
    in the order of where the edge goes, so edges of one node do not start from one point."""
    leaving: dict[int, list[int]] = {}
    entering: dict[int, list[int]] = {}
    for index, (a, b) in enumerate(edges):
        leaving.setdefault(a, []).append(index)
        entering.setdefault(b, []).append(index)
    start: dict[int, float] = {}
    end: dict[int, float] = {}
    for ports, grouped, toward in ((start, leaving, 1), (end, entering, -2)):
        for node, indexes in grouped.items():
            box = boxes[node]
            ordered = sorted(indexes, key=lambda i: (boxes[chains[i][toward]].centre_x, i))
            for rank, index in enumerate(ordered):
                ports[index] = box.x + box.width * (rank + 1) / (len(ordered) + 1)
    return start, end


def layered(count: int, edges: Sequence[tuple[int, int]], spacing: Spacing = Spacing()) -> Drawing:
    """Boxes for ``count`` nodes and routes for ``edges`` (pairs of node indexes)."""
    layer = assign_layers(count, edges)
    chains = _chains(edges, layer)
    rows = _wrap(_order(chains), count, spacing)
    boxes, width = _place(rows, count, spacing)
    start, end = _ports(edges, chains.chains, boxes)
    routes = []
    for index, chain in enumerate(chains.chains):
        source, target = boxes[chain[0]], boxes[chain[-1]]
        points = [(start[index], source.bottom)]
        points += [(boxes[bend].centre_x, boxes[bend].y) for bend in chain[1:-1]]
        points.append((end[index], target.y))
        routes.append(Route(chain[0], chain[-1], tuple(points)))
    height = spacing.margin * 2 + len(rows) * spacing.node_height
    height += max(len(rows) - 1, 0) * spacing.layer_gap
    return Drawing(tuple(boxes[n] for n in range(count)), tuple(routes), width, height)


def _shifted(drawing: Drawing, dx: float, dy: float) -> tuple[list[Box], list[Route]]:
    boxes = [Box(b.x + dx, b.y + dy, b.width, b.height) for b in drawing.boxes]
    routes = [
        Route(r.source, r.target, tuple((x + dx, y + dy) for x, y in r.points))
        for r in drawing.routes
    ]
    return boxes, routes


def _cluster_order(clusters: Sequence[int], edges: Sequence[tuple[int, int]]) -> list[int]:
    """Clusters that need others first (edges between clusters point down or right)."""
    count = max(clusters, default=-1) + 1
    between = sorted({(clusters[a], clusters[b]) for a, b in edges if clusters[a] != clusters[b]})
    layer = assign_layers(count, between)
    return sorted(range(count), key=lambda c: (layer[c], c))


def _shelves(
    sizes: Sequence[tuple[float, float]], order: Sequence[int], spacing: Spacing
) -> list[Box]:
    """Frames of the given sizes, left to right in ``order``, in rows no wider than the page."""
    frames: dict[int, Box] = {}
    x = y = spacing.margin
    shelf = 0.0
    for cluster in order:
        width, height = sizes[cluster]
        if x > spacing.margin and x + width > spacing.max_width - spacing.margin:
            x, y, shelf = spacing.margin, y + shelf + spacing.gap, 0.0
        frames[cluster] = Box(x, y, width, height)
        x += width + spacing.gap
        shelf = max(shelf, height)
    return [frames[c] for c in range(len(sizes))]


def _between(source: Box, target: Box, spacing: Spacing) -> tuple[tuple[float, float], ...]:
    """An edge between clusters: into its target's top when the target lies below the source,
    else into its bottom, from below (its arrowhead would otherwise end inside the target's
    box, which is drawn over it); beside each other, it dips under both."""
    if target.y >= source.bottom:
        return ((source.centre_x, source.bottom), (target.centre_x, target.y))
    if target.bottom <= source.y:
        return ((source.centre_x, source.y), (target.centre_x, target.bottom))
    below = max(source.bottom, target.bottom) + spacing.cluster_padding / 2
    return (
        (source.centre_x, source.bottom),
        (source.centre_x, below),
        (target.centre_x, below),
        (target.centre_x, target.bottom),
    )


def clustered(
    clusters: Sequence[int], edges: Sequence[tuple[int, int]], spacing: Spacing = Spacing()
) -> Drawing:
    """Each cluster (``clusters``: every node's) laid out on its own in a frame, the frames in
    rows; an edge between clusters goes straight from its source to its target."""
    count = max(clusters, default=-1) + 1
    inner = dataclasses.replace(
        spacing,
        margin=0,
        max_width=spacing.max_width - 2 * (spacing.margin + spacing.cluster_padding),
    )
    members: list[list[int]] = [[] for _ in range(count)]
    for node, cluster in enumerate(clusters):
        members[cluster].append(node)
    local = {node: i for nodes in members for i, node in enumerate(nodes)}
    drawings = []
    for cluster, nodes in enumerate(members):
        own = [(local[a], local[b]) for a, b in edges if clusters[a] == clusters[b] == cluster]
        drawings.append(layered(len(nodes), own, inner))
    pad, label = spacing.cluster_padding, spacing.cluster_label
    sizes = [(d.width + 2 * pad, d.height + 2 * pad + label) for d in drawings]
    frames = _shelves(sizes, _cluster_order(clusters, edges), spacing)
    boxes: dict[int, Box] = {}
    inside: list[list[Route]] = []
    for cluster, (drawing, frame) in enumerate(zip(drawings, frames, strict=True)):
        placed, shifted = _shifted(drawing, frame.x + pad, frame.y + pad + label)
        boxes.update(zip(members[cluster], placed, strict=True))
        inside.append(shifted[::-1])  # popped from the end: in edge order
    routes: list[Route] = []
    for a, b in edges:
        if clusters[a] == clusters[b]:
            routes.append(Route(a, b, inside[clusters[a]].pop().points))
        else:
            routes.append(Route(a, b, _between(boxes[a], boxes[b], spacing)))
    width = max((f.x + f.width for f in frames), default=0.0) + spacing.margin
    height = max((f.bottom for f in frames), default=0.0) + spacing.margin
    ordered = tuple(boxes[n] for n in range(len(clusters)))
    return Drawing(ordered, tuple(routes), width, height, tuple(frames))
