"""``buildtool ci`` with a policy-only recipe: the project keeps its own CMake and pyproject.toml.

tests/packages/ownsplit is such a project (hand-written CMake, scikit-build-core packaging, a
ctypes loader). It adopts buildtool the way a user would: configure it, ``buildtool init
--from-cmake``, then the command init prints. The correct split passes every step and its wheel
imports; the seed's mistake (gemm, which registers at static init, linked into the runtime and
the compiler) stops the run at check-cmake before anything compiles, and really aborts a
process that loads both libraries.
"""

from __future__ import annotations

import collections
import json
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from buildtool.ci import pipeline, policy_only
from buildtool.cmake import ninja_log
from buildtool.cmake.run import cmake_executable, ninja_executable
from buildtool.errors import InputError
from buildtool.recipe.load import load_recipe
from tests.conftest import DEMO_RECIPE, PACKAGES, CliRunner
from tests.counting import counting_project, project_sources

OWNSPLIT = PACKAGES / "ownsplit"


def copy_of_project(folder: Path) -> Path:
    root = folder / "ownsplit"
    shutil.copytree(OWNSPLIT, root, ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    return root


def configure(root: Path, build: Path, *defines: str) -> None:
    """What the project's developers do: configure its CMake, by hand."""
    subprocess.run(
        [cmake_executable(), "-S", root, "-B", build, "-G", "Ninja",
         f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}", *defines],
        check=True, capture_output=True,
    )  # fmt: skip


# --- pure parts --------------------------------------------------------------------------------


def test_a_recipe_without_sources_takes_the_policy_only_path(tmp_path: Path) -> None:
    assert not policy_only.is_policy_only(load_recipe(DEMO_RECIPE))
    recipe = tmp_path / "buildtool.toml"
    recipe.write_text('[project]\nname = "x"\n[libraries.rt]\nfile = "librt.so"\n')
    loaded = load_recipe(recipe)
    assert policy_only.is_policy_only(loaded)
    names = [step.name for step in policy_only.steps_for(loaded)]
    assert names == ["migrate", "configure", "check-cmake", "build", "ctest", "verify-build"]
    # a pyproject.toml that only holds the recipe packages nothing
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    assert policy_only.own_pyproject(loaded) is None
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n')
    names = [step.name for step in policy_only.steps_for(loaded)]
    assert names[6:] == ["wheels", "verify-wheels", "install", "smoke-import"]


def test_the_wheel_builds_in_buildtools_environment_only_when_it_has_the_requirements(
    tmp_path: Path,
) -> None:
    def met(*requires: str) -> bool:
        return policy_only.build_requirements_met(
            {"build-system": {"requires": list(requires)}}, tmp_path / "pyproject.toml"
        )

    assert met("scikit-build-core>=0.10", "cmake>=3.15")  # buildtool's own dependencies
    assert not met("scikit-build-core>=0.10", "no-such-backend-here")
    assert not met("scikit-build-core>=999")
    assert met("scikit-build-core", "no-such-backend-here; sys_platform == 'nonexistent'")
    assert not policy_only.build_requirements_met({}, tmp_path)  # pip's default: setuptools
    with pytest.raises(InputError, match=r"pyproject.toml: build-system.requires"):
        met("not a requirement !!")


def test_the_wheel_comes_from_cis_build_folder_only_where_that_is_sound() -> None:
    ninja = {"CMAKE_GENERATOR": "Ninja", "CMAKE_BUILD_TYPE": "Release"}
    skb = policy_only.SKBUILD_BACKEND
    assert policy_only.wheel_folder(skb, False, ninja, "Release").shared
    refused = {
        "unknown backend": policy_only.wheel_folder("hatchling.build", False, ninja, None),
        "pip's default": policy_only.wheel_folder("", False, ninja, None),
        "isolated": policy_only.wheel_folder(skb, True, ninja, "Release"),
        "makefiles": policy_only.wheel_folder(
            skb, False, {**ninja, "CMAKE_GENERATOR": "Unix Makefiles"}, "Release"
        ),
        "debug folder": policy_only.wheel_folder(
            skb, False, {**ninja, "CMAKE_BUILD_TYPE": "Debug"}, "Release"
        ),
    }
    assert not any(folder.shared for folder in refused.values())
    assert "its backend (hatchling.build) is not scikit-build-core" in (
        refused["unknown backend"].reason
    )
    assert "setuptools, pip's default" in refused["pip's default"].reason
    assert "pip's isolated environment" in refused["isolated"].reason
    assert "configured for Unix Makefiles" in refused["makefiles"].reason
    assert "a Debug build, the project's wheel Release" in refused["debug folder"].reason
    assert all("the project a second time" in f.reason for f in refused.values())
    # the step says it
    said = policy_only.how_built(refused["unknown backend"], Path("build"), [])
    assert said == f"built by the project's backend: {refused['unknown backend'].reason}"


def test_the_build_type_of_the_projects_own_wheel() -> None:
    def pyproject(**skbuild: object) -> dict[str, object]:
        system = {"build-backend": policy_only.SKBUILD_BACKEND}
        return {"build-system": system, "tool": {"scikit-build": skbuild}}

    assert policy_only.wheel_build_type(pyproject()) == "Release"  # scikit-build-core's default
    assert policy_only.wheel_build_type(pyproject(cmake={"build-type": "Debug"})) == "Debug"
    assert policy_only.wheel_build_type(pyproject(cmake={"build-type": ["x"]})) is None
    assert policy_only.wheel_build_type({"build-system": {"build-backend": "flit"}}) is None


def test_what_ninja_compiled_is_read_from_its_log() -> None:
    before = ninja_log.entries(
        "# ninja log v6\n"
        "1\t20\t100\tCMakeFiles/rt.dir/src/rt.cc.o\ta1\n"
        "2\t30\t100\tlib/librt.so\tb1\n"
        "3\t40\t100\tCMakeFiles/gemm.dir/src/gemm.cc.o\tc1\n"
    )
    after = ninja_log.entries(
        "# ninja log v6\n"
        "1\t20\t100\tCMakeFiles/rt.dir/src/rt.cc.o\ta1\n"
        "3\t40\t100\tCMakeFiles/gemm.dir/src/gemm.cc.o\tc1\n"
        "5\t60\t200\tCMakeFiles/gemm.dir/src/gemm.cc.o\tc2\n"  # compiled again
        "6\t70\t200\tlib/librt.so\tb2\n"  # linked again: not a compile
        "7\t80\t200\tCMakeFiles/cc.dir/src/compiler.cc.o\td1\n"  # compiled first
        "not a log line\n"
    )
    compiled = ninja_log.compiled_between(before, after)
    assert compiled == ["CMakeFiles/cc.dir/src/compiler.cc.o", "CMakeFiles/gemm.dir/src/gemm.cc.o"]
    assert ninja_log.targets_of(compiled) == ["cc", "gemm"]
    assert ninja_log.compiled_between(after, after) == []


def test_the_top_level_packages_of_a_wheel(tmp_path: Path) -> None:
    wheel = tmp_path / "x-1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for member in ("pkg/__init__.py", "pkg/lib/libx.so", "single.py", "x.libs/liby.so",
                       "x-1.0.dist-info/METADATA", "x-1.0.data/scripts/tool"):  # fmt: skip
            archive.writestr(member, "")
    assert policy_only.top_level_packages(wheel) == ["pkg", "single"]


def test_a_policy_only_recipe_without_a_cmake_project_is_bad_input(
    run_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "buildtool.toml").write_text('[project]\nname = "x"\n[libraries.rt]\n')
    monkeypatch.chdir(tmp_path)
    result = run_cli("ci")
    assert result.exit_code == 2
    assert "has no CMakeLists.txt" in result.stderr
    assert not (tmp_path / "build").exists()


# --- the project adopts buildtool: init, then the command init prints -------------------------


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A checkout of the project with the starter recipe init wrote from its own build folder,
    and the command init printed."""
    root = copy_of_project(tmp_path_factory.mktemp("adopt"))
    configure(root, root / "build")
    result = subprocess.run(
        [sys.executable, "-m", "buildtool", "init", "--from-cmake", "build"],
        cwd=root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    printed = [line for line in result.stderr.splitlines() if line.startswith("next: ")]
    assert len(printed) == 1, result.stderr
    return root, printed[0].removeprefix("next: ")


@pytest.mark.integration
def test_init_says_what_to_run_next(adopted: tuple[Path, str], tmp_path: Path) -> None:
    root, command = adopted
    assert command == "buildtool ci"  # ./buildtool.toml and ./build are what ci finds itself
    recipe = load_recipe(root / "buildtool.toml")
    assert recipe.recipe.libraries["ownsplit_runtime"].objects == ("gemm",)
    assert (
        "root" not in (root / "buildtool.toml").read_text(encoding="utf-8").split("[libraries")[0]
    )
    # written elsewhere, the recipe says where the project is, and the command names both
    elsewhere = tmp_path / "policy" / "split.toml"
    elsewhere.parent.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "buildtool", "init", "--from-cmake", str(root / "build"),
         "--output", str(elsewhere)],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert f"next: buildtool ci --recipe {elsewhere} --build-dir {root / 'build'}" in result.stderr
    assert load_recipe(elsewhere).root == root.resolve()


@pytest.mark.integration
@pytest.mark.wheel
def test_policy_only_ci_passes_on_the_correct_split_and_its_wheel_imports(
    adopted: tuple[Path, str], run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, command = adopted
    monkeypatch.chdir(root)
    result = run_cli(*shlex.split(command)[1:])
    assert result.exit_code == 0, result.stdout + result.stderr
    document = json.loads((root / "dist" / "buildtool-ci.json").read_text(encoding="utf-8"))
    steps = {step["name"]: step["status"] for step in document["steps"]}
    assert steps == dict.fromkeys(
        ["migrate", "configure", "check-cmake", "build", "ctest", "verify-build", "wheels",
         "verify-wheels", "install", "smoke-import"], "passed",
    )  # fmt: skip
    (wheel,) = (root / "dist").glob("*.whl")
    assert wheel.name.startswith("ownsplit-0.1.0-py3-none-manylinux_")  # repaired
    with zipfile.ZipFile(wheel) as archive:
        libraries = sorted(m for m in archive.namelist() if m.endswith(".so"))
    assert libraries == [
        f"ownsplit/lib/libownsplit_{name}.so" for name in ("compiler", "ffi", "runtime")
    ]
    assert "imported ownsplit" in result.stdout
    assert "1 tests passed" in result.stdout.replace("100% tests passed", "1 tests passed")
    # the installed package works: its registry holds the runtime's, gemm's and the compiler's
    python = root / "build" / "ci-venv" / "bin" / "python"
    calls = (
        "import ownsplit; print([ownsplit.call(n) for n in "
        "('rpc.testing.GetShapeSize', 'contrib.gemm_fp16_int', 'compiler.build')])"
    )
    called = subprocess.run(
        [python, "-c", calls], cwd="/", capture_output=True, text=True, check=True
    )
    assert called.stdout.strip() == "[4, 16, 2]"


@pytest.mark.integration
def test_the_seeds_mistake_stops_ci_before_anything_compiles(
    adopted: tuple[Path, str], run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, command = adopted
    checkout = copy_of_project(tmp_path)  # a fresh clone with the same recipe
    shutil.copy2(root / "buildtool.toml", checkout / "buildtool.toml")
    monkeypatch.chdir(checkout)
    result = run_cli(*shlex.split(command)[1:], "-D", "OWNSPLIT_DEFECT=double-owner")
    assert result.exit_code == 1
    assert "buildtool ci: failed at step check-cmake" in result.stdout
    assert "BT201 cmake-object-library-twice" in result.stdout
    document = json.loads((checkout / "dist" / "buildtool-ci.json").read_text(encoding="utf-8"))
    statuses = [step["status"] for step in document["steps"]]
    assert statuses == ["passed", "passed", "failed"] + ["skipped"] * 7
    compiled = [p for p in (checkout / "build").rglob("*") if p.suffix in (".o", ".so")]
    assert compiled == []
    assert not list((checkout / "dist").glob("*.whl"))


@pytest.mark.integration
def test_the_seeds_mistake_really_aborts_a_process_that_loads_both(tmp_path: Path) -> None:
    """What check-cmake stopped: built anyway, the runtime and the compiler each run gemm's
    registration, and the registry aborts."""
    root = copy_of_project(tmp_path)
    build = tmp_path / "build"
    configure(root, build, "-DOWNSPLIT_DEFECT=double-owner")
    subprocess.run([cmake_executable(), "--build", build], check=True, capture_output=True)
    load = (
        "import ctypes, sys; lib = sys.argv[1]; "
        "ctypes.CDLL(lib + '/libownsplit_runtime.so', mode=ctypes.RTLD_GLOBAL); "
        "ctypes.CDLL(lib + '/libownsplit_compiler.so')"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", load, str(build / "lib")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert loaded.returncode == -6, loaded.stderr  # SIGABRT
    assert "duplicate registration: contrib.gemm_fp16_int" in loaded.stderr


def test_policy_only_prepares_its_own_steps(tmp_path: Path) -> None:
    """A policy-only recipe gets policy_only's steps, never the generated build's, and a
    workspace with the policy's plan (no sources to expand)."""
    (tmp_path / "CMakeLists.txt").write_text("project(x)\n")
    recipe = tmp_path / "buildtool.toml"
    recipe.write_text('[project]\nname = "x"\n[libraries.rt]\nfile = "librt.so"\n')
    request = pipeline.CiRequest(load_recipe(recipe), tmp_path / "dist", tmp_path / "build")
    workspace, steps = policy_only.prepare(request)
    assert [library.file_name for library in workspace.plan.libraries] == ["librt.so"]
    assert "generated" not in [step.name for step in steps]
    assert next(s for s in steps if s.name == "configure").run is policy_only.step_configure
    (tmp_path / "CMakeLists.txt").unlink()
    with pytest.raises(InputError, match=r"has no CMakeLists\.txt"):
        policy_only.prepare(request)


# --- build once: the project's wheel from the build folder ci compiled ------------------------

SKBUILD_DEFINE = """
if(SKBUILD)  # the wheel's compiler library is compiled differently: the wheel build compiles it
  target_compile_definitions(ownsplit_compiler PRIVATE OWNSPLIT_WHEEL=1)
endif()
"""


@pytest.mark.integration
@pytest.mark.wheel
@pytest.mark.parametrize("reads_skbuild", [False, True], ids=["plain", "cmake-reads-skbuild"])
def test_policy_only_ci_compiles_each_source_once_and_nothing_on_a_rerun(
    adopted: tuple[Path, str], tmp_path: Path, reads_skbuild: bool
) -> None:
    """The project's scikit-build-core wheel is built from the folder ci compiled. Where the
    project's own CMake compiles a target differently for the wheel (it reads SKBUILD), the
    wheel build compiles that target again and the step says so; the folder keeps
    scikit-build-core's entries, so a rerun compiles nothing either way."""
    root, _ = adopted
    checkout = copy_of_project(tmp_path)  # a fresh clone with the recipe init wrote
    shutil.copy2(root / "buildtool.toml", checkout / "buildtool.toml")
    if reads_skbuild:
        with (checkout / "CMakeLists.txt").open("a", encoding="utf-8") as cmake_lists:
            cmake_lists.write(SKBUILD_DEFINE)
    project = counting_project(tmp_path, checkout, checkout)
    first = project.run_ci()
    once = collections.Counter(dict.fromkeys(project_sources(checkout), 1))
    assert len(once) == 5
    wheel_detail = next(line for line in first.stdout.splitlines() if ".whl (" in line)
    assert "built by the project's backend from the build folder build/" in wheel_detail
    if reads_skbuild:
        assert project.compiled() == once + collections.Counter({"src/compiler.cc": 1})
        assert "which compiled 1 object of ownsplit_compiler again" in wheel_detail
        assert "warning: the project's wheel was built" in first.stdout
    else:
        assert project.compiled() == once
        assert wheel_detail.endswith("nothing compiled again")
    assert project.ci() == collections.Counter(), "a rerun with nothing changed compiles nothing"
