"""Adopting buildtool in a project that already has its own files: they are never modified.

The "adopter" is a copy of the bundled example with a hand-written ``pyproject.toml`` (another
tool's settings, a description) and its recipe in ``buildtool.toml``: configure, the full and split
wheels and the sdist all build, and the hand-written file stays byte-identical.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from buildtool import process
from buildtool.ci import pipeline
from buildtool.cli import main
from buildtool.cmake import configure, environment
from buildtool.cmake import run as cmake_run
from buildtool.commands import ci as ci_command
from buildtool.console import collecting_warnings, warnings_summary
from buildtool.fsutil import carries_generated_header, is_hand_written
from buildtool.packaging import wheel
from buildtool.recipe.load import find_default_recipe, load_recipe
from tests.conftest import DEMO_RECIPE, REPO, CliRunner

HAND_WRITTEN = """\
[project]
name = "demo"
description = "A project that was here before buildtool"
dynamic = ["version"]

[tool.ruff]
line-length = 123
"""


def make_adopter(folder: Path, pyproject: str | None = HAND_WRITTEN) -> Path:
    """The example as an existing project: its recipe is ``<root>/buildtool.toml``."""
    root = folder / "adopter"
    shutil.copytree(
        REPO / "src",
        root,
        ignore=shutil.ignore_patterns("build", "packaging", "pyproject.toml", "__pycache__"),
    )
    recipe = DEMO_RECIPE.read_text(encoding="utf-8").replace('root = "../src"', 'root = "."')
    (root / "buildtool.toml").write_text(recipe, encoding="utf-8")
    if pyproject is not None:
        (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    return root


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the header and where the full distribution goes (no build) ---------------------------------


def test_generated_header_is_recognised_in_every_generated_file() -> None:
    loaded = load_recipe(DEMO_RECIPE)
    files = configure.generated_files(loaded, configure.plan_recipe(loaded))
    assert files
    for relative, text in files.items():
        assert carries_generated_header(text), relative
    assert not carries_generated_header(HAND_WRITTEN)


def test_hand_written_root_pyproject_moves_the_full_distribution(tmp_path: Path) -> None:
    root = make_adopter(tmp_path)
    loaded = load_recipe(root / "buildtool.toml")
    plan = configure.plan_recipe(loaded)
    assert configure.full_distribution_dir(loaded, plan) == "packaging/demo"
    files = configure.generated_files(loaded, plan)
    assert "pyproject.toml" not in files
    assert "packaging/demo/pyproject.toml" in files
    before = digest(root / "pyproject.toml")
    configure.write_generated(loaded, files)
    assert digest(root / "pyproject.toml") == before
    assert is_hand_written(root / "pyproject.toml")
    assert not is_hand_written(root / "packaging" / "demo" / "pyproject.toml")


def test_no_root_pyproject_gets_the_generated_one_at_the_root(tmp_path: Path) -> None:
    root = make_adopter(tmp_path, pyproject=None)
    loaded = load_recipe(root / "buildtool.toml")
    assert configure.full_distribution_dir(loaded, configure.plan_recipe(loaded)) == "."


def test_hand_written_file_where_a_generated_one_goes_is_refused(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    root = make_adopter(tmp_path)
    libinfo = root / "python" / "demo" / "libinfo.py"
    libinfo.write_text("# my own libinfo\n", encoding="utf-8")
    cmakelists = root / "CMakeLists.txt"
    cmake_before = digest(cmakelists)
    result = run_cli("configure", "--recipe", str(root / "buildtool.toml"), "--check")
    assert result.exit_code != 0  # stale or refused; --check writes nothing either way
    result = run_cli(
        "configure", "--recipe", str(root / "buildtool.toml"), "--build-dir", str(tmp_path / "b")
    )
    assert result.exit_code == 2, result.stderr
    assert f"{libinfo}: " in result.stderr
    assert "buildtool" in result.stderr.split(f"{libinfo}: ", 1)[1]
    assert "Traceback" not in result.stderr
    assert libinfo.read_text(encoding="utf-8") == "# my own libinfo\n"
    assert digest(cmakelists) == cmake_before
    assert not (root / "packaging").exists()  # nothing half-written
    assert not (tmp_path / "b").exists()


def test_missing_python_package_dir_is_refused(tmp_path: Path, run_cli: CliRunner) -> None:
    root = make_adopter(tmp_path)
    recipe = root / "buildtool.toml"
    text = recipe.read_text(encoding="utf-8")
    recipe.write_text(text.replace('"python/demo"', '"python/dmeo"'), encoding="utf-8")
    result = run_cli("configure", "--recipe", str(recipe), "--build-dir", str(tmp_path / "b"))
    assert result.exit_code == 2
    assert "project.python-package-dir: expected the folder of the Python package" in result.stderr
    assert not (root / "python" / "dmeo").exists()
    assert not (root / "packaging").exists()


# --- the whole packaging chain on the adopter ---------------------------------------------------


MARKERS = (b"-fstack-protector-all", b"-fno-plt")
"""Recorded by -frecord-gcc-switches in every object when CXXFLAGS and CMAKE_ARGS reached the
compiler."""

STEERING = {
    "CXXFLAGS": "-frecord-gcc-switches -fstack-protector-all",
    "CMAKE_ARGS": "'-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG -fno-plt'",
}


@dataclasses.dataclass(frozen=True)
class AdopterRun:
    root: Path
    out: Path
    cmake_build: Path
    pyproject_before: str


@pytest.fixture(scope="module")
def adopter_run(tmp_path_factory: pytest.TempPathFactory) -> AdopterRun:
    """The adopter with a .dev version, steered by the environment: build, split wheels, then
    the full wheel (with ``-D``) and the sdist, as a user runs them."""
    root = make_adopter(tmp_path_factory.mktemp("adopter-run"))
    recipe = root / "buildtool.toml"
    text = recipe.read_text(encoding="utf-8")
    recipe.write_text(text.replace('version = "0.1.0"', 'version = "0.19.dev0"'), "utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("*.log\n", encoding="utf-8")
    (root / "notes.log").write_text("ignored by git\n", encoding="utf-8")
    (root / "dist").mkdir()
    (root / "dist" / "demo-0.0.1-py3-none-any.whl").write_bytes(b"an old wheel")
    before = digest(root / "pyproject.toml")
    build_root, out = root / "build", root / "dist"
    common = ["--recipe", str(recipe), "--build-root", str(build_root), "--out-dir", str(out)]
    runs = [
        ["build", "--recipe", str(recipe), "--build-dir", str(build_root / "cm")],
        ["wheel", "--split", *common],
        ["wheel", "--sdist", "-D", "DEMO_GIT_COMMIT=from-cli", *common],
    ]
    with pytest.MonkeyPatch.context() as patch:
        for name, value in STEERING.items():
            patch.setenv(name, value)
        for argv in runs:
            assert main(["-q", *argv]) == 0, argv
            assert digest(root / "pyproject.toml") == before, argv
    return AdopterRun(root, out, build_root / "cm", before)


@pytest.mark.integration
@pytest.mark.wheel
def test_hand_written_pyproject_is_byte_identical_after_every_command(
    adopter_run: AdopterRun,
) -> None:
    assert digest(adopter_run.root / "pyproject.toml") == adopter_run.pyproject_before
    assert (adopter_run.root / "pyproject.toml").read_text(encoding="utf-8") == HAND_WRITTEN
    assert is_hand_written(adopter_run.root / "pyproject.toml")


@pytest.mark.integration
@pytest.mark.wheel
def test_build_environment_reaches_configure_and_wheel_builds(adopter_run: AdopterRun) -> None:
    runtime = (adopter_run.cmake_build / "lib" / "libdemo_runtime.so").read_bytes()
    full = next(adopter_run.out.glob("demo-0.19.dev0-*.whl"))
    with zipfile.ZipFile(full) as archive:
        compiler = archive.read("demo/lib/libdemo_compiler.so")
    for marker in MARKERS:
        assert marker in runtime, marker
        assert marker in compiler, marker
    assert b"git=from-cli" in compiler  # wheel -D reached the wheel build


@pytest.mark.integration
@pytest.mark.wheel
def test_dev_version_names_the_wheels_and_reaches_the_build_info(adopter_run: AdopterRun) -> None:
    out = adopter_run.out
    names = sorted("-".join(path.name.split("-")[:2]) for path in out.glob("*.whl"))
    assert names == [
        "demo-0.0.1",  # the old one, left alone
        "demo-0.19.dev0",
        "demo_compiler-0.19.dev0",
        "demo_runtime-0.19.dev0",
    ]
    with zipfile.ZipFile(next(out.glob("demo-0.19.dev0-*.whl"))) as archive:
        metadata = archive.read("demo-0.19.dev0.dist-info/METADATA").decode().splitlines()
        compiler = archive.read("demo/lib/libdemo_compiler.so")
    assert "Version: 0.19.dev0" in metadata
    assert b"0.19.dev0" in compiler
    with zipfile.ZipFile(next(out.glob("demo_compiler-0.19.dev0-*.whl"))) as archive:
        addon = archive.read("demo_compiler-0.19.dev0.dist-info/METADATA").decode().splitlines()
    assert "Requires-Dist: demo-runtime==0.19.dev0" in addon


@pytest.mark.integration
@pytest.mark.wheel
def test_sdist_leaves_out_build_dist_and_what_git_ignores(adopter_run: AdopterRun) -> None:
    with tarfile.open(adopter_run.out / "demo-0.19.dev0.tar.gz") as sdist:
        members = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
        packed = sdist.extractfile("demo-0.19.dev0/pyproject.toml")
        assert packed is not None
        packed_pyproject = packed.read().decode()
    assert {"buildtool.toml", "ffi/registry.cc", "python/demo/__init__.py"} <= members
    assert not any(name.startswith(("dist/", "build/", ".git/")) for name in members), members
    assert "notes.log" not in members
    # Its root pyproject.toml builds the full distribution: the project's own file is replaced
    # in the staged copy only.
    assert carries_generated_header(packed_pyproject)
    assert 'cmake.source-dir = "."' in packed_pyproject


# --- the build environment and -D: plumbing ------------------------------------------------------


def test_documented_build_variables_pass_and_others_do_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in process.BUILD_ENVIRONMENT:
        monkeypatch.setenv(name, f"value-of-{name}")
    monkeypatch.setenv("BUILDTOOL_TEST_UNPASSED", "1")
    monkeypatch.setenv("CMAKE_GENERATOR", "Unix Makefiles")
    env = process.tool_environment(wheel_build=True)
    assert {name: env[name] for name in process.BUILD_ENVIRONMENT} == {
        name: f"value-of-{name}" for name in process.BUILD_ENVIRONMENT
    }
    assert "BUILDTOOL_TEST_UNPASSED" not in env
    assert "CMAKE_GENERATOR" not in env
    assert set(process.BUILD_ENVIRONMENT) <= set(process.PASSED_ENVIRONMENT)
    documented = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    for name in process.BUILD_ENVIRONMENT:
        assert f"`{name}`" in documented, name


def test_cmake_args_are_split_like_a_shell_and_come_before_the_defines(tmp_path: Path) -> None:
    extra = cmake_run.environment_cmake_args({"CMAKE_ARGS": "-DA=1 '-DB=x y'  -DC=2"})
    assert extra == ["-DA=1", "-DB=x y", "-DC=2"]
    command = [
        str(part) for part in cmake_run.configure_command(tmp_path, tmp_path, {"A": "9"}, extra)
    ]
    assert command.index("-DA=1") < command.index("-DA=9")


def test_unsplittable_cmake_args_is_a_usage_error(
    tmp_path: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CMAKE_ARGS", "-DX='unclosed")
    build_dir = tmp_path / "b"
    result = run_cli("configure", "--recipe", str(DEMO_RECIPE), "--build-dir", str(build_dir))
    assert result.exit_code == 2
    assert 'CMAKE_ARGS: cannot split "-DX=\'unclosed"' in result.stderr
    assert not build_dir.exists()


def test_changed_build_environment_starts_a_build_folder_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CMake reads CXXFLAGS on a folder's first configure only: when it changed, the folder's
    cache goes, so the next configure reads it (the objects are kept for ninja to judge)."""
    folder = tmp_path / "build"
    (folder / "CMakeFiles").mkdir(parents=True)
    (folder / "CMakeCache.txt").write_text("CMAKE_CXX_FLAGS:STRING=-O1\n")
    (folder / "lib").mkdir()
    monkeypatch.setenv("CXXFLAGS", "-O1")
    environment.start_afresh_if_environment_changed(folder)  # never configured: kept
    environment.record_environment(folder)
    environment.start_afresh_if_environment_changed(folder)
    assert (folder / "CMakeCache.txt").is_file()  # same environment: the cache is kept
    monkeypatch.setenv("CXXFLAGS", "-O3")
    assert environment.changed_variables(folder) == ["CXXFLAGS"]
    environment.start_afresh_if_environment_changed(folder)
    assert not (folder / "CMakeCache.txt").exists()
    assert not (folder / "CMakeFiles").exists()
    assert (folder / "lib").is_dir()
    environment.record_environment(folder)
    assert json.loads((folder / environment.ENVIRONMENT_STAMP).read_text())["CXXFLAGS"] == "-O3"


def test_a_build_folder_configured_for_another_project_starts_afresh(tmp_path: Path) -> None:
    """CMake refuses a folder configured for another source folder; buildtool clears its cache
    (a build folder reused for another project, a moved project), as scikit-build-core does."""
    folder, source = tmp_path / "build", tmp_path / "project"
    (folder / "CMakeFiles").mkdir(parents=True)
    cache = folder / "CMakeCache.txt"
    cache.write_text(f"{environment.HOME_KEY}{source}\n")
    environment.start_afresh_if_source_moved(folder, source)
    assert cache.is_file()  # its own source folder: kept
    environment.start_afresh_if_source_moved(folder, tmp_path / "elsewhere")
    assert not cache.exists()
    assert not (folder / "CMakeFiles").exists()


@pytest.mark.parametrize("command", ["wheel", "ci"])
def test_defines_reach_wheel_and_ci_requests(
    command: str, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[tuple[str, str], ...]] = []

    def fake_wheels(request: wheel.WheelRequest, **_: object) -> list[object]:
        seen.append(request.defines)
        return []

    def fake_ci(request: pipeline.CiRequest, _observer: object) -> pipeline.CiResult:
        seen.append(request.defines)
        step = pipeline.StepResult("fake", "passed", 0.0, "")
        return pipeline.CiResult(request.loaded.source, request.launcher, (step,))

    monkeypatch.setattr(wheel, "build_wheels", fake_wheels)
    monkeypatch.setattr(pipeline, "run_ci", fake_ci)
    monkeypatch.setattr(ci_command, "write_reports", lambda _result, _out_dir: [])
    monkeypatch.setattr(logging.getLogger("buildtool"), "handlers", [])
    result = run_cli(command, "--recipe", str(DEMO_RECIPE), "-D", "DEMO_X=1", "-D", "A_B=x=y")
    assert result.exit_code == 0, result.stderr
    assert seen == [(("A_B", "x=y"), ("DEMO_X", "1"))]


@pytest.mark.parametrize("command", ["wheel", "ci"])
def test_malformed_define_on_wheel_and_ci_exits_2(command: str, run_cli: CliRunner) -> None:
    result = run_cli(command, "--recipe", str(DEMO_RECIPE), "-D", "NOEQUALS")
    assert result.exit_code == 2
    assert "-D expects NAME=VALUE, found 'NOEQUALS'" in result.stderr
    assert "Traceback" not in result.stderr


# --- the default recipe -------------------------------------------------------------------------


def test_default_recipe_search_order(tmp_path: Path) -> None:
    assert find_default_recipe(tmp_path) is None
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "one.toml").write_text("")
    assert find_default_recipe(tmp_path) == tmp_path / "recipes" / "one.toml"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_default_recipe(tmp_path) == tmp_path / "recipes" / "one.toml"
    (tmp_path / "pyproject.toml").write_text('[tool.buildtool.project]\nname = "x"\n')
    assert find_default_recipe(tmp_path) == tmp_path / "pyproject.toml"
    (tmp_path / "buildtool.toml").write_text("")
    assert find_default_recipe(tmp_path) == tmp_path / "buildtool.toml"


def test_several_recipes_without_recipe_option_exit_2_listing_them(
    tmp_path: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "recipes").mkdir()
    for name in ("b.toml", "a.toml"):
        (tmp_path / "recipes" / name).write_text("")
    monkeypatch.chdir(tmp_path)
    for argv in (("configure", "--check"), ("verify-linkage", str(tmp_path))):
        result = run_cli(*argv)
        assert result.exit_code == 2, argv
        assert "no recipe given and 2 found: recipes/a.toml, recipes/b.toml" in result.stderr


def test_no_recipe_at_all_names_every_place_looked(
    tmp_path: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("configure", "--check")
    assert result.exit_code == 2
    assert "./buildtool.toml, a [tool.buildtool] table in ./pyproject.toml" in result.stderr


# --- warnings: counted and shown at every step ---------------------------------------------------


def test_warning_collector_counts_tool_warnings_and_own_warnings() -> None:
    log = logging.getLogger("buildtool")
    with collecting_warnings() as warnings:
        log.info("  a.cc:3:5: warning: unused variable 'x' [-Wunused-variable]")
        log.info("  CMake Warning (dev) at CMakeLists.txt:4 (project):")
        log.info("  [2/3] Building CXX object warning.cc.o")  # a file name, not a warning
        log.info("a warning: in buildtool's own info line is not a tool's")
        log.warning("verify-linkage skipped")
        log.error("not a warning")
    assert warnings.lines == [
        "a.cc:3:5: warning: unused variable 'x' [-Wunused-variable]",
        "CMake Warning (dev) at CMakeLists.txt:4 (project):",
        "verify-linkage skipped",
    ]
    assert warnings_summary(warnings.lines, shown=1).splitlines() == [
        "3 warnings:",
        "  a.cc:3:5: warning: unused variable 'x' [-Wunused-variable]",
        "  ... and 2 more",
    ]


@pytest.mark.integration
def test_ci_step_counts_a_real_compiler_warning(tmp_path: Path) -> None:
    source = tmp_path / "unused.c"
    source.write_text("int f(void) { int unused; return 0; }\n", encoding="utf-8")

    def compile_step(_workspace: pipeline.Workspace) -> pipeline.StepOutcome:
        process.run(["cc", "-Wall", "-c", str(source), "-o", str(tmp_path / "unused.o")])
        return pipeline.StepOutcome(detail="compiled")

    step = pipeline.Step("compile", "compile with a warning", compile_step)
    loaded = load_recipe(DEMO_RECIPE)
    workspace = pipeline.Workspace(
        pipeline.CiRequest(loaded, tmp_path, tmp_path), configure.plan_recipe(loaded)
    )
    result = pipeline.run_step(step, workspace)
    assert result.status == "passed"
    assert result.detail == "compiled; 1 warning logged"


def test_wheel_shows_the_warnings_of_its_builds_even_when_quiet(
    run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_wheels(_request: wheel.WheelRequest, **_: object) -> list[object]:
        logging.getLogger("buildtool").info("  x.cc:1:1: warning: something odd")
        return []

    monkeypatch.setattr(wheel, "build_wheels", fake_wheels)
    result = run_cli("-q", "wheel", "--recipe", str(DEMO_RECIPE))
    assert result.exit_code == 0
    assert "wheel: 1 warning:\n  x.cc:1:1: warning: something odd" in result.stderr


def test_recipe_in_the_root_pyproject_is_never_written_into(tmp_path: Path) -> None:
    root = make_adopter(tmp_path, pyproject=None)
    recipe = (root / "buildtool.toml").read_text(encoding="utf-8")
    tables = re.sub(r"^\[", "[tool.buildtool.", recipe, flags=re.MULTILINE)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(HAND_WRITTEN + "\n" + tables, encoding="utf-8")
    (root / "buildtool.toml").unlink()
    before = digest(pyproject)
    loaded = load_recipe(pyproject)
    plan = configure.plan_recipe(loaded)
    assert configure.full_distribution_dir(loaded, plan) == "packaging/demo"
    written = configure.write_generated(loaded, configure.generated_files(loaded, plan))
    assert "packaging/demo/pyproject.toml" in written
    assert "pyproject.toml" not in written
    assert digest(pyproject) == before
