"""CMake's File API code model (``codemodel-v2``) as small frozen dataclasses.

Read with the plain ``json`` module rather than scikit-build-core's ``load_reply_dir``: that one
converts every field of every target into its own dataclasses (compile groups, backtraces,
install rules), which check-cmake never reads. On a generated project of 420 targets it took
3.9 times as long to read the reply alone as this module takes to read it and run every check
(``benchmarks/check_cmake.py`` measures both side by side, in the same rounds).
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from buildtool.errors import InputError
from buildtool.linkage.inputs.cmake_install import install_rpaths

LINKED_TYPES = ("SHARED_LIBRARY", "MODULE_LIBRARY", "EXECUTABLE")
"""Targets the linker produces: the ones that hold object code at run time."""

LIBRARY_TYPES = ("SHARED_LIBRARY", "MODULE_LIBRARY")

OBJECT_SUFFIXES = (".o", ".obj")


@dataclasses.dataclass(frozen=True)
class LinkFragment:
    """One fragment of a target's link command line, in order."""

    fragment: str
    """The text as the generator writes it (quoted and escaped for its build files)."""
    role: str
    """``flags``, ``libraries``, ``libraryPath`` or ``frameworkPath``."""


@dataclasses.dataclass(frozen=True)
class CmakeTarget:
    """One target of the code model, reduced to what the checks read."""

    name: str
    """The CMake target name (unique in a build tree)."""
    type: str
    """``SHARED_LIBRARY``, ``MODULE_LIBRARY``, ``EXECUTABLE``, ``OBJECT_LIBRARY``, ..."""
    artifacts: tuple[str, ...]
    """Absolute, normalized paths of what it builds."""
    sources: tuple[str, ...]
    """Absolute paths of the sources it compiles itself."""
    object_libraries: tuple[str, ...]
    """Names of the OBJECT libraries whose object files it links (``$<TARGET_OBJECTS:...>`` or a
    link to the object library)."""
    link: tuple[LinkFragment, ...]
    """Its link command fragments; empty for targets that are not linked."""
    direct_links: tuple[str, ...] | None
    """Names of the targets it links directly (``linkLibraries``, code model 2.9 and later);
    None when CMake is too old to say."""
    defined_in: str
    """The CMake file that defines it, relative to the source folder when inside it."""
    line: int
    """The line of that file (0 when unknown)."""
    installed: bool = False
    """Whether an ``install()`` rule installs it (the File API's ``install`` member)."""
    build_folder: str = ""
    """Absolute build folder of the CMake directory that defines it (where its artifacts go
    unless an output directory is set)."""
    compile_flags: tuple[str, ...] = ()
    """The flags its sources are compiled with: each compile group's command fragments, split
    into words (``-fvisibility=hidden`` from ``CXX_VISIBILITY_PRESET``), in order."""
    dependencies: tuple[str, ...] = ()
    """Names of the targets built before it: its links and ``add_dependencies`` (a host that
    opens a module at run time often depends on it so that building the host builds it)."""
    install_destinations: tuple[str, ...] = ()
    """Where ``install()`` rules put it, as written (relative to the install prefix, or
    absolute)."""

    @property
    def file_names(self) -> tuple[str, ...]:
        return tuple(posixpath.basename(path) for path in self.artifacts)

    @property
    def where(self) -> str:
        return f"{self.defined_in}:{self.line}" if self.line else self.defined_in


@dataclasses.dataclass(frozen=True)
class Codemodel:
    """A configured build tree, as CMake describes it."""

    source_dir: str
    """Absolute top-level source folder."""
    build_dir: str
    """Absolute top-level build folder."""
    project: str
    """Name of the top-level ``project()``."""
    targets: tuple[CmakeTarget, ...]
    """Every target of the first configuration, in CMake's order."""
    compilers: tuple[tuple[str, str], ...] = ()
    """(language, compiler path) from the toolchains reply."""
    install_rpaths: tuple[tuple[str, str], ...] = ()
    """(installed file name, the RPATH ``cmake --install`` gives it) from the build tree's
    ``cmake_install.cmake`` scripts."""
    subproject_targets: frozenset[str] = frozenset()
    """Names of the targets a nested ``project()`` (a vendored third-party tree) defines."""

    def target(self, name: str) -> CmakeTarget:
        return next(target for target in self.targets if target.name == name)

    def of_type(self, *types: str) -> tuple[CmakeTarget, ...]:
        return tuple(target for target in self.targets if target.type in types)

    def compiler(self, language: str) -> str:
        return dict(self.compilers).get(language, "")

    def install_rpath(self, target: CmakeTarget) -> str | None:
        """The RPATH the install gives ``target`` (versioned files too); None when nothing
        installs it or the install script does not say."""
        if not target.installed:
            return None
        rpaths = dict(self.install_rpaths)
        for file_name in target.file_names:
            for installed, rpath in rpaths.items():
                if installed == file_name or installed.startswith(file_name + "."):
                    return rpath
        return None


def _absolute(base: str, path: str) -> str:
    return posixpath.normpath(posixpath.join(base, path))


def _relative_to(path: str, base: str) -> str:
    absolute = _absolute(base, path)
    inside = absolute == base or absolute.startswith(base.rstrip("/") + "/")
    return posixpath.relpath(absolute, base) if inside else absolute


def _definition(data: Mapping[str, Any], source_dir: str) -> tuple[str, int]:
    graph = data.get("backtraceGraph") or {}
    index = data.get("backtrace")
    nodes, files = graph.get("nodes", []), graph.get("files", [])
    if not isinstance(index, int) or index >= len(nodes):
        return "CMakeLists.txt", 0
    node = nodes[index]
    return _relative_to(files[node["file"]], source_dir), int(node.get("line", 0))


def _object_library_of(path: str, object_dirs: Mapping[str, str]) -> str | None:
    """The OBJECT library whose object folder holds ``path`` (code models before 2.9)."""
    for folder, name in object_dirs.items():
        if path.startswith(folder):
            return name
    return None


def _object_libraries(
    data: Mapping[str, Any], names: Mapping[str, str], object_dirs: Mapping[str, str]
) -> tuple[str, ...]:
    """Every way an OBJECT library's object files reach the link: ``objectDependencies`` (2.9+,
    only a plain ``$<TARGET_OBJECTS:x>`` among the sources), the object files among the generated
    sources (``$<TARGET_OBJECTS:x>`` inside another generator expression, and CMake 3.12+ lists
    an object library's files there when it is linked), and ``target_link_libraries`` to an
    object library (``linkLibraries``), which ``objectDependencies`` leaves out."""
    found = [
        names[item["id"]] for item in data.get("objectDependencies", ()) if item["id"] in names
    ]
    paths = [
        _text(source["path"])
        for source in data.get("sources", ())
        if source.get("isGenerated") and str(source.get("path", "")).endswith(OBJECT_SUFFIXES)
    ]
    found += [name for path in paths if (name := _object_library_of(path, object_dirs))]
    object_names = set(object_dirs.values())
    linked = (names.get(item.get("id", "")) for item in data.get("linkLibraries", ()))
    found += [name for name in linked if name in object_names]
    return tuple(dict.fromkeys(found))


def _direct_links(data: Mapping[str, Any], names: Mapping[str, str]) -> tuple[str, ...] | None:
    if "linkLibraries" not in data:
        return None if "link" in data else ()
    ids = [item["id"] for item in data["linkLibraries"] if "id" in item]
    return tuple(dict.fromkeys(names[i] for i in ids if i in names))


def _compile_flags(data: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(
        word
        for group in data.get("compileGroups", ())
        for fragment in group.get("compileCommandFragments", ())
        for word in _text(fragment["fragment"]).split()
    )


def parse_target(
    data: Mapping[str, Any],
    paths: tuple[str, str],
    names: Mapping[str, str],
    object_dirs: Mapping[str, str],
) -> CmakeTarget:
    """One ``target-*.json`` document. ``paths`` is (source folder, build folder); ``names`` maps
    target ids to names; ``object_dirs`` maps object folders to their OBJECT library."""
    source_dir, build_dir = paths
    defined_in, line = _definition(data, source_dir)
    link = data.get("link") or {}
    return CmakeTarget(
        name=_text(data["name"]),
        type=_text(data["type"]),
        artifacts=tuple(_absolute(build_dir, _text(a["path"])) for a in data.get("artifacts", ())),
        sources=tuple(
            _absolute(source_dir, _text(source["path"]))
            for source in data.get("sources", ())
            if "compileGroupIndex" in source
        ),
        object_libraries=_object_libraries(data, names, object_dirs),
        link=tuple(
            LinkFragment(_text(item["fragment"]), _text(item.get("role", "")))
            for item in link.get("commandFragments", ())
        ),
        direct_links=_direct_links(data, names),
        defined_in=defined_in,
        line=line,
        installed=bool(data.get("install")),
        build_folder=_absolute(build_dir, _text((data.get("paths") or {}).get("build", "."))),
        compile_flags=_compile_flags(data),
        dependencies=tuple(
            names[item["id"]] for item in data.get("dependencies", ()) if item["id"] in names
        ),
        install_destinations=tuple(
            _text(item["path"]) for item in (data.get("install") or {}).get("destinations", ())
        ),
    )


def _load(path: Path) -> Any:
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError) as error:
        raise InputError(f"{path}: cannot read CMake's File API reply: {error}") from None
    if not isinstance(document, dict):
        found = type(document).__name__
        raise InputError(f"{path}: not a File API reply: expected a JSON object, found {found}")
    return document


def _text(value: object) -> str:
    """A string of the reply; anything else is a ``TypeError`` (reported naming the file)."""
    if not isinstance(value, str):
        raise TypeError(f"expected a string, found {value!r}")
    return value


def latest_index(reply_dir: Path) -> Path | None:
    """The newest ``index-*.json`` (their names sort by time), or None."""
    indexes = sorted(reply_dir.glob("index-*.json"))
    return indexes[-1] if indexes else None


def _reply_file(index: Mapping[str, Any], kind: str) -> str | None:
    entry = index.get("reply", {}).get(kind)
    return entry.get("jsonFile") if isinstance(entry, dict) else None


def _compilers(reply_dir: Path, index: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    name = _reply_file(index, "toolchains-v1")
    if name is None:
        return ()
    toolchains = _load(reply_dir / name).get("toolchains", [])
    return tuple(
        (item["language"], item["compiler"]["path"])
        for item in toolchains
        if item.get("compiler", {}).get("path")
    )


def _object_dirs(documents: list[Any], build_dir: str) -> dict[str, str]:
    """Object folder (``<build>/CMakeFiles/<name>.dir/``) -> its OBJECT library."""
    return {
        _absolute(build_dir, posixpath.join(doc["paths"]["build"], "CMakeFiles", doc["name"]))
        + ".dir/": doc["name"]
        for doc in documents
        if doc.get("type") == "OBJECT_LIBRARY"  # a target without one is refused below
    }


def _install_rpaths(
    configuration: Mapping[str, Any], build_dir: str
) -> tuple[tuple[str, str], ...]:
    """What every folder's ``cmake_install.cmake`` says about RPATHs (a missing or unreadable
    script says nothing: the build-tree RPATH is judged then)."""
    found: dict[str, str] = {}
    for directory in configuration.get("directories", ()):
        script = Path(_absolute(build_dir, _text(directory["build"]))) / "cmake_install.cmake"
        try:
            text = script.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        found.update(install_rpaths(text))
    return tuple(found.items())


def _subproject_targets(projects: list[Any], entries: list[Any]) -> frozenset[str]:
    """Targets of the projects below the top-level one."""
    indexes = [i for project in projects[1:] for i in project.get("targetIndexes", ())]
    return frozenset(entries[i]["name"] for i in indexes if i < len(entries))


def _codemodel(reply_dir: Path, index: Mapping[str, Any], model_file: Path) -> Codemodel:
    model = _load(model_file)
    configurations = model.get("configurations") or []
    if not configurations:
        raise InputError(f"{model_file}: the code model has no configuration")
    paths = (model["paths"]["source"], model["paths"]["build"])
    entries = configurations[0]["targets"]
    documents = [_load(reply_dir / entry["jsonFile"]) for entry in entries]
    names = {entry["id"]: entry["name"] for entry in entries}
    object_dirs = _object_dirs(documents, paths[1])
    projects = configurations[0].get("projects") or [{"name": ""}]
    targets = []
    for entry, document in zip(entries, documents, strict=True):
        try:
            targets.append(parse_target(document, paths, names, object_dirs))
        except (KeyError, TypeError, IndexError, ValueError) as error:
            where = reply_dir / entry["jsonFile"]
            raise InputError(f"{where}: not a File API target as expected: {error!r}") from None
    return Codemodel(
        source_dir=paths[0],
        build_dir=paths[1],
        project=projects[0]["name"],
        targets=tuple(targets),
        compilers=_compilers(reply_dir, index),
        install_rpaths=_install_rpaths(configurations[0], paths[1]),
        subproject_targets=_subproject_targets(projects, entries),
    )


def read_codemodel(reply_dir: Path) -> Codemodel:
    """The code model of the newest reply in ``reply_dir`` (first configuration); a reply that is
    not what CMake writes is an ``InputError`` naming the file."""
    index_path = latest_index(reply_dir)
    if index_path is None:
        raise InputError(f"{reply_dir}: no File API reply; configure the build folder first")
    index = _load(index_path)
    name = _reply_file(index, "codemodel-v2")
    if name is None:
        raise InputError(f"{index_path}: the File API reply has no code model; configure again")
    try:
        return _codemodel(reply_dir, index, reply_dir / name)
    except (KeyError, TypeError, IndexError, AttributeError) as error:
        raise InputError(
            f"{reply_dir / name}: not a File API code model as expected: {error!r}"
        ) from None
