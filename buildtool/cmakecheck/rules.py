"""The code model and an optional policy -> findings. Pure: no files, no processes.

Findings name the CMake file that defines the target (so GitHub annotations land on it) and
start with the target's name and line.
"""

from __future__ import annotations

import collections
import dataclasses
import fnmatch
import itertools
import posixpath
from collections.abc import Callable, Iterator, Mapping

from buildtool.cmakecheck.codemodel import LIBRARY_TYPES, LINKED_TYPES, CmakeTarget, Codemodel
from buildtool.cmakecheck.linkline import (
    artifact_index,
    as_needed_per_fragment,
    keeps_archives_private,
    library_paths,
    linked_file_names,
    linked_targets,
    rpath_entries,
    static_archives,
    unversioned,
)
from buildtool.cmakecheck.policy import CmakePolicy, LibraryPolicy, PluginPolicy
from buildtool.linkage.checks.catalogue import Finding


@dataclasses.dataclass(frozen=True)
class Graph:
    """Who links whom and who holds which object files, from the code model."""

    model: Codemodel
    linked: Mapping[str, tuple[str, ...]]
    """Target name -> names of the build tree's targets on its link line."""
    holders: Mapping[str, tuple[str, ...]]
    """OBJECT library name -> names of the linked targets holding its object files."""
    compiled_in: Mapping[str, tuple[str, ...]]
    """Source path -> names of the linked targets compiling it."""


def make_graph(model: Codemodel) -> Graph:
    artifacts = artifact_index(model.targets)
    linked = {
        target.name: tuple(linked_targets(target, model.build_dir, artifacts))
        for target in model.targets
    }
    holders: dict[str, list[str]] = {}
    compiled_in: dict[str, list[str]] = {}
    for target in model.of_type(*LINKED_TYPES):
        for name in target.object_libraries:
            holders.setdefault(name, []).append(target.name)
        for source in target.sources:
            compiled_in.setdefault(source, []).append(target.name)
    return Graph(
        model,
        linked,
        {name: tuple(found) for name, found in holders.items()},
        {source: tuple(found) for source, found in compiled_in.items()},
    )


def _finding(target: CmakeTarget, check_id: str, message: str, evidence: str = "") -> Finding:
    return Finding(
        check_id, target.defined_in, f"target {target.name} ({target.where}): {message}", evidence
    )


class Together:
    """Whether two targets end up in one process: one links the other, one target links both,
    the recipe's loader loads both, or a plugin is opened beside the other (its host's
    closure, the loader's libraries, the host's other plugins but its alternatives)."""

    def __init__(self, graph: Graph, policy: CmakePolicy | None) -> None:
        self.graph = graph
        files = policy.library_files if policy else frozenset()
        self.loaded = {t.name for t in graph.model.targets if files and set(t.file_names) & files}
        self.plugins: dict[str, PluginPolicy] = {}
        self.hosts: dict[str, str] = {}
        for target in graph.model.of_type(*LIBRARY_TYPES) if policy else ():
            plugin = policy.plugin_by_file(target.file_names) if policy else None
            host = _by_file(graph.model, plugin.host, LIBRARY_TYPES) if plugin else None
            if plugin is not None and host is not None:
                self.plugins[target.name] = plugin
                self.hosts[target.name] = host.name

    def reason(self, first: str, second: str) -> str | None:
        if first in self.plugins or second in self.plugins:
            return self._plugin_reason(first, second)
        linked = self.graph.linked
        if second in linked.get(first, ()):
            return f"{first} links {second}"
        if first in linked.get(second, ()):
            return f"{second} links {first}"
        if first in self.loaded and second in self.loaded:
            return "the recipe's loader loads both"
        for name, names in linked.items():
            if first in names and second in names:
                return f"{name} links both"
        return None

    def both_plugins(self, first: str, second: str) -> bool:
        """Whether both are plugins: their hosts open them ``RTLD_LOCAL``, so neither one's
        exports bind the other's calls."""
        return first in self.plugins and second in self.plugins

    def _plugin_reason(self, first: str, second: str) -> str | None:
        """Why a plugin and another target are in one process, or None (alternatives)."""
        plugin, other = (first, second) if first in self.plugins else (second, first)
        host = self.hosts[plugin]
        if other in self.plugins:
            if self.plugins[plugin].alternative_to(self.plugins[other]):
                return None  # one of them at a time, by the recipe
            if self.hosts[other] == host:
                return f"{host} opens both"
            return f"the recipe's loader loads {host} and {self.hosts[other]}, which open them"
        in_host = other == host or other in self.graph.linked.get(host, ())
        if in_host or other in self.loaded:
            return f"{host} opens {plugin} in the process that loads {other}"
        return None


def _shared_code(
    graph: Graph,
    together: Together,
    check_id: str,
    shared: Mapping[str, tuple[str, ...]],
    describe: Callable[[str, str], str],
) -> Iterator[Finding]:
    """A finding for each pair of targets holding the same item (an object library, a source)
    that one process loads; ``describe(item, other)`` says what is shared with ``other``."""
    model = graph.model
    for item, names in sorted(shared.items()):
        for first, second in itertools.combinations(names, 2):
            reason = together.reason(first, second)
            if reason is not None:
                yield _finding(
                    model.target(second),
                    check_id,
                    f"{describe(item, first)}, and {reason}",
                    f"one process loads {first} and {second}",
                )


def check_object_libraries(graph: Graph, together: Together) -> Iterator[Finding]:
    """BT201: one OBJECT library's object files in two targets loaded together."""
    yield from _shared_code(
        graph,
        together,
        "BT201",
        graph.holders,
        lambda name, other: f"the objects of OBJECT library {name} are also linked into {other}",
    )


SHOWN_SOURCES = 3
"""Sources a duplicate-code finding names; the rest are counted (one finding per pair of
targets, not one per source: a trainer compiling the runtime's 40 sources is one mistake)."""


def _sources_text(paths: list[str], source_dir: str) -> str:
    shown = [posixpath.relpath(path, source_dir) for path in paths[:SHOWN_SOURCES]]
    more = len(paths) - len(shown)
    if len(paths) == 1:
        return f"{shown[0]} is"
    listed = ", ".join(shown) + (f" and {more} more" if more else "")
    return f"{len(paths)} sources ({listed}) are"


def check_sources(graph: Graph, together: Together) -> Iterator[Finding]:
    """BT211 (one of the two links the other: the same code twice in one link chain) and BT202
    (loaded together otherwise): sources compiled into two targets one process loads."""
    pairs: dict[tuple[str, str], list[str]] = {}
    for source, names in sorted(graph.compiled_in.items()):
        for pair in itertools.combinations(names, 2):
            pairs.setdefault(pair, []).append(source)
    model = graph.model
    for (first, second), paths in pairs.items():
        reason = together.reason(first, second)
        if reason is None:
            continue
        linked = first in graph.linked.get(second, ()) or second in graph.linked.get(first, ())
        shared = _sources_text(paths, model.source_dir)
        yield _finding(
            model.target(second),
            "BT211" if linked else "BT202",
            f"{shared} also compiled into {first}, and {reason}",
            f"one process loads {first} and {second}",
        )


def _built_hidden(model: Codemodel) -> dict[str, str]:
    """Archive path -> the STATIC library target building it with hidden visibility."""
    return {
        path: target.name
        for target in model.of_type("STATIC_LIBRARY")
        if "-fvisibility=hidden" in target.compile_flags
        for path in target.artifacts
    }


def _archive_holders(model: Codemodel) -> dict[str, dict[str, int]]:
    """Static archive path -> the shared libraries linking it, each with the archive's place on
    its link line (the first)."""
    holders: dict[str, dict[str, int]] = {}
    for target in model.of_type(*LIBRARY_TYPES):
        for index, path in static_archives(target, model.build_dir):
            holders.setdefault(path, {}).setdefault(target.name, index)
    return holders


def _first_places(target: CmakeTarget, build_dir: str) -> dict[str, int]:
    """Each library file on the link line (without a version tail too) -> its first place."""
    places: dict[str, int] = {}
    for index, path in library_paths(target, build_dir):
        places.setdefault(path, index)
        places.setdefault(unversioned(path), index)
    return places


def _reuses_copy(graph: Graph, pair: tuple[str, str], archive: str) -> bool:
    """Whether one of the pair links the other's library before ``archive``: the linker then
    resolves what it needs of the archive from the other library's exports, and takes no copy."""
    model = graph.model
    for user, provider in (pair, pair[::-1]):
        if provider not in graph.linked.get(user, ()):
            continue
        places = _first_places(model.target(user), model.build_dir)
        provided = [places[path] for path in model.target(provider).artifacts if path in places]
        if provided and min(provided) < places.get(archive, min(provided) + 1):
            return True
    return False


def _exported_archives(graph: Graph) -> dict[tuple[str, str], list[str]]:
    """Pairs of shared libraries that both keep a copy of a static archive's code with its
    symbols exported: archives built with hidden visibility, kept private by a link option, or
    taken from the other library left out."""
    model = graph.model
    hidden = _built_hidden(model)
    pairs: dict[tuple[str, str], list[str]] = {}
    for archive, holders in sorted(_archive_holders(model).items()):
        if archive in hidden:
            continue
        exporting = [
            name for name in holders if keeps_archives_private(model.target(name), archive) is None
        ]
        for pair in itertools.combinations(exporting, 2):
            if not _reuses_copy(graph, pair, archive):
                pairs.setdefault(pair, []).append(archive)
    return pairs


def _archives_text(archives: list[str]) -> str:
    names = [posixpath.basename(path) for path in archives]
    if len(names) == 1:
        return f"static library {names[0]} is also linked into {{other}} with its symbols"
    shown = ", ".join(names[:SHOWN_SOURCES])
    more = f" and {len(names) - SHOWN_SOURCES} more" if len(names) > SHOWN_SOURCES else ""
    return (
        f"{len(names)} static libraries ({shown}{more}) are also linked into {{other}} with "
        "their symbols"
    )


def check_static_libraries(graph: Graph, together: Together) -> Iterator[Finding]:
    """BT212: a static library's code in two shared libraries one process loads, its symbols
    exported from both."""
    model = graph.model
    for (first, second), archives in _exported_archives(graph).items():
        reason = together.reason(first, second)
        if reason is None or together.both_plugins(first, second):
            continue
        yield _finding(
            model.target(second),
            "BT212",
            _archives_text(archives).format(other=first) + f" exported from both, and {reason}",
            f"one process loads {first} and {second}; neither keeps the archives' symbols "
            "private (no -Wl,--exclude-libs, -Bsymbolic or version script on their links, no "
            "hidden visibility where the archive is built here)",
        )


def _folder(target: CmakeTarget) -> str:
    return posixpath.dirname(target.artifacts[0])


def _placed(target: CmakeTarget) -> bool:
    """Whether its CMake chose its folder: built outside its directory's own build folder (a
    library left there has CMake's default, which the parent project can change)."""
    folder = _folder(target)
    inside = folder == target.build_folder or folder.startswith(target.build_folder + "/")
    return bool(target.build_folder) and not inside


def _reference_folder(libraries: list[CmakeTarget], model: Codemodel) -> tuple[str, str]:
    """(the folder the libraries belong in, why). The folder of the vendored subproject's
    libraries that the recipe loads, when their own CMake placed them in one (tvm-ffi's target
    property says ``<build>/lib``): the project can move its own libraries, not theirs.
    Otherwise the folder most of the project's own libraries share (a vendored library does not
    set the layout), ties broken by the order given (the recipe's). Never the alphabetically
    first."""
    placed = [t for t in libraries if t.name in model.subproject_targets and _placed(t)]
    placed_folders = {_folder(target) for target in placed}
    if len(placed_folders) == 1:
        names = ", ".join(target.file_names[0] for target in placed)
        return placed_folders.pop(), f"{names}, whose folder a vendored project's CMake sets"
    own = [t for t in libraries if t.name not in model.subproject_targets] or libraries
    folders = [_folder(target) for target in own]
    counts = collections.Counter(folders)
    reference = max(dict.fromkeys(folders), key=lambda folder: counts[folder])
    return reference, "the others"


def _layout(model: Codemodel, policy: CmakePolicy | None) -> list[CmakeTarget]:
    """The shared libraries that must share a folder: the recipe's (in its order), else the
    project's own (a vendored subproject's are its own layout)."""
    built = [target for target in model.of_type("SHARED_LIBRARY") if target.artifacts]
    if policy is None:
        return [target for target in built if target.name not in model.subproject_targets]
    order = {lib.file_name: index for index, lib in enumerate(policy.libraries)}

    def rank(target: CmakeTarget) -> int:
        return min((order[name] for name in target.file_names if name in order), default=-1)

    return sorted((target for target in built if rank(target) >= 0), key=rank)


def check_together(model: Codemodel, policy: CmakePolicy | None) -> Iterator[Finding]:
    """BT206: every shared library (the recipe's, with one; else the project's own) built into
    the folder the others share."""
    libraries = _layout(model, policy)
    folders = sorted({posixpath.dirname(path) for t in libraries for path in t.artifacts})
    if len(folders) < 2:
        return
    reference, beside = _reference_folder(libraries, model)
    for target in libraries:
        elsewhere = [path for path in target.artifacts if posixpath.dirname(path) != reference]
        if elsewhere:
            yield _finding(
                target,
                "BT206",
                f"built into {posixpath.dirname(elsewhere[0])}, not {reference} with {beside}",
                "library folders: " + ", ".join(folders),
            )


def generic_findings(graph: Graph, policy: CmakePolicy | None) -> Iterator[Finding]:
    together = Together(graph, policy)
    yield from check_object_libraries(graph, together)
    yield from check_sources(graph, together)
    yield from check_static_libraries(graph, together)
    yield from check_together(graph.model, policy)


# --- checks that need the recipe ---------------------------------------------------------------


def _by_file(model: Codemodel, file_name: str, types: tuple[str, ...]) -> CmakeTarget | None:
    return next((t for t in model.of_type(*types) if file_name in t.file_names), None)


def check_forbidden(target: CmakeTarget, patterns: tuple[str, ...]) -> Iterator[Finding]:
    """BT203."""
    for file_name in dict.fromkeys(linked_file_names(target)):
        matched = next((p for p in patterns if fnmatch.fnmatchcase(file_name, p)), None)
        if matched is not None:
            yield _finding(
                target,
                "BT203",
                f"links {file_name}, which the policy forbids",
                f"forbidden pattern {matched}",
            )


def check_required_links(target: CmakeTarget, links: tuple[str, ...]) -> Iterator[Finding]:
    """BT209."""
    present = set(linked_file_names(target))
    for file_name in links:
        if file_name not in present:
            yield _finding(
                target, "BT209", f"does not link {file_name}, which the recipe says it links"
            )


def check_as_needed(
    target: CmakeTarget, build_dir: str, files: tuple[str, ...], as_needed_default: bool
) -> Iterator[Finding]:
    """BT204: a no-as-needed library on the link line while --as-needed is in effect."""
    states = as_needed_per_fragment(target.link, as_needed_default)
    for index, path in library_paths(target, build_dir):
        name = unversioned(posixpath.basename(path))
        if name in files and states[index]:
            default = " (the toolchain's default)" if as_needed_default else ""
            yield _finding(
                target,
                "BT204",
                f"links {name} under --as-needed{default}: the linker drops it when nothing of it "
                "is referenced, and its registrations never run",
                f"link fragment {target.link[index].fragment!r}",
            )


def _judged_rpath(model: Codemodel, target: CmakeTarget) -> tuple[str, tuple[str, ...], str]:
    """(which RPATH, its entries, evidence): what gets installed when an install() rule installs
    the target, else the build tree's (then the build tree is what ships)."""
    build = rpath_entries(target)
    build_text = ":".join(build) or "none"
    installed = model.install_rpath(target)
    if installed is None:
        note = "" if target.installed else " (no install() rule installs it)"
        return "build-tree RPATH", build, f"link RUNPATH entries: {build_text}{note}"
    entries = tuple(entry for entry in installed.split(":") if entry)
    same = "the same: BUILD_WITH_INSTALL_RPATH" if entries == build else "CMake's build RPATH"
    evidence = f"cmake_install.cmake sets {installed or 'none'}; the build tree has {build_text} "
    return "install RPATH", entries, evidence + f"({same})"


def check_runpath(model: Codemodel, target: CmakeTarget, links_split: bool) -> Iterator[Finding]:
    """BT207, on what gets installed (the build tree's RPATH when nothing installs it)."""
    which, entries, evidence = _judged_rpath(model, target)
    bad = [entry for entry in entries if not entry.startswith("$ORIGIN")]
    if bad:
        message = f"{which} {':'.join(bad)} is not $ORIGIN-relative"
        yield _finding(target, "BT207", message, evidence)
    elif not entries and links_split:
        message = f"no {which}, but it links libraries of the split"
        yield _finding(target, "BT207", message, evidence)


def _links_split(graph: Graph, target: CmakeTarget, files: frozenset[str]) -> bool:
    model = graph.model
    return any(set(model.target(name).file_names) & files for name in graph.linked[target.name])


def library_findings(graph: Graph, policy: CmakePolicy) -> Iterator[Finding]:
    def links_split(target: CmakeTarget) -> bool:
        return _links_split(graph, target, policy.library_files)

    for lib in policy.libraries:
        yield from _built_findings(graph, policy, "library", lib, links_split)


def plugin_findings(graph: Graph, policy: CmakePolicy) -> Iterator[Finding]:
    """BT210, BT203, BT209 for plugins, and BT207 on an RPATH entry that is not
    $ORIGIN-relative (none at all is right when its host's closure is all it needs)."""
    for plugin in policy.plugins:
        yield from _built_findings(graph, policy, "plugin", plugin, lambda _target: False)


def _built_findings(
    graph: Graph,
    policy: CmakePolicy,
    kind: str,
    rule: LibraryPolicy | PluginPolicy,
    links_split: Callable[[CmakeTarget], bool],
) -> Iterator[Finding]:
    """BT210 when no target builds ``rule``'s file; else its forbidden and required links and
    its RPATH (which must reach lib/ when ``links_split`` says it links the split's libraries)."""
    target = _by_file(graph.model, rule.file_name, LIBRARY_TYPES)
    if target is None:
        message = f"{kind} {rule.name}: no target builds {rule.file_name}"
        yield Finding("BT210", policy.source, message)
        return
    yield from check_forbidden(target, rule.forbidden)
    yield from check_required_links(target, rule.links)
    yield from check_runpath(graph.model, target, links_split(target))


def executable_findings(graph: Graph, policy: CmakePolicy, as_needed: bool) -> Iterator[Finding]:
    model = graph.model
    for exe in policy.executables:
        target = _by_file(model, exe.name, ("EXECUTABLE",))
        if target is None:
            yield Finding(
                "BT210",
                policy.source,
                f"executable {exe.name}: no CMake target builds it, so its links, "
                "--no-as-needed libraries and RUNPATH were not checked (when it is built "
                "outside CMake, check the built binary with verify-linkage)",
            )
            continue
        yield from check_forbidden(target, exe.forbidden)
        yield from check_required_links(target, exe.links)
        yield from check_as_needed(target, model.build_dir, exe.no_as_needed, as_needed)
        yield from check_runpath(model, target, _links_split(graph, target, policy.library_files))


def object_findings(graph: Graph, policy: CmakePolicy) -> Iterator[Finding]:
    """BT205: an object library of the recipe held by anything but its owner."""
    model = graph.model
    for name, holders in sorted(graph.holders.items()):
        owner = policy.object_owner(name)
        if owner is None:
            continue
        for holder in holders:
            target = model.target(holder)
            if owner.file_name not in target.file_names:
                yield _finding(
                    target,
                    "BT205",
                    f"links the objects of {name}, which the recipe gives to {owner.name} "
                    f"({owner.file_name})",
                )


def removed_findings(model: Codemodel, policy: CmakePolicy) -> Iterator[Finding]:
    """BT208."""
    for target in model.targets:
        for file_name in target.file_names:
            if file_name in policy.removed:
                yield _finding(
                    target, "BT208", f"still builds {file_name}, which the recipe lists as removed"
                )


def check_codemodel(
    model: Codemodel, policy: CmakePolicy | None, as_needed_default: bool
) -> tuple[Finding, ...]:
    """Every check that can run: the generic ones always, the policy's with a recipe."""
    graph = make_graph(model)
    findings = list(generic_findings(graph, policy))
    if policy is not None:
        findings += library_findings(graph, policy)
        findings += plugin_findings(graph, policy)
        findings += executable_findings(graph, policy, as_needed_default)
        findings += object_findings(graph, policy)
        findings += removed_findings(model, policy)
    return tuple(findings)
