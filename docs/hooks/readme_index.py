"""MkDocs hook: the site's home page is the repository's README.md, its ``docs/`` links made
relative to the site, so the README stays the one front page and nothing is copied by hand."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[2] / "README.md"

_DOCS_LINK = re.compile(r"\]\(docs/")


def readme_as_index(readme_text: str) -> str:
    """The README's text with every ``](docs/x.md)`` link turned into ``](x.md)``."""
    return _DOCS_LINK.sub("](", readme_text)


def on_files(files: Any, config: Any) -> Any:
    """Adds ``index.md`` (the README) to the site's files."""
    from mkdocs.structure.files import File

    text = readme_as_index(README.read_text(encoding="utf-8"))
    files.append(File.generated(config, "index.md", content=text))
    return files
