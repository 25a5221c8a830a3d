"""Build once: ``buildtool ci`` compiles every translation unit one time, from the build tree to
both wheels; a rerun with nothing changed compiles nothing; touching one compiler source compiles
exactly that file, and the runtime wheel stays byte-identical.

A counting compiler (a wrapper set as CC and CXX) records every compile; its log is the proof.
Run on the bundled example (generated mode) and on examples/acme (included mode: the project's
own CMakeLists.txt and pyproject.toml).
"""

from __future__ import annotations

import collections
import shutil

import pytest

from tests.conftest import REPO
from tests.counting import Project, counting_project, project_sources

pytestmark = [pytest.mark.integration, pytest.mark.wheel]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Project:
    folder = tmp_path_factory.mktemp("build-once-example")
    root = folder / "project"
    shutil.copytree(REPO / "recipes", root / "recipes")
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    return counting_project(folder, root, root / "src")


@pytest.fixture(scope="module")
def acme(tmp_path_factory: pytest.TempPathFactory) -> Project:
    folder = tmp_path_factory.mktemp("build-once-acme")
    root = folder / "acme"
    ignore = shutil.ignore_patterns("build", "dist", "__pycache__")
    shutil.copytree(REPO / "examples" / "acme", root, ignore=ignore)
    return counting_project(folder, root, root)


@pytest.mark.parametrize("name", ["example", "acme"])
def test_ci_compiles_each_source_once_then_nothing_then_the_touched_file(
    name: str, request: pytest.FixtureRequest
) -> None:
    project: Project = request.getfixturevalue(name)
    first = project.ci()
    sources = project_sources(project.source_root)
    assert set(first) == sources, "every project source is compiled"
    assert set(first.values()) == {1}, f"compiled more than once: {first}"
    wheels = project.wheels()
    assert len(wheels) == 2, wheels  # the runtime wheel and the add-on

    assert project.ci() == collections.Counter(), "a rerun with nothing changed compiles nothing"
    assert project.wheels() == wheels

    compiler_source = next(path for path in sorted(sources) if path.startswith("compiler/"))
    touched = project.source_root / compiler_source
    touched.write_text(touched.read_text(encoding="utf-8") + "\n// touched\n", encoding="utf-8")
    assert project.ci() == collections.Counter({compiler_source: 1})
    after = project.wheels()
    runtime = next(wheel for wheel in wheels if "_runtime-" in wheel)
    assert after[runtime] == wheels[runtime], "the runtime wheel stays byte-identical"
