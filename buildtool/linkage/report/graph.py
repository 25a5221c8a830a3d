"""The link graph of one run: its ELF files as nodes, their DT_NEEDED entries as edges. Pure.

What the HTML report draws. Files of the inputs are nodes; a NEEDED entry resolved to another
input file is an edge; one nothing provides is an edge to a ``missing`` node; one resolved outside
the inputs (libc, libstdc++) is listed on its node rather than drawn, so the project's own
structure stays readable. A NEEDED entry the recipe requires but the file lacks (BT101) is an edge
too, marked absent.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Literal

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs.collect import BinaryFile
from buildtool.linkage.loaders.loaded import Closure, NeededEdge

NodeKind = Literal["library", "executable", "extension", "missing"]

EXTENSION_SUFFIX = re.compile(r"\.(cpython-[^./]+|abi3|pypy[^./]*)\.so$")
"""Python extension modules: ``_C.cpython-312-x86_64-linux-gnu.so``, ``x.abi3.so``."""


@dataclasses.dataclass(frozen=True)
class GraphNode:
    """One file of the inputs (or a NEEDED name nothing provides)."""

    path: str
    """How findings name it (``BinaryFile.display``); ``not found: <NEEDED>`` for a missing
    node."""
    name: str
    """Its file name."""
    kind: NodeKind
    """``library``, ``executable`` (anything not a shared object), ``extension`` (a Python
    extension module) or ``missing``."""
    role: str = ""
    """What the recipe says it is: ``required`` or ``optional`` for a library, ``executable``
    for an executable or test; "" when the recipe does not name it (or there is no recipe)."""
    recipe_name: str = ""
    """Its name in the recipe (``runtime``, ``compiler``, ``minrpc``), or ""."""
    outside: tuple[str, ...] = ()
    """NEEDED entries resolved outside the inputs (system libraries), in file order."""
    distribution: str = ""
    """The distribution that installs it (a wheel's, or a ``*.dist-info/RECORD``'s), or "" when
    no metadata says (a build tree, a missing node)."""


@dataclasses.dataclass(frozen=True)
class GraphEdge:
    """A DT_NEEDED entry from one node to another."""

    source: str
    """The needing node's path."""
    target: str
    """The needed node's path."""
    needed: str
    """The DT_NEEDED entry as written."""
    present: bool = True
    """False for an entry the recipe requires and the file lacks (BT101)."""


@dataclasses.dataclass(frozen=True)
class LinkGraph:
    """Nodes in input order, then missing ones; edges in file order."""

    nodes: tuple[GraphNode, ...] = ()
    """Every file, then one node per NEEDED name nothing provides."""
    edges: tuple[GraphEdge, ...] = ()
    """Each file's own NEEDED entries among the nodes, then the absent required ones."""


def _kind(binary: BinaryFile) -> NodeKind:
    assert binary.facts is not None
    if binary.facts.file_type != "shared":
        return "executable"
    return "extension" if EXTENSION_SUFFIX.search(binary.location.name) else "library"


def _node(
    binary: BinaryFile, policy: LinkagePolicy, outside: tuple[str, ...], distribution: str
) -> GraphNode:
    name = binary.location.name
    library = policy.library_by_file(name)
    executable = policy.executable_by_file(name)
    role, recipe_name = "", ""
    if library is not None:
        role, recipe_name = ("optional" if library.optional else "required"), library.name
    elif executable is not None:
        role, recipe_name = "executable", executable.name
    return GraphNode(binary.display, name, _kind(binary), role, recipe_name, outside, distribution)


def _by_soname(files: Sequence[BinaryFile]) -> dict[str, str]:
    """Input files by SONAME (and file name): where a NEEDED entry resolves once loaded."""
    found: dict[str, str] = {}
    for binary in files:
        found.setdefault(binary.location.name, binary.display)
        if binary.facts is not None and binary.facts.soname:
            found.setdefault(binary.facts.soname, binary.display)
    return found


def _target(
    binary: BinaryFile,
    edge: NeededEdge,
    display: Mapping[str, str],
    by_soname: Mapping[str, str],
    reported: set[tuple[str, str]],
) -> str | None:
    """Where ``binary``'s NEEDED ``edge`` points in the graph: an input file's display name,
    '' for a missing node (only when a finding reports it not found: a file's own closure may
    miss what its loaders bring, a SONAME already loaded), or None when it lies outside."""
    if edge.path is None and (binary.display, edge.needed) in reported:
        return ""
    if edge.path is None:
        return by_soname.get(edge.needed)
    return display.get(edge.path)


def link_graph(
    files: Sequence[BinaryFile],
    closures: Mapping[PurePosixPath, Closure],
    aliases: Mapping[PurePosixPath, PurePosixPath],
    policy: LinkagePolicy,
    findings: Sequence[Finding],
    *,
    distributions: Mapping[PurePosixPath, str] | None = None,
) -> LinkGraph:
    """The graph of well-formed ``files`` (each one's own NEEDED entries, as resolved);
    ``distributions``: the name of the distribution that installs a file, where known."""
    installs = distributions or {}
    display = {str(b.location): b.display for b in files}
    for alias, target in aliases.items():
        if str(target) in display:
            display.setdefault(str(alias), display[str(target)])
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []
    missing: dict[str, GraphNode] = {}
    reported = {(path, f.needed) for f in findings if f.needed for path in f.paths}
    by_soname = _by_soname(files)
    for binary in files:
        closure = closures.get(binary.location)
        own = [e for e in closure.edges if e.requester == str(binary.location)] if closure else []
        outside = []
        for edge in own:
            points_to = _target(binary, edge, display, by_soname, reported)
            if points_to is None:
                outside.append(edge.needed)
                continue
            if points_to == "":
                points_to = missing.setdefault(
                    edge.needed, GraphNode(f"not found: {edge.needed}", edge.needed, "missing")
                ).path
            edges.append(GraphEdge(binary.display, points_to, edge.needed))
        distribution = installs.get(binary.location, "")
        nodes.append(_node(binary, policy, tuple(outside), distribution))
    by_name = {b.location.name: b.display for b in files}
    for finding in findings:
        if finding.check_id == "BT101" and finding.needed in by_name:
            edges.append(GraphEdge(finding.path, by_name[finding.needed], finding.needed, False))
    return LinkGraph(tuple(nodes) + tuple(missing.values()), tuple(edges))
