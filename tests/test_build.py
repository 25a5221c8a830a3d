"""The example, configured and built for real with the PyPI cmake and ninja, then exercised."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from buildtool.cli import main
from buildtool.cmake.configure import plan_recipe
from buildtool.cmake.run import cmake_executable
from buildtool.recipe.load import load_recipe
from tests.conftest import DEMO_RECIPE, REPO, CliRunner

pytestmark = pytest.mark.integration

LOAD_AND_LIST = """
import ctypes, json, sys
lib = sys.argv[1]
ffi = ctypes.CDLL(lib + "/libdemo_ffi.so", mode=ctypes.RTLD_GLOBAL)
ctypes.CDLL(lib + "/libdemo_runtime.so", mode=ctypes.RTLD_GLOBAL)
if len(sys.argv) > 2:
    ctypes.CDLL(lib + "/libdemo_compiler.so", mode=ctypes.RTLD_LOCAL)
count = ffi.DemoFFIListGlobals(None, 0)
names = (ctypes.c_char_p * count)()
ffi.DemoFFIListGlobals(names, count)
print(json.dumps([name.decode() for name in names]))
"""


def build_example(build_dir: Path, variant: str) -> Path:
    code = main(
        [
            "-q",
            "build",
            "--recipe",
            str(DEMO_RECIPE),
            "--build-dir",
            str(build_dir),
            "--variant",
            variant,
        ]
    )
    assert code == 0
    return build_dir


@pytest.fixture(scope="session")
def full_build(good_build: Path) -> Path:
    return good_build


@pytest.fixture(scope="session")
def runtime_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_example(tmp_path_factory.mktemp("runtime") / "build", "runtime")


def registered_names(lib_dir: Path, with_compiler: bool) -> list[str]:
    argv = [sys.executable, "-c", LOAD_AND_LIST, str(lib_dir)] + (["compiler"] * with_compiler)
    completed = subprocess.run(argv, capture_output=True, text=True, check=True)
    names: list[str] = json.loads(completed.stdout)
    return names


def declared(library_names: set[str]) -> list[str]:
    loaded = load_recipe(DEMO_RECIPE)
    plan = plan_recipe(loaded)
    return sorted(name for name, owner in plan.registrations if owner in library_names)


def test_artifacts_land_in_lib_and_bin(full_build: Path) -> None:
    libs = sorted(path.name for path in (full_build / "lib").iterdir() if path.suffix == ".so")
    assert libs == ["libdemo_compiler.so", "libdemo_ffi.so", "libdemo_runtime.so"]
    assert (full_build / "bin" / "minrpc").is_file()
    assert not list(full_build.glob("*.so")), "nothing may land in the build folder's top"


def test_registry_holds_exactly_the_declared_names(full_build: Path) -> None:
    assert registered_names(full_build / "lib", with_compiler=True) == declared(
        {"ffi", "runtime", "compiler"}
    )
    assert registered_names(full_build / "lib", with_compiler=False) == declared({"ffi", "runtime"})


def test_minrpc_resolves_rpc_testing_through_the_registry(full_build: Path) -> None:
    completed = subprocess.run(
        [full_build / "bin" / "minrpc"], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert "rpc.testing.GetShapeSize(2,3,4) = 24" in completed.stdout


def test_ctest_runs_the_cpp_test(full_build: Path) -> None:
    ctest = cmake_executable().with_name("ctest")
    completed = subprocess.run(
        [ctest, "--output-on-failure"], cwd=full_build, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stdout
    assert "100% tests passed" in completed.stdout
    assert "Test #1: cpptest" in completed.stdout


def test_runtime_only_build_has_no_compiler_and_minrpc_works(runtime_build: Path) -> None:
    libs = sorted(path.name for path in (runtime_build / "lib").iterdir() if path.suffix == ".so")
    assert libs == ["libdemo_ffi.so", "libdemo_runtime.so"]
    assert not (runtime_build / "bin" / "cpptest").exists()
    completed = subprocess.run([runtime_build / "bin" / "minrpc"], check=False)
    assert completed.returncode == 0
    assert registered_names(runtime_build / "lib", with_compiler=False) == declared(
        {"ffi", "runtime"}
    )


def test_switching_a_folder_to_runtime_removes_the_stale_compiler(tmp_path: Path) -> None:
    build_dir = build_example(tmp_path / "build", "full")
    assert (build_dir / "lib" / "libdemo_compiler.so").exists()
    build_example(build_dir, "runtime")
    assert not (build_dir / "lib" / "libdemo_compiler.so").exists()


def test_configure_check_reports_drift_after_the_recipe_changes(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    shutil.copytree(REPO / "src", tmp_path / "src")
    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    recipe = tmp_path / "recipes" / "demo.toml"
    assert run_cli("configure", "--check", "--recipe", str(recipe)).exit_code == 0
    text = recipe.read_text().replace('no-as-needed = ["runtime"]\n', "")
    recipe.write_text(text)
    stale = run_cli("configure", "--check", "--recipe", str(recipe))
    assert stale.exit_code == 1
    assert f"generated files are stale for {recipe}: {tmp_path / 'src' / 'CMakeLists.txt'}" in (
        stale.stderr
    )
    build_dir = str(tmp_path / "build")
    assert run_cli("configure", "--recipe", str(recipe), "--build-dir", build_dir).exit_code == 0
    assert run_cli("configure", "--check", "--recipe", str(recipe)).exit_code == 0


def test_configure_logs_the_exact_cmake_command(tmp_path: Path, run_cli: CliRunner) -> None:
    result = run_cli("configure", "--recipe", str(DEMO_RECIPE), "--build-dir", str(tmp_path / "b"))
    assert result.exit_code == 0
    command = next(line for line in result.stderr.splitlines() if line.startswith("$ "))
    assert f"{cmake_executable()} -S {REPO / 'src'} -B {tmp_path / 'b'} -G Ninja" in command
    assert "-DDEMO_BUILD_COMPILER=ON" in command


CALL_LIBINFO = """
import ctypes, sys
lib = sys.argv[1]
ffi = ctypes.CDLL(lib + "/libdemo_ffi.so", mode=ctypes.RTLD_GLOBAL)
ctypes.CDLL(lib + "/libdemo_runtime.so", mode=ctypes.RTLD_GLOBAL)
ctypes.CDLL(lib + "/libdemo_compiler.so", mode=ctypes.RTLD_LOCAL)
out = ctypes.create_string_buffer(512)
assert ffi.DemoFFICall(b"support.GetLibInfo", None, 0, out, 512) == 0
print(out.value.decode())
"""


def test_build_info_takes_the_commit_from_a_define(tmp_path: Path) -> None:
    build_dir = tmp_path / "build"
    argv = [
        "-q",
        "configure",
        "--recipe",
        str(DEMO_RECIPE),
        "--build-dir",
        str(build_dir),
        "-D",
        "DEMO_GIT_COMMIT=0123abcd",
        "-D",
        "CMAKE_BUILD_TYPE=RelWithDebInfo",
    ]
    assert main(argv) == 0
    assert main(["-q", "build", "--build-dir", str(build_dir)]) == 0
    completed = subprocess.run(
        [sys.executable, "-c", CALL_LIBINFO, str(build_dir / "lib")],
        capture_output=True,
        text=True,
        check=True,
    )
    info = dict(item.split("=", 1) for item in completed.stdout.strip().split(";"))
    assert info["version"] == "0.1.0"
    assert info["git"] == "0123abcd"
    assert info["build"] == "RelWithDebInfo"
    assert info["compiler"].startswith("GNU ")
