"""Symbol binding as glibc does it: versioned keys against the loaded objects."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Final

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.loaders.glibc_exports import GLIBC_EXPORTS
from buildtool.linkage.loaders.loaded import Closure
from buildtool.linkage.loaders.musl_exports import MUSL_EXPORTS

# --- symbol resolution ----------------------------------------------------------------------


def split_key(key: str) -> tuple[str, str | None, bool]:
    """``(name, version, is the default version)`` of a symbol key (see elf's module doc)."""
    at = key.find("@")
    if at < 0:
        return (key, None, False)
    if key.startswith("@@", at):
        return (key[:at], key[at + 2 :], True)
    return (key[:at], key[at + 1 :], False)


class Questions:
    """The keys a file asks the loaded objects for, sorted by the kind of answer they take
    (``unresolved_against``), with the keys an object would define for them formed once, the
    first time an object asks: not once for every object of every closure."""

    def __init__(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self.plain = {key for key in keys if "@" not in key}
        self.versioned = {key for key in keys if "@" in key and "@@" not in key}
        """``name@V`` keys; each name is what comes before the "@"."""
        self.odd = [key for key in keys if "@@" in key]  # never a reference's; kept exact anyway
        self.by_name: dict[str, set[str]] = {}
        for key in self.versioned:
            self.by_name.setdefault(key[: key.find("@")], set()).add(key)
        self._defaults: dict[str, dict[str, str]] = {}
        self._doubled: dict[str, str] | None = None

    def left(self) -> bool:
        return bool(self.plain or self.versioned or self.odd)

    def as_default(self, version: str) -> dict[str, str]:
        """``name@@version`` -> ``name`` for the plain keys asked (as first asked)."""
        if version not in self._defaults:
            self._defaults[version] = {f"{name}@@{version}": name for name in self.plain}
        return self._defaults[version]

    def doubled(self) -> dict[str, str]:
        """``name@@V`` -> ``name@V`` for the versioned keys asked (as first asked)."""
        if self._doubled is None:
            self._doubled = {key.replace("@", "@@", 1): key for key in self.versioned}
        return self._doubled


@dataclass(frozen=True)
class DefinitionIndex:
    """The definitions of a set of objects, arranged for ld.so's version matching."""

    unversioned: frozenset[str]
    """Names defined without a version."""
    default: frozenset[str]
    """Names with a default (``name@@V``) definition."""
    versioned: frozenset[str]
    """``name@V`` for every versioned definition, default or hidden."""

    def plain_answered(self, asked: Questions) -> AbstractSet[str]:
        """The plain keys asked that an unversioned or a default definition satisfies."""
        return self.unversioned.intersection(asked.plain) | self.default.intersection(asked.plain)

    def versioned_answered(self, asked: Questions) -> AbstractSet[str]:
        """The ``name@V`` keys asked that a definition of that version satisfies."""
        return self.versioned.intersection(asked.versioned)

    def unversioned_names(self, asked: Questions) -> AbstractSet[str]:
        """The names of the ``name@V`` keys asked defined without a version."""
        return self.unversioned.intersection(asked.by_name)

    def satisfies(self, key: str) -> bool:
        """``is_satisfied``."""
        name, version, _default = split_key(key)
        if version is None:
            return name in self.unversioned or name in self.default
        return f"{name}@{version}" in self.versioned or name in self.unversioned


@dataclass(frozen=True)
class KeyedDefinitions:
    """``DefinitionIndex``'s answers, looked up in one object's keys as they are: for keys that
    each read as a name and a version without doubt (``BinaryFacts.default_versions``). An
    answer costs what the questions take (a file's references), not a split of every key:
    tensorflow's libtensorflow_cc.so.2 defines 436k keys of about 200 characters, each
    ``name@@tensorflow``, and indexing them took most of a second. Each intersection runs over
    the questions, the smaller side."""

    keys: frozenset[str]
    default_versions: tuple[str, ...]

    def plain_answered(self, asked: Questions) -> AbstractSet[str]:
        found = set(self.keys.intersection(asked.plain))
        for version in self.default_versions:
            named = asked.as_default(version)
            found.update(named[key] for key in self.keys.intersection(named))
        return found

    def versioned_answered(self, asked: Questions) -> AbstractSet[str]:
        # name@V is defined as name@V (hidden) or as name@@V (the default)
        doubled = asked.doubled()
        found = set(self.keys.intersection(asked.versioned))
        found.update(doubled[key] for key in self.keys.intersection(doubled))
        return found

    def unversioned_names(self, asked: Questions) -> AbstractSet[str]:
        return self.keys.intersection(asked.by_name)

    def satisfies(self, key: str) -> bool:
        """``is_satisfied``."""
        name, version, _default = split_key(key)
        if version is None:
            return any(f"{name}{suffix}" in self.keys for suffix in self._suffixes)
        return not self.keys.isdisjoint((name, f"{name}@{version}", f"{name}@@{version}"))

    @property
    def _suffixes(self) -> tuple[str, ...]:
        return ("", *(f"@@{version}" for version in self.default_versions))


Definitions = DefinitionIndex | KeyedDefinitions


LOOKED_UP_MAX_VERSIONS: Final = 2
"""Default versions an object's keys may name for them to be looked up: each plain key asked
is formed again for each (a version script's library has one version for every export;
libgomp's 417 keys name 22, and are indexed)."""


def index_object(facts: BinaryFacts) -> Definitions:
    """The definitions of one object, arranged for version matching: its keys as they are when
    none has a version, or when each reads as a name and a version without doubt and they name
    few default versions (libLLVM's 44k keys, tensorflow's 436k, copy-relocated definitions)."""
    if not facts.versioned_definitions:
        return DefinitionIndex(facts.defined, frozenset(), frozenset())
    versions = facts.default_versions
    if versions is not None and len(versions) <= LOOKED_UP_MAX_VERSIONS:
        return KeyedDefinitions(facts.defined, versions)
    return index_definitions([facts.defined])


def index_definitions(defined_sets: Iterable[Iterable[str]]) -> DefinitionIndex:
    """Index the ``defined`` keys of several objects (e.g. every object in a closure).

    Each key is split once, at its first "@"."""
    unversioned: set[str] = set()
    default: set[str] = set()
    versioned: set[str] = set()
    for keys in defined_sets:
        for key in keys:
            name, at, version = key.partition("@")
            if not at:
                unversioned.add(key)
            elif version[:1] == "@":  # name@@V: the default version
                default.add(name)
                versioned.add(f"{name}@{version[1:]}")
            else:
                versioned.add(key)
    return DefinitionIndex(frozenset(unversioned), frozenset(default), frozenset(versioned))


def is_satisfied(key: str, index: Definitions) -> bool:
    """Whether ld.so would bind an undefined ``key`` to one of the indexed definitions.

    ``name@V`` binds to ``name@V``/``name@@V`` or to an unversioned ``name``; ``name`` binds to an
    unversioned ``name`` or to the default version ``name@@V``.
    """
    return index.satisfies(key)


def unresolved_symbols(facts: BinaryFacts, index: Definitions) -> frozenset[str]:
    """Strong undefined keys of ``facts`` that nothing in the index defines."""
    return frozenset(key for key in facts.undefined if not is_satisfied(key, index))


def unresolved_against(keys: Iterable[str], indexes: Iterable[Definitions]) -> frozenset[str]:
    """The ``keys`` that no index satisfies: ``unresolved_symbols`` against the union of the
    indexes without building the union (one index per object, shared by every closure).

    Set differences do the work: an unversioned key is satisfied by an unversioned or a
    default definition; a ``name@V`` key by a definition of that version or by an unversioned
    ``name``.
    """
    asked = Questions(keys)
    for index in indexes:
        if not asked.left():
            break
        asked.plain.difference_update(index.plain_answered(asked))
        asked.versioned.difference_update(index.versioned_answered(asked))
        for name in index.unversioned_names(asked):
            asked.versioned.difference_update(asked.by_name.pop(name))
        asked.odd = [key for key in asked.odd if not is_satisfied(key, index)]
    return frozenset(asked.plain | asked.versioned | set(asked.odd))


def closure_index(closure: Closure) -> DefinitionIndex:
    """Definitions of every object the closure loads (the root included)."""
    return index_definitions(facts.defined for facts in closure.objects.values())


def unsatisfied_version_needs(facts: BinaryFacts, closure: Closure) -> tuple[tuple[str, str], ...]:
    """``(file, version)`` needs whose file is loaded but does not define that version.

    ld.so refuses to start with "version `V' not found"; a file that is not loaded at all is
    already a missing NEEDED. A file that defines no versions but has a version table (it needs
    versions itself, as every file linked against glibc does) satisfies every need: ld.so warns
    "no version information available" and binds ``name@V`` to its unversioned ``name``. One
    without any version table does not: binding ``name@V`` to it aborts in ld.so's
    ``check_match`` assertion.
    """
    missing: list[tuple[str, str]] = []
    for file, versions in facts.version_needs:
        provider = closure.provider(file)
        if provider is None or provider.platform:
            continue  # a platform's versions are judged against its tag (versions_beyond)
        if not provider.version_definitions and provider.version_needs:
            continue
        missing += [(file, v) for v in versions if v not in provider.version_definitions]
    return tuple(missing)


GLIBC_LIBRARY = re.compile(
    r"(libc|libm|libdl|libpthread|librt|libutil|libresolv|libnsl|libcrypt|libanl)\.so\.\d+$"
    r"|ld-linux[-\w]*\.so\.\d+$|ld64\.so\.\d+$"
)
MUSL_LIBRARY = re.compile(r"(libc\.musl-|ld-musl-)\w+\.so\.1$")
GCC_RUNTIME = re.compile(r"(libstdc\+\+\.so\.6|libgcc_s\.so\.1)$")
GCC_RUNTIME_NAME = re.compile(r"_Z|__|_Unwind_")
"""What libstdc++ and libgcc_s export: mangled C++ names, ``__cxa_*``/``__gxx_*`` and the
compiler's helpers (``__udivti3``), the unwinder's ``_Unwind_*``."""


def _unversioned_exports(stand_ins: Iterable[str]) -> Callable[[str], bool]:
    """Whether one of the platform libraries ``stand_ins`` may export an unversioned name: the
    C library's own names (``loaders.glibc_exports``, ``loaders.musl_exports``), the GCC
    runtime's kind of name, and any name for a library whose exports are not known here
    (libGL, libz)."""
    known: list[Callable[[str], bool]] = []
    for library in stand_ins:
        if GLIBC_LIBRARY.match(library):
            known.append(GLIBC_EXPORTS.__contains__)
        elif MUSL_LIBRARY.match(library):
            known.append(MUSL_EXPORTS.__contains__)
        elif GCC_RUNTIME.match(library):
            known.append(lambda name: GCC_RUNTIME_NAME.match(name) is not None)
        else:
            return lambda _name: True
    return lambda name: any(exports(name) for exports in known)


def platform_may_define(
    facts: BinaryFacts, keys: Iterable[str], closure: Closure
) -> frozenset[str]:
    """The ``keys`` of ``facts`` that a platform library of the closure may define (see
    ``BinaryFacts.platform``): those bound to a version needed from one (the tag check judges the
    version), and the unversioned ones a platform library may export (``_unversioned_exports``).
    Empty when the closure loads no platform library."""
    stand_ins = {name for name, path in closure.names.items() if closure.objects[path].platform}
    if not stand_ins:
        return frozenset()
    from_platform = {v for file, versions in facts.version_needs if file in stand_ins
                     for v in versions}  # fmt: skip
    exported = _unversioned_exports(stand_ins)

    def may_define(key: str) -> bool:
        name, version, _ = split_key(key)
        return version in from_platform if version is not None else exported(name)

    return frozenset(key for key in keys if may_define(key))
