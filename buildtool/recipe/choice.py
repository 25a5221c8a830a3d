"""Which recipe a check applies to its inputs, and why: every report says both.

A recipe describes its own project's binaries. Named with ``--recipe`` it applies to every
input. Found by search in the working folder, it applies only when every input is the
project's: inside that folder and, for a wheel, one of the recipe's own distributions. Anything
else is checked without it: a third-party wheel copied into the tree is not the project's, and
inputs from elsewhere do not even start a search (so several recipes in ``recipes/`` cannot stop
``verify-linkage /elsewhere/x.whl``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded once a recipe is looked for: inputs from elsewhere never pay for it
    from buildtool.recipe.load import LoadedRecipe
    from buildtool.recipe.model import Recipe


@dataclasses.dataclass(frozen=True)
class RecipeChoice:
    """The recipe a run applies, and why."""

    loaded: LoadedRecipe | None
    """The recipe applied to the inputs, or None: only the checks that need no policy run."""
    reason: str
    """Why this recipe applies, or why none does, in a few words for the report."""


def named_recipe(path: Path) -> RecipeChoice:
    """``--recipe FILE``: applied to every input, whatever it is."""
    from buildtool.recipe.load import load_recipe

    return RecipeChoice(load_recipe(path, str(path)), "named with --recipe")


def searched_recipe(paths: Sequence[Path], cwd: Path) -> RecipeChoice:
    """The working folder's recipe, when every input is its project's; else none, and why."""
    top = cwd.resolve()
    if not any(_inside(path, top) for path in paths):
        return RecipeChoice(None, "the inputs lie outside the working folder; --recipe applies one")
    from buildtool.recipe.load import (
        DEFAULT_RECIPE_NAME,
        RECIPES_DIR,
        find_default_recipe,
        load_recipe,
    )

    found = find_default_recipe(cwd)  # several candidates: a usage error naming them
    if found is None:
        return RecipeChoice(
            None,
            f"none found in the working folder (./{DEFAULT_RECIPE_NAME}, [tool.buildtool] in "
            f"./pyproject.toml, ./{RECIPES_DIR}/*.toml)",
        )
    loaded = load_recipe(found, _shown(found, cwd))
    foreign = _not_the_projects(loaded.recipe, paths, top)
    if foreign:
        return RecipeChoice(None, f"{loaded.source} not applied: {foreign}; --recipe applies it")
    return RecipeChoice(loaded, _how_found(found, cwd))


def distribution_names(recipe: Recipe) -> tuple[str, ...]:
    """The distributions a recipe's project publishes: the full one and the split's two."""
    project = recipe.project
    return (
        project.name,
        project.runtime_distribution or f"{project.name}-runtime",
        project.addon_distribution or f"{project.name}-compiler",
    )


def _inside(path: Path, top: Path) -> bool:
    return path.resolve().is_relative_to(top)


def _shown(path: Path, cwd: Path) -> str:
    return str(path.relative_to(cwd)) if path.is_relative_to(cwd) else str(path)


def _not_the_projects(recipe: Recipe, paths: Sequence[Path], top: Path) -> str:
    """Why the first input that is not the recipe's project's is not, or ""."""
    from packaging.utils import canonicalize_name

    names = distribution_names(recipe)
    ours = {canonicalize_name(name) for name in names}
    for path in paths:
        if not _inside(path, top):
            return f"{path} lies outside its project {top}"
        distribution = _wheel_distribution(path)
        if distribution is not None and distribution not in ours:
            return (
                f"{path.name} is the distribution {distribution}, not one of the recipe's "
                f"({', '.join(names)})"
            )
    return ""


def _wheel_distribution(path: Path) -> str | None:
    """A ``.whl`` file's (normalized) distribution name; None for anything else."""
    if path.suffix != ".whl":
        return None
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        return str(parse_wheel_filename(path.name)[0])
    except InvalidWheelFilename:
        return path.name.split("-", 1)[0].lower()


def _how_found(found: Path, cwd: Path) -> str:
    from buildtool.recipe.load import DEFAULT_RECIPE_NAME, RECIPES_DIR

    if found.name == DEFAULT_RECIPE_NAME:
        others = sorted((cwd / RECIPES_DIR).glob("*.toml"))
        shadowed = f", before {_shown(others[0], cwd)}" if len(others) == 1 else ""
        if len(others) > 1:
            shadowed = f", before the {len(others)} ./{RECIPES_DIR}/*.toml"
        return f"found in the working folder: ./{DEFAULT_RECIPE_NAME} comes first{shadowed}"
    if found.name == "pyproject.toml":
        return "found in the working folder: [tool.buildtool] in ./pyproject.toml"
    return f"found in the working folder: the only ./{RECIPES_DIR}/*.toml"
