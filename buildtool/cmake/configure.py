"""``buildtool configure`` and ``buildtool build``: recipe -> generated CMake -> Ninja build."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

from buildtool import process
from buildtool.cmake import environment
from buildtool.cmake import run as cmake
from buildtool.cmake.collisions import claimed_targets, collision_message, collisions_in_output
from buildtool.cmake.generate import (
    CMAKELISTS,
    HELPERS,
    CMakeMode,
    includes_targets,
    is_generated,
    render_build_files,
)
from buildtool.cmake.stamp import (
    PENDING,
    ConfigureStamp,
    generated_digest,
    read_stamp,
    write_stamp,
)
from buildtool.cmake.toolchains import TOOLCHAIN_VARIABLE
from buildtool.errors import ChecksFailed, InputError, RecipeError, ToolFailed, UsageError
from buildtool.fsutil import GENERATED_MARKER, folder_lock, is_hand_written, write_atomic
from buildtool.packaging.distributions import PYPROJECT, full_project_dir, render_pyprojects
from buildtool.packaging.loader import render_loader
from buildtool.plan import LibraryPlan, LinkPlan, PluginPlan, make_plan
from buildtool.recipe.load import LoadedRecipe
from buildtool.recipe.sources import expand_sources
from buildtool.resources import read_templates

log = logging.getLogger("buildtool")

Variant = Literal["full", "runtime"]
VARIANTS: tuple[Variant, ...] = ("full", "runtime")


def plan_recipe(loaded: LoadedRecipe) -> LinkPlan:
    """Expand the recipe's sources on disk and make its link plan."""
    return make_plan(loaded.recipe, loaded.source, expand_sources(loaded))


def _without_sources(plan: LinkPlan) -> Iterator[str]:
    """Key paths of the targets a build cannot make: no sources (and, for a library, no
    object library either)."""
    yield from (
        f"libraries.{lib.name}" for lib in plan.libraries if not lib.sources and not lib.objects
    )
    yield from (
        f"plugins.{plugin.name}"
        for plugin in plan.plugins
        if not plugin.sources and not plugin.objects
    )
    yield from (f"objects.{obj.name}" for obj in plan.objects if not obj.sources)
    for exe in plan.executables:
        if not exe.sources:
            yield f"{'tests' if exe.is_test else 'executables'}.{exe.name}"
    yield from (f"extensions.{module.name}" for module in plan.extensions if not module.sources)


def _check_file_names(loaded: LoadedRecipe, plan: LinkPlan) -> None:
    """A generated build names a library's file ``lib<output-name>.so``: a ``file`` of another
    form (fine in a recipe that only verifies) cannot be built."""
    built: list[tuple[str, LibraryPlan | PluginPlan]] = [
        ("libraries", lib) for lib in plan.libraries
    ]
    built += [("plugins", plugin) for plugin in plan.plugins]
    for table, lib in built:
        if lib.file_name != f"lib{lib.output_name}.so":
            raise UsageError(
                f"{loaded.source}: {table}.{lib.name}.file: the generated build makes "
                f"lib{lib.output_name}.so, not {lib.file_name!r}; name the file lib<name>.so "
                "(or set output-name)"
            )


def generated_files(loaded: LoadedRecipe, plan: LinkPlan) -> dict[str, str]:
    """Every file buildtool generates into the project tree, by root-relative path."""
    empty = next(_without_sources(plan), None)
    if empty is not None:
        raise UsageError(
            f"{loaded.source}: {empty}.sources: empty; a recipe without sources can verify "
            "binaries built elsewhere but cannot generate a build"
        )
    _check_file_names(loaded, plan)
    check_package_dir(loaded)
    header_plan = _with_header_source(plan, loaded)
    _check_cmake_includes(loaded)
    mode = cmake_mode(loaded.root)
    files = render_build_files(header_plan, read_templates(), loaded.digest, mode)
    files.update(render_loader(header_plan, read_templates("loader")))
    files.update(
        render_pyprojects(
            header_plan,
            loaded.recipe.wheel,
            read_templates("packaging"),
            full_distribution_dir(loaded, plan),
        )
    )
    return files


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read it: {error}") from None


def cmake_mode(root: Path) -> CMakeMode:
    """``generated`` without a root CMakeLists.txt or with one buildtool wrote; else ``included``
    (the project's own CMakeLists.txt includes the generated targets)."""
    text = _read_text(root / CMAKELISTS)
    return "generated" if text is None or is_generated(text) else "included"


def _check_cmake_includes(loaded: LoadedRecipe) -> None:
    project = loaded.recipe.project
    for index, path in enumerate(project.cmake_include):
        if not (loaded.root / path).is_file():
            raise RecipeError(
                loaded.source,
                f"project.cmake-include[{index}]",
                f"expected a CMake file, found nothing at {loaded.root / path}",
            )
    for index, path in enumerate(project.headers):
        if not (loaded.root / path).is_dir():
            raise RecipeError(
                loaded.source,
                f"project.headers[{index}]",
                f"expected a folder of headers, found nothing at {loaded.root / path}",
            )
    for path, header in sorted(loaded.recipe.configured_headers.items()):
        if not (loaded.root / header.template).is_file():
            raise RecipeError(
                loaded.source,
                f'configured-headers."{path}".template',
                f"expected a template file, found nothing at {loaded.root / header.template}",
            )


def check_included_mode(loaded: LoadedRecipe) -> None:
    """In included mode the project's CMakeLists.txt must include the generated targets after
    its ``project()``; raise ``InputError`` naming the exact line to add otherwise."""
    cmakelists = loaded.root / CMAKELISTS
    text = _read_text(cmakelists)
    if text is None or is_generated(text):
        return
    cmake_file = loaded.recipe.project.cmake_file
    found = includes_targets(text, cmake_file)
    line = f"include({cmake_file})"
    if found is None:
        raise InputError(
            f"{cmakelists}: `{line}` comes before project(); move it after the project's own "
            "project(), option() and find_package() calls, then run `buildtool configure` again"
        )
    if not found:
        raise InputError(
            f"{cmakelists}: hand-written (no '{GENERATED_MARKER}' header), so buildtool writes "
            f"the targets to {cmake_file} and leaves this file alone; add the line `{line}` "
            "after its project(), option() and find_package() calls, then run `buildtool "
            "configure` again"
        )


def refuse_hand_written(loaded: LoadedRecipe, files: Mapping[str, str]) -> None:
    """Raise ``InputError`` when a generated file would replace one buildtool did not write."""
    for relative in sorted(files):
        path = loaded.root / relative
        text = _read_text(path) if path.is_file() else None
        if text is not None and not is_generated(text):
            raise InputError(
                f"{path}: exists and was not written by buildtool (no '{GENERATED_MARKER}' "
                "header in its first lines), and buildtool never replaces such a file; move it "
                "away or rename it (buildtool generates this one), then run `buildtool "
                "configure` again"
            )


def full_distribution_dir(loaded: LoadedRecipe, plan: LinkPlan) -> str:
    """Root-relative folder of the full distribution's pyproject.toml.

    The root, unless ``<root>/pyproject.toml`` is the project's own (hand-written, or holding the
    recipe): that file is never modified, and the full distribution goes under ``packaging/``.
    """
    return full_project_dir(is_hand_written(loaded.root / PYPROJECT), plan)


def check_package_dir(loaded: LoadedRecipe) -> None:
    """The loader goes into ``python-package-dir``: it must be the package's existing folder."""
    folder = loaded.recipe.project.python_package_dir
    if not folder:
        return
    path = loaded.root / folder
    if not (path / "__init__.py").is_file():
        found = "a folder without __init__.py" if path.is_dir() else "nothing"
        raise RecipeError(
            loaded.source,
            "project.python-package-dir",
            f"expected the folder of the Python package (holding its __init__.py), found "
            f"{found} at {path}",
        )


def _with_header_source(plan: LinkPlan, loaded: LoadedRecipe) -> LinkPlan:
    # The header names the recipe relative to the project root: the same text in every checkout.
    return dataclasses.replace(plan, recipe_source=loaded.source_from_root)


def stale_files(loaded: LoadedRecipe, files: Mapping[str, str]) -> list[str]:
    """Generated files whose content on disk differs from what the recipe gives now."""
    stale = []
    for relative, text in sorted(files.items()):
        path = loaded.root / relative
        try:
            current = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current != text:
            stale.append(relative)
    return stale


def _inside_root(loaded: LoadedRecipe, relative: str) -> Path:
    """Where a generated file goes; refused when a symlinked folder on the way leads out."""
    path = loaded.root / relative
    if not path.parent.resolve().is_relative_to(loaded.root.resolve()):
        raise RecipeError(
            loaded.source,
            "",
            f"{relative} would be written outside the project root {loaded.root} "
            "(a folder on the way is a symlink that leads out)",
        )
    return path


def write_generated(loaded: LoadedRecipe, files: Mapping[str, str]) -> list[str]:
    """Write the generated files that changed; return their root-relative paths. Nothing is
    written when a file in the way is hand-written or the project's CMakeLists.txt lacks the
    include of the targets."""
    check_included_mode(loaded)
    refuse_hand_written(loaded, files)
    changed = stale_files(loaded, files)
    for relative in changed:
        write_atomic(_inside_root(loaded, relative), files[relative])
        log.info("generated %s", loaded.root / relative)
    return changed


def check_generated(loaded: LoadedRecipe) -> None:
    """``configure --check``: raise ``ChecksFailed`` naming every stale generated file."""
    files = generated_files(loaded, plan_recipe(loaded))
    check_included_mode(loaded)
    refuse_hand_written(loaded, files)
    stale = stale_files(loaded, files)
    if stale:
        listed = ", ".join(str(loaded.root / name) for name in stale)
        raise ChecksFailed(
            f"generated files are stale for {loaded.source}: {listed}; run `buildtool configure`"
        )
    log.info("generated files are current for %s", loaded.source)


def variant_defines(plan: LinkPlan, variant: Variant) -> dict[str, str]:
    """Explicit ON/OFF for every optional library, so a reconfigure switches variants cleanly."""
    value = "ON" if variant == "full" else "OFF"
    return {switch: value for switch in plan.build_switches}


def python_defines(plan: LinkPlan) -> dict[str, str]:
    """Extension modules are built for the interpreter running buildtool unless ``-D`` says
    otherwise (``Python3_EXECUTABLE``); scikit-build-core sets it for wheel builds itself."""
    return {"Python3_EXECUTABLE": sys.executable} if plan.extensions else {}


def _remove_disabled_outputs(plan: LinkPlan, build_dir: Path, variant: Variant) -> None:
    # ninja never deletes outputs of targets that are gone: a runtime-only reconfigure of a full
    # build folder would otherwise leave a stale compiler library in lib/.
    if variant == "full":
        return
    stale_files = [build_dir / "lib" / lib.file_name for lib in plan.libraries if lib.optional]
    stale_files += [
        build_dir / plugin.folder / plugin.file_name for plugin in plan.plugins if plugin.optional
    ]
    for stale in stale_files:
        if stale.exists():
            stale.unlink()
            log.info("removed %s (not part of the %s variant)", stale, variant)


def _own_artifacts(plan: LinkPlan, targets: Sequence[cmake.Target]) -> tuple[str, ...]:
    """Build-folder-relative files of buildtool's libraries, executables and extensions."""
    own = {lib.target for lib in plan.libraries} | {exe.target for exe in plan.executables}
    own |= {module.target for module in plan.extensions}
    own |= {plugin.target for plugin in plan.plugins}
    return tuple(
        sorted(path for target in targets if target.name in own for path in target.artifacts)
    )


def _remove_outputs_no_longer_made(
    build_dir: Path, before: Iterable[str], now: Iterable[str]
) -> None:
    # A renamed library or a removed executable leaves its old file behind (ninja never deletes
    # outputs of targets that are gone), where verify-linkage and the wheel would find it.
    for relative in sorted(set(before) - set(now)):
        stale = build_dir / relative
        if stale.is_file() and stale.resolve().is_relative_to(build_dir.resolve()):
            stale.unlink()
            log.info("removed %s (the recipe no longer makes it)", stale)


def configure(
    loaded: LoadedRecipe,
    build_dir: Path,
    variant: Variant,
    extra_defines: Mapping[str, str] | None = None,
) -> tuple[cmake.Target, ...]:
    """Generate the CMake files, then configure ``build_dir`` with the PyPI cmake and Ninja;
    the folder's stamp records what it was configured from."""
    plan = plan_recipe(loaded)
    extra = cmake.environment_cmake_args(os.environ)
    _check_toolchain_kept(build_dir, extra_defines or {})
    files = generated_files(loaded, plan)
    write_generated(loaded, files)
    defines = {**variant_defines(plan, variant), **python_defines(plan), **(extra_defines or {})}
    with folder_lock(build_dir, "configure"):
        previous = read_stamp(build_dir)
        stamp = ConfigureStamp(
            str(loaded.path), variant, PENDING, previous.artifacts if previous else ()
        )
        write_stamp(build_dir, stamp)
        environment.start_afresh_if_environment_changed(build_dir)
        environment.start_afresh_if_source_moved(build_dir, loaded.root)
        cmake.write_file_api_query(build_dir)
        command = cmake.configure_command(loaded.root, build_dir, defines, extra)
        try:
            process.run([*command, *cmake.WHEEL_BUILD_UNSET])
        except ToolFailed as failure:
            refuse_target_collisions(loaded, plan, failure.output)
            raise
        environment.record_environment(build_dir)
        _remove_disabled_outputs(plan, build_dir, variant)
        targets = cmake.read_targets(build_dir)
        artifacts = _own_artifacts(plan, targets)
        _remove_outputs_no_longer_made(build_dir, stamp.artifacts, artifacts)
        digest = generated_digest(files)
        write_stamp(build_dir, dataclasses.replace(stamp, generated=digest, artifacts=artifacts))
    for target in targets:
        if target.type in ("SHARED_LIBRARY", "EXECUTABLE"):
            log.debug("target %s (%s): %s", target.name, target.type, ", ".join(target.artifacts))
    return targets


def _check_toolchain_kept(build_dir: Path, defines: Mapping[str, str]) -> None:
    """CMake reads a toolchain file on a folder's first configure only; a different one asked
    for later would be ignored silently, leaving the old compilers."""
    wanted = defines.get(TOOLCHAIN_VARIABLE)
    if wanted is None or not is_configured(build_dir):
        return
    kept = cmake.cached_values(build_dir, [TOOLCHAIN_VARIABLE]).get(TOOLCHAIN_VARIABLE, "")
    if not kept or Path(kept).resolve() != Path(wanted).resolve():
        first = f"toolchain {kept}" if kept else "the host's compilers"
        raise UsageError(
            f"{build_dir} was configured with {first}; CMake keeps a folder's toolchain, so "
            f"{wanted} needs another --build-dir (or remove {build_dir})"
        )


def refuse_target_collisions(loaded: LoadedRecipe, plan: LinkPlan, output: str) -> None:
    """Raise ``InputError`` when a failed configure's ``output`` says that the project's own
    CMake defines a target of a name buildtool's targets have (bad input, not a tool failure)."""
    claimed = {claim.target: claim.key for claim in claimed_targets(plan)}
    collisions = collisions_in_output(output, claimed, HELPERS)
    if collisions:
        prefix = loaded.recipe.project.target_prefix
        raise InputError(collision_message(loaded.source, prefix, collisions))


def reconfiguration(loaded: LoadedRecipe, build_dir: Path) -> str:
    """Why ``build_dir`` must be configured again before ``loaded`` builds in it (empty: it is
    current): the recipe, what its globs expand to or buildtool's templates changed since."""
    stamp = read_stamp(build_dir)
    if stamp is None:
        return "it has no record of the recipe it was configured from"
    command = cmake.cached_values(build_dir, ["CMAKE_COMMAND"]).get("CMAKE_COMMAND")
    if command and not Path(command).is_file():
        # a front end's isolated environment, gone: ninja could not regenerate with its cmake
        return f"the cmake that configured it ({command}) is gone"
    if stamp.recipe != str(loaded.path):
        return f"it was configured from {stamp.recipe}"
    if stamp.generated == PENDING:
        return "its last configure did not finish"
    if stamp.generated != generated_digest(generated_files(loaded, plan_recipe(loaded))):
        return f"{loaded.source} changed since it was configured"
    return ""


def folder_variant(build_dir: Path) -> Variant | None:
    """The variant ``build_dir`` was last configured with, from its stamp; None without one."""
    stamp = read_stamp(build_dir)
    if stamp is None:
        return None
    return "runtime" if stamp.variant == "runtime" else "full"


def remembered_recipe(build_dir: Path) -> Path | None:
    """The recipe file ``build_dir`` was configured from (None: no stamp); gone is an error."""
    stamp = read_stamp(build_dir)
    if stamp is None:
        return None
    path = Path(stamp.recipe)
    if not path.is_file():
        raise UsageError(
            f"{build_dir}: configured from the recipe {path}, which is gone; name the recipe "
            "with --recipe"
        )
    return path


def why_configure(loaded: LoadedRecipe, build_dir: Path, defines: Mapping[str, str]) -> str:
    """Why ``build_dir`` must be configured (again) for the full build with ``defines`` before
    a wheel is built from it; empty when it is configured so already."""
    if not is_configured(build_dir):
        return "it is not configured"
    reason = reconfiguration(loaded, build_dir)
    if reason:
        return reason
    if folder_variant(build_dir) != "full":
        return "it holds the runtime-only variant"
    changed = environment.changed_variables(build_dir)
    if changed:
        return f"{', '.join(changed)} changed since it was configured"
    cached = cmake.cached_values(build_dir, list(defines))
    differing = sorted(name for name, value in defines.items() if cached.get(name) != value)
    if differing:
        return f"{', '.join(differing)} differ from its cache"
    return ""


def ensure_configured(loaded: LoadedRecipe, build_dir: Path, defines: Mapping[str, str]) -> None:
    """Configure ``build_dir`` for the full build unless it is configured so already (what
    ``wheel`` needs before it builds wheels from the folder ``build`` compiled)."""
    reason = why_configure(loaded, build_dir, defines)
    if reason:
        log.info("configuring %s: %s", build_dir, reason)
        configure(loaded, build_dir, "full", defines)


def is_configured(build_dir: Path) -> bool:
    return (build_dir / "CMakeCache.txt").is_file() and (build_dir / "build.ninja").is_file()


def build(build_dir: Path, jobs: int | None = None, targets: Sequence[str] = ()) -> None:
    """Compile ``targets`` (none: every target) with ninja (``jobs`` at once; None: ninja's
    default), its progress lines streamed to the log."""
    with folder_lock(build_dir, "build"):
        process.run(cmake.build_command(build_dir, targets, jobs=jobs))
