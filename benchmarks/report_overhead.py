"""What the link graph (for the HTML report) adds to a verify-linkage run, side by side.

Each round runs verify-linkage on the same input twice, once as it is and once with the graph
left empty, in alternating order; the ratio is taken round by round (a host that slows down
mid-run slows both alike) and its median printed, with the time the graph itself took and the
time the HTML page takes to render. Usage:

    python benchmarks/report_overhead.py [PATH ...] [--rounds N]

PATH defaults to the system's library folder (a thousand ELF files on Debian).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from buildtool.linkage import verify
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.report.graph import LinkGraph
from buildtool.linkage.report.html import render_report_html
from buildtool.linkage.report.model import Report

DEFAULT = Path("/usr/lib/x86_64-linux-gnu")


def _timed(paths: list[Path], graph: Callable[..., LinkGraph]) -> tuple[float, Report]:
    vars(verify)["link_graph"] = graph  # what verify_inputs calls
    start = time.perf_counter()
    report = verify.verify_paths(paths, LinkagePolicy.empty())
    return time.perf_counter() - start, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[DEFAULT])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    real: Callable[..., LinkGraph] = vars(verify)["link_graph"]
    spent: list[float] = []

    def measured(*arguments: Any) -> LinkGraph:
        start = time.perf_counter()
        graph = real(*arguments)
        spent.append(time.perf_counter() - start)
        return graph

    def empty(*_arguments: Any) -> LinkGraph:
        return LinkGraph()

    ratios, with_graph = [], []
    report = None
    for round_number in range(args.rounds):
        order = [(measured, True), (empty, False)]
        seconds: dict[bool, float] = {}
        for graph, drawn in order if round_number % 2 == 0 else order[::-1]:
            seconds[drawn], result = _timed(args.paths, graph)
            report = result if drawn else report
        ratios.append(seconds[True] / seconds[False])
        with_graph.append(seconds[True])
    vars(verify)["link_graph"] = real
    assert report is not None
    start = time.perf_counter()
    page = render_report_html(report)
    rendering = time.perf_counter() - start
    print(f"input: {', '.join(map(str, args.paths))}: {report.files_checked} ELF files, "
          f"{len(report.graph.nodes)} nodes, {len(report.graph.edges)} edges")  # fmt: skip
    print(f"verify-linkage with the graph: median {statistics.median(with_graph):.3f} s")
    print(f"with / without the graph, paired by round: median {statistics.median(ratios):.3f}x "
          f"(rounds: {', '.join(f'{r:.3f}' for r in ratios)})")  # fmt: skip
    print(f"the graph itself: median {statistics.median(spent) * 1000:.1f} ms")
    print(f"the HTML page: {rendering * 1000:.0f} ms, {len(page):,} bytes")


if __name__ == "__main__":
    main()
