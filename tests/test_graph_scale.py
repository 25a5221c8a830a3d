"""The link graph at real scale: look-alike files fold into groups, wide layers wrap, clusters
per distribution, and the page scales the graph to its width.

The unit tests build graphs directly; the browser test renders ``verify-linkage --format html``
of a generated site-packages folder of about 500 real ELF files (a few small binaries built
with g++ once, copied under many names) and measures the drawn graph in a screenshot."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.report.graph import GraphEdge, GraphNode, LinkGraph, NodeKind
from buildtool.linkage.report.groups import MIN_GROUP, fold, folder_of
from buildtool.linkage.report.html import render_report_html
from buildtool.linkage.report.layout import Spacing, clustered, layered
from buildtool.linkage.report.model import Report
from tests.conftest import require
from tests.test_html_report import DomNodes, drawn_width, open_in_chromium, png_pixels, svg_of

SVG = "{http://www.w3.org/2000/svg}"
WIDEST = 2400


def node(path: str, kind: NodeKind = "executable", **extra: str) -> GraphNode:
    return GraphNode(path, path.rpartition("/")[2], kind, **extra)  # type: ignore[arg-type]


def fan_in_graph() -> tuple[LinkGraph, tuple[Finding, ...]]:
    """Ten executables in bin/ needing one library, two more also needing a second one, one
    the recipe names, and one needing a library nothing provides."""
    nodes = [node("pkg/lib/libcore.so", "library"), node("pkg/lib/libextra.so", "library")]
    nodes += [node(f"pkg/bin/tool{i}") for i in range(10)]
    nodes += [
        node("pkg/bin/pair0"),
        node("pkg/bin/pair1"),
        node("pkg/bin/minrpc", role="executable"),
    ]
    nodes += [GraphNode("not found: libgone.so", "libgone.so", "missing")]
    edges = [GraphEdge(n.path, "pkg/lib/libcore.so", "libcore.so") for n in nodes[2:15]]
    edges += [GraphEdge(f"pkg/bin/pair{i}", "pkg/lib/libextra.so", "libextra.so") for i in (0, 1)]
    edges += [GraphEdge("pkg/lib/libextra.so", "not found: libgone.so", "libgone.so")]
    findings = (
        Finding("BT107", "pkg/bin/tool7", "cannot find libcore.so", "", "libcore.so"),
        Finding("BT113", "pkg/bin/tool2", "unused /build/lib", ""),
        Finding("BT113", "pkg/bin/tool3", "unused /build/lib", ""),
    )
    return LinkGraph(tuple(nodes), tuple(edges)), findings


def test_look_alike_files_fold_into_one_group() -> None:
    graph, _ = fan_in_graph()
    folded = fold(graph)
    groups = [unit for unit in folded.units if unit.grouped]
    assert len(groups) == 1
    assert [graph.nodes[m].name for m in groups[0].members] == [f"tool{i}" for i in range(10)]
    assert (groups[0].folder, groups[0].kind) == ("pkg/bin/", "executable")
    alone = {graph.nodes[u.members[0]].name for u in folded.units if not u.grouped}
    # fewer than MIN_GROUP alike, named by the recipe, libraries with distinct needers, missing
    assert MIN_GROUP > 2
    assert alone == {"pair0", "pair1", "minrpc", "libcore.so", "libextra.so", "libgone.so"}
    # the ten edges into libcore.so are one line; every graph edge is in exactly one line
    assert sorted(e for joined in folded.edges for e in joined.edges) == list(range(16))
    assert max(len(joined.edges) for joined in folded.edges) == 10
    assert folded.clusters == ("",)


def test_folders_inside_a_wheel_are_shown_from_its_root() -> None:
    assert folder_of("dist/torch-2.13.0.whl!/torch/bin/test_api") == "torch/bin/"
    assert folder_of("build/bin/minrpc") == "build/bin/"
    assert folder_of("minrpc") == "./"
    assert folder_of("/srv/site-packages/scipy/linalg/_x.so", ["/srv/site-packages/"]) == (
        "scipy/linalg/"
    )
    assert folder_of("/srv/site-packages/_x.so", ["/srv", "/srv/site-packages"]) == "./"


def test_a_group_with_an_error_shows_it_and_lists_every_file() -> None:
    graph, findings = fan_in_graph()
    report = Report(("pkg",), "", 15, findings, (), graph=graph)
    page = render_report_html(report)
    root = ET.fromstring(svg_of(page))
    group = next(g for g in root.iter(f"{SVG}g") if "group" in g.get("class", "").split())
    assert "sev-error" in group.get("class", "")
    assert (group.get("data-members"), group.get("data-errors")) == ("10", "1")
    badge = next(a for a in group.iter(f"{SVG}a") if "badge" in a.get("class", ""))
    assert badge.get("href") == "#finding-0"  # the error, not the warnings
    assert "".join(badge.itertext()) == "1"
    summary = "10 executables in bin/, 1 with errors, 2 with warnings"  # from the input
    assert f"<summary>{summary}</summary>" in page
    dom = DomNodes()
    dom.feed(page)
    members = re.findall(r'<li id="(node-\d+)" data-path="([^"]+)" data-group="([^"]+)"', page)
    assert [path for _, path, _ in members] == [f"pkg/bin/tool{i}" for i in range(10)]
    assert {g for _, _, g in members} == {group.get("id")}
    # the findings table links the file to its entry in the group's list
    assert '<a class="file" href="#node-9">tool7</a>' in page
    assert members[7][0] == "node-9"


def test_bend_points_cannot_widen_a_layer_past_the_page() -> None:
    # 60 roots each needing a library two layers down: 60 bend points in the middle layer
    roots = 60
    edges = [(r, roots) for r in range(roots)] + [(0, roots + 1), (roots + 1, roots)]
    drawing = layered(roots + 2, edges)
    assert drawing.width <= WIDEST
    for route in drawing.routes:
        ys = [y for _, y in route.points]
        assert ys == sorted(ys)
    narrow = layered(roots + 2, edges, Spacing(max_width=100_000, per_row=1000))
    assert narrow.width > 3 * WIDEST  # what one row per layer would take


def test_clusters_are_laid_out_apart_in_rows_no_wider_than_the_page() -> None:
    # 30 clusters of 33 nodes each: a chain of three libraries and 30 nodes needing the first
    clusters: list[int] = []
    edges: list[tuple[int, int]] = []
    for cluster in range(30):
        base = len(clusters)
        clusters += [cluster] * 33
        edges += [(base, base + 1), (base + 1, base + 2)]
        edges += [(base + 3 + i, base) for i in range(30)]
    edges.append((33 * 5, 33 * 2))  # one edge between clusters
    drawing = clustered(clusters, edges)
    assert drawing.width <= WIDEST
    assert len(drawing.frames) == 30
    for index, box in enumerate(drawing.boxes):
        frame = drawing.frames[clusters[index]]
        assert frame.x <= box.x
        assert box.x + box.width <= frame.x + frame.width
        assert frame.y <= box.y
        assert box.bottom <= frame.bottom
    assert len(drawing.routes) == len(edges)


def site_packages_graph(distributions: int, per: int) -> LinkGraph:
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []
    for d in range(distributions):
        lib = f"site/dist{d}/lib/libcore.so"
        nodes.append(node(lib, "library", distribution=f"dist{d}"))
        for i in range(per):
            path = f"site/dist{d}/bin/tool{i}"
            nodes.append(node(path, distribution=f"dist{d}"))
            edges.append(GraphEdge(path, lib, "libcore.so"))
    return LinkGraph(tuple(nodes), tuple(edges))


def test_a_site_packages_folder_gets_one_cluster_per_distribution() -> None:
    graph = site_packages_graph(30, 32)  # 990 files
    report = Report(("site",), "", len(graph.nodes), (), (), graph=graph)
    root = ET.fromstring(svg_of(render_report_html(report)))
    assert float(root.get("width", "0")) <= WIDEST
    frames = [g for g in root.iter(f"{SVG}g") if g.get("class") == "cluster"]
    assert ["".join(f.itertext()) for f in frames] == [f"dist{d}" for d in range(30)]
    groups = [g for g in root.iter(f"{SVG}g") if "group" in g.get("class", "").split()]
    assert [g.get("data-members") for g in groups] == ["32"] * 30


# --- a real report in a real browser ----------------------------------------------------------

SOURCES = {
    "core.cc": 'extern "C" int core_value() { return 42; }\n',
    "gone.cc": 'extern "C" int gone_value() { return 1; }\n',
    "main.cc": 'extern "C" int core_value();\nint main() { return core_value() == 42 ? 0 : 1; }\n',
    "bad.cc": 'extern "C" int core_value();\nextern "C" int gone_value();\n'
    "int main() { return core_value() - 42 + gone_value() - 1; }\n",
    "ext.cc": 'extern "C" int core_value();\nextern "C" int ext_value() { return core_value(); }\n',
}


def _binaries(work: Path) -> dict[str, Path]:
    """libcore.so; tool (needs it, RUNPATH $ORIGIN/../lib), tool_warn (also an absolute RUNPATH
    entry nothing resolves from: BT113), tool_bad (also needs libgone.so, shipped nowhere: an
    error), ext.so (an extension module needing libcore.so)."""
    gxx = shutil.which("g++")
    require(gxx is not None, "g++ is not installed")
    assert gxx is not None
    for name, text in SOURCES.items():
        (work / name).write_text(text, encoding="utf-8")
    origin = "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib"
    steps = {
        "libcore.so": ["-shared", "-fPIC", "core.cc"],
        "libgone.so": ["-shared", "-fPIC", "gone.cc"],
        "tool": ["main.cc", "-L.", "-lcore", origin],
        "tool_warn": ["main.cc", "-L.", "-lcore", origin + ":/nonexistent/build/lib"],
        "tool_bad": ["bad.cc", "-L.", "-lcore", "-lgone", origin],
        "ext.so": ["-shared", "-fPIC", "ext.cc", "-L.", "-lcore", origin],
    }
    for output, argv in steps.items():
        subprocess.run([gxx, "-O1", "-o", output, *argv], cwd=work, check=True)
    return {name: work / name for name in steps}


def _install(site: Path, name: str, files: dict[str, Path]) -> None:
    """Copy ``files`` (relative path -> binary) into ``site`` as distribution ``name``."""
    for relative, binary in files.items():
        target = site / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(binary, target)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "RECORD").write_text("".join(f"{r},,\n" for r in files), encoding="utf-8")


@pytest.fixture(scope="module")
def generated_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site-packages folder of 11 distributions, 509 ELF files: each has its libcore.so, 24
    executables, 6 with a stale RUNPATH entry and 15 extension modules; one also ships 3
    executables that need a library none of them has."""
    work = tmp_path_factory.mktemp("scale")
    built = _binaries(work)
    site = work / "site-packages"
    for d in range(11):
        files = {f"dist{d}/lib/libcore.so": built["libcore.so"]}
        files |= {f"dist{d}/bin/tool{i}": built["tool"] for i in range(24)}
        files |= {f"dist{d}/bin/stale{i}": built["tool_warn"] for i in range(6)}
        ext = "cpython-311-x86_64-linux-gnu.so"
        files |= {f"dist{d}/ext/_m{i}.{ext}": built["ext.so"] for i in range(15)}
        if d == 3:
            files |= {f"dist{d}/bin/broken{i}": built["tool_bad"] for i in range(3)}
        _install(site, f"dist{d}", files)
    return site


@pytest.mark.integration
def test_the_generated_binaries_really_load_or_fail(generated_site: Path) -> None:
    ok = subprocess.run([generated_site / "dist3/bin/tool0"], capture_output=True, check=False)
    assert ok.returncode == 0, ok.stderr
    broken = subprocess.run(
        [generated_site / "dist3/bin/broken0"], capture_output=True, text=True, check=False
    )
    assert broken.returncode != 0
    assert "libgone.so: cannot open shared object file" in broken.stderr


def findings_and_groups(page: str) -> tuple[list[tuple[str, str, bool]], dict[str, dict[str, str]]]:
    """Each finding's severity, file and whether the graph shows it (its node, or a group node
    whose list holds it); the group nodes by id."""
    dom = DomNodes()
    dom.feed(page)
    drawn = {n["data-path"] for n in dom.nodes if "data-path" in n}
    groups = {n["id"]: n for n in dom.nodes if "group" in n["class"].split()}
    listed = {
        html.unescape(path): group
        for path, group in re.findall(
            r'<li id="[^"]+" data-path="([^"]+)" data-group="([^"]+)"', page
        )
    }
    rows = re.findall(
        r'<tr id="[^"]*finding-\d+" class="finding (\w+)">.*?<span title="([^"]+)">', page
    )
    findings = [
        (severity, path, path in drawn or listed.get(path) in groups)
        for severity, path in ((s, html.unescape(p)) for s, p in rows)
    ]
    return findings, groups


@pytest.mark.integration
@pytest.mark.browser
def test_a_500_file_report_fits_the_page_in_headless_chromium(
    generated_site: Path, tmp_path: Path
) -> None:
    from buildtool.cli import main

    page = tmp_path / "report.html"
    argv = ["verify-linkage", str(generated_site), "--no-recipe", "--format", "html"]
    assert main([*argv, "--output", str(page), "--jobs", "1"]) == 1  # the broken executables
    text = page.read_text(encoding="utf-8")
    svg = ET.fromstring(svg_of(text))
    assert float(svg.get("width", "0")) <= WIDEST
    assert svg.get("style") == f"max-width: {svg.get('width')}px"

    opened = open_in_chromium(page, tmp_path / "chromium", size=(2600, 1400), scale=0.5)
    assert opened.console == []
    findings, groups = findings_and_groups(opened.dom)
    assert {severity for severity, _, _ in findings} == {"error", "warning"}
    assert [path for _, path, shown in findings if not shown] == []
    errors = [g for g in groups.values() if g["data-errors"] != "0"]
    assert [(g["data-members"], g["data-errors"]) for g in errors] == [("3", "3")]
    assert "sev-error" in errors[0]["class"]
    frames = re.findall(r'<g class="cluster">.*?<text[^>]*>([^<]+)</text>', opened.dom)
    assert frames == sorted(f"dist{d}" for d in range(11))  # input order: sorted paths
    assert drawn_width(png_pixels(opened.screenshot), 0.5) <= WIDEST
