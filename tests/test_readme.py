"""The README's Quickstart is the contract: exactly two commands, the second is what CI runs."""

from __future__ import annotations

import re

from tests.conftest import REPO


def quickstart_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, flags=re.DOTALL)


def test_quickstart_has_exactly_two_commands() -> None:
    commands = quickstart_commands()
    assert len(commands) == 2
    assert all("\n" not in command for command in commands)


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_command = quickstart_commands()[1]
    assert "pytest" in test_command
    ci_lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci_lines


def test_no_instruction_installs_pypis_unrelated_buildtool() -> None:
    """``buildtool`` on PyPI is another project: every ``pip install`` of this one names
    ``buildtool-split`` (or a path), in the README, the docs and the examples."""
    texts = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "examples").rglob("*")]
    wrong = [
        f"{path.relative_to(REPO)}: {match.group(0)}"
        for path in texts
        if path.is_file() and path.suffix in {".md", ".yml", ".yaml", ".toml", ".txt"}
        for match in re.finditer(r"pip install\s+[\"']?buildtool(?![-\w])", path.read_text())
    ]
    assert not wrong
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert 'pip install "buildtool-split @ git+' in readme


def test_each_adoption_path_has_five_steps() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Adopt in five steps", 1)[1].split("\n## ", 1)[0]
    paths = section.split("\n**")[1:]
    assert len(paths) == 2
    for path in paths:
        assert re.findall(r"^(\d)\. ", path, flags=re.MULTILINE) == ["1", "2", "3", "4", "5"]
