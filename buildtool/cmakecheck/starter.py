"""``init --from-cmake``: a starter policy recipe from a code model. Pure: code model -> TOML.

The recipe describes what the build tree builds (libraries by file name, object libraries with
their one owner, executables with their links and their --no-as-needed libraries) and has no
sources: CMake keeps building the project, the recipe is the policy for ``check-cmake`` and
``verify-linkage``.
"""

from __future__ import annotations

import json
import posixpath
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence

from buildtool.cmakecheck.codemodel import CmakeTarget, Codemodel
from buildtool.cmakecheck.linkline import as_needed_per_fragment, library_paths, unversioned
from buildtool.cmakecheck.rules import Graph, make_graph
from buildtool.cmakecheck.starter_plugins import (
    PluginGuess,
    guess_plugins,
    is_python_module,
    plugin_folder,
    plugin_links,
    plugin_notes,
)

HEADER = """\
# Starter policy recipe written by `buildtool init --from-cmake` from the CMake code model of
# {build_dir}. The project keeps its CMake; this file is the policy that
#   buildtool check-cmake BUILD_DIR --recipe THIS_FILE
#   buildtool verify-linkage BUILD_DIR --recipe THIS_FILE
# hold it to. What init inferred is marked "decide:" below: a library nothing links is
# optional (deployments can do without it), one that holds all of another's code and more
# without linking it is an alternative (loaded instead of it, never beside it) and is left out.
# Then list what each library registers at static initialization (registers = [...]), and add
# [verify] settings (removed legacy files, size budgets).
"""


def recipe_name(target: str, taken: Iterable[str] = ()) -> str:
    """A CMake target name as a recipe table name (a target name: letters, digits, ``_``, ``.``,
    ``+``, ``-``; kept as it is when it is one), unique in ``taken``."""
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", target)
    if not name or name[0] in ".+-":
        name = f"_{name}"
    used = set(taken)
    base, number = name, 2
    while name in used:
        name, number = f"{base}_{number}", number + 1
    return name


def table_key(name: str) -> str:
    """A table name as a TOML key: bare when it can be, quoted otherwise (``"libx.so"``)."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


def project_name(name: str) -> str:
    """The ``project()`` name as a distribution name."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("._-")
    return cleaned or "project"


def _built(model: Codemodel, kind: str) -> tuple[CmakeTarget, ...]:
    return tuple(target for target in model.of_type(kind) if target.artifacts)


def _array(items: Iterable[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def _library_links(graph: Graph, target: CmakeTarget, names: Mapping[str, str]) -> list[str]:
    links = target.direct_links if target.direct_links is not None else graph.linked[target.name]
    return [names[link] for link in links if link in names]


def _owners(
    graph: Graph, names: Mapping[str, str], left_out: Iterable[str]
) -> tuple[dict[str, str], list[str]]:
    """OBJECT library -> its one owning library's recipe name; and comments on the others (an
    alternative left out that holds it too leaves the choice to the user)."""
    skipped = set(left_out)
    owners: dict[str, str] = {}
    notes: list[str] = []
    for obj, holders in sorted(graph.holders.items()):
        kept = [h for h in holders if h not in skipped]
        also = [h for h in holders if h in skipped]
        if len(kept) == 1 and kept[0] in names and not also:
            owners[obj] = names[kept[0]]
        elif len(kept) == 1 and kept[0] in names:
            text = (
                f"decide: OBJECT library {obj} is linked into {kept[0]} and into the "
                f"alternative {', '.join(also)}; once the split retires that, give it to "
                f"{kept[0]} (its objects list and an [objects.{recipe_name(obj)}] table)."
            )
            notes += _comment(text)
        elif len(holders) > 1:
            notes.append(
                f"# OBJECT library {obj} is linked into {', '.join(holders)}: give it one owner"
            )
    return owners, notes


def _comment(text: str) -> list[str]:
    return textwrap.wrap(text, width=96, initial_indent="# ", subsequent_indent="# ")


def _linked_by_anything(graph: Graph) -> set[str]:
    return {name for names in graph.linked.values() for name in names}


def _code(graph: Graph) -> dict[str, frozenset[str]]:
    """Linked target -> the code it holds (sources, as relative paths, and OBJECT libraries)."""
    source_dir = graph.model.source_dir
    code: dict[str, set[str]] = {}
    for path, holders in graph.compiled_in.items():
        for holder in holders:
            code.setdefault(holder, set()).add(posixpath.relpath(path, source_dir))
    for obj, holders in graph.holders.items():
        for holder in holders:
            code.setdefault(holder, set()).add(f"OBJECT library {obj}")
    return {name: frozenset(items) for name, items in code.items()}


def alternatives(graph: Graph) -> dict[str, tuple[str, list[str]]]:
    """Shared library nothing links that holds all of another library's code without linking
    it (a monolith beside its runtime, a copy of the monolith) -> (that library, its code). A
    process loads one of the two, so it is an alternative, not a library loaded with the others.
    Only the larger of the two is (the first in CMake's order of two equal ones): the runtime
    that nothing in CMake links (TVM's minrpc is built by Python) stays."""
    linked = _linked_by_anything(graph)
    code = _code(graph)
    libraries = [t.name for t in _built(graph.model, "SHARED_LIBRARY")]
    found: dict[str, tuple[str, list[str]]] = {}
    for index, name in enumerate(libraries):
        mine = code.get(name, frozenset())
        if name in linked or not mine:
            continue
        for order, other in enumerate(libraries):
            theirs = code.get(other, frozenset())
            larger = theirs < mine or (theirs == mine and order < index)
            if theirs and larger and other not in graph.linked[name]:
                found[name] = (other, sorted(theirs))
                break
    return found


def _alternative_note(target: CmakeTarget, other: str, shared: list[str]) -> list[str]:
    what = ", ".join(shared[:3]) + (f" and {len(shared) - 3} more" if len(shared) > 3 else "")
    text = (
        f"decide: {target.file_names[0]} (target {target.name}) is left out. Nothing links it, "
        f"and it holds the code of {other} ({what}) without linking it: an alternative to "
        f"{other} that a deployment loads instead, not beside it. If the split retires it, list "
        "it in [verify] removed; if one process does load both, that is the duplicate-code "
        "defect check-cmake reports (BT201, BT211)."
    )
    return ["", *_comment(text)]


def _no_as_needed(target: CmakeTarget, build_dir: str, files: Mapping[str, str]) -> list[str]:
    """Libraries linked where --no-as-needed is explicitly in effect."""
    states = as_needed_per_fragment(target.link, default=True)
    found = []
    for index, path in library_paths(target, build_dir):
        file_name = unversioned(posixpath.basename(path))
        if not states[index] and file_name in files:
            found.append(files[file_name])
    return list(dict.fromkeys(found))


def _library_tables(
    graph: Graph,
    names: Mapping[str, str],
    left_out: Iterable[str],
    folders: Mapping[str, str],
) -> list[str]:
    """``folders``: each host's plugin folder, by CMake target."""
    owners, notes = _owners(graph, names, left_out)
    linked = _linked_by_anything(graph)
    lines: list[str] = []
    for target in _built(graph.model, "SHARED_LIBRARY"):
        if target.name not in names:
            continue
        name = names[target.name]
        lines += [
            "",
            f"[libraries.{table_key(name)}]",
            f"file = {json.dumps(target.file_names[0])}",
        ]
        links = _library_links(graph, target, names)
        if links:
            lines.append(f"links = {_array(links)}")
        if folders.get(target.name, "lib") != "lib":
            lines.append(f"plugin-folder = {json.dumps(folders[target.name])}")
        objects = [recipe_name(obj) for obj, owner in owners.items() if owner == name]
        if objects:
            lines.append(f"objects = {_array(objects)}")
        if target.name not in linked and links:
            text = (
                "decide: nothing in the build links it, so deployments can presumably do "
                "without it (a compiler beside its runtime). Delete this line if every "
                "deployment needs it."
            )
            lines += [*_comment(text), "optional = true"]
    for obj in owners:
        lines += ["", f"[objects.{table_key(recipe_name(obj))}]"]
    return lines + (["", *notes] if notes else [])


def _plugin_tables(
    graph: Graph, guesses: Sequence[PluginGuess], names: Mapping[str, str]
) -> list[str]:
    """The ``[plugins.<name>]`` tables, after what init could not tell about them."""
    owners, _ = _owners(graph, names, ())
    lines = plugin_notes(guesses, names)
    for guess in guesses:
        target = guess.target
        name = names[target.name]
        lines += ["", f"[plugins.{table_key(name)}]", f"file = {json.dumps(target.file_names[0])}"]
        lines.append(f"host = {json.dumps(names[guess.host])}")
        if guess.alternatives:
            lines.append(f"alternatives = {json.dumps(guess.alternatives)}")
        links = [names[link] for link in plugin_links(graph, target) if link in names]
        if links:
            lines.append(f"links = {_array(links)}")
        objects = [recipe_name(obj) for obj, owner in owners.items() if owner == name]
        if objects:
            lines.append(f"objects = {_array(objects)}")
    return lines


def _plugins(
    graph: Graph, names: dict[str, str], libraries: Sequence[CmakeTarget]
) -> tuple[list[PluginGuess], dict[str, str], list[str]]:
    """The modules that are plugins of described libraries (their recipe names added to
    ``names``), each host's plugin folder, and notes on the modules left out."""
    model = graph.model
    modules, notes = [], []
    for target in _built(model, "MODULE_LIBRARY"):
        if target.name in model.subproject_targets:
            continue
        if is_python_module(target) or not libraries:
            what = "a Python extension module" if libraries else "no library to open it"
            notes.append(f"# MODULE library {target.file_names[0]} (target {target.name}): "
                         f"{what}, left out")  # fmt: skip
            continue
        modules.append(target)
        names[target.name] = recipe_name(target.name, names.values())
    guesses = guess_plugins(graph, modules, libraries)
    folders = {
        host: plugin_folder(model.target(host), [g.target for g in guesses if g.host == host])
        for host in dict.fromkeys(guess.host for guess in guesses)
    }
    return guesses, folders, notes


def _executable_tables(graph: Graph, names: Mapping[str, str]) -> list[str]:
    model = graph.model
    files = {
        target.file_names[0]: names[target.name]
        for target in _built(model, "SHARED_LIBRARY")
        if target.name in names
    }
    lines: list[str] = []
    taken = set(names.values())
    for target in _built(model, "EXECUTABLE"):
        # named after its file: verify-linkage and check-cmake find executables by file name
        file_name = target.file_names[0]
        name = recipe_name(file_name, taken)
        if name != file_name:
            lines += ["", f"# executable {file_name} (target {target.name}): its file name is "
                      "not a recipe name, so it is left out"]  # fmt: skip
            continue
        taken.add(name)
        lines += ["", f"[executables.{table_key(name)}]"]
        links = [names[link] for link in graph.linked[target.name] if link in names]
        if links:
            lines.append(f"links = {_array(links)}")
        kept = _no_as_needed(target, model.build_dir, files)
        if kept:
            lines.append(f"no-as-needed = {_array(kept)}")
    return lines


def starter_recipe(model: Codemodel, build_dir: str, root: str = ".") -> str:
    """The starter recipe's text; ``root``: the project's source folder relative to the folder
    the recipe is written to (``project.root``)."""
    graph = make_graph(model)
    left_out = alternatives(graph)
    names: dict[str, str] = {}
    vendored: list[str] = []
    for target in _built(model, "SHARED_LIBRARY"):
        if target.name in model.subproject_targets:
            vendored.append(f"{target.file_names[0]} (target {target.name})")
        elif target.name not in left_out:
            names[target.name] = recipe_name(target.name, names.values())
    lines = [HEADER.format(build_dir=build_dir).rstrip("\n"), "", "[project]"]
    lines.append(f"name = {json.dumps(project_name(model.project))}")
    if root != ".":
        lines.append(f"root = {json.dumps(root)}  # the CMake project, from this file's folder")
    for name, (other, shared) in left_out.items():
        lines += _alternative_note(model.target(name), other, shared)
    if vendored:
        text = (
            f"decide: left out as a vendored project's own: {', '.join(vendored)}. Add the ones "
            "a deployment ships beside the project's libraries."
        )
        lines += ["", *_comment(text)]
    described = [model.target(name) for name in names]
    guesses, folders, module_notes = _plugins(graph, names, described)
    lines += _library_tables(graph, names, left_out, folders)
    lines += _plugin_tables(graph, guesses, names)
    lines += ["", *module_notes] if module_notes else []
    lines += _executable_tables(graph, names)
    return "\n".join(lines) + "\n"
