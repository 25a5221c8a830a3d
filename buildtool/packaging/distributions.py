"""Which distributions a variant makes and their generated pyproject.toml files. Pure.

A distribution's name cannot vary by a scikit-build-core config setting, so each distribution has
its own pyproject.toml, generated into the project tree:

- ``full``: ``<name>``, everything, from ``<root>/pyproject.toml`` (also what a plain
  ``pip install <root>`` builds) -- unless the project has its own ``<root>/pyproject.toml``
  (hand-written, or holding the recipe): that file is never touched, and the full distribution's
  goes to ``<root>/packaging/<name>/pyproject.toml`` instead;
- ``split``: ``<name>-runtime`` (the Python package and the required libraries, built with every
  optional library switched off) and ``<name>-compiler`` (only the optional libraries, requiring
  ``<name>-runtime==<version>``), from ``<root>/packaging/<distribution>/pyproject.toml`` with
  ``cmake.source-dir`` pointing back at the root. The two never own the same file, so
  uninstalling the add-on leaves a working runtime-only install. A plugin with a
  ``distribution`` of its own ships in that wheel instead (plugins naming one share it), which
  requires the wheel of its host at the same version, and the add-on too when the plugin is
  optional; the add-on exists only when there is an optional library.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Literal

from buildtool import __version__
from buildtool.cmake.generate import fill
from buildtool.plan import ExtensionPlan, LinkPlan, PluginPlan, split_distribution_names
from buildtool.recipe.model import WheelSettings

WheelVariant = Literal["full", "split"]
WHEEL_VARIANTS: tuple[WheelVariant, ...] = ("full", "split")

BUILD_BACKEND = "scikit_build_core.build"
"""The engine: scikit-build-core builds every distribution (``buildtool wheel`` calls it)."""
BUILDTOOL_BACKEND = "buildtool.backend"
"""buildtool's PEP 517 backend: what the project's root pyproject.toml names, so that pip, build
and uv make every distribution (``-C buildtool.distribution=runtime|addon``)."""
BUILDTOOL_REQUIREMENT = f"buildtool-split>={__version__}"
"""The distribution that holds ``buildtool.backend``."""
PYTHON_COMPONENT = "python"
"""The CMake install component of the Python package (``bt_python_package``)."""

PYPROJECT = "pyproject.toml"
PACKAGING_DIR = "packaging"


@dataclasses.dataclass(frozen=True)
class Distribution:
    """One wheel to build, and everything that decides its contents."""

    name: str
    """Distribution name (``demo-runtime``)."""
    project_dir: str
    """Root-relative folder of its pyproject.toml (``.`` or ``packaging/demo-runtime``)."""
    summary: str
    """One line for the metadata's ``Summary``."""
    libraries: tuple[str, ...]
    """Recipe names of the libraries it ships (each one is also a CMake install component)."""
    ships_package: bool
    """Whether it ships the Python package (the loader)."""
    defines: tuple[tuple[str, str], ...]
    """CMake cache entries of its build: every optional library's option, ON or OFF."""
    dependencies: tuple[str, ...]
    """Its ``Requires-Dist`` entries."""
    plugins: tuple[str, ...] = ()
    """Recipe names of the plugins it ships (each one a CMake install component too): those
    of its libraries, in its host's wheel (the add-on's when the host or a library a plugin
    links is optional)."""

    @property
    def components(self) -> tuple[str, ...]:
        """The CMake install components that make up the wheel."""
        package = (PYTHON_COMPONENT,) if self.ships_package else ()
        return package + self.libraries + self.plugins

    @property
    def pyproject(self) -> str:
        """Root-relative path of its pyproject.toml."""
        return str(PurePosixPath(self.project_dir) / PYPROJECT)

    @property
    def source_dir(self) -> str:
        """The CMake project (the root) relative to ``project_dir``."""
        depth = len(PurePosixPath(self.project_dir).parts) if self.project_dir != "." else 0
        return "/".join([".."] * depth) or "."


def _defines(plan: LinkPlan, value: str) -> tuple[tuple[str, str], ...]:
    return tuple((switch, value) for switch in plan.build_switches)


def full_distribution(plan: LinkPlan, project_dir: str = ".") -> Distribution:
    name = plan.project.name
    return Distribution(
        name=name,
        project_dir=project_dir,
        summary=f"{name}: the Python package with every library",
        libraries=tuple(lib.name for lib in plan.libraries),
        ships_package=True,
        defines=_defines(plan, "ON"),
        dependencies=(),
        plugins=tuple(plugin.name for plugin in plan.plugins),
    )


def split_distributions(plan: LinkPlan) -> tuple[Distribution, ...]:
    """The runtime wheel (``<name>-runtime``) first, then its add-on (``<name>-compiler``) when
    there is an optional library, unless the recipe names them (``runtime-distribution``,
    ``addon-distribution``), then the plugins' wheels of their own."""
    project = plan.project
    runtime_name, compiler_name = split_distribution_names(project)
    in_host_wheel = [plugin for plugin in plan.plugins if not plugin.distribution]
    runtime = Distribution(
        name=runtime_name,
        project_dir=f"{PACKAGING_DIR}/{runtime_name}",
        summary=f"{project.name} runtime: the Python package and the runtime libraries only",
        libraries=tuple(lib.name for lib in plan.runtime_libraries),
        ships_package=True,
        defines=_defines(plan, "OFF"),
        dependencies=(),
        plugins=tuple(plugin.name for plugin in in_host_wheel if not plugin.optional),
    )
    compiler = Distribution(
        name=compiler_name,
        project_dir=f"{PACKAGING_DIR}/{compiler_name}",
        summary=f"{project.name} compiler: the optional libraries, an add-on to {runtime_name}",
        libraries=tuple(lib.name for lib in plan.libraries if lib.optional),
        ships_package=False,
        defines=_defines(plan, "ON"),
        dependencies=(f"{runtime_name}=={project.version}",),
        plugins=tuple(plugin.name for plugin in in_host_wheel if plugin.optional),
    )
    addon = (compiler,) if compiler.libraries else ()
    return (runtime, *addon, *_plugin_distributions(plan, runtime_name, compiler_name))


def _plugin_distributions(plan: LinkPlan, runtime: str, addon: str) -> list[Distribution]:
    """One wheel per plugin ``distribution``: its plugins, requiring their hosts' wheels."""
    grouped: dict[str, list[PluginPlan]] = {}
    for plugin in plan.plugins:
        if plugin.distribution:
            grouped.setdefault(plugin.distribution, []).append(plugin)
    version = plan.project.version
    dists = []
    for name, plugins in grouped.items():
        optional = any(plugin.optional for plugin in plugins)
        names = tuple(plugin.name for plugin in plugins)
        dists.append(
            Distribution(
                name=name,
                project_dir=f"{PACKAGING_DIR}/{name}",
                summary=f"{plan.project.name} plugins {', '.join(names)}: an add-on to {runtime}",
                libraries=(),
                ships_package=False,
                defines=_defines(plan, "ON"),
                dependencies=(f"{runtime}=={version}",)
                + ((f"{addon}=={version}",) if optional else ()),
                plugins=names,
            )
        )
    return dists


def required_distributions(
    dist: Distribution, dists: Sequence[Distribution]
) -> tuple[Distribution, ...]:
    """The distributions of ``dists`` that ``dist`` requires (its wheel is installed beside
    theirs): the runtime wheel for the add-on; the runtime wheel and maybe the add-on for a
    plugin's own wheel."""
    wanted = {requirement.split("==", 1)[0] for requirement in dist.dependencies}
    return tuple(other for other in dists if other.name in wanted)


def full_project_dir(root_pyproject_is_own: bool, plan: LinkPlan) -> str:
    """Where the full distribution's pyproject.toml goes: the root, unless the project has its
    own pyproject.toml there (hand-written, or the recipe itself)."""
    if root_pyproject_is_own:
        return f"{PACKAGING_DIR}/{plan.project.name}"
    return "."


def variant_distributions(
    plan: LinkPlan, variant: WheelVariant, full_dir: str = "."
) -> tuple[Distribution, ...]:
    """The distributions ``buildtool wheel --variant`` builds, in build order."""
    if variant == "full":
        return (full_distribution(plan, full_dir),)
    return split_distributions(plan)


def has_split(plan: LinkPlan) -> bool:
    """A split needs an optional library or a plugin with a wheel of its own to leave out."""
    return any(lib.optional for lib in plan.libraries) or any(
        plugin.distribution for plugin in plan.plugins
    )


def _toml_strings(items: tuple[str, ...]) -> str:
    return ", ".join(f'"{item}"' for item in items)


def render_pyproject(
    plan: LinkPlan,
    dist: Distribution,
    settings: WheelSettings,
    template: str,
    backend: str = BUILD_BACKEND,
) -> str:
    """The pyproject.toml of one distribution, naming ``backend`` as its build backend."""
    requires = BUILDTOOL_REQUIREMENT if backend == BUILDTOOL_BACKEND else "scikit-build-core>=0.10"
    defines = "".join(f'{name} = "{value}"\n' for name, value in dist.defines)
    return fill(
        template,
        {
            "BUILDTOOL_VERSION": __version__,
            "RECIPE": plan.recipe_source,
            "SUMMARY": dist.summary,
            "BUILD_BACKEND": backend,
            "REQUIRES": f'"{requires}"',
            "DISTRIBUTION": dist.name,
            "VERSION": plan.project.version,
            "PYTHON_REQUIRES": settings.python_requires,
            "DEPENDENCIES": _toml_strings(dist.dependencies),
            "SOURCE_DIR": dist.source_dir,
            "PACKAGE": plan.project.package,
            "COMPONENTS": _toml_strings(dist.components),
            "DEFINES": defines,
            "PY_API": _py_api(plan, dist),
            "BUILD_REQUIRES": _build_requires(plan, dist),
        },
    )


def extensions_of(plan: LinkPlan, dist: Distribution) -> tuple[ExtensionPlan, ...]:
    """The extension modules ``dist``'s wheel holds: those of its install components."""
    return tuple(module for module in plan.extensions if module.component in dist.components)


def _build_requires(plan: LinkPlan, dist: Distribution) -> str:
    """pybind11 joins the build requirements of a wheel with a pybind11 extension module."""
    uses = any(m.binding == "pybind11" for m in extensions_of(plan, dist))
    return ', "pybind11>=2.10"' if uses else ""


def _py_api(plan: LinkPlan, dist: Distribution) -> str:
    """``py3`` unless the wheel holds CPython extension modules (then the interpreter's tag)."""
    if extensions_of(plan, dist):
        return (
            "# The package holds CPython extension modules: the wheel is tagged for the "
            "interpreter.\n"
        )
    return (
        "# The libraries are loaded through ctypes, not imported: any Python 3 on this platform "
        'can use them.\nwheel.py-api = "py3"\n'
    )


def all_distributions(plan: LinkPlan, full_dir: str = ".") -> tuple[Distribution, ...]:
    """Every distribution of the recipe: the full one, and the split pair when there is one."""
    full = (full_distribution(plan, full_dir),)
    return full + split_distributions(plan) if has_split(plan) else full


def render_pyprojects(
    plan: LinkPlan, settings: WheelSettings, templates: Mapping[str, str], full_dir: str = "."
) -> dict[str, str]:
    """Every distribution's pyproject.toml, by root-relative path; empty without a package."""
    if not plan.project.python_package_dir:
        return {}
    template = templates["pyproject.toml.in"]
    return {
        dist.pyproject: render_pyproject(plan, dist, settings, template, backend_of(dist))
        for dist in all_distributions(plan, full_dir)
    }


def backend_of(dist: Distribution) -> str:
    """The root's pyproject.toml (generated mode: no project pyproject.toml of its own) names
    buildtool's backend, so ``pip wheel .`` makes any distribution; those under ``packaging/``
    name scikit-build-core, which builds each of them."""
    return BUILDTOOL_BACKEND if dist.project_dir == "." else BUILD_BACKEND
