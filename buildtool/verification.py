"""The recipe's plan as a linkage policy, and the one wheel verification of ``wheel`` and ``ci``.

This module sits above both ``linkage`` (which knows nothing of recipes or plans) and
``plan``/``recipe``. A run without a recipe never imports the recipe and plan modules.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from buildtool.errors import ChecksFailed
from buildtool.linkage.binaries import STATIC_INIT_PREFIX
from buildtool.linkage.checks.policy import (
    ExecutableRule,
    LibraryRule,
    LinkagePolicy,
    ObjectRule,
    PluginRule,
)
from buildtool.linkage.inputs.collect import normalized
from buildtool.linkage.verify import verify_paths

if TYPE_CHECKING:
    from buildtool.linkage.report.model import Report
    from buildtool.plan import ExecutablePlan, LibraryPlan, LinkPlan, PluginPlan
    from buildtool.recipe.load import LoadedRecipe
    from buildtool.recipe.model import VerifySettings


log = logging.getLogger("buildtool")


class WheelsRejected(ChecksFailed):
    """verify-linkage found errors in the staged wheels; nothing was published."""

    def __init__(self, report: Report) -> None:
        from buildtool.linkage.report.text import render_text  # with the checks: see verify

        super().__init__("verify-linkage failed on the wheels:\n" + render_text(report))
        self.report = report


def static_initializer_symbol(source: str) -> str:
    """GCC and Clang name a TU's static-init function after the source file's base name."""
    return STATIC_INIT_PREFIX + PurePosixPath(source).name


def _library_rule(plan: LinkPlan, lib: LibraryPlan, verify: VerifySettings) -> LibraryRule:
    from buildtool.plan import library_distributions

    files = {other.name: other.file_name for other in plan.libraries}
    forbidden = list(verify.forbidden_needed.get(lib.name, ()))
    if not lib.optional:
        # The runtime may never need the compiler: required libraries never need optional ones.
        forbidden += [other.file_name for other in plan.libraries if other.optional]
    budget_mb = verify.size_budget_mb.get(lib.name)
    return LibraryRule(
        name=lib.name,
        file_name=lib.file_name,
        optional=lib.optional,
        required_needed=tuple(files[name] for name in lib.links),
        forbidden_needed=tuple(forbidden),
        registers=lib.registers,
        objects=_object_rules(plan, lib.name),
        size_budget=None if budget_mb is None else int(budget_mb * 1_000_000),
        max_growth_percent=verify.max_growth_percent.get(lib.name),
        static_initializers=tuple(static_initializer_symbol(src) for src in lib.sources),
        distributions=tuple(
            normalized(name) for name in library_distributions(plan)[lib.file_name]
        ),
    )


def _object_rules(plan: LinkPlan, owner: str) -> tuple[ObjectRule, ...]:
    return tuple(
        ObjectRule(
            name=obj.name,
            static_initializers=tuple(static_initializer_symbol(src) for src in obj.sources),
            registers=obj.registers,
        )
        for obj in plan.objects
        if obj.owner == owner
    )


def _plugin_rule(plan: LinkPlan, plugin: PluginPlan, verify: VerifySettings) -> PluginRule:
    host = plan.library(plugin.host)
    return PluginRule(
        name=plugin.name,
        file_name=plugin.file_name,
        host=host.file_name,
        folder=host.plugin_dir,
        alternatives=plugin.alternatives,
        registers=plugin.registers,
        required_needed=tuple(plan.library(name).file_name for name in plugin.links),
        forbidden_needed=tuple(verify.forbidden_needed.get(plugin.name, ())),
        objects=_object_rules(plan, plugin.name),
        host_global=host.load == "global",
        optional=plugin.optional,
        static_initializers=tuple(static_initializer_symbol(src) for src in plugin.sources),
    )


def _executable_rule(plan: LinkPlan, exe: ExecutablePlan, verify: VerifySettings) -> ExecutableRule:
    files = {lib.name: lib.file_name for lib in plan.libraries}
    allowed = exe.allowed_needed or tuple(files[name] for name in exe.link_closure)
    # A linked library that registers names is needed for its static initializers even when no
    # symbol of it is referenced: --as-needed dropping it is the bug, with or without the recipe
    # asking for --no-as-needed.
    registering = [name for name in exe.links if plan.library(name).registers]
    required = dict.fromkeys([*exe.no_as_needed, *registering])
    return ExecutableRule(
        name=exe.name,
        required_needed=tuple(files[name] for name in required),
        allowed_project_needed=allowed,
        forbidden_needed=tuple(verify.forbidden_needed.get(exe.name, ())),
    )


def policy_from_plan(
    plan: LinkPlan, verify: VerifySettings, option_values: Mapping[str, bool] | None = None
) -> LinkagePolicy:
    """The policy a recipe implies: links, ownership, registrations, budgets. ``option_values`` are
    the recipe options' values of the build checked (defaults otherwise): what an OFF option
    leaves out (``when``) is expected nowhere."""
    from buildtool.plan import with_option_values

    plan = with_option_values(plan, option_values)
    return LinkagePolicy(
        source=plan.recipe_source,
        package=plan.project.package,
        libraries=tuple(_library_rule(plan, lib, verify) for lib in plan.libraries),
        executables=tuple(_executable_rule(plan, exe, verify) for exe in plan.executables),
        removed=verify.removed,
        hardening=verify.hardening,
        host_provided=verify.host_provided,
        plugins=tuple(_plugin_rule(plan, plugin, verify) for plugin in plan.plugins),
    )


def plan_for_policy(loaded: LoadedRecipe) -> LinkPlan:
    """The recipe's plan as the checks need it. A policy-only recipe describes binaries built
    elsewhere: there are no sources to expand, and no source tree is needed."""
    from buildtool.plan import make_plan
    from buildtool.recipe.sources import expand_sources

    recipe = loaded.recipe
    has_sources = any(lib.sources for lib in recipe.libraries.values()) or any(
        plugin.sources for plugin in recipe.plugins.values()
    )
    sources = expand_sources(loaded) if has_sources else {}
    return make_plan(recipe, loaded.source, sources)


def policy_for_recipe(
    loaded: LoadedRecipe | None,
    option_values: Mapping[str, bool] | None = None,
    reason: str = "",
) -> LinkagePolicy:
    """The recipe's policy; no recipe gives the empty policy (generic checks only). ``reason``
    says why this recipe applies, or why none does; the report carries it."""
    if loaded is None:
        return dataclasses.replace(LinkagePolicy.empty(), source_reason=reason)
    policy = policy_from_plan(plan_for_policy(loaded), loaded.recipe.verify, option_values)
    return dataclasses.replace(policy, source_reason=reason)


def wheel_verifier(
    loaded: LoadedRecipe,
    on_report: Callable[[Report], None],
    option_values: Mapping[str, bool] | None = None,
    *,
    with_graph: bool = False,
) -> Callable[..., None]:
    """What ``build_wheels`` runs on the staged wheels before it publishes them, for ``buildtool
    wheel`` and ``buildtool ci`` alike: verify-linkage on all wheels of the variant together (as
    they are installed), the report handed to ``on_report`` whether it passed or not, and
    ``WheelsRejected`` raised when any check failed. The report names the wheels where they
    are published (``published``), not in the staging folder that is gone after the run."""

    def verify(wheels: Sequence[Path], plan: LinkPlan, /, published: Sequence[Path] = ()) -> None:
        policy = dataclasses.replace(
            policy_from_plan(plan, loaded.recipe.verify, option_values),
            source_reason="the recipe the wheels were built from",
        )
        report = verify_paths(wheels, policy, with_graph=with_graph)
        from buildtool.linkage.report.model import renamed_inputs  # imported by the checks

        names = {str(old): str(new) for old, new in zip(wheels, published, strict=False)}
        report = renamed_inputs(report, names)
        on_report(report)
        if report.failed:
            raise WheelsRejected(report)

    return verify
