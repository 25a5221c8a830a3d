"""The backend's sdist: the project's files as an sdist of the full distribution, with the
project's own ``pyproject.toml`` (it names this backend, so every wheel builds from the sdist
as from the project) and the recipe at its root."""

from __future__ import annotations

import io
import os
import re
import tarfile
from collections.abc import Sequence
from pathlib import Path

from buildtool.fsutil import write_atomic
from buildtool.packaging.sdist import project_files
from buildtool.plan import LinkPlan
from buildtool.process import REPRODUCIBLE_EPOCH
from buildtool.recipe.load import DEFAULT_RECIPE_NAME, LoadedRecipe

ROOT_KEY = re.compile(r"^(\\s*)root\\s*=.*$", re.MULTILINE)


def sdist_name(plan: LinkPlan) -> str:
    """``<name>-<version>`` with the name normalized as sdist file names are (PEP 625)."""
    name = re.sub(r"[-_.]+", "_", plan.project.name).lower()
    return f"{name}-{plan.project.version}"


def pkg_info(plan: LinkPlan) -> str:
    project = plan.project
    return (
        "Metadata-Version: 2.1\\n"
        f"Name: {project.name}\\n"
        f"Version: {project.version}\\n"
        f"Summary: {project.name}: the Python package with every library\\n"
    )


def recipe_at_root(loaded: LoadedRecipe) -> tuple[str, str] | None:
    """The recipe as the sdist's ``buildtool.toml`` when it lives outside the project root
    (the bundled example's ``recipes/demo.toml`` names ``root = "../src"``): in the sdist the
    root is the sdist's own folder. None when the project's files include it already."""
    if loaded.path.resolve().is_relative_to(loaded.root.resolve()):
        return None
    text = loaded.path.read_text(encoding="utf-8")
    return DEFAULT_RECIPE_NAME, ROOT_KEY.sub(r'\\1root = "."', text, count=1)


def _add(archive: tarfile.TarFile, name: str, data: bytes, mode: int, mtime: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, mtime
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    archive.addfile(info, io.BytesIO(data))


def write_sdist(loaded: LoadedRecipe, plan: LinkPlan, dest: Path, skip: Sequence[Path]) -> Path:
    """Write ``<dest>/<name>-<version>.tar.gz`` (reproducible: fixed times, owners, order)."""
    base = sdist_name(plan)
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH") or REPRODUCIBLE_EPOCH)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        for relative in project_files(loaded.root, skip):
            path = loaded.root / relative
            if path.is_symlink() or not path.is_file():
                continue
            mode = 0o755 if os.access(path, os.X_OK) else 0o644
            _add(archive, f"{base}/{relative}", path.read_bytes(), mode, mtime)
        recipe = recipe_at_root(loaded)
        if recipe is not None:
            _add(archive, f"{base}/{recipe[0]}", recipe[1].encode(), 0o644, mtime)
        _add(archive, f"{base}/PKG-INFO", pkg_info(plan).encode(), 0o644, mtime)
    target = dest / f"{base}.tar.gz"
    dest.mkdir(parents=True, exist_ok=True)
    write_atomic(target, buffer.getvalue())
    return target
