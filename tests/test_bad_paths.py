"""Output paths that cannot be written (a regular file where a folder must be, a folder where a
file must be): exit 2 naming the path, never a traceback, and nothing written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from buildtool.errors import UsageError
from buildtool.fsutil import make_folder, write_atomic
from tests.conftest import DEMO_RECIPE, CliRunner


@pytest.fixture
def blocker(tmp_path: Path) -> Path:
    """A regular file that output paths below it run into."""
    path = tmp_path / "a-file"
    path.write_text("in the way\n")
    return path


def test_make_folder_under_a_file_names_the_file(blocker: Path) -> None:
    with pytest.raises(UsageError, match=rf"{blocker} is a file, not a folder"):
        make_folder(blocker / "sub" / "folder")


def test_write_atomic_under_a_file_or_onto_a_folder(blocker: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot create the folder"):
        write_atomic(blocker / "report.json", "{}")
    with pytest.raises(UsageError, match="it is a folder"):
        write_atomic(tmp_path, "{}")
    assert blocker.read_text() == "in the way\n"


@pytest.mark.parametrize(
    "argv",
    [
        ("verify-linkage", sys.executable, "--no-recipe", "--output", "{blocked}/r.json"),
        (
            "verify-linkage",
            sys.executable,
            "--no-recipe",
            "--format",
            "html",
            "--output",
            "{blocked}/r.html",
        ),
        ("ci", "--recipe", str(DEMO_RECIPE), "--out-dir", "{blocked}/dist"),
        ("ci", "--recipe", str(DEMO_RECIPE), "--build-dir", "{blocked}/build"),
        ("configure", "--recipe", str(DEMO_RECIPE), "--build-dir", "{blocked}/build"),
    ],
)
def test_an_output_under_a_file_is_exit_2(
    run_cli: CliRunner, blocker: Path, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    result = run_cli(*(arg.format(blocked=blocker) for arg in argv))
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"{blocker} is a file, not a folder" in result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_migrate_shims_under_a_file_is_exit_2(
    run_cli: CliRunner, blocker: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.cc").write_text('#include "old.h"\n')
    recipe = project / "migrate.toml"
    recipe.write_text(
        '[project]\nname = "p"\n\n[libraries.core]\nsources = ["*.cc"]\n\n'
        '[migrate.renamed-headers]\n"old.h" = "new.h"\n'
    )
    result = run_cli(
        "migrate", str(project), "--recipe", str(recipe), "--shims", str(blocker / "inc")
    )
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"{blocker} is a file, not a folder" in result.stderr
