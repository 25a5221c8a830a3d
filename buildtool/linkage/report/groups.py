"""The link graph folded for drawing: look-alike files as one group, and clusters. Pure.

A real wheel has a hundred test executables in one folder that all need the same libraries;
drawn one by one they push the libraries that matter off the screen. Files of one folder and
one kind (executable, library, extension module) that need the same nodes and are needed by
the same nodes fold into one *unit* ("123 executables in torch/bin/"), which the page lists
file by file. A file the recipe names never folds (it is what the reader looks for), nor does
a missing node. Units are clustered by the distribution that installs them when the inputs hold
several (a site-packages folder): each cluster is drawn apart, with its name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from buildtool.linkage.report.graph import GraphNode, LinkGraph, NodeKind

MIN_GROUP = 3
"""Fewer look-alike files than this stay apart: two nodes cost less room than a group's label."""

FOLDABLE: frozenset[NodeKind] = frozenset({"executable", "library", "extension"})


@dataclasses.dataclass(frozen=True)
class Unit:
    """What the drawing shows as one node: a file, or a group of look-alike files."""

    members: tuple[int, ...]
    """Indexes of its nodes in ``LinkGraph.nodes``, in graph order (one for a lone file)."""
    folder: str
    """The folder its files lie in, as shown (inside a wheel: the path in the wheel)."""
    kind: NodeKind
    """The kind of every member."""
    cluster: int
    """Index of its cluster in ``FoldedGraph.clusters``."""

    @property
    def grouped(self) -> bool:
        return len(self.members) > 1


@dataclasses.dataclass(frozen=True)
class UnitEdge:
    """The NEEDED edges from one unit to another, drawn as one line."""

    source: int
    """Index of the needing unit."""
    target: int
    """Index of the needed unit."""
    edges: tuple[int, ...]
    """Indexes of the folded edges in ``LinkGraph.edges``, in graph order."""


@dataclasses.dataclass(frozen=True)
class FoldedGraph:
    """A link graph as drawn: units, the edges between them, and their clusters."""

    units: tuple[Unit, ...]
    """In the order of their first member."""
    edges: tuple[UnitEdge, ...]
    """In the order of their first edge."""
    clusters: tuple[str, ...]
    """Distribution names, in order of first appearance; a single "" when the graph is not
    clustered (one distribution or none)."""

    def unit_of(self) -> dict[int, int]:
        """Each node's unit."""
        return {node: index for index, unit in enumerate(self.units) for node in unit.members}


def folder_of(path: str, inputs: Sequence[str] = ()) -> str:
    """The folder part of a node's path as a reader knows it: inside a wheel from its root,
    inside an input folder from that folder (the page names the inputs above the graph)."""
    inside = path.rpartition("!/")[2] if "!/" in path else path
    roots = sorted((i.rstrip("/") + "/" for i in inputs if i.rstrip("/")), key=len, reverse=True)
    root = next((r for r in roots if inside.startswith(r)), "")
    folder, _, _ = inside[len(root) :].rpartition("/")
    return folder + "/" if folder else "./"


def _clusters(nodes: Sequence[GraphNode], first_needer: dict[int, int]) -> list[str]:
    """Each node's cluster name: its distribution; a node without one (a missing node) goes with
    the first node that needs it."""
    names = [node.distribution for node in nodes]
    for index, node in enumerate(nodes):
        if not node.distribution and index in first_needer:
            names[index] = nodes[first_needer[index]].distribution
    return names


def _signatures(
    graph: LinkGraph, clusters: list[str], folders: list[str]
) -> list[tuple[object, ...] | None]:
    """What look-alike files share (None: never folds)."""
    index = {node.path: i for i, node in enumerate(graph.nodes)}
    needs: list[set[tuple[int, bool]]] = [set() for _ in graph.nodes]
    needed_by: list[set[int]] = [set() for _ in graph.nodes]
    for edge in graph.edges:
        source, target = index[edge.source], index[edge.target]
        needs[source].add((target, edge.present))
        needed_by[target].add(source)
    return [
        (clusters[i], folders[i], node.kind, frozenset(needs[i]), frozenset(needed_by[i]))
        if node.kind in FOLDABLE and not node.role
        else None
        for i, node in enumerate(graph.nodes)
    ]


def fold(graph: LinkGraph, inputs: Sequence[str] = ()) -> FoldedGraph:
    """Fold ``graph``'s look-alike files into groups and cluster them by distribution
    (``inputs``: the report's, which folders are shown from)."""
    index = {node.path: i for i, node in enumerate(graph.nodes)}
    first_needer: dict[int, int] = {}
    for edge in graph.edges:
        first_needer.setdefault(index[edge.target], index[edge.source])
    names = _clusters(graph.nodes, first_needer)
    clusters = list(dict.fromkeys(names)) if len(set(names)) > 1 else [""]
    folders = [folder_of(node.path, inputs) for node in graph.nodes]
    signatures = _signatures(graph, names, folders)
    alike: dict[object, list[int]] = {}
    for i, signature in enumerate(signatures):
        alike.setdefault(signature if signature is not None else ("alone", i), []).append(i)
    units: list[Unit] = []
    for members in alike.values():
        parts = [members] if len(members) >= MIN_GROUP else [[m] for m in members]
        for part in parts:
            kind = graph.nodes[part[0]].kind
            cluster = clusters.index(names[part[0]]) if len(clusters) > 1 else 0
            units.append(Unit(tuple(part), folders[part[0]], kind, cluster))
    units.sort(key=lambda unit: unit.members[0])
    folded = FoldedGraph(tuple(units), (), tuple(clusters))
    return dataclasses.replace(folded, edges=_unit_edges(graph, folded.unit_of()))


def _unit_edges(graph: LinkGraph, unit_of: dict[int, int]) -> tuple[UnitEdge, ...]:
    index = {node.path: i for i, node in enumerate(graph.nodes)}
    joined: dict[tuple[int, int], list[int]] = {}
    for number, edge in enumerate(graph.edges):
        pair = (unit_of[index[edge.source]], unit_of[index[edge.target]])
        joined.setdefault(pair, []).append(number)
    return tuple(UnitEdge(a, b, tuple(edges)) for (a, b), edges in joined.items())
