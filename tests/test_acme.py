"""examples/acme: a second project, not the example, adopting buildtool in *included* mode.

Its own ``CMakeLists.txt`` (which includes the generated ``cmake/buildtool/targets.cmake``) and
its own ``pyproject.toml`` (other tools' settings) stay byte-identical through the whole chain:
``buildtool ci`` (configure, build, ctest, verify-linkage, split wheels, a fresh-venv install,
full and runtime-only imports), the C-API extension module, a wheel with its option switched
off, and a downstream CMake project using the installed headers and CMake package config.

The chain runs once per module, on a copy of the example. Until this buildtool understands every
key the recipe uses, the module is skipped with the loader's message as the reason.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, CliRunner

ACME = REPO / "examples" / "acme"
OWN_FILES = ("CMakeLists.txt", "pyproject.toml")
"""The project's hand-written files: never modified by any command."""
VERSION = "0.3.dev0"
CHECKSUM_OF_ACME = 0x05C4BA3E
"""zlib's CRC-32 of b"acme"."""


pytestmark = pytest.mark.integration


def digests(root: Path) -> dict[str, str]:
    return {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in OWN_FILES}


def clean_environment() -> dict[str, str]:
    drop = ("LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "GITHUB_ACTIONS")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("ACME_")}
    return {**env, "NO_COLOR": "1"}


def buildtool(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``buildtool`` as a user runs it, from the project root."""
    return subprocess.run(
        [sys.executable, "-m", "buildtool", *argv],
        cwd=root,
        env=clean_environment(),
        capture_output=True,
        text=True,
        check=False,
    )


@dataclasses.dataclass(frozen=True)
class AcmeRun:
    root: Path
    before: dict[str, str]
    """Digests of the project's own files before any command."""
    ci: subprocess.CompletedProcess[str]
    python: Path
    """The interpreter of the fresh environment ``buildtool ci`` installed the wheels into."""


@pytest.fixture(scope="module")
def acme(tmp_path_factory: pytest.TempPathFactory) -> AcmeRun:
    """A copy of examples/acme, as cloned (generated files committed): ``buildtool ci``."""
    root = tmp_path_factory.mktemp("acme") / "acme"
    shutil.copytree(ACME, root, ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    before = digests(root)
    ci = buildtool(root, "ci")  # the default recipe: ./buildtool.toml
    return AcmeRun(root, before, ci, root / "build" / "ci-venv" / "bin" / "python")


def run_python(python: Path, script: str, **env: str) -> str:
    result = subprocess.run(
        [str(python), "-c", script],
        env={**clean_environment(), **env},
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


PROBE = """
import json, acme
print(json.dumps({"names": acme.list_global_functions(), "runtime_only": acme.runtime_only(),
                  "loaded": sorted(acme.loaded_libraries())}))
"""


@pytest.mark.wheel
def test_ci_passes_on_acme(acme: AcmeRun) -> None:
    assert acme.ci.returncode == 0, acme.ci.stdout + acme.ci.stderr
    assert acme.ci.stdout.splitlines()[-1].startswith("buildtool ci: passed")


@pytest.mark.wheel
def test_own_cmakelists_and_pyproject_are_byte_identical(acme: AcmeRun) -> None:
    assert digests(acme.root) == acme.before
    assert (acme.root / "cmake" / "buildtool" / "targets.cmake").is_file()
    assert (acme.root / "packaging" / "acme" / "pyproject.toml").is_file()


@pytest.mark.wheel
def test_split_wheels_carry_the_dev_version(acme: AcmeRun) -> None:
    names = sorted(path.name.split("-")[:2] for path in (acme.root / "dist").glob("*.whl"))
    assert names == [["acme_compiler", VERSION], ["acme_runtime", VERSION]]


@pytest.mark.wheel
def test_full_and_runtime_only_imports(acme: AcmeRun) -> None:
    full = json.loads(run_python(acme.python, PROBE))
    assert full["runtime_only"] is False
    assert full["loaded"] == ["compiler", "core"]
    assert full["names"] == ["compiler.compile", "core.checksum", "core.version", "fast.checksum"]
    alone = json.loads(run_python(acme.python, PROBE, ACME_USE_RUNTIME_LIB="1"))
    assert alone["runtime_only"] is True
    assert alone["names"] == ["core.checksum", "core.version", "fast.checksum"]


@pytest.mark.wheel
def test_c_api_extension_module_is_called_from_python(acme: AcmeRun) -> None:
    script = "import acme._capi as c; print(c.checksum(b'acme'), c.version())"
    checksum, version = run_python(acme.python, script).split()
    assert int(checksum) == CHECKSUM_OF_ACME
    assert version == VERSION


@pytest.mark.wheel
def test_downstream_cmake_project_finds_and_links_acme(acme: AcmeRun, tmp_path: Path) -> None:
    site = run_python(acme.python, "import acme, os; print(os.path.dirname(acme.__file__))")
    package = Path(site.strip())
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\n"
        "project(downstream LANGUAGES C)\n"
        "find_package(acme CONFIG REQUIRED)\n"
        "add_executable(downstream main.c)\n"
        "target_link_libraries(downstream PRIVATE acme::core)\n",
        encoding="utf-8",
    )
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "acme/acme.h"\n'
        'int main(void) { printf("%u %s\\n", (unsigned)acme_checksum("acme", 4), '
        "acme_version()); return 0; }\n",
        encoding="utf-8",
    )
    from buildtool.cmake.run import cmake_executable, ninja_executable

    build = tmp_path / "build"
    configure: list[str | Path] = [cmake_executable(), "-S", tmp_path, "-B", build, "-G", "Ninja"]
    configure += [f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}", f"-DCMAKE_PREFIX_PATH={package}"]
    compile_all: list[str | Path] = [ninja_executable(), "-C", build]
    for command in (configure, compile_all):
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout + result.stderr
    output = subprocess.run(
        [build / "downstream"], capture_output=True, text=True, check=True, env=clean_environment()
    ).stdout.split()
    assert output == [str(CHECKSUM_OF_ACME), VERSION]


@pytest.mark.wheel
def test_wheel_with_the_option_off_leaves_the_object_library_out(
    acme: AcmeRun, tmp_path: Path
) -> None:
    out = tmp_path / "dist"
    result = buildtool(acme.root, "wheel", "-D", "ACME_WITH_FAST=OFF", "--out-dir", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert digests(acme.root) == acme.before
    (built,) = out.glob(f"acme-{VERSION}-*.whl")
    with zipfile.ZipFile(built) as archive:
        core = archive.read("acme/lib/libacme_core.so")
    assert b"core.checksum" in core
    assert b"fast.checksum" not in core


def test_configure_refuses_a_cmakelists_without_the_include(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    root = tmp_path / "acme"
    shutil.copytree(ACME, root, ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    cmakelists = root / "CMakeLists.txt"
    text = cmakelists.read_text(encoding="utf-8")
    cmakelists.write_text(text.replace("include(cmake/buildtool/targets.cmake)\n", ""), "utf-8")
    before = digests(root)
    result = run_cli(
        "configure", "--recipe", str(root / "buildtool.toml"), "--build-dir", str(tmp_path / "b")
    )
    assert result.exit_code == 2
    assert "include(cmake/buildtool/targets.cmake)" in result.stderr
    assert digests(root) == before
    assert not (tmp_path / "b").exists()
