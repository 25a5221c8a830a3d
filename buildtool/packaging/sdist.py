"""The full distribution's sdist, built from a staged copy of the project.

An sdist's root ``pyproject.toml`` must describe the distribution it builds, and scikit-build-core
packs only the folder of the ``pyproject.toml`` it runs in. A project with its own hand-written
``<root>/pyproject.toml`` (whose full distribution is generated under ``packaging/``) would get
neither from a build in place, and that file must never be modified. So the sdist is built from a
staged copy: the project's files, with the full distribution's generated ``pyproject.toml`` at its
root (in the copy only).

Which files: in a git work tree, what git tracks plus what it does not ignore
(``git ls-files --cached --others --exclude-standard``); elsewhere every file, and
scikit-build-core then applies the copied ``.gitignore`` files. Never ``.git``, ``__pycache__``,
the wheel build folders or the output folder, wherever they are.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

from buildtool import process
from buildtool.errors import ToolFailed
from buildtool.fsutil import write_atomic
from buildtool.packaging.distributions import PYPROJECT, full_distribution, render_pyproject
from buildtool.plan import LinkPlan
from buildtool.recipe.load import LoadedRecipe
from buildtool.resources import read_templates

log = logging.getLogger("buildtool")

NEVER_PACKED = frozenset({".git", "__pycache__"})
"""Folder names left out of the staged copy wherever they are."""


def _git_listing(root: Path) -> list[str] | None:
    """Root-relative paths git tracks or does not ignore; None outside a git work tree."""
    command = ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others"]
    try:
        output = process.run([*command, "--exclude-standard"], stream=False)
    except ToolFailed as error:
        log.debug("not listing the sdist's files with git: %s", error)
        return None
    return [name for name in output.split("\0") if name]


def _walk(folder: Path, root: Path) -> Iterator[str]:
    """Every file under ``folder`` (symlinks as they are), root-relative, in a stable order."""
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(name for name in dirs if name not in NEVER_PACKED)
        for name in sorted(files):
            yield (Path(current) / name).relative_to(root).as_posix()


def _expand(root: Path, listing: Sequence[str]) -> Iterator[str]:
    """Files of a git listing; a submodule (listed as a folder) contributes all its files."""
    for name in listing:
        path = root / name
        if path.is_dir() and not path.is_symlink():
            yield from _walk(path, root)
        elif path.exists() or path.is_symlink():  # a tracked file deleted from the work tree
            yield name


def _skipped(relative: str, skip: Sequence[PurePosixPath]) -> bool:
    pure = PurePosixPath(relative)
    if NEVER_PACKED.intersection(pure.parts):
        return True
    return any(pure == folder or folder in pure.parents for folder in skip)


def project_files(root: Path, skip_folders: Sequence[Path]) -> list[str]:
    """Root-relative paths of the files an sdist of ``root`` holds, sorted."""
    skip = [
        PurePosixPath(folder.resolve().relative_to(root.resolve()).as_posix())
        for folder in skip_folders
        if folder.resolve().is_relative_to(root.resolve()) and folder.resolve() != root.resolve()
    ]
    listing = _git_listing(root)
    names = _walk(root, root) if listing is None else _expand(root, listing)
    return sorted({name for name in names if not _skipped(name, skip)})


def stage_sdist_tree(
    loaded: LoadedRecipe, plan: LinkPlan, staging: Path, skip_folders: Sequence[Path]
) -> Path:
    """Copy the project's files into ``staging`` with the full distribution's pyproject.toml at
    the root; return ``staging``."""
    root = loaded.root
    for relative in project_files(root, skip_folders):
        target = staging / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / relative, target, follow_symlinks=False)
    header_plan = dataclasses.replace(plan, recipe_source=loaded.source_from_root)
    template = read_templates("packaging")["pyproject.toml.in"]
    dist = full_distribution(header_plan, ".")
    text = render_pyproject(header_plan, dist, loaded.recipe.wheel, template)
    pyproject = staging / PYPROJECT
    pyproject.unlink(missing_ok=True)  # the copy of a hand-written one: replaced in the copy only
    write_atomic(pyproject, text)
    log.info("staged the %s sdist's files in %s", plan.project.name, staging)
    return staging
