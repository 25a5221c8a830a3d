"""What the backend's hooks do: the recipe's distribution built by scikit-build-core from the
shared build tree, then checked and verified; the project's sdist.

Errors never leave as tracebacks: a ``BuildtoolError`` is printed to stderr as one message and
ends the hook's process with its exit code (2: bad input, 1: a check or a tool failed), which
the front end reports as a failed build after the hook's output.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import logging
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from buildtool.errors import BuildtoolError, ChecksFailed, UsageError

if TYPE_CHECKING:
    from buildtool.linkage.report.model import Report
    from buildtool.packaging.distributions import Distribution, WheelVariant
    from buildtool.packaging.wheel import WheelTree
    from buildtool.plan import LinkPlan
    from buildtool.recipe.load import LoadedRecipe

log = logging.getLogger("buildtool")

PREFIX = "buildtool."
SETTING_NAMES = ("buildtool.distribution", "buildtool.build-dir", "buildtool.recipe")
DEFINE_PREFIX = "cmake.define."


@dataclasses.dataclass(frozen=True)
class BackendSettings:
    """The backend's config settings (``-C name=value``)."""

    distribution: str = "full"
    """``full``, ``runtime``, ``addon`` or a distribution's name."""
    build_dir: str = "build"
    """The shared build tree, relative to the project root."""
    recipe: str = ""
    """The recipe, relative to the project root; empty: the default lookup."""
    defines: tuple[tuple[str, str], ...] = ()
    """``cmake.define.NAME=VALUE`` settings: CMake cache entries of the build tree."""
    passed: tuple[tuple[str, str], ...] = ()
    """Every other setting, handed to scikit-build-core as it is."""


def _one(name: str, value: str | list[str]) -> str:
    if isinstance(value, list):
        if len(value) != 1:
            raise UsageError(f"-C {name}: given {len(value)} times; give it once")
        return value[0]
    return value


def parse_settings(config_settings: Mapping[str, str | list[str]] | None) -> BackendSettings:
    """The front end's config settings; an unknown ``buildtool.*`` one is a usage error."""
    values: dict[str, str] = {}
    defines, passed = [], []
    for name, value in (config_settings or {}).items():
        if name.startswith(PREFIX):
            if name not in SETTING_NAMES:
                close = difflib.get_close_matches(name, SETTING_NAMES, n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                known = ", ".join(SETTING_NAMES)
                raise UsageError(f"-C {name}: unknown setting (known: {known}){hint}")
            values[name[len(PREFIX) :].replace("-", "_")] = _one(name, value)
        elif name.startswith(DEFINE_PREFIX):
            defines.append((name[len(DEFINE_PREFIX) :], _one(name, value)))
        else:
            passed.append((name, _one(name, value)))
    return BackendSettings(**values, defines=tuple(defines), passed=tuple(passed))


@contextlib.contextmanager
def reported_errors() -> Iterator[None]:
    """A ``BuildtoolError`` as one message on stderr and the process's exit code."""
    from buildtool.console import install_log_handler

    install_log_handler(sys.stderr, 0)
    try:
        yield
    except BuildtoolError as error:
        print(f"buildtool.backend: error: {error}", file=sys.stderr, flush=True)
        raise SystemExit(error.exit_code) from None


@contextlib.contextmanager
def working_directory(folder: Path) -> Iterator[None]:
    """scikit-build-core reads ``pyproject.toml`` from the current folder."""
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def load_project(settings: BackendSettings) -> LoadedRecipe:
    """The recipe of the project in the current folder (where front ends run the hooks)."""
    from buildtool.recipe.load import NO_RECIPE_FOUND, find_default_recipe, load_recipe

    root = Path.cwd()
    path = root / settings.recipe if settings.recipe else find_default_recipe(root)
    if path is None:
        raise UsageError(f"{NO_RECIPE_FOUND} (or -C buildtool.recipe=FILE)")
    if not path.is_file():
        raise UsageError(f"-C buildtool.recipe={settings.recipe}: no such file in {root}")
    return load_recipe(path, str(path.relative_to(root) if path.is_relative_to(root) else path))


def choose_distribution(
    plan: LinkPlan, full_dir: str, wanted: str
) -> tuple[Distribution, WheelVariant]:
    """The distribution ``-C buildtool.distribution`` names, and the variant it belongs to."""
    from buildtool.packaging.distributions import full_distribution, has_split, split_distributions
    from buildtool.plan import split_distribution_names

    full = full_distribution(plan, full_dir)
    split = split_distributions(plan) if has_split(plan) else ()
    aliases: dict[str, tuple[Distribution, WheelVariant]] = {
        "full": (full, "full"),
        full.name: (full, "full"),
    }
    roles = dict(zip(split_distribution_names(plan.project), ("runtime", "addon"), strict=True))
    for dist in split:
        if dist.name in roles:
            aliases[roles[dist.name]] = (dist, "split")
        aliases[dist.name] = (dist, "split")
    if wanted in aliases:
        return aliases[wanted]
    choices = ", ".join(aliases)
    what = "" if split else " (the recipe has no optional library: no split)"
    raise UsageError(f"-C buildtool.distribution={wanted}: expected one of {choices}{what}")


def requirements(config_settings: Mapping[str, str | list[str]] | None) -> list[str]:
    """pybind11 when the distribution's extension modules need it."""
    with reported_errors():
        from buildtool.cmake import configure
        from buildtool.packaging.distributions import extensions_of

        settings = parse_settings(config_settings)
        loaded = load_project(settings)
        plan = configure.plan_recipe(loaded)
        full_dir = configure.full_distribution_dir(loaded, plan)
        dist, _ = choose_distribution(plan, full_dir, settings.distribution)
        uses = any(module.binding == "pybind11" for module in extensions_of(plan, dist))
        return ["pybind11>=2.10"] if uses else []


def build_wheel(wheel_directory: str, config_settings: Mapping[str, str | list[str]] | None) -> str:
    with reported_errors():
        return _build_wheel(Path(wheel_directory).resolve(), parse_settings(config_settings))


SKBUILD_INFO = ".skbuild-info.json"
"""scikit-build-core's record of the environment that configured a folder: in a new isolated
environment it differs, and scikit-build-core then deletes the folder's cache and objects."""


def _build_wheel(wheel_directory: Path, settings: BackendSettings) -> str:
    from buildtool.cmake import configure
    from buildtool.cmake.run import parallel_jobs
    from buildtool.packaging import wheel
    from buildtool.packaging.distributions import required_distributions, variant_distributions

    loaded = load_project(settings)
    plan = configure.plan_recipe(loaded)
    full_dir = configure.full_distribution_dir(loaded, plan)
    dist, variant = choose_distribution(plan, full_dir, settings.distribution)
    jobs = parallel_jobs(None, os.environ)
    request = wheel.WheelRequest(
        loaded, variant, wheel_directory, Path.cwd() / settings.build_dir, defines=settings.defines,
        jobs=jobs,
    )  # fmt: skip
    dists = variant_distributions(plan, variant, full_dir)
    trees = wheel.wheel_trees(request, plan, dists)
    off = wheel.switched_off(plan, dist, trees[dist.name])
    values = trees[dist.name].option_values
    if off:
        raise UsageError(f"-C buildtool.distribution={settings.distribution}: no wheel: {off}")
    make = functools.partial(_scikit_build, plan, root=loaded.root, jobs=jobs, settings=settings)
    built = make(dist, trees[dist.name], dest=wheel_directory)
    if dist.ships_package:
        verify_built(loaded, plan, dist, built, [built], option_values=values)
        return built.name
    # an add-on is verified as it is installed: beside the wheels it requires (made from the
    # same trees, nothing compiled), which ship the libraries it needs
    with tempfile.TemporaryDirectory(prefix="buildtool-runtime-") as scratch:
        beside = [
            make(other, trees[other.name], dest=Path(scratch))
            for other in required_distributions(dist, dists)
        ]
        verify_built(loaded, plan, dist, built, [*beside, built], option_values=values)
    return built.name


def _scikit_build(
    plan: LinkPlan,
    dist: Distribution,
    tree: WheelTree,
    *,
    root: Path,
    jobs: int | None,
    settings: BackendSettings,
    dest: Path,
) -> Path:
    """scikit-build-core's own ``build_wheel`` for ``dist``, from ``tree``."""
    from scikit_build_core.build import build_wheel as scikit_build_wheel

    from buildtool.packaging import wheel

    # buildtool's own stamp already says the folder was configured from this project
    (tree.folder / SKBUILD_INFO).unlink(missing_ok=True)
    skb_settings: dict[str, str | list[str]] = {
        **wheel.wheel_settings(plan, dist, tree, jobs),
        **dict(settings.passed),
    }
    log.info("building the %s wheel from %s", dist.name, tree.folder)
    with working_directory(root / dist.project_dir):
        name = scikit_build_wheel(str(dest), skb_settings)
    return dest / name


def verify_built(
    loaded: LoadedRecipe,
    plan: LinkPlan,
    dist: Distribution,
    built: Path,
    together: list[Path],
    *,
    option_values: Mapping[str, bool],
) -> None:
    """The wheel's files (``<package>/lib/`` laid out) and verify-linkage on it, as built with
    the recipe options' ``option_values``; a wheel that fails either is deleted and the report
    printed."""
    from buildtool.linkage.report.text import demangled_names, render_text
    from buildtool.packaging import wheel
    from buildtool.verification import WheelsRejected, wheel_verifier

    try:
        package_files = wheel.python_package_files(loaded)
        expected = wheel.expected_files(plan, dist, package_files, option_values)
        wheel.check_wheel_contents(built, expected, plan)
        reports: list[Report] = []
        verify = wheel_verifier(loaded, reports.append, option_values)
        verify(together, plan)
    except WheelsRejected as rejected:
        built.unlink(missing_ok=True)
        text = render_text(rejected.report, names=demangled_names(rejected.report))
        print(text, file=sys.stderr, flush=True)
        raise ChecksFailed(f"{built.name}: verify-linkage failed (the report is above)") from None
    except BuildtoolError:
        built.unlink(missing_ok=True)
        raise
    report = reports[0]
    log.info(
        "verify-linkage: %s: %d files checked: %d errors, %d warnings",
        built.name,
        report.files_checked,
        report.count("error"),
        report.count("warning"),
    )


def build_sdist(sdist_directory: str, config_settings: Mapping[str, str | list[str]] | None) -> str:
    with reported_errors():
        from buildtool.backend.sdist import write_sdist
        from buildtool.cmake import configure

        settings = parse_settings(config_settings)
        loaded = load_project(settings)
        plan = configure.plan_recipe(loaded)
        skip = [Path.cwd() / settings.build_dir, Path(sdist_directory)]
        return write_sdist(loaded, plan, Path(sdist_directory).resolve(), skip).name
