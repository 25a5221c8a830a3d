"""Build once: ``buildtool ci`` compiles every translation unit one time, from the build tree to
both wheels; a rerun with nothing changed compiles nothing; touching one compiler source compiles
exactly that file, and the runtime wheel stays byte-identical.

A counting compiler (a wrapper set as CC and CXX) records every compile; its log is the proof.
Run on the bundled example (generated mode) and on examples/acme (included mode: the project's
own CMakeLists.txt and pyproject.toml).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.integration, pytest.mark.wheel]

WRAPPER = """\
#!/bin/sh
# Counts compiles: one line per invocation with -c, naming its source (the last argument).
for argument in "$@"; do
  if [ "$argument" = "-c" ]; then
    for last in "$@"; do :; done
    printf '%s\\n' "$last" >> {log}
  fi
done
exec {compiler} "$@"
"""


@dataclasses.dataclass(frozen=True)
class Project:
    """A copy of a project, with a counting compiler for every run in it."""

    root: Path
    """Where ``buildtool ci`` runs."""
    source_root: Path
    """The project's sources (the recipe's root)."""
    log: Path
    """The counting compiler's log."""
    env: dict[str, str]

    def ci(self) -> collections.Counter[str]:
        """Run ``buildtool ci``; return how often each project source was compiled."""
        self.log.write_text("", encoding="utf-8")
        result = subprocess.run(
            [sys.executable, "-m", "buildtool", "ci"],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
        return self.compiled()

    def compiled(self) -> collections.Counter[str]:
        """Project sources in the log (CMake's own compiler checks left out), relative to the
        source root."""
        counts: collections.Counter[str] = collections.Counter()
        root = str(self.source_root.resolve()) + "/"
        build = str((self.root / "build").resolve()) + "/"
        for line in self.log.read_text(encoding="utf-8").splitlines():
            if line.startswith(root) and not line.startswith(build):
                counts[line[len(root) :]] += 1
        return counts

    def wheels(self) -> dict[str, str]:
        """File name -> sha256 of each wheel in ``dist/``."""
        return {
            path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted((self.root / "dist").glob("*.whl"))
        }


def counting_project(tmp_path: Path, root: Path, source_root: Path) -> Project:
    log = tmp_path / "compiles.log"
    tools = tmp_path / "tools"
    tools.mkdir()
    for name, compiler in (("cc", "gcc"), ("c++", "g++")):
        found = shutil.which(compiler)
        assert found is not None, f"{compiler} is needed"
        wrapper = tools / name
        wrapper.write_text(WRAPPER.format(log=log, compiler=found), encoding="utf-8")
        wrapper.chmod(0o755)
    drop = ("LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV", "GITHUB_ACTIONS", "CMAKE_ARGS")
    env = {name: value for name, value in os.environ.items() if name not in drop}
    env.update({"CC": str(tools / "cc"), "CXX": str(tools / "c++"), "NO_COLOR": "1"})
    return Project(root, source_root, log, env)


def project_sources(source_root: Path) -> set[str]:
    return {
        path.relative_to(source_root).as_posix()
        for path in source_root.rglob("*")
        if path.suffix in (".c", ".cc") and "build" not in path.relative_to(source_root).parts
    }


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
