"""One check-cmake run: code model (asked for when needed) + policy -> report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from buildtool.cmakecheck.query import load_codemodel, toolchain_as_needed
from buildtool.cmakecheck.report import CmakeReport, graph_entries
from buildtool.cmakecheck.rules import check_codemodel, make_graph

if TYPE_CHECKING:
    from buildtool.recipe.load import LoadedRecipe


def check_build_dir(
    build_dir: Path, loaded: LoadedRecipe | None, recipe_reason: str = ""
) -> CmakeReport:
    """check-cmake on a configured build folder, with the recipe's policy when there is one
    (``recipe_reason``: why it applies, or why none does)."""
    from buildtool.cmakecheck.policy import policy_for_recipe

    policy = policy_for_recipe(loaded) if loaded is not None else None
    model = load_codemodel(build_dir)
    as_needed = toolchain_as_needed(model.compiler("CXX") or model.compiler("C"))
    return CmakeReport(
        build_dir=str(build_dir),
        recipe=loaded.source if loaded is not None else "",
        targets=len(model.targets),
        findings=check_codemodel(model, policy, as_needed),
        graph=graph_entries(make_graph(model)),
        as_needed_default=as_needed,
        recipe_reason=recipe_reason,
    )
