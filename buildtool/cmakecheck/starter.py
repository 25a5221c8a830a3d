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
from collections.abc import Iterable, Mapping

from buildtool.cmakecheck.codemodel import CmakeTarget, Codemodel
from buildtool.cmakecheck.linkline import as_needed_per_fragment, library_paths, unversioned
from buildtool.cmakecheck.rules import Graph, make_graph

HEADER = """\
# Starter policy recipe written by `buildtool init --from-cmake` from the CMake code model of
# {build_dir}. The project keeps its CMake; this file is the policy that
#   buildtool check-cmake BUILD_DIR --recipe THIS_FILE
#   buildtool verify-linkage BUILD_DIR --recipe THIS_FILE
# hold it to. Next steps: mark the libraries deployments can do without (optional = true), list
# what each one registers at static initialization (registers = [...]), and add [verify]
# settings (removed legacy files, size budgets).
"""


def recipe_name(target: str, taken: Iterable[str] = ()) -> str:
    """A CMake target name as a recipe table name (letters, digits, '_'), unique in ``taken``."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", target)
    if not name or name[0].isdigit():
        name = f"_{name}"
    used = set(taken)
    base, number = name, 2
    while name in used:
        name, number = f"{base}_{number}", number + 1
    return name


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


def _owners(graph: Graph, names: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """OBJECT library -> its one owning library's recipe name; and comments on the others."""
    owners: dict[str, str] = {}
    notes: list[str] = []
    for obj, holders in sorted(graph.holders.items()):
        libraries = [names[h] for h in holders if h in names]
        if len(holders) == 1 and libraries:
            owners[obj] = libraries[0]
        else:
            where = ", ".join(holders)
            notes.append(f"# OBJECT library {obj} is linked into {where}: give it one owner")
    return owners, notes


def _no_as_needed(target: CmakeTarget, build_dir: str, files: Mapping[str, str]) -> list[str]:
    """Libraries linked where --no-as-needed is explicitly in effect."""
    states = as_needed_per_fragment(target.link, default=True)
    found = []
    for index, path in library_paths(target, build_dir):
        file_name = unversioned(posixpath.basename(path))
        if not states[index] and file_name in files:
            found.append(files[file_name])
    return list(dict.fromkeys(found))


def _library_tables(graph: Graph, names: Mapping[str, str]) -> list[str]:
    owners, notes = _owners(graph, names)
    lines: list[str] = []
    for target in _built(graph.model, "SHARED_LIBRARY"):
        name = names[target.name]
        lines += ["", f"[libraries.{name}]", f"file = {json.dumps(target.file_names[0])}"]
        links = _library_links(graph, target, names)
        if links:
            lines.append(f"links = {_array(links)}")
        objects = [recipe_name(obj) for obj, owner in owners.items() if owner == name]
        if objects:
            lines.append(f"objects = {_array(objects)}")
    for obj in owners:
        lines += ["", f"[objects.{recipe_name(obj)}]"]
    return lines + (["", *notes] if notes else [])


def _executable_tables(graph: Graph, names: Mapping[str, str]) -> list[str]:
    model = graph.model
    files = {target.file_names[0]: names[target.name] for target in _built(model, "SHARED_LIBRARY")}
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
        lines += ["", f"[executables.{name}]"]
        links = [names[link] for link in graph.linked[target.name] if link in names]
        if links:
            lines.append(f"links = {_array(links)}")
        kept = _no_as_needed(target, model.build_dir, files)
        if kept:
            lines.append(f"no-as-needed = {_array(kept)}")
    return lines


def starter_recipe(model: Codemodel, build_dir: str) -> str:
    """The starter recipe's text."""
    graph = make_graph(model)
    names: dict[str, str] = {}
    for target in _built(model, "SHARED_LIBRARY"):
        names[target.name] = recipe_name(target.name, names.values())
    lines = [HEADER.format(build_dir=build_dir).rstrip("\n"), "", "[project]"]
    lines.append(f"name = {json.dumps(project_name(model.project))}")
    lines += _library_tables(graph, names)
    lines += _executable_tables(graph, names)
    return "\n".join(lines) + "\n"
