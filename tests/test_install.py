"""A non-editable install works: templates and schema ship inside buildtool's wheel, which is the
distribution ``buildtool-split`` (``buildtool`` on PyPI is another project) installing the
``buildtool`` command and package."""

from __future__ import annotations

import json
import subprocess
import venv
from pathlib import Path

import pytest

from tests.conftest import DEMO_RECIPE, REPO

pytestmark = pytest.mark.wheel


def test_installed_wheel_carries_templates_and_schema(tmp_path: Path) -> None:
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(REPO)],
        check=True,
        cwd=tmp_path,
    )
    buildtool = tmp_path / "venv" / "bin" / "buildtool"
    check = subprocess.run(
        [buildtool, "configure", "--check", "--recipe", str(DEMO_RECIPE)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert check.returncode == 0, check.stderr
    schema = subprocess.run([buildtool, "schema"], capture_output=True, text=True, check=True)
    assert json.loads(schema.stdout)["title"] == "buildtool recipe"
    location = subprocess.run(
        [python, "-c", "import buildtool.resources as r; print(r.templates_dir())"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert Path(location.stdout.strip()).is_relative_to(tmp_path / "venv")
    installed = subprocess.run(
        [python, "-c", INSTALLED_DISTRIBUTION],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert json.loads(installed.stdout) == {
        "name": "buildtool-split",
        "scripts": ["buildtool"],
        "package": str(tmp_path / "venv"),
    }


INSTALLED_DISTRIBUTION = """
import importlib.metadata as metadata, json, pathlib, sys, buildtool
dist = metadata.distribution("buildtool-split")
package = pathlib.Path(buildtool.__file__).resolve()
print(json.dumps({
    "name": dist.metadata["Name"],
    "scripts": sorted(e.name for e in dist.entry_points if e.group == "console_scripts"),
    "package": sys.prefix if package.is_relative_to(sys.prefix) else str(package),
}))
"""
