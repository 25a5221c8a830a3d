"""The documentation is a site built by MkDocs in strict mode: a broken link or anchor, a page
missing from the nav or a nav entry without its page fails the build, and so this test."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO


def build_site(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )


def copy_of_docs(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    shutil.copy2(REPO / "mkdocs.yml", root)
    shutil.copy2(REPO / "README.md", root)
    shutil.copytree(REPO / "docs", root / "docs", dirs_exist_ok=True)
    return root


def readme_hook() -> ModuleType:
    path = REPO / "docs" / "hooks" / "readme_index.py"
    spec = importlib.util.spec_from_file_location("readme_index", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_builds_strictly_with_the_readme_and_the_generated_references(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    result = build_site(REPO, site)
    assert result.returncode == 0, result.stderr
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "Quickstart" in index
    assert "Adopt in five steps" in index
    assert 'href="commands/"' in index  # the README's docs/ links, made relative to the site
    assert "BT101" in (site / "checks" / "index.html").read_text(encoding="utf-8")
    assert "library-prefix" in (site / "recipe" / "index.html").read_text(encoding="utf-8")


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    root = copy_of_docs(tmp_path)
    ci_page = root / "docs" / "ci.md"
    ci_page.write_text(
        ci_page.read_text(encoding="utf-8") + "\n[gone](gone.md), [no anchor](checks.md#bt999)\n",
        encoding="utf-8",
    )
    result = build_site(root, tmp_path / "site")
    assert result.returncode != 0
    assert "'ci.md' contains a link 'gone.md'" in result.stderr
    assert "does not contain an anchor '#bt999'" in result.stderr


def test_a_page_missing_from_the_nav_or_from_the_docs_fails_the_build(tmp_path: Path) -> None:
    root = copy_of_docs(tmp_path)
    (root / "docs" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    (root / "docs" / "platforms.md").unlink()
    result = build_site(root, tmp_path / "site")
    assert result.returncode != 0
    assert "orphan.md" in result.stderr
    assert "'platforms.md' is included in the 'nav'" in result.stderr


def test_the_readme_becomes_the_home_page_with_site_relative_links() -> None:
    hook = readme_hook()
    text = "[checks](docs/checks.md), [here](#quickstart), `docs/x.md`"
    assert hook.readme_as_index(text) == "[checks](checks.md), [here](#quickstart), `docs/x.md`"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)", readme))
    pages = {path.name for path in (REPO / "docs").glob("*.md")}
    assert pages == linked


def test_the_contents_list_every_section_of_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", readme, flags=re.MULTILINE)
    contents = readme.split("## Contents", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^- \[([^\]]+)\]\(#", contents, flags=re.MULTILINE)
    assert listed == [section for section in sections if section != "Contents"]
