"""A counting compiler: a wrapper set as CC and CXX that records every compile, and a copy of
a project whose ``buildtool ci`` runs go through it. Its log is the proof of how often each
source was compiled (tests/test_build_once.py, tests/test_ci_policy_only.py)."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

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

    def run_ci(self) -> subprocess.CompletedProcess[str]:
        """Run ``buildtool ci`` (it must pass), the counting compiler's log emptied first."""
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
        return result

    def ci(self) -> collections.Counter[str]:
        """Run ``buildtool ci``; return how often each project source was compiled."""
        self.run_ci()
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
