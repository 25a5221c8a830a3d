"""buildtool's CMake targets against the project's own: which names the recipe claims, and the
collisions a CMake configure reports. Pure.

In included mode the project's CMake and the generated targets share one namespace. A project
target of the same name is a CMake error (policy CMP0002) that points into buildtool's helpers
or into the project's file, far from the recipe key that made the name. The generated targets
file checks the names before it creates any target (``bt_claim_targets``), which catches a
project target defined earlier; one defined later is CMake's own error. Both are read back
from the configure's output here, so the shell can refuse them as bad input naming the key.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping

from buildtool.plan import LinkPlan


@dataclasses.dataclass(frozen=True)
class ClaimedTarget:
    """A CMake target name the generated CMake creates."""

    target: str
    """The CMake target (``acme_core``, the ALIAS ``acme::core``)."""
    key: str
    """The recipe key that makes it (``libraries.core``)."""
    requires_on: tuple[str, ...]
    """CMake options that must be ON for it to be created (it is claimed only then)."""


@dataclasses.dataclass(frozen=True)
class TargetCollision:
    """A name both the recipe and the project's own CMake give a target."""

    target: str
    """The CMake target name."""
    key: str
    """The recipe key that makes buildtool's target."""
    where: str
    """Where the project's target comes from, as CMake said it: ``in source directory /p/src``
    (defined before the generated targets) or ``add_library at src/CMakeLists.txt:12`` (after)."""


def claimed_targets(plan: LinkPlan) -> Iterator[ClaimedTarget]:
    """Every target the generated CMake creates, in the order it creates them."""
    for ext in plan.externals:
        when = (ext.when,) if ext.when else ()
        yield ClaimedTarget(ext.target, f"externals.{ext.name}", when)
        if ext.pkg_config:
            yield ClaimedTarget(f"PkgConfig::{ext.target}", f"externals.{ext.name}", when)
    for obj in plan.objects:
        yield ClaimedTarget(obj.target, f"objects.{obj.name}", obj.requires_on)
    for lib in plan.libraries:
        key = f"libraries.{lib.name}"
        yield ClaimedTarget(lib.target, key, lib.requires_on)
        yield ClaimedTarget(f"{plan.project.name}::{lib.name}", key, lib.requires_on)
    for plugin in plan.plugins:
        yield ClaimedTarget(plugin.target, f"plugins.{plugin.name}", plugin.requires_on)
    for exe in plan.executables:
        table = "tests" if exe.is_test else "executables"
        yield ClaimedTarget(exe.target, f"{table}.{exe.name}", exe.requires_on)
    for module in plan.extensions:
        yield ClaimedTarget(module.target, f"extensions.{module.name}", module.requires_on)


_GUARD_ENTRY = re.compile(
    r'target "(?P<target>[^"]+)" of (?P<key>\S+) is defined by the project already '
    r"\((?P<where>in source directory [^)]*)\)"
)
"""An entry of the generated ``bt_claim_targets`` message (``buildtool.cmake``)."""

_CMAKE_DUPLICATE = re.compile(
    r"CMake Error at (?P<file>(?:(?!CMake Error at ).)+?):(?P<line>\d+) \((?P<command>\w+)\): "
    r"(?P=command) cannot "
    r'create (?:ALIAS |imported )?target "(?P<target>[^"]+)" because another target with the '
    r'same name already exists\.(?: The existing target is .+? created in source directory "'
    r'(?P<directory>[^"]+)"\.)?'
)
"""CMake's own error for a second target of one name (CMP0002)."""


def collisions_in_output(
    output: str, claimed: Mapping[str, str], helpers: str
) -> list[TargetCollision]:
    """The collisions with ``claimed`` (target -> recipe key) a failed configure reported.

    ``output`` is the configure's whole output: CMake wraps its messages at spaces, so runs of
    whitespace are read as one. ``helpers`` is the root-relative path of buildtool's helpers
    file: an error there means the project's target came first.
    """
    text = " ".join(output.split())
    found: dict[str, TargetCollision] = {}
    for match in _GUARD_ENTRY.finditer(text):
        if match["target"] in claimed:
            found.setdefault(
                match["target"],
                TargetCollision(match["target"], claimed[match["target"]], match["where"]),
            )
    for match in _CMAKE_DUPLICATE.finditer(text):
        target = match["target"]
        if target not in claimed or target in found:
            continue
        if match["file"].endswith(helpers) and match["directory"]:
            where = f"in source directory {match['directory']}"
        else:
            where = f"{match['command']} at {match['file']}:{match['line']}"
        found[target] = TargetCollision(target, claimed[target], where)
    return list(found.values())


def collision_message(source: str, prefix: str, collisions: list[TargetCollision]) -> str:
    """One paragraph naming each colliding key and target and the ways out."""
    listed = "; ".join(
        f"{collision.key} makes the CMake target {collision.target!r}, which the project's own "
        f"CMake defines too ({collision.where})"
        for collision in collisions
    )
    return (
        f"{source}: {listed}. A target name can be defined once only: rename the recipe's "
        f"table or set [project] library-prefix (now {prefix!r}: buildtool's targets are "
        "<library-prefix><table name>, a library's ALIAS <project name>::<table name>), and keep "
        "the file name the project's users link against with output-name; or rename the "
        "project's target. Then run `buildtool configure` again"
    )
