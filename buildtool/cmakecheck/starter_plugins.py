"""``init --from-cmake``'s plugins: MODULE libraries of the code model as ``[plugins]`` of the
library that opens them. Pure: code model -> plugin guesses -> TOML lines.

CMake's code model does not say who opens a module. A shared library that depends on it
without linking it (``add_dependencies(ggml ggml-cpu-haswell)``, so that building the host
builds its plugins) is taken as its host; otherwise the recipe says "decide:". Modules of one
host that compile the same sources are alternatives (ggml's CPU variants: one loaded, the best
for the CPU); the rest are resident beside each other. The host's plugin folder is where the
install puts the modules relative to the host (in the build tree when nothing installs them).
"""

from __future__ import annotations

import dataclasses
import posixpath
import textwrap
from collections.abc import Iterable, Mapping, Sequence

from buildtool.cmakecheck.codemodel import CmakeTarget
from buildtool.cmakecheck.rules import Graph


@dataclasses.dataclass(frozen=True)
class PluginGuess:
    """What init infers about one MODULE library."""

    target: CmakeTarget
    """The module."""
    host: str
    """The CMake target of the library taken as its host."""
    host_known: bool
    """Whether the code model says so (the host depends on the module without linking it)."""
    alternatives: str = ""
    """The group name shared with the modules that compile the same sources; empty: none."""


def is_python_module(target: CmakeTarget) -> bool:
    """A CPython extension module (``_x.cpython-311-x86_64-linux-gnu.so``, ``_x.abi3.so``, no
    ``lib`` prefix): the interpreter imports it; no library of the project opens it."""
    name = target.file_names[0] if target.file_names else target.name
    return not name.startswith("lib") or ".cpython-" in name or ".abi3." in name


def _host_of(
    graph: Graph, module: CmakeTarget, libraries: Sequence[CmakeTarget]
) -> tuple[str, bool]:
    """The library that opens ``module`` and whether the code model says so: the one library
    that depends on it without linking it; else a guess, the first library that does not link
    another of those described (the top of the link graph)."""
    depending = [
        library.name
        for library in libraries
        if module.name in library.dependencies and module.name not in graph.linked[library.name]
    ]
    if len(depending) == 1:
        return depending[0], True
    described = {library.name for library in libraries}
    linked = {name for library in libraries for name in graph.linked[library.name]}
    tops = [library.name for library in libraries if library.name not in linked & described]
    return (tops or [library.name for library in libraries])[-1], False


def _sources(graph: Graph, target: CmakeTarget) -> frozenset[str]:
    source_dir = graph.model.source_dir
    return frozenset(posixpath.relpath(path, source_dir) for path in target.sources)


def _group_name(names: Sequence[str]) -> str:
    """What the names share at their start, without a trailing separator (``ggml-cpu``)."""
    shared = posixpath.commonprefix(list(names)).rstrip("-_.")
    return shared or names[0]


def guess_plugins(
    graph: Graph, modules: Sequence[CmakeTarget], libraries: Sequence[CmakeTarget]
) -> list[PluginGuess]:
    """Host and alternatives of each module (``libraries``: the shared libraries described)."""
    guesses = [PluginGuess(module, *_host_of(graph, module, libraries)) for module in modules]
    by_code: dict[tuple[str, frozenset[str]], list[int]] = {}
    for index, guess in enumerate(guesses):
        code = _sources(graph, guess.target)
        if code:
            by_code.setdefault((guess.host, code), []).append(index)
    for members in by_code.values():
        if len(members) > 1:
            name = _group_name([guesses[i].target.name for i in members])
            for index in members:
                guesses[index] = dataclasses.replace(guesses[index], alternatives=name)
    return guesses


def _folder(target: CmakeTarget) -> str:
    """Where ``target`` lies once installed (its first install destination), else in the build
    tree."""
    if target.install_destinations:
        return target.install_destinations[0]
    return posixpath.dirname(target.artifacts[0]) if target.artifacts else "."


def plugin_folder(host: CmakeTarget, modules: Iterable[CmakeTarget]) -> str:
    """The host's ``plugin-folder``: where most of its modules lie relative to it, under the
    install prefix's ``lib`` (``bin`` for ggml's modules installed beside its programs)."""
    both_installed = [m for m in modules if m.install_destinations and host.install_destinations]
    chosen = both_installed or list(modules)
    counts: dict[str, int] = {}
    for module in chosen:
        relative = posixpath.relpath(_folder(module), _folder(host))
        folder = posixpath.normpath(posixpath.join("lib", relative))
        counts[folder] = counts.get(folder, 0) + 1
    return max(counts, key=lambda folder: counts[folder]) if counts else "lib"


def _comment(text: str) -> list[str]:
    return textwrap.wrap(text, width=96, initial_indent="# ", subsequent_indent="# ")


def plugin_notes(guesses: Sequence[PluginGuess], names: Mapping[str, str]) -> list[str]:
    """One "decide:" comment per host: how its host and its alternatives were told."""
    lines: list[str] = []
    for host in dict.fromkeys(guess.host for guess in guesses):
        mine = [guess for guess in guesses if guess.host == host]
        unknown = [names[g.target.name] for g in mine if not g.host_known]
        if unknown:
            text = (
                f"decide: nothing in CMake's code model says which library opens "
                f"{', '.join(unknown)} (a host usually add_dependencies() its plugins); "
                f"{names[host]} is a guess."
            )
            lines += ["", *_comment(text)]
        groups = sorted({guess.alternatives for guess in mine if guess.alternatives})
        alone = [names[g.target.name] for g in mine if not g.alternatives]
        text = f"decide: {names[host]} opens {len(mine)} plugins from its plugin-folder."
        if groups:
            text += (
                " Plugins that compile the same sources are alternatives (one loaded at a "
                f"time, as ggml's CPU variants): {', '.join(groups)}; if {names[host]} loads "
                "them side by side, delete their alternatives lines."
            )
        if alone:
            text += (
                f" {', '.join(alone)} compile code of their own: resident beside the others; "
                "give an alternatives name to those it loads one at a time."
            )
        lines += ["", *_comment(text)]
    return lines


def plugin_links(graph: Graph, target: CmakeTarget) -> tuple[str, ...]:
    """The targets a module links directly (all it links, when CMake is too old to say)."""
    return target.direct_links if target.direct_links is not None else graph.linked[target.name]
