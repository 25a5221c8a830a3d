"""check-cmake, init --from-cmake and verify-linkage on a real third-party CMake project: the
apache-tvm-ffi sdist from PyPI, configured with PyPI's cmake and built with its ninja.

Deselected unless asked for (``pytest -m realprojects``, ``nox -s realprojects``): it downloads
the sdist and compiles it (about a minute and a half on two CPUs).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

import pytest

from buildtool.cmake.run import cmake_executable, ninja_executable
from buildtool.recipe.load import load_recipe
from tests.conftest import CliRunner

pytestmark = [pytest.mark.realprojects, pytest.mark.integration, pytest.mark.slow]

TVM_FFI = "apache-tvm-ffi"


def configure(source: Path, build: Path, *defines: str) -> None:
    command: list[str | Path] = [cmake_executable(), "-S", source, "-B", build, "-G", "Ninja"]
    command += [f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}", *defines]
    subprocess.run(command, check=True, capture_output=True)


@pytest.fixture(scope="session")
def tvm_ffi_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist of the apache-tvm-ffi version the test extra installs, unpacked."""
    folder = tmp_path_factory.mktemp("tvm-ffi")
    pinned = f"{TVM_FFI}=={version(TVM_FFI)}"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", TVM_FFI, pinned,
         "-d", folder],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (sdist,) = folder.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(folder, filter="data")
    (source,) = (path for path in folder.iterdir() if (path / "CMakeLists.txt").is_file())
    return source


@pytest.fixture(scope="session")
def tvm_ffi_build(tvm_ffi_source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built as its wheel is: the install RPATH in the build tree (the project sets
    INSTALL_RPATH $ORIGIN on libtvm_ffi_testing.so; without this the build tree carries CMake's
    absolute build RPATH, see ``test_default_build_rpath_is_reported``)."""
    build = tmp_path_factory.mktemp("tvm-ffi-build") / "build"
    configure(tvm_ffi_source, build, "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON")
    subprocess.run([ninja_executable(), "-C", build], check=True, capture_output=True)
    return build


def findings(run_cli: CliRunner, *argv: str) -> tuple[int, list[tuple[str, str]]]:
    result = run_cli(*argv, "--format", "json")
    document = json.loads(result.stdout)
    return result.exit_code, [(f["id"], f["message"]) for f in document["findings"]]


def test_check_cmake_runs_clean_and_shows_the_graph(
    run_cli: CliRunner, tvm_ffi_build: Path
) -> None:
    result = run_cli("check-cmake", str(tvm_ffi_build))
    assert result.exit_code == 0, result.stdout + result.stderr
    # tvm_ffi_objs is also archived into tvm_ffi_static, which no shared library links
    assert "  object library tvm_ffi_objs: objects linked into tvm_ffi_shared\n" in result.stdout
    assert "  shared library tvm_ffi_testing (libtvm_ffi_testing.so) -> tvm_ffi_shared" in (
        result.stdout
    )


def test_init_recipe_loads_and_both_tools_accept_it(
    run_cli: CliRunner, tvm_ffi_build: Path, tmp_path: Path
) -> None:
    recipe = tmp_path / "buildtool.toml"
    assert (
        run_cli("init", "--from-cmake", str(tvm_ffi_build), "--output", str(recipe)).exit_code == 0
    )
    loaded = load_recipe(recipe)
    libraries = loaded.recipe.libraries
    assert libraries["tvm_ffi_shared"].file == "libtvm_ffi.so"
    assert libraries["tvm_ffi_shared"].objects == ("tvm_ffi_objs",)
    assert libraries["tvm_ffi_testing"].links == ("tvm_ffi_shared",)
    assert findings(run_cli, "check-cmake", str(tvm_ffi_build), "--recipe", str(recipe)) == (0, [])
    verdict = findings(run_cli, "verify-linkage", str(tvm_ffi_build), "--recipe", str(recipe))
    assert verdict == (0, [])


def test_default_build_rpath_is_reported(
    run_cli: CliRunner, tvm_ffi_source: Path, tvm_ffi_build: Path, tmp_path: Path
) -> None:
    """Configured with CMake's defaults, the build tree links libtvm_ffi_testing.so with the
    absolute build folder as RUNPATH (rewritten to $ORIGIN only on install): check-cmake says so
    from the code model, as verify-linkage's BT110 does on such a binary. Nothing is built."""
    recipe = tmp_path / "buildtool.toml"
    assert (
        run_cli("init", "--from-cmake", str(tvm_ffi_build), "--output", str(recipe)).exit_code == 0
    )
    build = tmp_path / "default"
    configure(tvm_ffi_source, build)
    assert findings(run_cli, "check-cmake", str(build))[0] == 0  # a policy matter: no recipe
    code, found = findings(run_cli, "check-cmake", str(build), "--recipe", str(recipe))
    assert code == 1
    assert [check_id for check_id, _message in found] == ["BT207"]
    assert found[0][1].startswith("target tvm_ffi_testing (")
    # no install() rule installs it: the build tree is what ships, and the finding says so
    assert f"build-tree RPATH {build}/lib" in found[0][1]


def test_python_module_configuration_is_clean(
    run_cli: CliRunner, tvm_ffi_source: Path, tmp_path: Path
) -> None:
    """As its wheel configures it (with the Cython extension module): still clean, and the
    graph shows the module linking both libraries. Configured only; nothing is compiled."""
    build = tmp_path / "build"
    configure(
        tvm_ffi_source,
        build,
        "-DTVM_FFI_BUILD_PYTHON_MODULE=ON",
        f"-DPython_EXECUTABLE={sys.executable}",
    )
    result = run_cli("check-cmake", str(build))
    assert result.exit_code == 0, result.stdout + result.stderr
    module = next(line for line in result.stdout.splitlines() if line.startswith("  module "))
    assert module.startswith("  module tvm_ffi_cython (core.")
    assert module.endswith(") -> tvm_ffi_testing, tvm_ffi_shared")
