"""buildtool's CMake target names against the project's own, configured for real: in included
mode a project target of one of buildtool's names is refused (exit 2) naming the recipe key and
where the project defines it, whether it comes before the generated targets or after; names that
only look alike, and a target switched off by its option, stay clean. An empty library-prefix
gives unprefixed targets and files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from buildtool.cmake.run import cmake_executable, ninja_executable
from tests.adoption_project import INCLUDE_LINE, write_project
from tests.conftest import CliRunner

pytestmark = pytest.mark.integration

RECIPE = """\
[project]
name = "acme"

[options.ACME_FAST]
default = true

[libraries.core]
sources = ["core/*.cc", "core/*.c"]
objects = ["fast"]

[objects.fast]
sources = ["fast/*.cc"]
when = "ACME_FAST"
"""

HEAD = "cmake_minimum_required(VERSION 3.24)\nproject(acme LANGUAGES C CXX)\n"


def included_project(root: Path, before: str = "", after: str = "", own: str = "") -> Path:
    """A project in included mode: ``before`` and ``after`` the include in its CMakeLists.txt,
    ``own`` as the CMakeLists.txt of its subfolder ``own/``."""
    recipe = write_project(root, RECIPE, HEAD + before + INCLUDE_LINE + "\n" + after)
    (root / "fast").mkdir()
    (root / "fast" / "fast.cc").write_text("int fast() { return 3; }\n")
    (root / "own").mkdir()
    (root / "own" / "own.cc").write_text("int main() { return 0; }\n")
    (root / "own" / "CMakeLists.txt").write_text(own)
    return recipe


def configure(run_cli: CliRunner, recipe: Path, *defines: str) -> tuple[int, str]:
    argv = ["configure", "--recipe", str(recipe), "--build-dir", str(recipe.parent / "build")]
    for define in defines:
        argv += ["-D", define]
    result = run_cli(*argv)
    return result.exit_code, result.stderr


def error_line(stderr: str) -> str:
    """The last line (buildtool's error message); the lines before it are CMake's log."""
    assert "Traceback" not in stderr
    return stderr.rstrip("\n").rsplit("\n", 1)[-1]


def test_a_project_target_defined_before_the_include_is_refused_naming_the_key(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    recipe = included_project(tmp_path, before="add_subdirectory(own)\n")
    (tmp_path / "own" / "CMakeLists.txt").write_text("add_executable(acme_core own.cc)\n")
    code, stderr = configure(run_cli, recipe)
    assert code == 2
    assert error_line(stderr) == (
        f"error: {recipe}: libraries.core makes the CMake target 'acme_core', which the project's "
        f"own CMake defines too (in source directory {tmp_path / 'own'}). A target name can be "
        "defined once only: rename the recipe's table or set [project] library-prefix (now "
        "'acme_': buildtool's targets are <library-prefix><table name>, a library's ALIAS "
        "<project name>::<table name>), and keep the file name the project's users link "
        "against with output-name; or rename the project's target. Then run `buildtool "
        "configure` again"
    )
    # The generated check fired, before CMake's own error inside buildtool's helpers.
    assert 'buildtool: buildtool.toml: target "acme_core" of libraries.core' in " ".join(
        stderr.split()
    )
    assert "cannot create target" not in stderr


def test_project_targets_defined_after_the_include_are_refused_naming_their_lines(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    own = (
        "add_library(acme_fast SHARED own.cc)\n"
        "add_library(acme::core ALIAS acme_fast)\n"
        "add_executable(acme_tool own.cc)\n"
    )
    recipe = included_project(tmp_path, after="add_subdirectory(own)\n", own=own)
    code, stderr = configure(run_cli, recipe)
    assert code == 2
    message = error_line(stderr)
    assert message.startswith(
        f"error: {recipe}: objects.fast makes the CMake target 'acme_fast', which the project's "
        "own CMake defines too (add_library at own/CMakeLists.txt:1); libraries.core makes the "
        "CMake target 'acme::core', which the project's own CMake defines too (add_library at "
        "own/CMakeLists.txt:2). A target name can be defined once only"
    )
    assert "acme_tool" not in message


def test_a_name_switched_off_by_its_option_and_names_alike_stay_clean(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    # acme_fast is buildtool's only while ACME_FAST is ON; core, acme and acme_core_x are the
    # project's names that only look like buildtool's.
    own = "add_executable(core own.cc)\nadd_executable(acme_core_x own.cc)\n"
    before = "add_library(acme_fast SHARED own/own.cc)\n"
    after = "add_subdirectory(own)\nadd_library(acme INTERFACE)\n"
    recipe = included_project(tmp_path, before=before, after=after, own=own)
    code, stderr = configure(run_cli, recipe, "ACME_FAST=OFF")
    assert code == 0, stderr
    assert "CMake Error" not in stderr
    build = tmp_path / "build"
    subprocess.run([ninja_executable(), "-C", build], check=True, capture_output=True)
    assert (build / "lib" / "libacme_core.so").is_file()
    assert (build / "own" / "core").is_file()
    assert (build / "libacme_fast.so").is_file(), "the project's own acme_fast, built its way"
    # Switched ON, buildtool's object library and the project's library take one name.
    code, stderr = configure(run_cli, recipe, "ACME_FAST=ON")
    assert code == 2
    assert error_line(stderr).startswith(
        f"error: {recipe}: objects.fast makes the CMake target 'acme_fast', which the project's "
        f"own CMake defines too (in source directory {tmp_path})."
    )


def test_two_project_targets_of_one_name_stay_a_cmake_failure(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    own = "add_executable(tool own.cc)\nadd_executable(tool own.cc)\n"
    recipe = included_project(tmp_path, after="add_subdirectory(own)\n", own=own)
    code, stderr = configure(run_cli, recipe)
    assert code == 1, "not the recipe's names: the project's own CMake error"
    assert 'cannot create target "tool"' in " ".join(stderr.split())


def test_plain_cmake_names_the_recipe_key_too(tmp_path: Path, run_cli: CliRunner) -> None:
    # A project in included mode builds without buildtool: the generated check speaks to it.
    recipe = included_project(tmp_path)
    code, stderr = configure(run_cli, recipe)
    assert code == 0, stderr
    (tmp_path / "CMakeLists.txt").write_text(
        f"{HEAD}add_library(acme INTERFACE)\nadd_library(acme::core ALIAS acme)\n{INCLUDE_LINE}\n"
    )
    command: list[str | Path] = [cmake_executable(), "-S", tmp_path, "-B", tmp_path / "plain"]
    command += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}"]
    plain = subprocess.run(command, capture_output=True, text=True, check=False)
    assert plain.returncode == 1
    said = " ".join(plain.stderr.split())
    assert (
        'buildtool: buildtool.toml: target "acme::core" of libraries.core is defined by the '
        f"project already (in source directory {tmp_path}). A CMake target name can be defined "
        "once only: rename the recipe's table or set [project] library-prefix"
    ) in said


def test_a_wheel_build_refuses_the_collision_too_and_publishes_nothing(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    recipe = included_project(tmp_path, before="add_library(acme_core INTERFACE)\n")
    recipe.write_text(
        recipe.read_text().replace("[project]\n", '[project]\npython-package-dir = "python/acme"\n')
    )
    (tmp_path / "python" / "acme").mkdir(parents=True)
    (tmp_path / "python" / "acme" / "__init__.py").write_text("")
    dist = tmp_path / "dist"
    build = tmp_path / "build"
    result = run_cli(
        "wheel", "--recipe", str(recipe), "--out-dir", str(dist), "--build-dir", str(build)
    )
    assert result.exit_code == 2
    assert error_line(result.stderr).startswith(
        f"error: {recipe}: libraries.core makes the CMake target 'acme_core', which the "
        f"project's own CMake defines too (in source directory {tmp_path})."
    )
    assert list(dist.iterdir()) == []


def test_an_empty_library_prefix_builds_unprefixed_targets_and_files(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    recipe = write_project(
        tmp_path,
        RECIPE.replace("[project]\n", '[project]\nlibrary-prefix = ""\n')
        + '[executables.tool]\nsources = ["tool.cc"]\nlinks = ["core"]\n',
        HEAD + INCLUDE_LINE + "\n# The project's CMake names the unprefixed target.\n"
        "target_compile_definitions(core PRIVATE FROM_PROJECT=1)\n",
    )
    (tmp_path / "fast").mkdir()
    (tmp_path / "fast" / "fast.cc").write_text("int fast() { return 3; }\n")
    (tmp_path / "tool.cc").write_text("int core();\nint main() { return core() - 1; }\n")
    (tmp_path / "core" / "core.cc").write_text(
        '#ifndef FROM_PROJECT\n#error "the project\'s CMake did not reach target core"\n#endif\n'
        '#include "core_export.h"\nCORE_API int core() { return 1; }\n'
    )
    build = tmp_path / "build"
    result = run_cli("build", "--recipe", str(recipe), "--build-dir", str(build))
    assert result.exit_code == 0, result.stderr
    assert sorted(path.name for path in (build / "lib").iterdir()) == ["libcore.so"]
    assert subprocess.run([build / "bin" / "tool"], check=False).returncode == 0
    targets = (tmp_path / "cmake" / "buildtool" / "targets.cmake").read_text()
    assert "bt_library(core\n  LIBRARY core\n  OUTPUT_NAME core\n" in targets
    assert "  bt_object_library(fast\n    OWNER core\n" in targets


def test_a_target_name_cmake_reserves_is_refused_before_cmake_runs(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    recipe = write_project(
        tmp_path,
        '[project]\nname = "acme"\nlibrary-prefix = ""\n'
        '[libraries.core]\nsources = ["core/*.cc"]\n'
        '[executables.test]\nsources = ["core/core.cc"]\n',
    )
    result = run_cli("configure", "--recipe", str(recipe), "--build-dir", str(tmp_path / "b"))
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {recipe}: executables.test: its CMake target 'test' is a name CMake reserves "
        "for itself (policy CMP0037); rename the table or set [project] library-prefix\n"
    )
    assert not (tmp_path / "b").exists()
    assert not (tmp_path / "CMakeLists.txt").exists()


DASHED = """\
[project]
name = "ggmllike"
library-prefix = ""

[libraries.ggml-base]
sources = ["core/*.cc", "core/*.c"]
visibility = "default"

[libraries.ggml]
sources = ["ggml/*.cc"]
links = ["ggml-base"]
visibility = "default"
optional = true

[executables."test-backend-ops"]
sources = ["programs/*.cc"]
links = ["ggml"]

[verify]
size-budget-mb = { "ggml-base" = 1.0 }
"""


@pytest.mark.parametrize("mode", ["generated", "included"])
def test_target_names_with_dashes_build_run_and_verify(
    tmp_path: Path, run_cli: CliRunner, mode: str
) -> None:
    """ggml's names (``ggml-base``, ``test-backend-ops``) in both modes: they build, the program
    runs, verify-linkage is clean, and the recipe's rules keyed by those names apply."""
    cmakelists = HEAD + INCLUDE_LINE + "\n" if mode == "included" else None
    recipe = write_project(tmp_path, DASHED.replace("ggmllike", "acme"), cmakelists)
    (tmp_path / "ggml").mkdir()
    (tmp_path / "ggml" / "ggml.cc").write_text("int core();\nint ggml() { return core() + 1; }\n")
    (tmp_path / "programs").mkdir()
    (tmp_path / "programs" / "ops.cc").write_text(
        "int ggml();\nint main() { return ggml() - 2; }\n"
    )
    build = tmp_path / "build"
    configured = run_cli("configure", "--recipe", str(recipe), "--build-dir", str(build))
    assert configured.exit_code == 0, configured.stderr
    assert run_cli("build", "--recipe", str(recipe), "--build-dir", str(build)).exit_code == 0
    program = next(build.rglob("test-backend-ops"))
    assert subprocess.run([program], check=False).returncode == 0
    verified = run_cli("verify-linkage", str(build), "--recipe", str(recipe))
    assert verified.exit_code == 0, verified.stdout
    # the rules of the dashed names apply: a budget the base library exceeds, a NEEDED the
    # program has that the recipe forbids
    recipe.write_text(recipe.read_text().replace(
        '{ "ggml-base" = 1.0 }', '{ "ggml-base" = 0.000001 }\n'
        'forbidden-needed = { "test-backend-ops" = ["libggml.so"] }'
    ))  # fmt: skip
    verified = run_cli("verify-linkage", str(build), "--recipe", str(recipe), "--format", "json")
    assert verified.exit_code == 1
    assert '"BT102"' in verified.stdout
    assert '"BT130"' in verified.stdout
