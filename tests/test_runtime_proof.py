"""The runtime wheel from the full build: the comparison of the two configurations (pure) both
ways, and on a real project whose own CMake reads the compiler's switch (the runtime wheel then
builds apart, with a warning naming the difference)."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import zipfile
from pathlib import Path

import pytest

from buildtool.cmake.runtime_proof import (
    TargetModel,
    TreeModel,
    configure_runtime_tree,
    runtime_differences,
)
from buildtool.errors import ToolFailed
from buildtool.packaging import wheel
from buildtool.recipe.load import load_recipe
from tests.conftest import REPO


def target(name: str, compile: str = "-O2", deps: tuple[str, ...] = ()) -> TargetModel:
    return TargetModel(name, compile, (f"/src/{name}.cc",), "-shared", deps, ("buildtool/include",))


def tree(*targets: TargetModel, headers: dict[str, str] | None = None) -> TreeModel:
    return TreeModel({t.name: t for t in targets}, headers or {})


def test_the_same_runtime_targets_are_no_difference() -> None:
    full = tree(target("rt", deps=("ffi",)), target("ffi"), target("compiler", "-DX"))
    runtime = tree(target("rt", deps=("ffi",)), target("ffi"))  # the compiler is switched off
    assert runtime_differences(full, runtime, ["rt"]) == []


def test_a_dependency_compiled_differently_is_a_difference() -> None:
    full = tree(target("rt", deps=("ffi",)), target("ffi", "-DWITH_COMPILER"))
    runtime = tree(target("rt", deps=("ffi",)), target("ffi"))
    assert runtime_differences(full, runtime, ["rt"]) == [
        "ffi: compile flags, defines or include folders differ"
    ]


def test_a_plugin_only_ordered_before_its_host_is_no_difference() -> None:
    """The host depends on each plugin (add_dependencies: building it builds them), an optional
    plugin exists only in the full tree: a module cannot be linked, so the host's code is the
    same. A plugin the runtime wheel ships is compared as a root of its own."""
    blas = dataclasses.replace(target("blas", "-DNEEDS_EXTRA"), kind="MODULE_LIBRARY")
    cpu = dataclasses.replace(target("cpu"), kind="MODULE_LIBRARY")
    full = tree(target("ggml", deps=("base", "blas", "cpu")), target("base"), blas, cpu)
    runtime = tree(target("ggml", deps=("base", "cpu")), target("base"), cpu)
    assert runtime_differences(full, runtime, ["ggml", "cpu"]) == []
    linked = dataclasses.replace(blas, kind="SHARED_LIBRARY")  # a library it links: it counts
    full = tree(target("ggml", deps=("base", "blas", "cpu")), target("base"), linked, cpu)
    assert runtime_differences(full, runtime, ["ggml", "cpu"]) == [
        "blas: only built with the optional libraries switched on",
        "ggml: dependencies differ",
    ]
    changed = dataclasses.replace(cpu, compile="-DWITH_BLAS")
    full = tree(target("ggml", deps=("base", "blas", "cpu")), target("base"), blas, changed)
    assert runtime_differences(full, runtime, ["ggml", "cpu"]) == [
        "cpu: compile flags, defines or include folders differ"
    ]


def test_a_header_read_only_when_it_differs_and_is_read() -> None:
    full = tree(target("rt"), headers={"buildtool/include/config.h": "a", "x/c_export.h": "c"})
    runtime = tree(target("rt"), headers={"buildtool/include/config.h": "b"})
    read = {"buildtool/include/config.h"}
    assert runtime_differences(full, runtime, ["rt"], read) == [
        "buildtool/include/config.h: configured differently"
    ]
    assert runtime_differences(full, runtime, ["rt"], set()) == []
    assert "x/c_export.h: configured only with the optional libraries switched on" in (
        runtime_differences(full, runtime, ["rt"], None)  # no dependency log: every header
    )


@pytest.mark.integration
@pytest.mark.wheel
def test_a_switch_the_runtime_reads_builds_the_runtime_wheel_apart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The project's own CMake gives the runtime a definition while the compiler is on: the
    runtime wheel cannot come from the full build, and does not."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "recipes", root / "recipes")
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "src" / "extra.cmake").write_text(
        "if(DEMO_BUILD_COMPILER)\n"
        "  target_compile_definitions(demo_runtime PRIVATE DEMO_WITH_COMPILER=1)\n"
        "endif()\n",
        encoding="utf-8",
    )
    recipe = root / "recipes" / "demo.toml"
    text = recipe.read_text(encoding="utf-8")
    text = text.replace('root = "../src"', 'root = "../src"\ncmake-include = ["extra.cmake"]')
    recipe.write_text(text, encoding="utf-8")
    build = tmp_path / "build"
    request = wheel.WheelRequest(load_recipe(recipe), "split", tmp_path / "dist", build)
    with caplog.at_level(logging.INFO, logger="buildtool"):
        built = wheel.build_wheels(request)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    apart = [message for message in warnings if "builds apart" in message]
    assert len(apart) == 1, warnings
    assert "demo_runtime: compile flags, defines or include folders differ" in apart[0]
    runtime_tree = build / "buildtool" / "runtime-configuration"
    assert (runtime_tree / "lib" / "libdemo_runtime.so").is_file()
    assert not (runtime_tree / "lib" / "libdemo_compiler.so").exists()
    runtime_wheel = next(a.path for a in built if a.distribution == "demo-runtime")
    with zipfile.ZipFile(runtime_wheel) as archive:
        library = archive.read("demo/lib/libdemo_runtime.so")
    assert library == (runtime_tree / "lib" / "libdemo_runtime.so").read_bytes()


TINY_PROJECT = """\
cmake_minimum_required(VERSION 3.15)
project(tiny LANGUAGES CXX)
option(TINY_WITH_EXTRA "the optional library" ON)
if(NOT TINY_WITH_EXTRA)
  message(FATAL_ERROR "tiny cannot be configured without its extra library")
endif()
"""


@pytest.mark.integration
def test_the_proofs_configure_is_logged_at_debug_and_its_failure_keeps_the_last_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The proof is an internal check: CMake's output (its compiler detection, a second time
    in a run) is not shown at the default level, -v shows it, and a failure still says why."""
    source = tmp_path / "tiny"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(TINY_PROJECT, encoding="utf-8")
    with caplog.at_level(logging.DEBUG, logger="buildtool"):
        configure_runtime_tree(source, tmp_path / "on", {"TINY_WITH_EXTRA": "ON"}, ())
    shown = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert shown == []
    assert any("The CXX compiler identification" in line for line in debug), debug
    assert any(line.startswith("$ ") and "-DTINY_WITH_EXTRA=ON" in line for line in debug)
    caplog.clear()
    with (
        caplog.at_level(logging.INFO, logger="buildtool"),
        pytest.raises(ToolFailed) as failed,
    ):
        configure_runtime_tree(source, tmp_path / "off", {"TINY_WITH_EXTRA": "OFF"}, ())
    assert caplog.records == []
    assert "--- last lines of its output ---" in str(failed.value)
    assert "tiny cannot be configured without its extra library" in str(failed.value)
