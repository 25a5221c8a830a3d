"""Making the link plan: every rule of the split checked against the recipe, then laid out
(``make_plan``). A pure function of the recipe; a broken rule is a ``PlanError`` naming the key.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath

from buildtool.errors import PlanError
from buildtool.plan.model import (
    ExecutablePlan,
    ExtensionPlan,
    ExternalPlan,
    LibraryPlan,
    LinkPlan,
    ObjectPlan,
    OptionPlan,
    PluginPlan,
    TargetSettings,
    build_switch_name,
    identifier,
    output_name_of_file,
)
from buildtool.recipe.model import (
    Executable,
    Extension,
    ObjectLibrary,
    PluginLibrary,
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
