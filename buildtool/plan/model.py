"""The link plan's types: what owns what and links whom, as ``make_plan`` lays it out and
generation, packaging and verification read it; and how the plan names what it lays out."""

from __future__ import annotations

import dataclasses
import posixpath
import re

from buildtool.recipe.model import (
    ProjectSettings,
)


@dataclasses.dataclass(frozen=True)
class TargetSettings:
    """What the recipe adds to one target's compile and link (see the model's docs)."""

    definitions: tuple[str, ...] = ()
    """Compile definitions; PUBLIC on libraries."""
    private_definitions: tuple[str, ...] = ()
    """Compile definitions of a library's own sources only."""
    include_dirs: tuple[str, ...] = ()
    """Include folders, root-relative (libraries keep theirs in ``LibraryPlan.include_dirs``)."""
    compile_options: tuple[str, ...] = ()
    """Compiler flags."""
    link_options: tuple[str, ...] = ()
    """Linker flags."""
    externals: tuple[str, ...] = ()
    """Externals it compiles and links against (libraries: ``LibraryPlan.externals``)."""


@dataclasses.dataclass(frozen=True)
class OptionPlan:
    """A CMake option the recipe declares (``[options.NAME]``)."""

    name: str
    """Option and CMake cache variable name (``USE_ZLIB``)."""
    default: bool
    """ON when nobody sets it."""
    help: str
    """Its help string."""


@dataclasses.dataclass(frozen=True)
class LibraryPlan:
    """One shared library as it will be built and checked."""

    name: str
    """Recipe name (``runtime``); the CMake target is ``target``, its ALIAS ``<name>::<name>``."""
    output_name: str
    """CMake OUTPUT_NAME (``demo_runtime``)."""
    file_name: str
    """File name of the built library (``libdemo_runtime.so``)."""
    sources: tuple[str, ...]
    """Root-relative source files of its own."""
    links: tuple[str, ...]
    """Libraries it links directly (PUBLIC)."""
    link_closure: tuple[str, ...]
    """Every library it links, directly or through PUBLIC links, nearest first."""
    objects: tuple[str, ...]
    """Object libraries it owns."""
    externals: tuple[str, ...]
    """Externals attached to it."""
    registers: tuple[str, ...]
    """Registrations of its own sources and of its objects."""
    optional: bool
    """Whether deployments may lack it."""
    load: str
    """``global`` or ``local``: how the Python loader opens it."""
    build_switch: str
    """CMake option that builds it (``DEMO_BUILD_COMPILER``); empty for required libraries."""
    requires_on: tuple[str, ...]
    """Every CMake option that must be ON for it to build (its own build switch, its links',
    recipe options of ``when``)."""
    export_macro: str
    """Export macro of its public API (``DEMO_RUNTIME_API``)."""
    include_dirs: tuple[str, ...]
    """Public include folders, root-relative."""
    target: str = ""
    """CMake target name: ``<library-prefix><name>`` (``demo_runtime``)."""
    settings: TargetSettings = TargetSettings()
    """Definitions and flags from the recipe."""
    visibility: str = "hidden"
    """Symbol visibility of its sources and object libraries (``hidden`` or ``default``)."""
    plugin_folder: str = "lib"
    """Where it opens its plugins, relative to the install prefix (``lib/backends``)."""

    @property
    def plugin_dir_macro(self) -> str:
        """The definition its sources get with the plugin folder relative to its own
        (``GGML_PLUGIN_DIR``)."""
        return f"{identifier(self.target)}_PLUGIN_DIR"

    @property
    def plugin_dir(self) -> str:
        """The plugin folder relative to the library's own folder, ``lib``: ``backends``,
        ``../bin``, ``.``."""
        return posixpath.relpath(self.plugin_folder, LIBRARY_FOLDER)


LIBRARY_FOLDER = "lib"
"""Where the libraries of the split lie, relative to the install prefix (a wheel's
``<package>/``, ``cmake --install``'s prefix, the build folder)."""


@dataclasses.dataclass(frozen=True)
class PluginPlan:
    """A module a library opens at run time, as it will be built, shipped and checked."""

    name: str
    """Recipe name (``ggml-cpu-haswell``)."""
    target: str
    """CMake target name: ``<library-prefix><name>``."""
    output_name: str
    """CMake OUTPUT_NAME."""
    file_name: str
    """File name of the built module (``libggml-cpu-haswell.so``)."""
    host: str
    """Recipe name of the library that opens it."""
    folder: str
    """Its host's plugin folder, relative to the install prefix (``lib/backends``)."""
    alternatives: str
    """The group of its host's plugins of which one at most is loaded; empty: none."""
    sources: tuple[str, ...]
    """Root-relative source files of its own."""
    links: tuple[str, ...]
    """Libraries it links (PRIVATE)."""
    link_closure: tuple[str, ...]
    """Every library it links, directly or through PUBLIC links."""
    objects: tuple[str, ...]
    """Object libraries it owns."""
    externals: tuple[str, ...]
    """Externals it compiles and links against."""
    registers: tuple[str, ...]
    """Names it (and its object libraries) register in the host's registry."""
    optional: bool
    """Whether deployments may lack it: its host or a library it links is optional (it ships
    in the add-on wheel)."""
    requires_on: tuple[str, ...]
    """Every CMake option that must be ON for it to build (its host's, its links', its own
    ``when``)."""
    settings: TargetSettings = TargetSettings()
    """Definitions and flags from the recipe."""
    visibility: str = "hidden"
    """Symbol visibility of its sources (``hidden`` or ``default``)."""
    distribution: str = ""
    """The split's wheel of its own that ships it; empty: its host's wheel."""

    @property
    def component(self) -> str:
        """Its CMake install component: its recipe name."""
        return self.name

    @property
    def origin_suffix(self) -> str:
        """What follows ``$ORIGIN`` in its RUNPATH to reach ``lib/`` from its folder: ``/..``
        from ``lib/backends``, ``/../lib`` from ``bin``, nothing from ``lib``."""
        relative = posixpath.relpath(LIBRARY_FOLDER, self.folder)
        return "" if relative == "." else f"/{relative}"


@dataclasses.dataclass(frozen=True)
class ObjectPlan:
    """One object library and its single owner."""

    name: str
    sources: tuple[str, ...]
    owner: str
    registers: tuple[str, ...]
    build_info: bool
    target: str = ""
    """CMake target name: ``<library-prefix><name>``."""
    settings: TargetSettings = TargetSettings()
    """Definitions and flags from the recipe."""
    requires_on: tuple[str, ...] = ()
    """Every CMake option that must be ON for it to build (its owner's and its own ``when``)."""


@dataclasses.dataclass(frozen=True)
class ExecutablePlan:
    """An executable or a test executable."""

    name: str
    sources: tuple[str, ...]
    links: tuple[str, ...]
    link_closure: tuple[str, ...]
    no_as_needed: tuple[str, ...]
    is_test: bool
    args: tuple[str, ...]
    requires_on: tuple[str, ...]
    allowed_needed: tuple[str, ...]
    target: str = ""
    """CMake target name: ``<library-prefix><name>``; the file (and the test) keep ``name``."""
    settings: TargetSettings = TargetSettings()
    """Definitions and flags from the recipe."""


@dataclasses.dataclass(frozen=True)
class ExtensionPlan:
    """A CPython extension module of the package."""

    name: str
    """Module name inside the package (``_native`` gives ``<package>._native``)."""
    target: str
    """CMake target name: ``<library-prefix><name>``."""
    sources: tuple[str, ...]
    """Root-relative source files."""
    links: tuple[str, ...]
    """Libraries it links."""
    link_closure: tuple[str, ...]
    """Every library it links, directly or through PUBLIC links."""
    settings: TargetSettings
    """Definitions and flags from the recipe."""
    requires_on: tuple[str, ...]
    """Every CMake option that must be ON for it to build."""
    binding: str = "c"
    """``c`` or ``pybind11``."""
    component: str = "python"
    """CMake install component: ``python`` (with the package, in the runtime wheel), or for an
    ``addon`` module the optional library it links (in the add-on wheel)."""


@dataclasses.dataclass(frozen=True)
class ExternalPlan:
    """A library from outside the recipe, attached to exactly the libraries that list it."""

    name: str
    link: tuple[str, ...]
    find_package: str
    target: str = ""
    """CMake INTERFACE target that carries it: ``<library-prefix>external_<name>``."""
    version: str = ""
    """Least version of ``find_package``."""
    components: tuple[str, ...] = ()
    """Components of ``find_package``."""
    pkg_config: str = ""
    """pkg-config module spec; empty for none."""
    when: str = ""
    """The recipe option it is used under; empty: always."""


@dataclasses.dataclass(frozen=True)
class LinkPlan:
    """The whole split. Libraries come in dependency order (what is linked comes first)."""

    project: ProjectSettings
    recipe_source: str
    libraries: tuple[LibraryPlan, ...]
    objects: tuple[ObjectPlan, ...]
    executables: tuple[ExecutablePlan, ...]
    externals: tuple[ExternalPlan, ...]
    registrations: tuple[tuple[str, str], ...]
    """(registered name, library that must hold it), sorted by name."""
    options: tuple[OptionPlan, ...] = ()
    """The recipe's own options (``[options.NAME]``), by name."""
    languages: tuple[str, ...] = ("CXX",)
    """CMake languages the sources need (``C``, ``CXX``)."""
    extensions: tuple[ExtensionPlan, ...] = ()
    """CPython extension modules of the package, by name."""
    configured_headers: tuple[tuple[str, str], ...] = ()
    """(path under the generated include folder, root-relative template), by path."""
    plugins: tuple[PluginPlan, ...] = ()
    """Modules the libraries open at run time, by name."""

    def library(self, name: str) -> LibraryPlan:
        return next(lib for lib in self.libraries if lib.name == name)

    def owner_target(self, name: str) -> str:
        """The CMake target of a library or plugin, by recipe name (an object library's
        owner)."""
        owners: tuple[LibraryPlan | PluginPlan, ...] = (*self.libraries, *self.plugins)
        return next(owner.target for owner in owners if owner.name == name)

    def plugins_of(self, host: str) -> tuple[PluginPlan, ...]:
        """The plugins library ``host`` opens."""
        return tuple(plugin for plugin in self.plugins if plugin.host == host)

    def object(self, name: str) -> ObjectPlan:
        return next(obj for obj in self.objects if obj.name == name)

    @property
    def build_switches(self) -> tuple[str, ...]:
        """The CMake option of every optional library (``DEMO_BUILD_COMPILER``), in link order."""
        return tuple(lib.build_switch for lib in self.libraries if lib.build_switch)

    @property
    def runtime_libraries(self) -> tuple[LibraryPlan, ...]:
        """What a runtime-only deployment ships: every library that is not optional."""
        return tuple(lib for lib in self.libraries if not lib.optional)


def identifier(name: str) -> str:
    """A target name as a C macro or CMake option part: upper case, every character that is
    not a letter, digit or ``_`` as ``_`` (``ggml-base`` -> ``GGML_BASE``)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name).upper()


def build_switch_name(project: ProjectSettings, library: str) -> str:
    """The CMake option that builds an optional library: ``DEMO_BUILD_COMPILER``."""
    return f"{project.env_prefix}_BUILD_{identifier(library)}"


def split_distribution_names(project: ProjectSettings) -> tuple[str, str]:
    """The split's runtime wheel and add-on: the recipe's ``runtime-distribution`` and
    ``addon-distribution``, else ``<name>-runtime`` and ``<name>-compiler``."""
    runtime = project.runtime_distribution or f"{project.name}-runtime"
    return runtime, project.addon_distribution or f"{project.name}-compiler"


def library_distributions(plan: LinkPlan) -> dict[str, tuple[str, str]]:
    """Per library file name: the distributions whose wheels ship it, the full one (``<name>``)
    and the runtime wheel (a required library) or the add-on (an optional one)."""
    runtime, addon = split_distribution_names(plan.project)
    return {
        lib.file_name: (plan.project.name, addon if lib.optional else runtime)
        for lib in plan.libraries
    }


def output_name_of_file(file_name: str) -> str:
    """``X`` of ``libX.so`` (what a generated build names ``libX.so``), or empty."""
    if file_name.startswith("lib") and file_name.endswith(".so") and len(file_name) > 6:
        return file_name[3:-3]
    return ""
