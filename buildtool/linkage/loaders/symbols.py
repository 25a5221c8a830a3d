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


@dataclass(frozen=True)
class DefinitionIndex:
    """The definitions of a set of objects, arranged for ld.so's version matching."""

    unversioned: frozenset[str]
    """Names defined without a version."""
    default: frozenset[str]
    """Names with a default (``name@@V``) definition."""
    versioned: frozenset[str]
    """``name@V`` for every versioned definition, default or hidden."""

    def unversioned_among(self, names: AbstractSet[str]) -> AbstractSet[str]:
        """The ``names`` (none with an "@") defined without a version."""
        return self.unversioned.intersection(names)

    def default_among(self, names: AbstractSet[str]) -> AbstractSet[str]:
        """The ``names`` (none with an "@") with a default version."""
        return self.default.intersection(names)

    def versioned_among(self, keys: AbstractSet[str]) -> AbstractSet[str]:
        """The ``name@V`` keys (no "@" in the name) with a definition of that version."""
        return self.versioned.intersection(keys)

    def satisfies(self, key: str) -> bool:
        """``is_satisfied``."""
        name, version, _default = split_key(key)
        if version is None:
            return name in self.unversioned or name in self.default
        return f"{name}@{version}" in self.versioned or name in self.unversioned


@dataclass(frozen=True)
class KeyedDefinitions:
    """``DefinitionIndex``'s answers, looked up in one object's keys as they are: for keys that
    each read as a name and a version without doubt (``BinaryFacts.default_versions``). Asking
    costs what the questions (a file's references) take, not a split of every key:
    tensorflow's libtensorflow_cc.so.2 defines 436k keys of about 200 characters, each
    ``name@@tensorflow``, and indexing them took most of a second."""

    keys: frozenset[str]
    default_versions: tuple[str, ...]

    def unversioned_among(self, names: AbstractSet[str]) -> AbstractSet[str]:
        return self.keys.intersection(names)  # over the names: the keys are many

    def default_among(self, names: AbstractSet[str]) -> AbstractSet[str]:
        keys = self.keys
        suffixes = [f"@@{version}" for version in self.default_versions]
        return {name for name in names if any(name + suffix in keys for suffix in suffixes)}

    def versioned_among(self, keys: AbstractSet[str]) -> AbstractSet[str]:
        own = self.keys  # name@V is defined as name@V (hidden) or name@@V (the default)
        return {key for key in keys if key in own or key.replace("@", "@@", 1) in own}

    def satisfies(self, key: str) -> bool:
        """``is_satisfied``."""
        name, version, _default = split_key(key)
        if version is None:
            return name in self.keys or bool(self.default_among({name}))
        return not self.keys.isdisjoint((name, f"{name}@{version}", f"{name}@@{version}"))


Definitions = DefinitionIndex | KeyedDefinitions


LOOKED_UP_MIN_KEYS: Final = 10_000
"""Keys an object defines from which they are looked up (``KeyedDefinitions``) rather than
split: below it, splitting them costs less than the questions every file asks."""
LOOKED_UP_MAX_VERSIONS: Final = 2
"""Default versions an object's keys name at most for them to be looked up: an unversioned
question is asked once per version (a version script's library has one for every export;
libgomp's 417 keys name 22)."""


def index_object(facts: BinaryFacts) -> Definitions:
    """The definitions of one object, arranged for version matching: its keys as they are when
    none has a version, or when they are many, name few versions and each reads as a name and
    a version without doubt (libLLVM's 44k keys, tensorflow's 436k)."""
    if not facts.versioned_definitions:
        return DefinitionIndex(facts.defined, frozenset(), frozenset())
    versions = facts.default_versions
    if (
        versions is not None
        and len(versions) <= LOOKED_UP_MAX_VERSIONS
        and len(facts.defined) >= LOOKED_UP_MIN_KEYS
    ):
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
    plain = {key for key in keys if "@" not in key}
    versioned = {key for key in keys if "@" in key and "@@" not in key}
    odd = [key for key in keys if "@@" in key]  # never a reference's key; kept exact anyway
    by_name: dict[str, set[str]] = {}
    for key in versioned:  # each has an "@"; the name is what comes before it
        by_name.setdefault(key[: key.find("@")], set()).add(key)
    for index in indexes:
        if not (plain or versioned or odd):
            break
        plain.difference_update(index.unversioned_among(plain), index.default_among(plain))
        versioned.difference_update(index.versioned_among(versioned))
        for name in index.unversioned_among(by_name.keys()):
            versioned.difference_update(by_name.pop(name))
        odd = [key for key in odd if not is_satisfied(key, index)]
    return frozenset(plain | versioned | set(odd))


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
