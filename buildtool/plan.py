"""The link plan: who owns what, who links whom. A pure function of the recipe.

Every rule that would otherwise surface as an abort at import time on a user's machine is
refused here, before anything is built. Generation, packaging and verification all read the
plan, so they cannot disagree about the split.
"""

from __future__ import annotations

import dataclasses
import difflib
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence, Set
from pathlib import PurePosixPath
from typing import TypeVar

from buildtool.errors import PlanError
from buildtool.recipe.model import (
    Executable,
    Extension,
    ObjectLibrary,
    PluginLibrary,
    ProjectSettings,
    Recipe,
    SharedLibrary,
)

C_SUFFIXES = (".c",)
"""Sources compiled as C."""
CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".c++", ".C")
"""Sources compiled as C++."""
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inc", ".inl", ".ipp", ".tcc")
"""Listed sources that are not compiled (headers, shown by IDEs)."""
RESERVED_TARGETS = frozenset(
    {"all", "clean", "edit_cache", "help", "install", "rebuild_cache", "test"}
    | {"ALL_BUILD", "INSTALL", "RUN_TESTS", "ZERO_CHECK"}
)
"""Target names CMake refuses (policy CMP0037) in a build with tests, whatever the generator
(``package`` only once a project includes CPack, which buildtool's CMake does not)."""


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


class _Planner:
    """Holds the recipe and its source while the rules run; ``make_plan`` is the entry point."""

    def __init__(self, recipe: Recipe, source: str, sources: Mapping[str, tuple[str, ...]]):
        self.recipe = recipe
        self.source = source
        self.sources = sources

    def refuse(self, key: str, problem: str) -> PlanError:
        return PlanError(self.source, key, problem)

    def check_references(self, key: str, names: Sequence[str], known: Mapping[str, object]) -> None:
        kind = key.rsplit(".", 1)[-1]
        table = {"links": "libraries", "objects": "objects", "externals": "externals"}.get(
            kind, kind
        )
        for index, name in enumerate(names):
            if name not in known:
                shown = ", ".join(sorted(known)) or "none"
                raise self.refuse(
                    f"{key}[{index}]", f"unknown {table} entry {name!r}; the recipe has: {shown}"
                )

    def check_all_references(self) -> None:
        recipe = self.recipe
        for name, lib in recipe.libraries.items():
            self.check_references(f"libraries.{name}.links", lib.links, recipe.libraries)
            self.check_references(f"libraries.{name}.objects", lib.objects, recipe.objects)
            self.check_references(f"libraries.{name}.externals", lib.externals, recipe.externals)
            self.check_when(f"libraries.{name}", lib.when)
        for name, obj in recipe.objects.items():
            self.check_references(f"objects.{name}.externals", obj.externals, recipe.externals)
            self.check_when(f"objects.{name}", obj.when)
        for table, entries in (("executables", recipe.executables), ("tests", recipe.tests)):
            for name, exe in entries.items():
                self.check_references(f"{table}.{name}.links", exe.links, recipe.libraries)
                self.check_references(f"{table}.{name}.externals", exe.externals, recipe.externals)
                self.check_no_as_needed(f"{table}.{name}", exe)
                self.check_when(f"{table}.{name}", exe.when)
        for name, ext in recipe.externals.items():
            self.check_when(f"externals.{name}", ext.when)
        for name, plugin in recipe.plugins.items():
            self.check_plugin_references(name, plugin)
        for name, module in recipe.extensions.items():
            self.check_references(f"extensions.{name}.links", module.links, recipe.libraries)
            self.check_references(
                f"extensions.{name}.externals", module.externals, recipe.externals
            )
            self.check_when(f"extensions.{name}", module.when)
        self.check_extensions()

    def check_plugin_references(self, name: str, plugin: PluginLibrary) -> None:
        recipe, key = self.recipe, f"plugins.{name}"
        if plugin.host not in recipe.libraries:
            shown = ", ".join(sorted(recipe.libraries)) or "none"
            close = difflib.get_close_matches(plugin.host, sorted(recipe.libraries), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise self.refuse(
                f"{key}.host",
                f"unknown library {plugin.host!r}{hint} (the recipe's libraries: {shown}); a "
                "plugin's host is the library that opens it",
            )
        self.check_references(f"{key}.links", plugin.links, recipe.libraries)
        self.check_references(f"{key}.objects", plugin.objects, recipe.objects)
        self.check_references(f"{key}.externals", plugin.externals, recipe.externals)
        self.check_when(key, plugin.when)

    def check_extensions(self) -> None:
        recipe = self.recipe
        for name, module in sorted(recipe.extensions.items()):
            if not recipe.project.python_package_dir:
                raise self.refuse(
                    f"extensions.{name}",
                    "an extension module belongs to the Python package: set "
                    "project.python-package-dir",
                )
            if module.addon:
                self.check_addon_extension(name, module)
                continue
            for index, linked in enumerate(module.links):
                if recipe.libraries[linked].optional:
                    raise self.refuse(
                        f"extensions.{name}.links[{index}]",
                        f"extension {name!r} ships with the Python package (the runtime wheel) "
                        f"but links optional library {linked!r}, which a runtime-only install "
                        "lacks; link required libraries only, or set addon = true to ship it "
                        "in the add-on wheel (or reach the library through the loader's "
                        "optional_library())",
                    )

    def check_addon_extension(self, name: str, module: Extension) -> None:
        if not any(self.recipe.libraries[linked].optional for linked in module.links):
            raise self.refuse(
                f"extensions.{name}.addon",
                f"extension {name!r} ships in the add-on wheel, which holds the optional "
                "libraries: it must link one of them (or drop addon to ship it with the package)",
            )

    def target_keys(self) -> Iterable[tuple[str, str]]:
        """(CMake target name, key path) of every target the generated build defines."""
        prefix = self.recipe.project.target_prefix
        tables: dict[str, Mapping[str, object]] = {
            "libraries": self.recipe.libraries,
            "plugins": self.recipe.plugins,
            "objects": self.recipe.objects,
            "executables": self.recipe.executables,
            "tests": self.recipe.tests,
            "extensions": self.recipe.extensions,
        }
        for table, entries in tables.items():
            yield from ((f"{prefix}{name}", f"{table}.{name}") for name in sorted(entries))
        for name in sorted(self.recipe.externals):
            yield f"{prefix}external_{name}", f"externals.{name}"

    def check_target_names(self) -> None:
        """Two tables with one name would be one CMake target defined twice (an error inside
        CMake, far from the recipe)."""
        seen: dict[str, str] = {}
        for target, key in self.target_keys():
            if target in RESERVED_TARGETS:
                raise self.refuse(
                    key,
                    f"its CMake target {target!r} is a name CMake reserves for itself (policy "
                    "CMP0037); rename the table or set [project] library-prefix",
                )
            if target in seen:
                raise self.refuse(
                    key,
                    f"its CMake target {target!r} is also {seen[target]}'s: every library, "
                    "plugin, object library, executable, test and extension needs a name of its "
                    "own",
                )
            seen[target] = key

    def check_when(self, key: str, when: str) -> None:
        if not when or when in self.recipe.options:
            return
        known = sorted(self.recipe.options)
        close = difflib.get_close_matches(when, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        declared = ", ".join(known) or "none"
        raise self.refuse(
            f"{key}.when",
            f"unknown option {when!r}{hint} (declared in [options]: {declared}); declare it as "
            f"[options.{when}]",
        )

    def check_suffixes(self) -> tuple[str, ...]:
        """Every source must be C, C++ or a header; returns the CMake languages they need."""
        known = C_SUFFIXES + CXX_SUFFIXES + HEADER_SUFFIXES
        has_c = False
        for key, files in sorted(self.sources.items()):
            for path in files:
                suffix = PurePosixPath(path).suffix
                has_c = has_c or suffix in C_SUFFIXES
                if suffix not in known:
                    raise self.refuse(
                        key,
                        f"{path}: the generated build cannot compile {suffix or 'suffix-less'!r} "
                        f"sources (C: {', '.join(C_SUFFIXES)}; C++: {', '.join(CXX_SUFFIXES)}; "
                        f"headers: {', '.join(HEADER_SUFFIXES)}); narrow the glob, or build it "
                        "in hand-written CMake (project.cmake-include)",
                    )
        return ("C", "CXX") if has_c else ("CXX",)

    def requires(self, name: str) -> list[str]:
        """Options that must be ON for library (or plugin) ``name``: optional ones' and
        ``when`` ones'."""
        plugin = self.recipe.plugins.get(name)
        if plugin is not None:
            found = [o for lib in (plugin.host, *plugin.links) for o in self.requires(lib)]
            return list(dict.fromkeys(found + ([plugin.when] if plugin.when else [])))
        options: list[str] = []
        for other in (name, *self.closure((name,))):
            lib = self.recipe.libraries[other]
            if lib.optional:
                options.append(build_switch_name(self.recipe.project, other))
            if lib.when:
                options.append(lib.when)
        return list(dict.fromkeys(options))

    def check_no_as_needed(self, key: str, exe: Executable) -> None:
        for index, name in enumerate(exe.no_as_needed):
            if name not in exe.links:
                raise self.refuse(
                    f"{key}.no-as-needed[{index}]",
                    f"{name!r} is not linked by {key} (links: {', '.join(exe.links) or 'none'}); "
                    "--no-as-needed can only keep a library that is linked",
                )

    def link_order(self) -> tuple[str, ...]:
        """Libraries in dependency order; a cycle in ``links`` is refused with its path."""
        order: list[str] = []
        state: dict[str, str] = {}

        def visit(name: str, path: tuple[str, ...]) -> None:
            if state.get(name) == "done":
                return
            if state.get(name) == "active":
                cycle = " -> ".join((*path[path.index(name) :], name))
                raise self.refuse(f"libraries.{path[-1]}.links", f"links form a cycle: {cycle}")
            state[name] = "active"
            for linked in self.recipe.libraries[name].links:
                visit(linked, (*path, name))
            state[name] = "done"
            order.append(name)

        for name in sorted(self.recipe.libraries):
            visit(name, ())
        return tuple(order)

    def closure(self, links: Sequence[str]) -> tuple[str, ...]:
        seen: list[str] = []
        queue = list(links)
        while queue:
            name = queue.pop(0)
            if name not in seen:
                seen.append(name)
                queue.extend(self.recipe.libraries[name].links)
        return tuple(seen)

    def check_optional_links(self) -> None:
        for name, lib in self.recipe.libraries.items():
            if lib.optional:
                continue
            for index, linked in enumerate(lib.links):
                if self.recipe.libraries[linked].optional:
                    raise self.refuse(
                        f"libraries.{name}.links[{index}]",
                        f"required library {name!r} links optional library {linked!r}; a "
                        f"deployment without {linked!r} could not load {name!r}. Move the code "
                        f"that needs {linked!r} into it, or make {name!r} optional",
                    )

    def owners(self) -> dict[str, str]:
        owners: dict[str, str] = {}
        holders: list[tuple[str, str, tuple[str, ...]]] = [
            ("libraries", name, lib.objects) for name, lib in sorted(self.recipe.libraries.items())
        ]
        holders += [
            ("plugins", name, plugin.objects)
            for name, plugin in sorted(self.recipe.plugins.items())
        ]
        for table, name, objects in holders:
            for obj in objects:
                if obj in owners:
                    raise self.refuse(
                        f"{table}.{name}.objects",
                        f"object library {obj!r} is linked statically more than once: owned by "
                        f"both {owners[obj]!r} and {name!r}. Its static initializers would run "
                        "twice in one process (duplicate registration abort); keep it in one "
                        "library and let the others get it through a PUBLIC link",
                    )
                owners[obj] = name
        for obj in sorted(self.recipe.objects):
            if obj not in owners:
                raise self.refuse(
                    f"objects.{obj}",
                    "owned by no library: add it to one library's (or plugin's) 'objects'",
                )
        return owners

    def check_externals(self) -> None:
        attached: dict[str, list[str]] = {}
        for name, lib in sorted(self.recipe.libraries.items()):
            for ext in lib.externals:
                attached.setdefault(ext, []).append(name)
        for ext, holders in sorted(attached.items()):
            for holder in holders:
                above = [
                    other
                    for other in holders
                    if other != holder and holder in self.closure((other,))
                ]
                if above:
                    raise self.refuse(
                        f"libraries.{above[0]}.externals",
                        f"external {ext!r} is attached to {holder!r} and to {above[0]!r}, which "
                        f"links {holder!r}; attach it to {holder!r} only ({above[0]!r} gets it "
                        "through the PUBLIC link)",
                    )

    def registrations(self, owners: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
        """(name, library) of the libraries' registrations; a name declared twice is refused,
        unless by plugins that are alternatives of one another (one resident at a time)."""
        declared: dict[str, list[tuple[str, str]]] = {}
        for key, holder, names in self.registering(owners):
            for index, registered in enumerate(names):
                for earlier_key, earlier in declared.get(registered, ()):
                    if not self.alternatives(earlier, holder):
                        plugins = {earlier, holder} & set(self.recipe.plugins)
                        raise self.refuse(
                            f"{key}.registers[{index}]",
                            f"registration {registered!r} is declared twice (also in "
                            f"{earlier_key}); a name may be registered by one library only"
                            + (_RESIDENT if plugins else ""),
                        )
                declared.setdefault(registered, []).append((key, holder))
        libraries = self.recipe.libraries
        return tuple(
            sorted(
                (name, holder)
                for name, where in declared.items()
                for _, holder in where
                if holder in libraries
            )
        )

    def registering(self, owners: Mapping[str, str]) -> list[tuple[str, str, tuple[str, ...]]]:
        """(key path, holding library or plugin, names) of every ``registers`` array."""
        entries = [
            (f"libraries.{name}", name, lib.registers)
            for name, lib in sorted(self.recipe.libraries.items())
        ]
        entries += [
            (f"plugins.{name}", name, plugin.registers)
            for name, plugin in sorted(self.recipe.plugins.items())
        ]
        entries += [
            (f"objects.{name}", owners[name], obj.registers)
            for name, obj in sorted(self.recipe.objects.items())
        ]
        return entries

    def alternatives(self, first: str, second: str) -> bool:
        """Whether two plugins are alternatives: one host, one non-empty ``alternatives``."""
        plugins = self.recipe.plugins
        if first not in plugins or second not in plugins or first == second:
            return False
        a, b = plugins[first], plugins[second]
        return bool(a.alternatives) and (a.host, a.alternatives) == (b.host, b.alternatives)


_RESIDENT = (
    " (by plugins only as alternatives of one host, which are never resident together: the "
    "same host and the same 'alternatives')"
)


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


def _library_plan(planner: _Planner, name: str, lib: SharedLibrary) -> LibraryPlan:
    project = planner.recipe.project
    target = f"{project.target_prefix}{name}"
    output = lib.output_name or output_name_of_file(lib.file) or target
    closure = planner.closure(lib.links)
    registers = list(lib.registers)
    for obj in lib.objects:
        registers.extend(planner.recipe.objects[obj].registers)
    return LibraryPlan(
        name=name,
        output_name=output,
        file_name=lib.file or f"lib{output}.so",
        sources=planner.sources.get(f"libraries.{name}.sources", ()),
        links=lib.links,
        link_closure=closure,
        objects=lib.objects,
        externals=lib.externals,
        registers=tuple(registers),
        optional=lib.optional,
        load=lib.load,
        build_switch=build_switch_name(project, name) if lib.optional else "",
        requires_on=tuple(planner.requires(name)),
        export_macro=f"{identifier(target)}_API",
        include_dirs=lib.include_dirs,
        target=target,
        settings=TargetSettings(
            definitions=lib.definitions,
            private_definitions=lib.private_definitions,
            compile_options=lib.compile_options,
            link_options=lib.link_options,
        ),
        visibility=lib.visibility,
        plugin_folder=lib.plugin_folder,
    )


def _plugin_plan(planner: _Planner, name: str, plugin: PluginLibrary) -> PluginPlan:
    recipe = planner.recipe
    target = f"{recipe.project.target_prefix}{name}"
    output = plugin.output_name or output_name_of_file(plugin.file) or target
    closure = planner.closure(plugin.links)
    registers = list(plugin.registers)
    for obj in plugin.objects:
        registers.extend(recipe.objects[obj].registers)
    optional = any(recipe.libraries[lib].optional for lib in (plugin.host, *closure))
    return PluginPlan(
        name=name,
        target=target,
        output_name=output,
        file_name=plugin.file or f"lib{output}.so",
        host=plugin.host,
        folder=recipe.libraries[plugin.host].plugin_folder,
        alternatives=plugin.alternatives,
        sources=planner.sources.get(f"plugins.{name}.sources", ()),
        links=plugin.links,
        link_closure=closure,
        objects=plugin.objects,
        externals=plugin.externals,
        registers=tuple(registers),
        optional=optional,
        requires_on=tuple(planner.requires(name)),
        settings=TargetSettings(
            definitions=plugin.definitions,
            include_dirs=plugin.include_dirs,
            compile_options=plugin.compile_options,
            link_options=plugin.link_options,
        ),
        visibility=plugin.visibility,
        distribution=plugin.distribution,
    )


def _settings(entry: ObjectLibrary | Executable | Extension) -> TargetSettings:
    return TargetSettings(
        definitions=entry.definitions,
        include_dirs=entry.include_dirs,
        compile_options=entry.compile_options,
        link_options=entry.link_options,
        externals=entry.externals,
    )


def _object_plan(planner: _Planner, name: str, obj: ObjectLibrary, owner: str) -> ObjectPlan:
    requires = planner.requires(owner) + ([obj.when] if obj.when else [])
    return ObjectPlan(
        name=name,
        sources=planner.sources.get(f"objects.{name}.sources", ()),
        owner=owner,
        registers=obj.registers,
        build_info=obj.build_info,
        target=f"{planner.recipe.project.target_prefix}{name}",
        settings=_settings(obj),
        requires_on=tuple(dict.fromkeys(requires)),
    )


def _executable_plan(planner: _Planner, table: str, name: str, exe: Executable) -> ExecutablePlan:
    closure = planner.closure(exe.links)
    options = [option for lib in exe.links for option in planner.requires(lib)]
    if exe.when:
        options.append(exe.when)
    return ExecutablePlan(
        name=name,
        sources=planner.sources.get(f"{table}.{name}.sources", ()),
        links=exe.links,
        link_closure=closure,
        no_as_needed=exe.no_as_needed,
        is_test=table == "tests",
        args=exe.args,
        requires_on=tuple(dict.fromkeys(options)),
        allowed_needed=exe.allowed_needed,
        target=f"{planner.recipe.project.target_prefix}{name}",
        settings=_settings(exe),
    )


def _extension_plan(planner: _Planner, name: str, module: Extension) -> ExtensionPlan:
    options = [option for lib in module.links for option in planner.requires(lib)]
    if module.when:
        options.append(module.when)
    return ExtensionPlan(
        name=name,
        target=f"{planner.recipe.project.target_prefix}{name}",
        sources=planner.sources.get(f"extensions.{name}.sources", ()),
        links=module.links,
        link_closure=planner.closure(module.links),
        settings=_settings(module),
        requires_on=tuple(dict.fromkeys(options)),
        binding=module.binding,
        component=_extension_component(planner, module),
    )


def _extension_component(planner: _Planner, module: Extension) -> str:
    if not module.addon:
        return "python"
    closure = (*module.links, *planner.closure(module.links))
    return next(name for name in closure if planner.recipe.libraries[name].optional)


def make_plan(
    recipe: Recipe, source: str, sources: Mapping[str, tuple[str, ...]] | None = None
) -> LinkPlan:
    """Check every rule of the split and lay it out; raises ``PlanError`` naming the key."""
    planner = _Planner(recipe, source, sources or {})
    planner.check_all_references()
    planner.check_target_names()
    languages = planner.check_suffixes()
    order = planner.link_order()
    planner.check_optional_links()
    owners = planner.owners()
    planner.check_externals()
    registrations = planner.registrations(owners)
    executables = [
        _executable_plan(planner, table, name, exe)
        for table, entries in (("executables", recipe.executables), ("tests", recipe.tests))
        for name, exe in sorted(entries.items())
    ]
    return LinkPlan(
        project=recipe.project,
        recipe_source=source,
        libraries=tuple(_library_plan(planner, name, recipe.libraries[name]) for name in order),
        objects=tuple(
            _object_plan(planner, name, obj, owners[name])
            for name, obj in sorted(recipe.objects.items())
        ),
        executables=tuple(executables),
        externals=tuple(
            ExternalPlan(
                name=name,
                link=ext.link,
                find_package=ext.find_package,
                target=f"{recipe.project.target_prefix}external_{name}",
                version=ext.version,
                components=ext.components,
                pkg_config=ext.pkg_config,
                when=ext.when,
            )
            for name, ext in sorted(recipe.externals.items())
        ),
        registrations=registrations,
        options=tuple(
            OptionPlan(name=name, default=option.default, help=option.help)
            for name, option in sorted(recipe.options.items())
        ),
        languages=languages,
        extensions=tuple(
            _extension_plan(planner, name, module)
            for name, module in sorted(recipe.extensions.items())
        ),
        configured_headers=tuple(
            (path, header.template) for path, header in sorted(recipe.configured_headers.items())
        ),
        plugins=tuple(
            _plugin_plan(planner, name, plugin) for name, plugin in sorted(recipe.plugins.items())
        ),
    )


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
