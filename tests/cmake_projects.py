"""What the check-cmake tests share: a project build per planted defect, the findings of a run
(its JSON validated against the schema), and a fresh interpreter loading libraries in order."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import jsonschema

from buildtool.cmake.run import ninja_executable
from tests.conftest import REPO, CliRunner

SplitBuild = Callable[[str], Path]
"""A build folder of the project with the planted defect it is given, built on first use."""


def built_on_first_use(configure: Callable[[str], Path]) -> SplitBuild:
    """Each defect's build folder, configured by ``configure(defect)`` and built with ninja the
    first time it is asked for, then the same folder again."""
    builds: dict[str, Path] = {}

    def build(defect: str) -> Path:
        if defect not in builds:
            folder = configure(defect)
            subprocess.run([ninja_executable(), "-C", folder], check=True, capture_output=True)
            builds[defect] = folder
        return builds[defect]

    return build


SCHEMA = REPO / "buildtool" / "schemas" / "check-cmake.schema.json"


def check_ids(run_cli: CliRunner, *argv: str) -> tuple[int, list[str]]:
    result = run_cli(*argv, "--format", "json")
    document = json.loads(result.stdout)
    if argv[0] == "check-cmake":
        jsonschema.validate(document, json.loads(SCHEMA.read_text(encoding="utf-8")))
    return result.exit_code, [finding["id"] for finding in document["findings"]]


def findings_of(run_cli: CliRunner, *argv: str) -> tuple[int, list[tuple[str, str]]]:
    result = run_cli(*argv, "--format", "json")
    document = json.loads(result.stdout)
    jsonschema.validate(document, json.loads(SCHEMA.read_text(encoding="utf-8")))
    return result.exit_code, [(f["id"], f["message"]) for f in document["findings"]]


def load_in_order(*libraries: Path) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter loads ``libraries`` the way the split's loader does (the first
    RTLD_GLOBAL)."""
    script = (
        "import ctypes, sys\n"
        "ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)\n"
        "for path in sys.argv[2:]:\n"
        "    ctypes.CDLL(path)\n"
    )
    command = [sys.executable, "-c", script, *map(str, libraries)]
    return subprocess.run(command, capture_output=True, text=True, check=False)
