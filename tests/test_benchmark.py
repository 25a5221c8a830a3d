"""The torch benchmark's arithmetic: ratios are taken run by run, and the verdicts follow them."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "verify_torch.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verify_torch", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    # run as a script, its folder is on sys.path: its sibling modules import as they do there
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return module


def series(bench: ModuleType, name: str, *seconds: float) -> Any:
    return bench.Measurement(name, tuple(bench.Run(s, 1 << 20, 0) for s in seconds))


def test_ratios_pair_the_runs_of_one_round(bench: ModuleType) -> None:
    # the machine slows down 4x over three rounds; each round, a takes twice as long as b
    a = series(bench, "a", 2.0, 4.0, 8.0)
    b = series(bench, "b", 1.0, 2.0, 4.0)
    assert bench.paired_ratio(a, b) == 2.0
    # a ratio of medians mixes rounds: here it says 1.25x where every round but one says 2x
    c = series(bench, "c", 2.0, 2.5, 8.0)
    assert bench.paired_ratio(c, b) == 2.0  # runs 2/1, 2.5/2, 8/4
    assert c.seconds / b.seconds == 1.25


def test_the_busy_bound_spreads_the_cpu_time_over_every_cpu(bench: ModuleType) -> None:
    # 2.2 s, 2.4 s and 2.0 s of CPU time on 2 CPUs, against 1.4 s, 1.5 s and 1.25 s of zlib
    ours = bench.Measurement("ours", tuple(bench.Run(1.5, 0, 0, cpu) for cpu in (2.2, 2.4, 2.0)))
    floor = series(bench, "floor", 1.4, 1.5, 1.25)
    assert bench.busy_bound(ours, floor, 2) == pytest.approx(0.8)  # 1.1/1.4, 1.2/1.5, 1.0/1.25
    assert bench.busy_bound(ours, floor, 1) == pytest.approx(1.6)


def test_unequal_series_are_refused(bench: ModuleType) -> None:
    with pytest.raises(ValueError, match="shorter"):
        bench.paired_ratio(series(bench, "a", 1.0, 2.0), series(bench, "b", 1.0))


def test_targets_follow_the_measurements(bench: ModuleType) -> None:
    fast = series(bench, "fast", 0.4, 0.5, 0.6)
    slow = series(bench, "slow", 0.9, 1.0, 1.1)

    def results(wheel: Any, lib: Any) -> Any:
        return bench.Results(
            speed=fast, both_cpus=fast, floor=fast, floor_record=fast, wheel=wheel,
            auditwheel=series(bench, "auditwheel", 20.0, 20.0, 20.0),
            wheel_beside_auditwheel=wheel, readelf=fast, lib=lib, lib_one_process=lib,
            once=fast, twice=fast, wheel_ours=fast, wheel_pip=fast, isal_floor=None,
        )  # fmt: skip

    met = {t.what: t.met for t in bench.targets(results(fast, fast))}
    assert met["torch/lib wall"]  # median 0.5 s
    assert met["auditwheel show / wheel"]  # 20 / 0.5 = 40x
    assert not met["wheel / zlib decompression of its ELF members"]  # 1.0x: the goal is 0.8x
    missed = {t.what: t.met for t in bench.targets(results(slow, slow))}
    assert not missed["torch/lib wall"]  # 1.0 s
    assert not missed["auditwheel show / wheel"]  # 20 / 1.0 = 20x
    assert not missed["wheel / zlib decompression of its ELF members"]  # median 2.0x
    quicker = dataclasses.replace(results(fast, fast), floor=slow)  # 0.4/0.9 ... 0.6/1.1
    assert {t.what: t.met for t in bench.targets(quicker)}[
        "wheel / zlib decompression of its ELF members"
    ]


def test_the_other_platforms_are_judged_by_their_own_decompression(bench: ModuleType) -> None:
    quick = series(bench, "quick", 0.4, 0.5, 0.6)
    fields = {f.name: quick for f in dataclasses.fields(bench.Results) if f.name != "others"}
    floor = series(bench, "unzip", 1.0, 1.0, 1.0)
    others = {
        "macOS": bench.Pair(floor, series(bench, "ours", 1.1, 1.15, 1.3)),  # median 1.15x
        "Windows": bench.Pair(floor, series(bench, "ours", 1.3, 1.4, 1.1)),  # median 1.3x
    }
    r = bench.Results(**fields, others=others)
    met = {t.what: (t.value, t.met) for t in bench.targets(r)}
    assert met["macOS wheel / zlib decompression of every member"] == ("1.15x", True)
    assert met["Windows wheel / zlib decompression of every member"] == ("1.30x", False)
    assert any("zipfile" not in line and "unzip" in line for line in bench.tables(r))


def test_host_speed_scales_only_the_absolute_target(bench: ModuleType) -> None:
    quick = series(bench, "quick", 0.4, 0.5, 0.6)
    floor = series(bench, "zipfile: ELF members", 2.8, 2.88, 3.0)  # 2x the 1.44 s
    readelf = series(bench, "readelf --dyn-syms", 2.9, 2.9, 2.9)  # 2x its 1.45 s
    lib = series(bench, "buildtool: torch/lib", 0.8, 0.8, 0.8)
    r = bench.Results(
        speed=quick, both_cpus=quick, floor=floor, floor_record=quick, wheel=quick,
        auditwheel=quick, wheel_beside_auditwheel=quick, readelf=readelf, lib=lib,
        lib_one_process=lib, once=quick, twice=quick, wheel_ours=quick, wheel_pip=quick,
        isal_floor=None,
    )  # fmt: skip
    text = " ".join(bench.host_speed(r))
    assert "2.00 times as long" in text
    assert "this run's 0.80 s would be 0.40 s" in text
    assert not {t.what: t.met for t in bench.targets(r)}["torch/lib wall"]  # verdicts unscaled


def test_the_reader_comparison_is_a_paired_ratio(bench: ModuleType) -> None:
    quick = series(bench, "quick", 0.4, 0.5, 0.6)
    fields = {f.name: quick for f in dataclasses.fields(bench.Results) if f.name != "others"}
    nothing = {"fast_reader", "pyelftools_reader", "exit_at_once", "full_teardown"}
    without = bench.Results(**{**fields, **dict.fromkeys(nothing)})
    assert not any("pyelftools" in line for line in bench.comparisons(without))
    fast = series(bench, "fast", 0.1, 0.2, 0.4)
    reference = series(bench, "pyelftools", 5.0, 10.0, 12.0)  # 50x, 50x, 30x
    r = dataclasses.replace(without, fast_reader=fast, pyelftools_reader=reference)
    assert "| fast decoder vs pyelftools | pyelftools takes 50.0x as long |" in bench.tables(r)


def test_the_wheel_is_set_beside_zipfile_doing_the_reads_work(bench: ModuleType) -> None:
    quick = series(bench, "quick", 0.4, 0.5, 0.6)
    fields = {f.name: quick for f in dataclasses.fields(bench.Results) if f.name != "others"}
    ours = series(bench, "buildtool: wheel", 2.0, 3.0, 2.1)
    record = series(bench, "zipfile: all members + sha256", 3.0, 3.0, 3.5)  # 0.67x, 1x, 0.6x
    r = bench.Results(**{**fields, "wheel": ours, "floor_record": record})
    row = next(line for line in bench.comparisons(r) if "every member" in line)
    assert row.startswith("| wheel / zlib decompression and sha256 of every member | 0.67x:")
    assert "it takes 0.67x as long." in bench.performance_section(r)[-2]


def test_the_teardown_saving_is_measured_run_by_run(bench: ModuleType) -> None:
    quick = series(bench, "quick", 0.4, 0.5, 0.6)
    fields = {f.name: quick for f in dataclasses.fields(bench.Results) if f.name != "others"}
    at_once = series(bench, "os._exit", 0.50, 0.40, 0.60)
    full = series(bench, "teardown", 0.55, 0.42, 0.63)  # 50, 20, 30 ms more
    r = bench.Results(**{**fields, "exit_at_once": at_once, "full_teardown": full})
    row = next(line for line in bench.comparisons(r) if "os._exit" in line)
    assert "(30 ms more, median of paired runs)" in row
    assert "1.05x as long" in row


def test_the_readme_gets_this_runs_targets_and_keeps_the_rest(bench: ModuleType) -> None:
    fast = series(bench, "fast", 0.4, 0.5, 0.6)
    run = bench.Results(
        speed=fast, both_cpus=fast, floor=fast, floor_record=fast, wheel=fast,
        auditwheel=series(bench, "auditwheel", 20.0, 20.0, 20.0),
        wheel_beside_auditwheel=fast, readelf=fast, lib=fast, lib_one_process=fast,
        once=fast, twice=fast, wheel_ours=fast, wheel_pip=fast, isal_floor=None,
    )  # fmt: skip
    section = bench.performance_section(run)
    old = "\n".join(
        [
            "# x",
            "before",
            bench.PERFORMANCE_START,
            "| old | table |",
            bench.PERFORMANCE_END,
            "after",
        ]
    )
    text = bench.with_performance(old, section)
    assert text.startswith("# x\nbefore\n")
    assert text.endswith("\nafter")
    assert "| old | table |" not in text
    assert "| torch/lib wall | 0.50 s | <= 0.5 s | met |" in text
    assert "| wheel / zlib decompression of its ELF members | 1.00x | <= 0.8x | missed |" in text
    assert f"on {bench._cpus()} CPUs" in text
    assert "EPYC" not in text
    assert "Linux" not in text
    assert bench.with_performance("# no section\n", section) == "# no section\n"
