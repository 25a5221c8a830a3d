"""buildtool's PEP 517 backend with the real front ends: pip, build and uv (from PyPI), each in
its isolated build environment (buildtool itself from a wheel of this checkout, everything else
from the index), on the bundled example (generated mode) and on examples/acme (included mode:
the project's own pyproject.toml names the backend in two lines). Every distribution is
installed into a fresh virtual environment and imported, full and runtime-only; a planted
defect in the project's own CMake fails ``pip wheel .`` with verify-linkage's report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.integration, pytest.mark.wheel]

BACKEND_LINES = (
    '[build-system]\nrequires = ["buildtool-split"]\nbuild-backend = "buildtool.backend"\n'
)
"""What a project puts in its pyproject.toml (the README says so)."""


@pytest.fixture(scope="module")
def buildtool_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a wheel of this checkout: where isolated builds find buildtool-split."""
    folder = tmp_path_factory.mktemp("buildtool-wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", folder, REPO],
        check=True, capture_output=True,
    )  # fmt: skip
    assert list(folder.glob("buildtool_split-*.whl"))
    return folder


def front_end_environment(links: Path) -> dict[str, str]:
    drop = ("LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV", "CMAKE_ARGS", "GITHUB_ACTIONS")
    env = {name: value for name, value in os.environ.items() if name not in drop}
    # pip and build (through pip or uv) find buildtool-split beside the index
    links_list = " ".join(filter(None, (env.get("PIP_FIND_LINKS", ""), str(links))))
    env.update({"PIP_FIND_LINKS": links_list, "UV_FIND_LINKS": str(links), "NO_COLOR": "1"})
    return env


def run(command: list[str | Path], cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    return output


def fresh_python(folder: Path) -> Path:
    venv.create(folder, with_pip=True, clear=True)
    return folder / "bin" / "python"


def imported(python: Path, package: str, env_prefix: str, runtime_only: bool) -> str:
    """What the package's loader loaded, imported in a clean environment."""
    code = (
        f"import {package}, {package}.base as b; "
        "print(b.runtime_only(), sorted(b.loaded_libraries()))"
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        f"{env_prefix}_USE_RUNTIME_LIB": str(int(runtime_only)),
    }
    result = subprocess.run(
        [python, "-c", code], env=env, cwd=python.parent, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def install(python: Path, *wheels: Path) -> None:
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-index", *wheels], check=True,
        capture_output=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("backend-example") / "project"
    shutil.copytree(REPO / "recipes", root / "recipes")
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="module")
def acme(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("backend-acme") / "acme"
    ignore = shutil.ignore_patterns("build", "dist", "__pycache__")
    shutil.copytree(REPO / "examples" / "acme", root, ignore=ignore)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(BACKEND_LINES + "\n" + pyproject.read_text(encoding="utf-8"), "utf-8")
    return root


def test_pip_wheel_makes_each_half_of_the_split_in_generated_mode(
    example: Path, buildtool_wheel: Path, tmp_path: Path
) -> None:
    env = front_end_environment(buildtool_wheel)
    src, out = example / "src", tmp_path / "wheels"
    recipe = "-Cbuildtool.recipe=../recipes/demo.toml"
    for half in ("runtime", "addon"):
        pip: list[str | Path] = [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-w",
            out,
            src,
            recipe,
        ]
        run([*pip, f"-Cbuildtool.distribution={half}"], example, env)
    runtime = next(out.glob("demo_runtime-0.1.0-*.whl"))
    addon = next(out.glob("demo_compiler-0.1.0-*.whl"))
    with zipfile.ZipFile(runtime) as archive:
        names = set(archive.namelist())
    assert {"demo/lib/libdemo_runtime.so", "demo/lib/libdemo_ffi.so", "demo/base.py"} <= names
    assert "demo/lib/libdemo_compiler.so" not in names
    with zipfile.ZipFile(addon) as archive:
        assert [n for n in archive.namelist() if not n.startswith("demo_compiler-")] == [
            "demo/lib/libdemo_compiler.so"
        ]
    python = fresh_python(tmp_path / "venv")
    install(python, runtime)
    assert imported(python, "demo", "DEMO", runtime_only=False) == "True ['ffi', 'runtime']"
    install(python, addon)
    full = "False ['compiler', 'ffi', 'runtime']"
    assert imported(python, "demo", "DEMO", runtime_only=False) == full
    assert imported(python, "demo", "DEMO", runtime_only=True) == "True ['ffi', 'runtime']"


def test_uv_and_build_make_the_wheels_in_included_mode(
    acme: Path, buildtool_wheel: Path, tmp_path: Path
) -> None:
    """uv builds the full wheel from the project; build makes the sdist and the runtime wheel
    and the add-on from it (the sdist builds the same wheels)."""
    uv = shutil.which("uv", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    assert uv is not None, "uv is a test requirement"
    env = front_end_environment(buildtool_wheel)
    full_out, split_out = tmp_path / "full", tmp_path / "split"
    run([uv, "build", "--wheel", "--out-dir", full_out, acme], acme, env)
    full = next(full_out.glob("acme-0.3.dev0-*.whl"))
    build: list[str | Path] = [sys.executable, "-m", "build", "--outdir", split_out, acme]
    run([*build, "-Cbuildtool.distribution=runtime"], acme, env)
    sdist = next(split_out.glob("acme-0.3.dev0.tar.gz"))
    run([*build[:-1], "--wheel", sdist, "-Cbuildtool.distribution=addon"], acme, env)
    runtime = next(split_out.glob("acme_runtime-*.whl"))
    addon = next(split_out.glob("acme_compiler-*.whl"))

    python = fresh_python(tmp_path / "full-venv")
    install(python, full)
    assert imported(python, "acme", "ACME", runtime_only=False) == "False ['compiler', 'core']"
    python = fresh_python(tmp_path / "split-venv")
    install(python, runtime, addon)
    assert imported(python, "acme", "ACME", runtime_only=False) == "False ['compiler', 'core']"
    assert imported(python, "acme", "ACME", runtime_only=True) == "True ['core']"


def test_object_library_owned_twice_fails_pip_wheel_with_the_report(
    acme: Path, buildtool_wheel: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "acme"
    shutil.copytree(acme, broken, ignore=shutil.ignore_patterns("build"))
    cmakelists = broken / "CMakeLists.txt"
    planted = "\n# planted: fast's objects in the compiler too\n"
    planted += "target_sources(acme_compiler PRIVATE $<TARGET_OBJECTS:acme_fast>)\n"
    cmakelists.write_text(cmakelists.read_text(encoding="utf-8") + planted, encoding="utf-8")
    env = front_end_environment(buildtool_wheel)
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", out, broken],
        cwd=broken, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-4000:]
    assert "BT10" in output, output[-6000:]  # the duplicate's verify-linkage finding
    assert "verify-linkage failed (the report is above)" in output
    assert "Traceback" not in output
    assert not list(out.glob("*.whl")) if out.exists() else True
