"""What a recipe says the code model must show: the recipe's plan, reduced to file names."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from buildtool.plan import LinkPlan
    from buildtool.recipe.load import LoadedRecipe
    from buildtool.recipe.model import VerifySettings


@dataclasses.dataclass(frozen=True)
class LibraryPolicy:
    """One library of the split."""

    name: str
    """Recipe name."""
    file_name: str
    """File name of the built library: how its CMake target is found."""
    links: tuple[str, ...]
    """File names of the libraries it must link."""
    objects: tuple[str, ...]
    """Object libraries it owns (recipe names, matched against CMake target names)."""
    forbidden: tuple[str, ...]
    """File-name patterns it may never link (every optional library when it is required)."""


@dataclasses.dataclass(frozen=True)
class ExecutablePolicy:
    """One executable or test."""

    name: str
    """Recipe name, also its file name."""
    links: tuple[str, ...]
    """File names of the libraries it must link."""
    no_as_needed: tuple[str, ...]
    """File names it must keep in DT_NEEDED although it references nothing of theirs."""
    forbidden: tuple[str, ...]
    """File-name patterns it may never link."""


@dataclasses.dataclass(frozen=True)
class PluginPolicy:
    """One plugin: a module its host library opens at run time."""

    name: str
    """Recipe name."""
    file_name: str
    """File name of the built module: how its CMake target is found."""
    host: str
    """File name of the library that opens it."""
    alternatives: str
    """Its group of alternatives (one resident at a time); empty: none."""
    links: tuple[str, ...]
    """File names of the libraries it must link."""
    objects: tuple[str, ...]
    """Object libraries it owns."""
    forbidden: tuple[str, ...]
    """File-name patterns it may never link."""

    def alternative_to(self, other: PluginPolicy) -> bool:
        """Whether ``other`` is an alternative to it: never resident beside it."""
        same = (self.host, self.alternatives) == (other.host, other.alternatives)
        return bool(self.alternatives) and same and self.name != other.name


@dataclasses.dataclass(frozen=True)
class CmakePolicy:
    """Everything the checks that need a recipe know."""

    source: str
    """The recipe, as messages name it."""
    libraries: tuple[LibraryPolicy, ...]
    """The split's libraries; the Python loader loads them all into one process."""
    executables: tuple[ExecutablePolicy, ...]
    """Executables and tests."""
    removed: tuple[str, ...]
    """Legacy file names no target may build any more."""
    plugins: tuple[PluginPolicy, ...] = ()
    """Modules the libraries open at run time."""

    @property
    def library_files(self) -> frozenset[str]:
        return frozenset(lib.file_name for lib in self.libraries)

    def object_owner(self, name: str) -> LibraryPolicy | PluginPolicy | None:
        owners: tuple[LibraryPolicy | PluginPolicy, ...] = (*self.libraries, *self.plugins)
        return next((owner for owner in owners if name in owner.objects), None)

    def plugin_by_file(self, file_names: tuple[str, ...]) -> PluginPolicy | None:
        """The plugin a target building ``file_names`` is, or None."""
        return next((p for p in self.plugins if p.file_name in file_names), None)


def policy_from_plan(plan: LinkPlan, verify: VerifySettings) -> CmakePolicy:
    """The policy a recipe's plan implies."""
    files = {lib.name: lib.file_name for lib in plan.libraries}
    optional = [lib.file_name for lib in plan.libraries if lib.optional]
    libraries = tuple(
        LibraryPolicy(
            name=lib.name,
            file_name=lib.file_name,
            links=tuple(files[name] for name in lib.links),
            objects=lib.objects,
            forbidden=(
                *verify.forbidden_needed.get(lib.name, ()),
                *([] if lib.optional else optional),
            ),
        )
        for lib in plan.libraries
    )
    executables = tuple(
        ExecutablePolicy(
            name=exe.name,
            links=tuple(files[name] for name in exe.links),
            no_as_needed=tuple(files[name] for name in exe.no_as_needed),
            forbidden=tuple(verify.forbidden_needed.get(exe.name, ())),
        )
        for exe in plan.executables
    )
    plugins = tuple(
        PluginPolicy(
            name=plugin.name,
            file_name=plugin.file_name,
            host=files[plugin.host],
            alternatives=plugin.alternatives,
            links=tuple(files[name] for name in plugin.links),
            objects=plugin.objects,
            forbidden=tuple(verify.forbidden_needed.get(plugin.name, ())),
        )
        for plugin in plan.plugins
    )
    return CmakePolicy(plan.recipe_source, libraries, executables, verify.removed, plugins)


def policy_for_recipe(loaded: LoadedRecipe) -> CmakePolicy:
    """The recipe's policy; a policy-only recipe (no sources) needs no source tree."""
    from buildtool.verification import plan_for_policy

    return policy_from_plan(plan_for_policy(loaded), loaded.recipe.verify)
