"""What the checks look at: one run's ELF files, their NEEDED closures and the policy. Pure.

Its own module so that ``checks`` and ``hardening`` both depend on it and not on each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import cached_property
from pathlib import PurePosixPath
from typing import NamedTuple, TypeVar, cast

from buildtool.linkage.binaries import (
    BinaryFacts,
    InitializerReach,
    defines_module_init,
    named_as_extension_module,
)
from buildtool.linkage.checks.policy import LinkagePolicy, PluginRule
from buildtool.linkage.inputs.collect import BinaryFile, Distribution, InputSet
from buildtool.linkage.inputs.python_imports import ModuleImports
from buildtool.linkage.loaders.interpreter import is_extension_module
from buildtool.linkage.loaders.loaded import Closure, NeededEdge
from buildtool.linkage.loaders.platform import Platform
from buildtool.linkage.loaders.symbols import Definitions, index_object

FunctionNames = Callable[[BinaryFile, frozenset[int]], Mapping[int, str]]
"""The names of some of a file's ``.symtab`` functions by digest (see
``BinaryFacts.symtab_functions``). The shell reads the file again: only a duplicate-code finding,
which shows them, needs names."""


HostLookup = Callable[[str, BinaryFacts], str | None]
"""Where this machine has a library by a NEEDED name for a file like the one given (None:
nowhere): said in a finding, never used to resolve a wheel's dependencies."""


def nowhere(_name: str, _facts: BinaryFacts) -> str | None:
    """A ``HostLookup`` that finds nothing."""
    return None


ImportsOf = Callable[[BinaryFile], ModuleImports | None]
"""How the package's Python code imports an extension module, read by the shell from the
module's wheel or package folder; None when not told (no package holds it)."""


def imports_unknown(_binary: BinaryFile) -> ModuleImports | None:
    """An ``ImportsOf`` that reads nothing."""
    return None


Initializers = Callable[[BinaryFile], tuple[InitializerReach, ...]]
"""A file's initializers' reach (``BinaryFacts.initializers``), read again by the shell when a
sparse read left them unread."""

DeepInitializers = Callable[
    [BinaryFile, frozenset[str], frozenset[str]], tuple[InitializerReach, ...]
]
"""The same, those of the given shapes walked whole: read again by the shell when the facts
hold only their own code (``InitializerReach.complete``). The second set names shapes that
later questions may want walked whole too: a file read again has those walked in the same read
(a big member is inflated once, not once per pair it is in)."""


InitializersUntil = Callable[[BinaryFile, frozenset[str]], tuple[InitializerReach, ...]]
"""``Initializers``, or those up to the first that no guard marks whose reach goes beyond the
imports named (``code_walk.FirstReaching``): what a question one such initializer answers
needs, read again by the shell when a sparse read left them unread."""


def until_as_read(binary: BinaryFile, _known: frozenset[str]) -> tuple[InitializerReach, ...]:
    """An ``InitializersUntil`` that reads nothing: those the facts hold."""
    return initializers_as_read(binary)


def deep_as_read(
    binary: BinaryFile, _shapes: frozenset[str], _later: frozenset[str]
) -> tuple[InitializerReach, ...]:
    """A ``DeepInitializers`` that reads nothing: those the facts hold."""
    return initializers_as_read(binary)


def initializers_as_read(binary: BinaryFile) -> tuple[InitializerReach, ...]:
    """An ``Initializers`` that reads nothing: those the facts hold (none when unread)."""
    return binary.facts.initializers or () if binary.facts is not None else ()


def digests_as_names(_binary: BinaryFile, digests: frozenset[int]) -> dict[int, str]:
    """A ``FunctionNames`` that reads nothing: it shows the digests."""
    return {digest: f"#{digest:016x}" for digest in digests}


class Origin(NamedTuple):
    """Where a file comes from: one input, and the distribution that installs it (a wheel's,
    or the one whose RECORD lists it in an installed folder; None when unknown)."""

    label: str
    """The input (PATH argument) the file was read from."""
    distribution: Distribution | None
    """The distribution that installs it, when a wheel's or a RECORD's metadata says."""


@dataclasses.dataclass(frozen=True)
class Plugin:
    """A file the recipe declares as a plugin, and the file of the host that opens it."""

    binary: BinaryFile
    rule: PluginRule
    host: BinaryFile | None
    """The host library among the inputs (its own input's first); None when no input has it."""


Residence = tuple[str, str] | None
"""How a plugin's closure is resident beside a root that loads its host: (host and
alternatives group, the plugin's location) when the plugin is one of a group of alternatives,
None when it is resident beside anything (or the object is the root's own)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Subject:
    """What the checks look at: the input's ELF files, their closures and the policy."""

    files: tuple[BinaryFile, ...]
    """Well-formed ELF files of the inputs (malformed ones are findings already)."""
    closures: Mapping[PurePosixPath, Closure]
    """Each file's NEEDED closure, by location."""
    policy: LinkagePolicy
    in_input: frozenset[str]
    """Base names of every file (and symlink) in the inputs."""
    function_names: FunctionNames = digests_as_names
    """How duplicate-code findings name the functions two libraries share."""
    sets: Sequence[InputSet] = ()
    """The inputs the files came from (each wheel, folder or file given), in order."""
    platforms: Mapping[str, Platform] = dataclasses.field(default_factory=dict)
    """Each input's target platform by label: its wheel tag's, or this machine's for an input
    without a tag; absent when no policy data describes it."""
    initializers: Initializers = initializers_as_read
    """How the duplicate-code checks learn what a file's initializers reach."""
    initializers_until: InitializersUntil = until_as_read
    """The same, read no further than the first initializer reaching beyond some imports."""
    deep_initializers: DeepInitializers = deep_as_read
    """The same, the initializers of some shapes walked as deep as the walk goes: what a pair
    whose initializers share a shape needs."""
    on_this_machine: HostLookup = nowhere
    """Where this machine has a library a wheel does not ship (said in BT109's evidence)."""
    interpreters: Mapping[str, Closure] = dataclasses.field(default_factory=dict)
    """What the Python interpreter has loaded before it opens an extension module
    (``loaders.interpreter``), by the module's path: ld.so binds the module's closure against
    those objects too. Empty: nothing is counted."""
    plugins: tuple[Plugin, ...] = ()
    """The files the recipe declares as plugins, with their hosts (``checks.plugins``); their
    closures were resolved with the host's closure loaded already."""
    imports_of: ImportsOf = imports_unknown
    """Where the package's Python code imports an extension module (``optional_module``)."""

    def facts(self, binary: BinaryFile) -> BinaryFacts:
        assert binary.facts is not None
        return binary.facts

    @property
    def shared(self) -> tuple[BinaryFile, ...]:
        return tuple(b for b in self.files if self.facts(b).file_type == "shared")

    def needs(self, a: BinaryFile, b: BinaryFile) -> bool:
        """Whether loading ``a`` loads ``b``."""
        closure = self.closures.get(a.location)
        return closure is not None and str(b.location) in closure.objects

    def co_loaded(self, a: BinaryFile, b: BinaryFile) -> bool:
        """Whether one load context holds both: one root's closure loads them both, or a root
        loads one and a plugin of a host it loads the other, or two plugins of such hosts
        load them that are not alternatives of one another."""
        loaders = self._root_loaders
        first, second = str(a.location), str(b.location)
        if not loaders.get(first, frozenset()).isdisjoint(loaders.get(second, ())):
            return True
        if not self.plugins:
            return False
        mine, theirs = self._resident_in(first), self._resident_in(second)
        return any(
            _compatible(one, other)
            for root in mine.keys() & theirs.keys()
            for one in mine[root]
            for other in theirs[root]
        )

    def _resident_in(self, path: str) -> dict[PurePosixPath, list[Residence]]:
        """Root -> how ``path`` is resident in its process: loaded by it (None), or through
        plugins of hosts it loads."""
        found: dict[PurePosixPath, list[Residence]] = {
            root: [None] for root in self._root_loaders.get(path, ())
        }
        for root, residence in self._plugin_residence.get(path, ()):
            found.setdefault(root, []).append(residence)
        return found

    @cached_property
    def _plugin_residence(self) -> dict[str, list[tuple[PurePosixPath, Residence]]]:
        """Object path -> (root, residence) of every plugin closure that holds it, for every
        root that loads the plugin's host."""
        residence: dict[str, list[tuple[PurePosixPath, Residence]]] = {}
        for plugin in self.plugins:
            closure = self.closures.get(plugin.binary.location)
            if plugin.host is None or closure is None:
                continue
            rule = plugin.rule
            group = f"{rule.host}\0{rule.alternatives}" if rule.alternatives else None
            how: Residence = (group, str(plugin.binary.location)) if group else None
            for root in self._root_loaders.get(str(plugin.host.location), ()):
                for path in closure.objects:
                    residence.setdefault(path, []).append((root, how))
        return residence

    def both_plugins(self, a: BinaryFile, b: BinaryFile) -> bool:
        """Whether both files are plugins: their hosts open them ``RTLD_LOCAL``, so the
        exports of one never bind another's calls."""
        plugins = self._plugin_at
        return str(a.location) in plugins and str(b.location) in plugins

    @cached_property
    def _plugin_at(self) -> dict[str, Plugin]:
        return {str(plugin.binary.location): plugin for plugin in self.plugins}

    def plugin_of(self, binary: BinaryFile) -> Plugin | None:
        """The plugin ``binary`` is, or None."""
        return self._plugin_at.get(str(binary.location))

    def undeclared_module(self, binary: BinaryFile) -> str:
        """For an ELF module without SONAME that is no extension module (by entry point or by
        name) and no declared plugin (something opens it with dlopen), a hint that declaring it
        as a plugin judges it with its host's closure loaded; '' otherwise."""
        facts = self.facts(binary)
        module = facts.format == "elf" and facts.file_type == "shared" and facts.soname is None
        python = is_extension_module(facts) or named_as_extension_module(binary.location.name)
        if not module or python or self.plugin_of(binary) is not None:
            return ""
        return (
            "; it has no SONAME: if a library opens it with dlopen, declare it as that "
            "library's plugin ([plugins]) to judge it with its host's closure loaded"
        )

    @cached_property
    def loaded_by_others(self) -> frozenset[str]:
        """Locations of the files another input file loads (one that they do not load back)."""
        by_path = {closure.root: closure for closure in self.closures.values()}
        loaded: set[str] = set()
        for root, closure in by_path.items():
            for path in closure.load_order[1:]:
                other = by_path.get(path)
                if other is None or root not in other.objects:
                    loaded.add(path)
        return frozenset(loaded)

    def is_root(self, binary: BinaryFile) -> bool:
        """Whether ld.so starts a load context at ``binary``: an executable, a Python extension
        module, a library the recipe's loader opens, or a library nothing in the inputs loads.
        A library without SONAME that another file names in DT_NEEDED is no root: ld.so finds
        NEEDED entries by file name, and loads it there with its loader's inherited DT_RPATH."""
        facts = self.facts(binary)
        return (
            facts.file_type != "shared"
            or self._is_module(binary)
            or self.policy.is_project_library(binary.location.name)
            or str(binary.location) in self._plugin_at
            or str(binary.location) not in self.loaded_by_others
        )

    def _is_module(self, binary: BinaryFile) -> bool:
        """A shared object without SONAME that the interpreter imports (by entry point or by
        name): a load context of its own, whatever else loads it."""
        facts = self.facts(binary)
        named = named_as_extension_module(binary.location.name)
        return facts.soname is None and (named or is_extension_module(facts))

    @cached_property
    def roots(self) -> tuple[BinaryFile, ...]:
        """The files load contexts start at, in input order."""
        return tuple(b for b in self.files if self.is_root(b))

    def contexts(self, binary: BinaryFile) -> tuple[Closure, ...]:
        """The closures ``binary`` is loaded in: those of the roots that load it (its own when
        it is a root), by root path."""
        roots = self._root_loaders.get(str(binary.location), set())
        return tuple(self.closures[root] for root in sorted(roots, key=str))

    @cached_property
    def _root_loaders(self) -> dict[str, set[PurePosixPath]]:
        """Object path -> the roots whose closure loads it."""
        loaders: dict[str, set[PurePosixPath]] = {}
        for root in self.roots:
            closure = self.closures.get(root.location)
            for path in closure.objects if closure else ():
                loaders.setdefault(path, set()).add(root.location)
        return loaders

    @cached_property
    def _origins(self) -> dict[str, Origin]:
        """Each file's origin: its input, and within an installed folder its distribution."""
        origins: dict[str, Origin] = {}
        for entry in self.sets:
            for binary in entry.files:
                dist = entry.owners.get(binary.location, entry.distribution)
                origins[str(binary.location)] = Origin(entry.label, dist)
        return origins

    @cached_property
    def _origin_names(self) -> dict[Origin, frozenset[str]]:
        """Per origin: every name its files can be found by (file names, symlinks, SONAMEs)."""
        names: dict[Origin, set[str]] = {}
        for entry in self.sets:
            for binary in entry.files:
                found = names.setdefault(self._origins[str(binary.location)], set())
                found.add(binary.location.name)
                if binary.facts is not None and binary.facts.soname:
                    found.add(binary.facts.soname)
            if entry.aliases:
                unowned = Origin(entry.label, entry.distribution)
                names.setdefault(unowned, set()).update(a.name for a in entry.aliases)
        return {origin: frozenset(found) for origin, found in names.items()}

    def package_of(self, binary: BinaryFile) -> str | None:
        """The import package a Python extension module belongs to: the first folder of its
        path inside its input (a wheel's or an installed folder's top-level package), or the
        input itself for a module directly in the folder given; None for anything but a
        module. The interpreter imports a package's modules into one process whatever they
        link, and wheels install their packages into one folder."""
        if self.facts(binary).module_init is None:
            return None
        origin = self.origin_of(binary)
        top = self._package_roots.get(str(binary.location), "")
        return top or (origin.label if origin else None)

    @cached_property
    def _package_roots(self) -> dict[str, str]:
        """Each file's first folder inside its input (see ``package_of``)."""
        roots: dict[str, str] = {}
        for entry in self.sets:
            for binary in entry.files:
                top = entry.root or binary.location.parent
                try:
                    inside = binary.location.relative_to(top).parts
                except ValueError:  # beside the folder given (its .libs)
                    inside = (binary.location.parent.name, "")
                roots[str(binary.location)] = inside[0] if len(inside) > 1 else ""
        return roots

    def origin_of(self, binary: BinaryFile) -> Origin | None:
        return self._origins.get(str(binary.location))

    def _own_set(self, binary: BinaryFile) -> InputSet | None:
        origin = self.origin_of(binary)
        return next((e for e in self.sets if origin is not None and e.label == origin.label), None)

    def install_rpath(self, binary: BinaryFile) -> str | None:
        """The RPATH ``cmake --install`` gives ``binary`` when its input is a CMake build tree
        whose install scripts say (``InputSet.install_rpaths``); None otherwise."""
        entry = self._own_set(binary)
        return entry.install_rpaths.get(binary.location.name) if entry else None

    def folder_name(self, binary: BinaryFile) -> str:
        """The name of the folder ``binary`` sits in once installed: where a build tree's
        install scripts put it (``InputSet.install_folders``), else where it lies."""
        installed = self.install_folder(binary)
        return PurePosixPath(installed).name if installed else binary.location.parent.name

    def install_folder(self, binary: BinaryFile) -> str | None:
        """The folder a build tree's install scripts put ``binary`` in, relative to the install
        prefix (``lib/backends``); None when no install script says."""
        entry = self._own_set(binary)
        return entry.install_folders.get(binary.location.name) if entry else None

    def platform_of(self, binary: BinaryFile) -> Platform | None:
        """The platform ``binary``'s input targets (see ``platforms``)."""
        origin = self.origin_of(binary)
        return self.platforms.get(origin.label) if origin else None

    @cached_property
    def distributions(self) -> frozenset[str]:
        """Names of the distributions the inputs hold (wheels, and installed ``*.dist-info``)."""
        names = {e.distribution.name for e in self.sets if e.distribution}
        names |= {dist.name for e in self.sets for dist in e.owners.values()}
        return frozenset(names)

    def ships(self, binary: BinaryFile, name: str) -> bool:
        """Whether ``binary``'s own input (its distribution, in an installed folder) has a file
        found by ``name`` (the recipe's libraries count as shipped too); without inputs,
        whether any input has it."""
        if self.policy.is_project_library(name):
            return not self.required_distribution_ships(binary, name)
        origin = self.origin_of(binary)
        if origin is None:
            return name in self.in_input
        return name in self._origin_names.get(origin, frozenset())

    def required_distribution_ships(self, binary: BinaryFile, name: str) -> str | None:
        """The distribution that, by the recipe, ships the project library ``name`` for
        ``binary``'s own distribution, which requires it and does not ship it itself (the
        runtime wheel, for the compiler add-on); None otherwise."""
        own = self.origin_of(binary)
        dist = own.distribution if own else None
        shipping = self.policy.shipping_distributions(name)
        if dist is None or dist.name in shipping:
            return None
        return next((other for other in shipping if other in dist.requires), None)

    def other_providers(self, binary: BinaryFile, name: str) -> tuple[Origin, ...]:
        """The other inputs (or distributions) that have a file found by ``name``."""
        own = self.origin_of(binary)
        return tuple(
            origin
            for origin, names in self._origin_names.items()
            if origin != own and name in names
        )

    def scopes(self, closure: Closure) -> tuple[Closure, ...]:
        """What symbols bind against when ``closure``'s root is loaded: the closure, what it
        finds loaded already (``preloaded``), and the interpreter's objects when the root is an
        extension module."""
        interpreter = self.interpreters.get(closure.root)
        extra = (interpreter,) if interpreter is not None else ()
        return (closure, *self.preloaded(closure), *extra, *self._host_scope(closure.root))

    def _host_scope(self, root: str) -> tuple[Closure, ...]:
        """A plugin's host's closure, when the host is in the global scope as it opens the
        plugin (what the plugin NEEDs of it is in the plugin's own closure already)."""
        plugin = self._plugin_at.get(root)
        if plugin is None or plugin.host is None or not plugin.rule.host_global:
            return ()
        host = self.closures.get(plugin.host.location)
        return (host,) if host is not None else ()

    def preloaded(self, closure: Closure) -> tuple[Closure, ...]:
        """The closures of the libraries ``closure`` misses that a distribution required by the
        file needing them ships (BT114): importing that distribution loaded them before, and
        ld.so matches a NEEDED against the SONAMEs already loaded."""
        return tuple(self._preloaded(closure.root, closure.missing)[0])

    def unresolvable(self, closure: Closure) -> tuple[NeededEdge, ...]:
        """``closure.missing`` less what is ``preloaded``: the NEEDED entries no load finds."""
        return self._preloaded(closure.root, closure.missing)[1]

    def _preloaded(
        self, root: str, missing: tuple[NeededEdge, ...]
    ) -> tuple[list[Closure], tuple[NeededEdge, ...]]:
        cached = self._preload_cache.get(root)
        if cached is None:
            found: list[Closure] = []
            unfound: list[NeededEdge] = []
            for edge in missing:
                provider = self._required_provider(edge)
                if provider is None:
                    unfound.append(edge)
                elif provider.root not in {c.root for c in found}:
                    found.append(provider)
            cached = self._preload_cache[root] = (found, tuple(unfound))
        return cached

    def _required_provider(self, edge: NeededEdge) -> Closure | None:
        """The closure of the file that ``edge`` names in a distribution its requester's
        distribution requires; None when there is none."""
        own = self._origins.get(edge.requester)
        requires = own.distribution.requires if own and own.distribution else ()
        for origin, location in self._found_by.get(edge.needed, ()):
            dist = origin.distribution
            if origin != own and dist is not None and dist.name in requires:
                return self.closures.get(location)
        return None

    @cached_property
    def _found_by(self) -> dict[str, list[tuple[Origin, PurePosixPath]]]:
        """Each name a file can be found by (file name, SONAME) -> its origins and locations."""
        found: dict[str, list[tuple[Origin, PurePosixPath]]] = {}
        for binary in self.files:
            origin = self._origins.get(str(binary.location))
            if origin is None:
                continue
            names = {binary.location.name, self.facts(binary).soname}
            for name in names - {None}:
                found.setdefault(str(name), []).append((origin, binary.location))
        return found

    @cached_property
    def _preload_cache(self) -> dict[str, tuple[list[Closure], tuple[NeededEdge, ...]]]:
        return {}

    def definitions(self, path: str, facts: BinaryFacts) -> Definitions:
        """The dynamic definitions of one loaded object, indexed once for every closure."""
        index = self._indexes.get(path)
        if index is None:
            index = self._indexes[path] = index_object(facts)
        return index

    @cached_property
    def _indexes(self) -> dict[str, Definitions]:
        return {}

    def definition_names(self, facts: BinaryFacts, *, strong: bool = False) -> frozenset[str]:
        """The names one loaded object defines (``strong``: less its weak definitions), versions
        dropped, worked out once per object for every file whose closure holds it and every pair
        that asks (libtorch_cpu.so's 74k for each module that loads it; each pair of
        tensorflow's libraries for every library loaded with them)."""
        kind = "strong definition names" if strong else "definition names"
        return self.per_object(kind, facts, lambda of: _definition_names(of, strong))

    def defined_among(
        self, names: AbstractSet[str], facts: BinaryFacts, *, strong: bool = False
    ) -> frozenset[str]:
        """The names among ``names`` that one loaded object defines (``definition_names``),
        looked up key by key when they are few: cutting the version off each of a versioned
        library's definitions costs about a microsecond a key (tensorflow's biggest library has
        436k) for the handful of names a check asks about."""
        if not facts.versioned_definitions:
            found = names & facts.defined
            return frozenset(found - facts.weak_defined if strong else found)
        suffixes = self.per_object("version suffixes", facts, _version_suffixes)
        if len(names) * (len(suffixes) + 1) >= len(facts.defined):
            return frozenset(names & self.definition_names(facts, strong=strong))
        weak = facts.weak_defined if strong else frozenset()
        return frozenset(name for name in names if _defines(facts.defined, weak, name, suffixes))

    def per_object(self, kind: str, of: _O, compute: Callable[[_O], _T]) -> _T:
        """``compute(of)``, worked out once per object (by identity) for every check and pair
        that asks; ``kind`` names the derivation, keeping different ones of one object apart."""
        key = (kind, id(of))
        held = self._per_object.get(key)
        if held is None:
            held = self._per_object[key] = (of, compute(of))  # ``of`` kept: its id stays its own
        return cast("_T", held[1])

    @cached_property
    def _per_object(self) -> dict[tuple[str, int], tuple[object, object]]:
        return {}

    def optional_module(self, binary: BinaryFile) -> ModuleImports | None:
        """Where the package imports ``binary``, when it is an extension module that it
        imports only where a failure to load is caught (``python_imports``); None otherwise,
        or when nothing tells."""
        named = named_as_extension_module(binary.location.name)
        if not (named or self.defines_module_init(binary)):  # a .pyd, an untagged fast.so
            return None
        if binary.display not in self._module_imports:
            self._module_imports[binary.display] = self.imports_of(binary)
        found = self._module_imports[binary.display]
        if found is None or found.unread or not found.sites:
            return None
        return found if all(site.guarded for site in found.sites) else None

    @cached_property
    def _module_imports(self) -> dict[str, ModuleImports | None]:
        return {}

    def defines_module_init(self, binary: BinaryFile) -> bool:
        """Whether the file defines a ``PyInit_<name>`` (``binaries.defines_module_init``),
        scanned once for every check that asks (libtorch_cpu.so has 74k names)."""
        found = self._module_inits.get(binary.display)
        if found is None:
            found = self._module_inits[binary.display] = defines_module_init(self.facts(binary))
        return found

    @cached_property
    def _module_inits(self) -> dict[str, bool]:
        return {}

    @cached_property
    def identical_copies(self) -> dict[str, BinaryFile]:
        """See ``identical_copies``: worked out once for the copy check and the size table."""
        return identical_copies(self.shared)


_O = TypeVar("_O")
_T = TypeVar("_T")


def _definition_names(facts: BinaryFacts, strong: bool) -> frozenset[str]:
    defined = facts.defined - facts.weak_defined if strong else facts.defined
    if not facts.versioned_definitions:
        return defined
    return frozenset(key.partition("@")[0] for key in defined)


def _version_suffixes(facts: BinaryFacts) -> tuple[str, ...]:
    """Every version suffix a key of ``facts.defined`` can carry: ``@V`` and ``@@V`` for each
    version the file defines or needs (a definition's version index may name either)."""
    needed = (version for _file, versions in facts.version_needs for version in versions)
    names = dict.fromkeys((*facts.version_definitions, *needed))
    return tuple(suffix for name in names for suffix in (f"@{name}", f"@@{name}"))


def _defines(
    defined: frozenset[str], weak: frozenset[str], name: str, suffixes: tuple[str, ...]
) -> bool:
    """Whether a key for ``name`` (unversioned, or with one of ``suffixes``) is in ``defined``
    and not in ``weak``. A name with an "@" is no name a key starts with."""
    if "@" in name:
        return False
    if name in defined and name not in weak:
        return True
    keys = defined.intersection(map(name.__add__, suffixes))
    return bool(keys) and not weak.issuperset(keys)


def _compatible(one: Residence, other: Residence) -> bool:
    """Whether two ways of being resident in one root's process can hold at once: not two
    plugins of one group of alternatives."""
    if one is None or other is None:
        return True
    return one[0] != other[0] or one[1] == other[1]


def _sameness(facts: BinaryFacts) -> tuple[object, ...]:
    """What two copies of one file have in common (the contents are not kept)."""
    return (facts.soname, facts.file_size, facts.code_size, facts.sections, facts.needed,
            facts.exported_count, facts.defined)  # fmt: skip


def identical_copies(files: Iterable[BinaryFile]) -> dict[str, BinaryFile]:
    """Display of each shared library that is the same file as an earlier one with its SONAME
    in its folder (``libx.so``, ``libx.so.26``, ``libx.so.26.1.0`` shipped as three files) ->
    that one: ld.so maps one of them, so they are one library and the rest is wasted space."""
    first: dict[tuple[object, ...], BinaryFile] = {}
    copies: dict[str, BinaryFile] = {}
    for binary in sorted(files, key=lambda b: (len(b.display), b.display)):
        facts = binary.facts
        if facts is None or facts.file_type != "shared" or facts.soname is None:
            continue
        key = (binary.location.parent, *_sameness(facts))
        if key in first:
            copies[binary.display] = first[key]
        else:
            first[key] = binary
    return copies
