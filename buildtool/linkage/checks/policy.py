"""The linkage policy: what the binaries must and must not be, as plain data. Pure.

The linkage package knows nothing of recipes or plans: ``buildtool.verification`` turns a
recipe's plan into this policy. Without any recipe, ``LinkagePolicy.empty()`` runs the generic
checks only.
"""

from __future__ import annotations

import dataclasses
import re

_DYLIB = re.compile(r"(lib.+?)((?:\.\d+)*)\.dylib")
_VERSIONED_SO = re.compile(r"(.+?\.so)(?:\.\d+)+")
_DLL = re.compile(r"(.+)\.dll", re.IGNORECASE)
_EXE = re.compile(r"(.+)\.exe", re.IGNORECASE)


def recipe_spelling(name: str) -> str:
    """A library's or executable's file or NEEDED name as a recipe spells it, which is its ELF
    link name: a versioned library, its SONAME and its file (``libggml.so.0``,
    ``libggml.so.0.21.0`` -> ``libggml.so``), a Mach-O install name or file
    (``@rpath/libx.1.dylib`` -> ``libx.so``), a DLL (mingw's ``libx.dll`` and MSVC's ``x.dll``
    -> ``libx.so``), an executable without ``.exe``. Every other name stays as it is."""
    base = name.rsplit("/", 1)[-1]
    if versioned := _VERSIONED_SO.fullmatch(base):
        return versioned[1]
    if dylib := _DYLIB.fullmatch(base):
        return f"{dylib[1]}.so"
    if dll := _DLL.fullmatch(base):
        stem = dll[1]
        return f"{stem if stem.lower().startswith('lib') else 'lib' + stem}.so"
    if exe := _EXE.fullmatch(base):
        return exe[1]
    return name


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
    max_growth_percent: float | None = None
    """Largest allowed growth of its file size against a baseline report, in percent."""
    static_initializers: tuple[str, ...] = ()
    """``.symtab`` static-init functions of its own sources (evidence that their code is in
    it, registrations included)."""
    distributions: tuple[str, ...] = ()
    """Normalized names of the distributions whose wheels ship it (the full one, and the
    runtime wheel or the add-on), when known: a wheel of another distribution that requires one
    of them finds it there once installed, rather than lacking it."""

    def matches(self, name: str) -> bool:
        """Whether a file or NEEDED name is this library in any spelling: its link name, SONAME,
        versioned file, another format's name (``recipe_spelling``)."""
        return recipe_spelling(name) == recipe_spelling(self.file_name)


@dataclasses.dataclass(frozen=True)
class PluginRule:
    """A module a recipe library (its host) opens at run time: judged as the host loads it."""

    name: str
    """Recipe name."""
    file_name: str
    """File name of the built module."""
    host: str
    """File name of the host library (any spelling matches, see ``LibraryRule.matches``)."""
    folder: str
    """The host's plugin folder relative to the host's own folder (``backends``, ``../bin``,
    ``.``): where the host looks for it."""
    alternatives: str = ""
    """The group of the host's plugins of which one at most is resident; empty: none."""
    registers: tuple[str, ...] = ()
    """Names it registers in the host's registry (string constants)."""
    required_needed: tuple[str, ...] = ()
    """File names that must be in its DT_NEEDED (its links)."""
    forbidden_needed: tuple[str, ...] = ()
    """Glob patterns that must match none of its DT_NEEDED entries."""
    objects: tuple[ObjectRule, ...] = ()
    """Object libraries it owns."""
    host_global: bool = True
    """Whether the host's closure is in the global scope when it opens the plugin (the
    recipe's loader opens the host ``RTLD_GLOBAL``, or a program links it): symbols the plugin
    leaves undefined bind against it. Opened ``RTLD_LOCAL``, only what the plugin NEEDs."""
    optional: bool = False
    """Whether deployments may lack it (its host or a library it links is optional)."""
    static_initializers: tuple[str, ...] = ()
    """``.symtab`` static-init functions of its own sources."""

    def matches(self, name: str) -> bool:
        """Whether a file name is this plugin in any spelling (``recipe_spelling``)."""
        return recipe_spelling(name) == recipe_spelling(self.file_name)

    def is_host(self, name: str) -> bool:
        """Whether a file or NEEDED name is this plugin's host in any spelling."""
        return recipe_spelling(name) == recipe_spelling(self.host)

    def resident_with(self, other: PluginRule) -> bool:
        """Whether this plugin and ``other`` can be loaded in one process at once: anything
        but two alternatives of one host."""
        alternatives = (
            self.name != other.name
            and bool(self.alternatives)
            and self.alternatives == other.alternatives
            and recipe_spelling(self.host) == recipe_spelling(other.host)
        )
        return not alternatives


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
    source_reason: str = dataclasses.field(default="", kw_only=True)
    """Why that recipe applies, or why none does (every report says it)."""
    package: str
    """Import package: installed libraries belong in ``<package>/lib/``."""
    libraries: tuple[LibraryRule, ...]
    executables: tuple[ExecutableRule, ...]
    removed: tuple[str, ...]
    """Legacy file names that must not exist any more."""
    hardening: bool
    host_provided: tuple[str, ...] = ()
    """NEEDED names (globs) the machines the binaries run on provide although no input ships
    them (a vendor's driver library): not found, they are a warning (BT108), not an error."""
    plugins: tuple[PluginRule, ...] = ()
    """Modules the libraries open at run time."""

    @staticmethod
    def empty() -> LinkagePolicy:
        return LinkagePolicy(
            source="", package="", libraries=(), executables=(), removed=(), hardening=False
        )

    @property
    def registration_names(self) -> tuple[str, ...]:
        """Every name the recipe says is registered, by a library or by an object library."""
        owners: tuple[LibraryRule | PluginRule, ...] = (*self.libraries, *self.plugins)
        names = [name for owner in owners for name in owner.registers]
        names += [name for owner in owners for obj in owner.objects for name in obj.registers]
        return tuple(dict.fromkeys(names))

    @property
    def project_files(self) -> frozenset[str]:
        return frozenset(recipe_spelling(lib.file_name) for lib in self.libraries)

    def is_project_library(self, name: str) -> bool:
        """Whether a file or NEEDED name, in any binary format's spelling, is a recipe library."""
        return recipe_spelling(name) in self.project_files

    def shipping_distributions(self, name: str) -> tuple[str, ...]:
        """The distributions the recipe ships the library ``name`` in (any spelling); empty
        when it is not a recipe library or they are not known."""
        rule = self.library_by_file(name)
        return rule.distributions if rule is not None else ()

    def library_by_file(self, file_name: str) -> LibraryRule | None:
        return next((lib for lib in self.libraries if lib.matches(file_name)), None)

    def plugin_by_file(self, file_name: str) -> PluginRule | None:
        return next((plugin for plugin in self.plugins if plugin.matches(file_name)), None)

    def executable_by_file(self, file_name: str) -> ExecutableRule | None:
        spelled = recipe_spelling(file_name)
        return next((exe for exe in self.executables if exe.name == spelled), None)
