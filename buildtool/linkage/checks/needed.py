"""Checks on DT_NEEDED: required and forbidden entries, entries not found (an error unless the
platform, a driver or the recipe provides them), and symbol versions against the wheel tag."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Final

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import GRAFT_SUFFIX, base_name, listed
from buildtool.linkage.checks.policy import LibraryRule, PluginRule, recipe_spelling
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile
from buildtool.linkage.inputs.python_imports import ModuleImports
from buildtool.linkage.loaders.glibc import NeededPath, needed_path
from buildtool.linkage.loaders.platform import (
    DRIVER_LIBRARIES,
    Platform,
    newest_allowed,
    versions_beyond,
)


def check_required_needed(subject: Subject) -> Iterator[Finding]:
    for binary in subject.files:
        needed = subject.facts(binary).needed
        library = subject.policy.library_by_file(base_name(binary))
        executable = subject.policy.executable_by_file(base_name(binary))
        plugin = subject.policy.plugin_by_file(base_name(binary))
        rule_required = library.required_needed if library else ()
        rule_required += executable.required_needed if executable else ()
        rule_required += plugin.required_needed if plugin else ()
        spelled = {recipe_spelling(entry) for entry in needed}
        for required in rule_required:
            if recipe_spelling(required) not in spelled:
                yield Finding(
                    "BT101",
                    binary.display,
                    f"does not need {required}, which the recipe requires",
                    f"DT_NEEDED: {', '.join(needed) or 'none'}",
                    needed=required,
                )


def _matches(entry: str, pattern: str) -> bool:
    """A NEEDED entry against a recipe's pattern, in its own spelling or the recipe's (a
    pattern written as ``libx.so`` holds for ``@rpath/libx.dylib``, ``libx.dll`` and
    ``libx.so.0``; one written as a versioned file, for its SONAME)."""
    spelled = recipe_spelling(entry)
    return (
        fnmatch.fnmatchcase(entry, pattern)
        or fnmatch.fnmatchcase(spelled, pattern)
        or spelled == recipe_spelling(pattern)  # libggml.so.0 is libggml.so.0.21.0's library
    )


def _forbidden_for(subject: Subject, binary: BinaryFile) -> Iterator[tuple[str, str]]:
    """(needed entry, why forbidden) pairs."""
    needed = subject.facts(binary).needed
    library = subject.policy.library_by_file(base_name(binary))
    executable = subject.policy.executable_by_file(base_name(binary))
    plugin = subject.policy.plugin_by_file(base_name(binary))
    patterns = (library.forbidden_needed if library else ()) + (
        executable.forbidden_needed if executable else ()
    )
    patterns += plugin.forbidden_needed if plugin else ()
    for entry in needed:
        matched = [p for p in patterns if _matches(entry, p)]
        if matched:
            yield entry, f"matches forbidden pattern {matched[0]!r}"
    if executable is None:
        return
    for entry in needed:
        # every NEEDED its input ships counts, declared in the recipe or not
        is_project = subject.ships(binary, entry)
        allowed = any(_matches(entry, p) for p in executable.allowed_project_needed)
        if is_project and not allowed:
            shown = ", ".join(executable.allowed_project_needed) or "none"
            yield entry, f"is a project library outside its allow-list ({shown})"


def check_recipe_libraries_present(subject: Subject) -> Iterator[Finding]:
    """BT126: a required recipe library that no input file is (in any spelling). Not for
    wheels: each wheel of a split holds part of the libraries (the compiler add-on's wheel
    requires the runtime's)."""
    if any(entry.in_wheel for entry in subject.sets):
        return
    names = {base_name(b) for b in subject.files} | set(subject.in_input)
    names |= {subject.facts(b).soname or "" for b in subject.files}
    rules: tuple[LibraryRule | PluginRule, ...] = (
        *subject.policy.libraries,
        *subject.policy.plugins,
    )
    for rule in rules:
        if rule.optional or any(rule.matches(name) for name in names if name):
            continue
        kind = "plugin" if isinstance(rule, PluginRule) else "library"
        yield Finding(
            "BT126",
            subject.policy.source or rule.file_name,
            f"{kind} {rule.name} ({rule.file_name}) matches no file of the inputs",
            f"searched {len(subject.files)} files by file name, SONAME and versioned name",
        )


def check_forbidden_needed(subject: Subject) -> Iterator[Finding]:
    for binary in subject.files:
        for entry, why in _forbidden_for(subject, binary):
            yield Finding(
                "BT102",
                binary.display,
                f"needs {entry}, which {why}",
                f"DT_NEEDED: {', '.join(subject.facts(binary).needed)}",
                needed=entry,
            )


def _missing_in_contexts(
    subject: Subject,
) -> dict[tuple[str, str], tuple[BinaryFile, list[BinaryFile]]]:
    """(input file, NEEDED name) that ld.so would not find in some root's load context -> the
    file and the roots (the file itself when it is one): a dependency is judged where it is
    loaded, with its loaders' inherited DT_RPATH and the SONAMEs they loaded before it."""
    by_location = {str(b.location): b for b in subject.files}
    missing: dict[tuple[str, str], tuple[BinaryFile, list[BinaryFile]]] = {}
    for root in subject.roots:
        closure = subject.closures.get(root.location)
        for edge in closure.missing if closure else ():
            requester = by_location.get(edge.requester)
            if requester is not None:
                key = (edge.requester, edge.needed)
                missing.setdefault(key, (requester, []))[1].append(root)
    return missing


_FOREIGN_SEARCH = {
    "macho": "searched its and its loaders' LC_RPATH (dyld: @rpath, @loader_path)",
    "pe": "searched the loaded DLLs, the module's folder, the os.add_dll_directory folders "
    "and the system DLLs (Windows)",
}


def _searched(facts: BinaryFacts, platform: Platform | None) -> str:
    """What ld.so searched for a NEEDED entry of ``facts``, named as the file names it."""
    if facts.format in _FOREIGN_SEARCH:
        return _FOREIGN_SEARCH[facts.format]
    if facts.runpath is not None:
        own = f"RUNPATH {':'.join(facts.runpath) or '(empty)'}"
    elif facts.rpath is not None:
        own = f"RPATH {':'.join(facts.rpath) or '(empty)'} and its loaders' RPATH"
    else:
        own = "no RPATH or RUNPATH of its own, its loaders' RPATH"
    if platform is not None and platform.foreign:
        return (
            f"searched {own} and the libraries {platform.tag} provides (this machine's "
            "ld.so.cache and default directories do not count for it)"
        )
    return f"searched {own}, ld.so.cache and the default directories"


def _context(binary: BinaryFile, roots: Sequence[BinaryFile]) -> str:
    others = sorted({root.display for root in roots if root is not binary})
    return f" (loaded by {listed(others)})" if others else ""


def provided_by(subject: Subject, binary: BinaryFile, name: str) -> str | None:
    """Why a NEEDED name no input ships may legitimately be absent here: the platform's
    library, a GPU driver's, or one the recipe lists as host-provided; None: nothing provides
    it, so the load fails wherever the binary goes."""
    platform = subject.platform_of(binary)
    if platform is not None and platform.provides(name):
        where = "this machine's platform" if platform.tag == "host" else platform.tag
        return f"{name} is a library {where} provides ({platform.policy.name} policy)"
    if name in DRIVER_LIBRARIES:
        return f"{name} is a GPU driver's library, installed with the driver"
    for pattern in subject.policy.host_provided:
        if fnmatch.fnmatchcase(name, pattern):
            return f"{name} matches the recipe's host-provided {pattern!r}"
    return None


def _unchecked_requirements(subject: Subject, binary: BinaryFile) -> list[str]:
    """What ``binary``'s distribution requires that no input holds: it may ship the library."""
    own = subject.origin_of(binary)
    dist = own.distribution if own else None
    return sorted(dist.requires - subject.distributions) if dist else []


def _library_stem(name: str) -> str:
    """``@rpath/libtvm_ffi.so.1`` -> ``tvmffi``: the part of a library's name that says whose
    it is, lowercased, without folder, ``lib`` prefix, suffixes and separators."""
    stem = name.rsplit("/", 1)[-1].lower().removeprefix("lib")
    stem = re.split(r"\.(?:so|dylib|dll)\b", stem, maxsplit=1)[0]
    return re.sub(r"[^a-z0-9]", "", stem)


def _named_like(requirement: str, library: str) -> bool:
    """A distribution that ships a library names it after itself: apache-tvm-ffi's
    libtvm_ffi.so, torch's libtorch_cuda.so, nvidia-cuda-runtime-cu12's libcudart.so.12."""
    stem = _library_stem(library)
    words = [word for word in re.split(r"[-_.]+", requirement.lower()) if len(word) >= 3]
    joined = re.sub(r"[^a-z0-9]", "", requirement.lower())
    return any(word in stem for word in words) or (len(stem) >= 3 and stem in joined)


Providers = Callable[[BinaryFile], list[str]]
"""``_possible_providers`` of one subject, remembered per file: computed once per file, not
once per missing NEEDED entry (a file with 20,000 of them)."""


def _providers_memo(subject: Subject) -> Providers:
    known: dict[str, list[str]] = {}

    def providers(binary: BinaryFile) -> list[str]:
        if binary.display not in known:
            known[binary.display] = _possible_providers(subject, binary)
        return known[binary.display]

    return providers


def _possible_providers(subject: Subject, binary: BinaryFile) -> list[str]:
    """The unchecked requirements that may ship what ``binary`` needs and its own input lacks:
    those named like one of those libraries (torch for torchvision's libtorch.so; then its
    libc10.so may be torch's too). With none named like any, the missing library was the
    binary's own distribution's (torch's libc10 deleted from its wheel): the load fails."""
    lacking = [
        entry
        for entry in subject.facts(binary).needed
        if not subject.ships(binary, entry) and provided_by(subject, binary, entry) is None
    ]
    return [
        requirement
        for requirement in _unchecked_requirements(subject, binary)
        if any(
            _named_like(requirement, entry)
            or requirement in subject.policy.shipping_distributions(entry)
            for entry in lacking
        )
    ]


def _known_missing(subject: Subject, binary: BinaryFile, name: str) -> str | None:
    """Why a NEEDED no input ships cannot come from an unchecked requirement either: a grafted
    copy (only the wheel that grafted it has it), or a library of a required input distribution
    that ships the binary's other libraries but not this one. None: it might."""
    if GRAFT_SUFFIX.search(name):
        return f"{name} is a grafted copy (renamed by a repair tool): only its own wheel has it"
    siblings = _required_providers(subject, binary)
    if siblings:
        return (
            f"{listed(siblings)}, which it requires and which provides its other libraries, "
            f"does not ship {name}"
        )
    return None


def _required_providers(subject: Subject, binary: BinaryFile) -> list[str]:
    """The required input distributions that ship other NEEDED entries of ``binary``: the ones
    it was built against (torchvision's ``_C.so`` against torch), so a library of theirs that
    they lack is missing, not unchecked."""
    own = subject.origin_of(binary)
    dist = own.distribution if own else None
    if dist is None:
        return []
    found = {
        provider.distribution.name
        for entry in subject.facts(binary).needed
        for provider in subject.other_providers(binary, entry)
        if provider.distribution is not None and provider.distribution.name in dist.requires
    }
    return sorted(found)


_MATCHED_LOADED: Final = {
    "elf": "ld.so matches a NEEDED name against the SONAMEs already loaded before it searches",
    "macho": "dyld matches an @rpath name against the install names already loaded before it "
    "searches",
    "pe": "Windows matches a DLL name against the modules already loaded before it searches",
}
"""Why a library another distribution ships is found once that one is imported, by format."""


def _from_another_distribution(
    subject: Subject, binary: BinaryFile, name: str, evidence: str
) -> tuple[Finding | None, str]:
    """BT114 when a required input distribution ships ``name``; else the evidence, extended."""
    own = subject.origin_of(binary)
    own_dist = own.distribution if own else None
    for provider in subject.other_providers(binary, name):
        dist = provider.distribution
        if dist is not None and own_dist is not None and dist.name in own_dist.requires:
            finding = Finding(
                "BT114",
                binary.display,
                f"needs {name}, found only when {dist.name} is imported first",
                f"{name} ships in {dist.name}, which {own_dist.name} requires; "
                f"{_MATCHED_LOADED.get(subject.facts(binary).format, _MATCHED_LOADED['elf'])}; "
                f"{evidence}",
                needed=name,
            )
            return finding, evidence
        evidence += f"; {provider.label} has {name}, but "
        evidence += f"{own_dist.name if own_dist else 'this input'} does not require it"
    return None, evidence


def _missing_finding(
    subject: Subject,
    binary: BinaryFile,
    name: str,
    roots: Sequence[BinaryFile],
    providers: Providers,
) -> Finding:
    facts = subject.facts(binary)
    evidence = _searched(facts, subject.platform_of(binary)) + _context(binary, roots)
    message = f"needs {name}, which the dynamic loader would not find"
    if subject.ships(binary, name):
        other = _other_machine(subject, binary, name)
        return Finding("BT107", binary.display, message, other + evidence, needed=name)
    finding, evidence = _from_another_distribution(subject, binary, name, evidence)
    if finding is not None:
        return finding
    shipped_in = subject.required_distribution_ships(binary, name)
    if shipped_in is not None:  # the recipe's runtime wheel, for its add-on checked alone
        where = f"the recipe ships it in {shipped_in} (required, not among the inputs)"
        message = f"needs {name}, which no input ships"
        return Finding("BT116", binary.display, message, f"{where}; {evidence}", needed=name)
    why = provided_by(subject, binary, name)
    if why is not None:
        return Finding("BT108", binary.display, message, f"{why}; {evidence}", needed=name)
    return _found_nowhere(subject, binary, name, providers, evidence)


def _found_nowhere(
    subject: Subject, binary: BinaryFile, name: str, providers: Providers, evidence: str
) -> Finding:
    """A NEEDED entry no input ships and nothing provides: BT116 when a requirement not among
    the inputs may ship it, BT118 for an optional module, else BT109."""
    known = _known_missing(subject, binary, name)
    unchecked = providers(binary) if known is None else []
    if unchecked:
        message = f"needs {name}, which no input ships"
        evidence = (
            f"it may ship in {listed(unchecked)} (required, not among the inputs); {evidence}"
        )
        return Finding("BT116", binary.display, message, evidence, needed=name)
    message, here = _not_shipped(subject, binary, name)
    if known is None and _unchecked_requirements(subject, binary):
        others = listed(_unchecked_requirements(subject, binary))
        known = f"none of its requirements not among the inputs ({others}) is named like it"
    evidence = f"{known}; {evidence}" if known else evidence
    optional = subject.optional_module(binary)
    if optional is not None:
        return _optional_finding(binary, name, message, optional, here + evidence)
    return Finding("BT109", binary.display, message, here + evidence, needed=name)


def _optional_finding(
    binary: BinaryFile, name: str, message: str, imports: ModuleImports, evidence: str
) -> Finding:
    """BT118: BT109 on a module its package imports only where a failure to load is caught."""
    sites = listed(f"{site.file}:{site.line}" for site in imports.sites)
    return Finding(
        "BT118",
        binary.display,
        f"{message}; its package imports it only where it catches ImportError, and goes on "
        "without it",
        f"imported at {sites}, each inside try/except ImportError; {evidence}",
        needed=name,
    )


def _not_shipped(subject: Subject, binary: BinaryFile, name: str) -> tuple[str, str]:
    """BT109's message, and what this machine has, for a wheel judged by its tag: a library it
    has beyond the tag's policy loads here and fails on a compliant system without it."""
    platform = subject.platform_of(binary)
    if platform is None or not (platform.portable or platform.foreign):
        return f"needs {name}, which no input ships and nothing provides: loading it fails", ""
    message = (
        f"needs {name}, which no input ships and {platform.tag} does not provide: loading it "
        "fails where it is not installed"
    )
    found = subject.on_this_machine(name, subject.facts(binary))
    here = f"this machine has it ({found}), outside the tag's policy; " if found else ""
    return message, here


def _other_machine(subject: Subject, binary: BinaryFile, name: str) -> str:
    """Why a library the input ships is not found when it is built for another machine or
    class (ld.so skips it as if absent): said, or ''."""
    facts = subject.facts(binary)
    own = subject.origin_of(binary)
    for other in subject.files:
        found = subject.facts(other)
        if name not in (other.location.name, found.soname) or subject.origin_of(other) != own:
            continue
        if (found.machine, found.elf_class) != (facts.machine, facts.elf_class):
            return (
                f"{other.display} is built for {found.machine} ({found.elf_class}-bit), this "
                f"file for {facts.machine} ({facts.elf_class}-bit): ld.so skips it; "
            )
    return ""


def check_needed_found(subject: Subject) -> Iterator[Finding]:
    providers = _providers_memo(subject)
    no_runpath: dict[str, tuple[BinaryFile, list[str], list[BinaryFile]]] = {}
    for (location, name), (binary, roots) in _missing_in_contexts(subject).items():
        facts = subject.facts(binary)
        if facts.format == "elf" and needed_path(name) is not None:
            continue  # BT119: a path, where it is found or not
        no_search_path = facts.runpath is None and facts.rpath is None and facts.format == "elf"
        if subject.ships(binary, name) and no_search_path:
            entry = no_runpath.setdefault(location, (binary, [], []))
            entry[1].append(name)
            entry[2].extend(roots)
            continue
        yield _missing_finding(subject, binary, name, roots, providers)
    for binary, names, roots in no_runpath.values():
        yield Finding(
            "BT112",
            binary.display,
            f"needs {', '.join(names)}, which ship with it, but has no RUNPATH"
            + _runpath_that_finds(subject, binary, names),
            "DT_RUNPATH and DT_RPATH absent"
            + _context(binary, roots)
            + subject.undeclared_module(binary),
        )


def check_needed_paths(subject: Subject) -> Iterator[Finding]:
    for binary in subject.files:
        facts = subject.facts(binary)
        if facts.format != "elf":
            continue  # Mach-O install names are paths by design; PE names are file names
        for name in facts.needed:
            kind = needed_path(name)
            if kind is not None:
                yield Finding(
                    "BT119",
                    binary.display,
                    _path_message(subject, name, kind),
                    _path_evidence(subject, name),
                    needed=name,
                )


def _path_message(subject: Subject, name: str, kind: NeededPath) -> str:
    if kind == "absolute" and any(str(other.location) == name for other in subject.files):
        return (
            f"needs {name} by its absolute path, a file of this input: ld.so opens that very "
            "path, so loading fails once the files are installed or copied anywhere else"
        )
    if kind == "absolute":
        return (
            f"needs {name} by its absolute path: ld.so opens that very file, so loading fails "
            "wherever it is not there"
        )
    return (
        f"needs {name} by a relative path: ld.so opens it from the process's working "
        "directory, so loading fails from any other"
    )


def _path_evidence(subject: Subject, name: str) -> str:
    """Which input file the path names, when one is named so and has no SONAME (why the link
    wrote a path)."""
    file_name = posixpath.basename(name)
    for other in subject.files:
        if other.location.name == file_name and subject.facts(other).soname is None:
            return (
                f"DT_NEEDED {name}, never searched for (RUNPATH and RPATH do not apply); "
                f"{other.display} has no SONAME, so the link wrote the path it was given"
            )
    return f"DT_NEEDED {name}, never searched for (RUNPATH and RPATH do not apply)"


def _runpath_that_finds(subject: Subject, binary: BinaryFile, names: Sequence[str]) -> str:
    """The $ORIGIN-relative RUNPATH that would find ``names`` from where ``binary`` lies (a
    program in bin/: ``$ORIGIN/../lib``, not ``$ORIGIN``), said as a suggestion, or ''."""
    own = subject.origin_of(binary)
    folders = sorted(
        {
            str(other.location.parent)
            for other in subject.files
            if subject.origin_of(other) == own
            and {other.location.name, subject.facts(other).soname} & set(names)
        }
    )
    here = str(binary.location.parent)
    entries = [
        "$ORIGIN" if folder == here else f"$ORIGIN/{posixpath.relpath(folder, here)}"
        for folder in folders
    ]
    return f" (RUNPATH {':'.join(entries)} would find them)" if entries else ""


def check_symbol_versions(subject: Subject) -> Iterator[Finding]:
    """BT150: a wheel's binaries need symbol versions its platform tag does not promise."""
    for binary in subject.files:
        platform = subject.platform_of(binary)
        if platform is None or platform.tag == "host":
            continue
        for file, version, symbols in versions_beyond(subject.facts(binary), platform):
            prefix = version.partition("_")[0]
            newest = newest_allowed(platform, prefix)
            yield Finding(
                "BT150",
                binary.display,
                f"needs {version} from {file}, newer than its tag {platform.tag} allows "
                f"({prefix} up to {newest})",
                f"symbols bound to {version}: {listed(symbols) or 'none (a version need only)'}; "
                f"pip installs the wheel on {platform.policy.name} systems, where ld.so stops "
                f'with "version `{version}\' not found"',
                needed=file,
            )
