"""check-cmake and init --from-cmake on tests/packages/cmake-presplit, a project before its split
(with a vendored library and a monolith beside the runtime): the folder that is the layout, the
alternatives init leaves out, and what loads, asked of the loader."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from buildtool.cmake.run import cmake_executable, ninja_executable
from buildtool.recipe.load import load_recipe
from tests.cmake_projects import (
    SplitBuild,
    built_on_first_use,
    check_ids,
    findings_of,
    load_in_order,
)
from tests.conftest import PACKAGES, CliRunner, require

PRESPLIT = PACKAGES / "cmake-presplit"


@pytest.fixture(scope="session")
def presplit_build(tmp_path_factory: pytest.TempPathFactory) -> SplitBuild:
    """tests/packages/cmake-presplit configured and built with one planted defect."""
    require(shutil.which("c++") is not None, "no C++ compiler")

    def configure(defect: str) -> Path:
        folder = tmp_path_factory.mktemp(f"presplit-{defect}") / "build"
        subprocess.run(
            [
                cmake_executable(), "-S", PRESPLIT, "-B", folder, "-G", "Ninja",
                f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}", f"-DPRESPLIT_DEFECT={defect}",
            ],
            check=True,
            capture_output=True,
        )  # fmt: skip
        return folder

    return built_on_first_use(configure)


@pytest.mark.integration
def test_the_folder_of_the_projects_own_libraries_is_the_reference(
    run_cli: CliRunner, presplit_build: SplitBuild
) -> None:
    """A vendored project's library in build/3rdparty/ (alphabetically first) is not the
    layout; the folder most of the project's libraries share is."""
    build = presplit_build("none")
    assert (build / "3rdparty" / "vendor" / "libvendor.so").is_file()
    assert check_ids(run_cli, "check-cmake", str(build)) == (0, [])
    build = presplit_build("scattered")
    code, found = findings_of(run_cli, "check-cmake", str(build))
    assert code == 1
    assert found == [
        (
            "BT206",
            f"target runtime (CMakeLists.txt:37): built into {build / 'alone'}, not "
            f"{build / 'lib'} with the others",
        )
    ]
    # really broken: minrpc's RUNPATH $ORIGIN/../lib does not find the runtime
    ran = subprocess.run([build / "bin" / "minrpc"], capture_output=True, text=True, check=False)
    assert "libruntime.so: cannot open shared object file" in ran.stderr


@pytest.mark.integration
def test_init_leaves_an_alternative_monolith_out(
    run_cli: CliRunner, presplit_build: SplitBuild, tmp_path: Path
) -> None:
    """TVM before its split: libmono.so (nothing links it) holds the runtime's code; a
    deployment loads one or the other, so the starter recipe must not load both."""
    build = presplit_build("none")
    recipe = tmp_path / "buildtool.toml"
    assert run_cli("init", "--from-cmake", str(build), "--output", str(recipe)).exit_code == 0
    text = recipe.read_text(encoding="utf-8")
    assert "# decide: libmono.so (target mono) is left out. Nothing links it" in text
    assert "# decide: left out as a vendored project's own: libvendor.so" in text
    assert "# decide: OBJECT library gemm is linked into runtime and into the alternative" in text
    loaded = load_recipe(recipe).recipe
    assert sorted(loaded.libraries) == ["ffi", "runtime"]
    assert check_ids(run_cli, "check-cmake", str(build), "--recipe", str(recipe)) == (0, [])
    assert check_ids(run_cli, "verify-linkage", str(build), "--recipe", str(recipe)) == (0, [])
    ran = subprocess.run([build / "bin" / "minrpc"], capture_output=True, text=True, check=False)
    assert (ran.returncode, ran.stdout) == (0, "4\n")
    # a recipe that loads both (what init wrote before) is caught: BT201
    both = tmp_path / "both.toml"
    both.write_text(text + '\n[libraries.mono]\nfile = "libmono.so"\n', encoding="utf-8")
    code, found = check_ids(run_cli, "check-cmake", str(build), "--recipe", str(both))
    assert (code, sorted(set(found))) == (1, ["BT201", "BT202"])


@pytest.mark.integration
def test_a_monolith_someone_links_beside_the_runtime_is_not_an_alternative(
    run_cli: CliRunner, presplit_build: SplitBuild, tmp_path: Path
) -> None:
    build = presplit_build("exe-links-both")
    recipe = tmp_path / "buildtool.toml"
    assert run_cli("init", "--from-cmake", str(build), "--output", str(recipe)).exit_code == 0
    assert "mono" in load_recipe(recipe).recipe.libraries
    for policy in ((), ("--recipe", str(recipe))):
        code, found = check_ids(run_cli, "check-cmake", str(build), *policy)
        assert (code, sorted(set(found))) == (1, ["BT201", "BT202"])
    ran = subprocess.run([build / "bin" / "app"], capture_output=True, text=True, check=False)
    assert ran.returncode != 0
    assert "duplicate registration: contrib.gemm_fp16_int" in ran.stderr


VENDORED_RECIPE = """\
[project]
name = "presplit"

[libraries.vendor]
file = "libvendor.so"

[libraries.ffi]
file = "libffi.so"

[libraries.runtime]
file = "libruntime.so"
links = ["ffi", "vendor"]
"""


@pytest.mark.integration
def test_a_vendored_library_its_own_cmake_places_is_not_blamed(
    run_cli: CliRunner, presplit_build: SplitBuild, tmp_path: Path
) -> None:
    """TVM before its split: tvm-ffi's own CMake builds libtvm_ffi.so into <build>/lib, TVM's
    libraries sit in the build folder's root. The project can move its own libraries, not the
    vendored one: the finding names the project's."""
    recipe = tmp_path / "buildtool.toml"
    recipe.write_text(VENDORED_RECIPE, encoding="utf-8")
    build = presplit_build("vendor-in-lib")
    assert check_ids(run_cli, "check-cmake", str(build), "--recipe", str(recipe)) == (0, [])
    assert load_in_order(build / "lib" / "libruntime.so").returncode == 0
    build = presplit_build("own-in-root")
    assert (build / "lib" / "libvendor.so").is_file()
    code, found = findings_of(run_cli, "check-cmake", str(build), "--recipe", str(recipe))
    beside = f"not {build / 'lib'} with libvendor.so, whose folder a vendored project's CMake sets"
    assert (code, found) == (
        1,
        [
            ("BT206", f"target ffi (CMakeLists.txt:34): built into {build}, {beside}"),
            ("BT206", f"target runtime (CMakeLists.txt:37): built into {build}, {beside}"),
        ],
    )
    # really broken: the runtime's RUNPATH $ORIGIN does not find the vendored library
    loaded = load_in_order(build / "libruntime.so")
    assert "libvendor.so: cannot open shared object file" in loaded.stderr
    # without a recipe a vendored project's library is not the project's layout
    assert check_ids(run_cli, "check-cmake", str(build)) == (0, [])


@pytest.mark.integration
def test_init_keeps_the_runtime_nothing_in_cmake_links(
    run_cli: CliRunner, presplit_build: SplitBuild, tmp_path: Path
) -> None:
    """TVM's tree before its split: minrpc is built by Python, so nothing in CMake links
    libtvm_runtime.so, and libtvm_allvisible.so copies the monolith. The monolith and its copy
    hold all of the runtime's code and more: they are the alternatives, the runtime stays."""
    build = presplit_build("python-minrpc")
    recipe = tmp_path / "buildtool.toml"
    assert run_cli("init", "--from-cmake", str(build), "--output", str(recipe)).exit_code == 0
    text = recipe.read_text(encoding="utf-8")
    assert "# decide: libmono.so (target mono) is left out." in text
    assert "# decide: liballvisible.so (target allvisible) is left out." in text
    assert sorted(load_recipe(recipe).recipe.libraries) == ["ffi", "runtime"]
    assert check_ids(run_cli, "check-cmake", str(build), "--recipe", str(recipe)) == (0, [])
    assert check_ids(run_cli, "verify-linkage", str(build), "--recipe", str(recipe)) == (0, [])
    lib = build / "lib"
    assert load_in_order(lib / "libruntime.so").returncode == 0
    # and the copy really is an alternative: beside the runtime it registers everything twice
    loaded = load_in_order(lib / "libruntime.so", lib / "liballvisible.so")
    assert loaded.returncode != 0
    assert "duplicate registration: contrib.gemm_fp16_int" in loaded.stderr
