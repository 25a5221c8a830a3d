"""The linkage policy: what the recipe's plan says the binaries must and must not be. Pure.

A recipe may hold only a policy (libraries without sources), so a team can verify a wheel that
someone else built. Without any recipe, ``LinkagePolicy.empty()`` runs the generic checks only.
"""

from __future__ import annotations

import dataclasses
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from buildtool.linkage.elf import STATIC_INIT_PREFIX

if TYPE_CHECKING:  # a run without a recipe never loads the recipe and plan modules
    from buildtool.plan import ExecutablePlan, LibraryPlan, LinkPlan
    from buildtool.recipe_model import VerifySettings


@dataclasses.dataclass(frozen=True)
class ObjectRule:
    """An object library and the marks its code leaves in whichever library holds it."""

    name: str
    static_initializers: tuple[str, ...]
    """``.symtab`` static-init functions of its sources (unstripped evidence)."""
    registers: tuple[str, ...]
    """Its registration names (string constants: evidence that survives stripping)."""


@dataclasses.dataclass(frozen=True)
class LibraryRule:
    """What one project library must look like."""

    name: str
    file_name: str
    optional: bool
    required_needed: tuple[str, ...]
    """File names that must be in its DT_NEEDED (its direct links)."""
    forbidden_needed: tuple[str, ...]
    """Glob patterns that must match none of its DT_NEEDED entries."""
    registers: tuple[str, ...]
    """Registration names that must be in this library and no other."""
    objects: tuple[ObjectRule, ...]
    """Object libraries it owns."""
    size_budget: int | None
    """Largest allowed file size in bytes."""


@dataclasses.dataclass(frozen=True)
class ExecutableRule:
    """What one project executable or test must look like."""

    name: str
    required_needed: tuple[str, ...]
    """File names that must stay in DT_NEEDED: its ``no-as-needed`` libraries and every library
    it links that registers names."""
    allowed_project_needed: tuple[str, ...]
    """The only project libraries (glob patterns) it may need."""
    forbidden_needed: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class LinkagePolicy:
    """Everything the checks that need a recipe know."""

    source: str
    """The recipe it came from, or "" for none."""
    package: str
    """Import package: installed libraries belong in ``<package>/lib/``."""
    libraries: tuple[LibraryRule, ...]
    executables: tuple[ExecutableRule, ...]
    removed: tuple[str, ...]
    """Legacy file names that must not exist any more."""
    hardening: bool

    @staticmethod
    def empty() -> LinkagePolicy:
        return LinkagePolicy(
            source="", package="", libraries=(), executables=(), removed=(), hardening=False
        )

    @property
    def registration_names(self) -> tuple[str, ...]:
        return tuple(name for lib in self.libraries for name in lib.registers)

    @property
    def project_files(self) -> frozenset[str]:
        return frozenset(lib.file_name for lib in self.libraries)

    def library_by_file(self, file_name: str) -> LibraryRule | None:
        return next((lib for lib in self.libraries if lib.file_name == file_name), None)

    def executable_by_file(self, file_name: str) -> ExecutableRule | None:
        return next((exe for exe in self.executables if exe.name == file_name), None)


def static_initializer_symbol(source: str) -> str:
    """GCC and Clang name a TU's static-init function after the source file's base name."""
    return STATIC_INIT_PREFIX + PurePosixPath(source).name


def _library_rule(plan: LinkPlan, lib: LibraryPlan, verify: VerifySettings) -> LibraryRule:
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
        objects=tuple(
            ObjectRule(
                name=obj.name,
                static_initializers=tuple(static_initializer_symbol(src) for src in obj.sources),
                registers=obj.registers,
            )
            for obj in plan.objects
            if obj.owner == lib.name
        ),
        size_budget=None if budget_mb is None else int(budget_mb * 1_000_000),
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


def policy_from_plan(plan: LinkPlan, verify: VerifySettings) -> LinkagePolicy:
    """The policy a recipe implies: links, ownership, registrations, budgets."""
    return LinkagePolicy(
        source=plan.recipe_source,
        package=plan.project.package,
        libraries=tuple(_library_rule(plan, lib, verify) for lib in plan.libraries),
        executables=tuple(_executable_rule(plan, exe, verify) for exe in plan.executables),
        removed=verify.removed,
        hardening=verify.hardening,
    )
