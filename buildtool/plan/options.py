"""The plan as a build with given option values has it (``when`` switches OFF leave targets
and their registrations out), and option values read from CMake's ``-D`` entries."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Set
from typing import TypeVar

from buildtool.plan.model import LibraryPlan, LinkPlan, PluginPlan


def option_values(plan: LinkPlan, given: Mapping[str, bool] | None = None) -> dict[str, bool]:
    """Every recipe option's value: its default, unless ``given`` (a configure's) sets it."""
    values = {option.name: option.default for option in plan.options}
    values.update({name: on for name, on in (given or {}).items() if name in values})
    return values


def with_option_values(plan: LinkPlan, given: Mapping[str, bool] | None = None) -> LinkPlan:
    """The plan as a build with these option values has it: every library, object library and
    executable whose ``when`` (or whose links' ``when``) is OFF left out, with its
    registrations, so none of them is expected anywhere."""
    off = frozenset(name for name, on in option_values(plan, given).items() if not on)
    if not off:
        return plan
    objects = tuple(obj for obj in plan.objects if off.isdisjoint(obj.requires_on))
    kept_objects = {obj.name for obj in objects}
    dropped = {
        name for obj in plan.objects if obj.name not in kept_objects for name in obj.registers
    }
    dropped.update(
        name
        for lib in plan.libraries
        if not off.isdisjoint(lib.requires_on)
        for name in lib.registers
    )
    libraries = tuple(
        _without(lib, kept_objects, dropped)
        for lib in plan.libraries
        if off.isdisjoint(lib.requires_on)
    )
    return dataclasses.replace(
        plan,
        libraries=libraries,
        objects=objects,
        executables=tuple(exe for exe in plan.executables if off.isdisjoint(exe.requires_on)),
        extensions=tuple(mod for mod in plan.extensions if off.isdisjoint(mod.requires_on)),
        plugins=tuple(
            _without(plugin, kept_objects, dropped)
            for plugin in plan.plugins
            if off.isdisjoint(plugin.requires_on)
        ),
        registrations=_kept_registrations(plan, {lib.name for lib in libraries}, dropped),
    )


_Owner = TypeVar("_Owner", LibraryPlan, PluginPlan)


def _without(lib: _Owner, kept_objects: Set[str], dropped: Set[str]) -> _Owner:
    """A built library (or plugin) without its left-out object libraries and
    registrations."""
    return dataclasses.replace(
        lib,
        objects=tuple(name for name in lib.objects if name in kept_objects),
        registers=tuple(name for name in lib.registers if name not in dropped),
    )


def _kept_registrations(
    plan: LinkPlan, kept_libraries: Set[str], dropped: Set[str]
) -> tuple[tuple[str, str], ...]:
    """The registrations still expected: held by a built library, not left out."""
    return tuple(
        (name, lib)
        for name, lib in plan.registrations
        if lib in kept_libraries and name not in dropped
    )


CMAKE_TRUE = ("1", "ON", "YES", "TRUE", "Y")
"""What CMake reads as a true boolean (upper-cased), in a cache entry or a ``-D``."""


def option_values_from_defines(defines: Iterable[tuple[str, str]]) -> dict[str, bool]:
    """``-D NAME=VALUE`` entries as option values, read the way CMake reads booleans (entries
    that are not recipe options are ignored by ``with_option_values``)."""
    return {name: value.strip().upper() in CMAKE_TRUE for name, value in defines}
