"""The runtime wheel from the full build: proof that switching the optional libraries off
changes nothing the runtime wheel ships, so it can come from the build tree that built
everything (one compile per translation unit) instead of a build of its own.

The proof compares CMake's own answer, not a guess: the full build tree's code model against a
configure-only tree with every optional library switched off (the runtime distribution's
configuration). For every target the runtime wheel's targets depend on, the compile groups
(flags, defines, include folders, language standard), the sources and the link command must be
the same, and so must every file configure wrote into an include folder inside the build tree
(a configured ``config.h`` whose ``#cmakedefine`` reads a switch). In included mode this covers
what the project's own CMake does with the switches too. The comparison itself is pure
(``runtime_differences``); ``prove_runtime_unchanged`` runs the configure.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from pathlib import Path
from typing import Any

from buildtool import process
from buildtool.cmake import run as cmake
from buildtool.errors import InputError, ToolFailed
from buildtool.fsutil import folder_lock

log = logging.getLogger("buildtool")

BUILD_PLACEHOLDER = "<build>"
"""What a build tree's own path reads as in a compared value: the two trees differ there only."""


@dataclasses.dataclass(frozen=True)
class TargetModel:
    """What decides the code of one target, as CMake's File API code model says (paths inside
    the build tree written relative to ``BUILD_PLACEHOLDER``)."""

    name: str
    """CMake target name."""
    compile: str
    """Compile groups (language, standard, flags, defines, include folders) as canonical JSON."""
    sources: tuple[str, ...]
    """Source paths, in the target's order."""
    link: str
    """The link command's fragments as canonical JSON (empty for object libraries)."""
    dependencies: tuple[str, ...]
    """Names of the targets it depends on."""
    build_includes: tuple[str, ...]
    """Its include folders inside the build tree, relative to it."""
    kind: str = ""
    """CMake's target type (``SHARED_LIBRARY``, ``MODULE_LIBRARY``, ...)."""


@dataclasses.dataclass(frozen=True)
class TreeModel:
    """The targets of one configured build tree, and the text of the files configure wrote
    into include folders inside it."""

    targets: Mapping[str, TargetModel]
    """By name."""
    include_files: Mapping[str, str]
    """Build-tree-relative path -> digest of the content, tree paths normalized."""


def _normalized(value: object, tree: Path) -> Any:
    text = json.dumps(value, sort_keys=True)
    for spelling in {str(tree), str(tree.resolve())}:
        text = text.replace(spelling, BUILD_PLACEHOLDER)
    return json.loads(text)


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"{path}: cannot read CMake's File API reply: {error}") from None


def _codemodel(tree: Path) -> tuple[Path, Any]:
    reply = tree / ".cmake" / "api" / "v1" / "reply"
    indexes = sorted(reply.glob("index-*.json"))
    if not indexes:
        raise InputError(f"{reply}: no File API reply; configure the build folder first")
    index = _load(indexes[-1])
    try:
        return reply, _load(reply / index["reply"]["codemodel-v2"]["jsonFile"])
    except (KeyError, TypeError):
        raise InputError(f"{indexes[-1]}: the File API reply has no code model") from None


def _build_includes(compile_groups: Iterable[Any], tree: Path) -> tuple[str, ...]:
    found = []
    for group in compile_groups:
        for include in group.get("includes", ()):
            path = Path(include["path"])
            if path.is_absolute() and path.resolve().is_relative_to(tree.resolve()):
                found.append(path.resolve().relative_to(tree.resolve()).as_posix())
    return tuple(sorted(set(found)))


def _target_model(data: Any, tree: Path, source_dir: Path, names: Mapping[str, str]) -> TargetModel:
    groups = data.get("compileGroups", [])
    kept = [
        {
            key: group.get(key)
            for key in (
                "language",
                "languageStandard",
                "compileCommandFragments",
                "defines",
                "includes",
                "sysroot",
                "sourceIndexes",
            )
        }
        for group in groups
    ]
    for group in kept:  # backtraces say where in CMake a value came from, not what it is
        for key in ("compileCommandFragments", "defines", "includes"):
            group[key] = [_without_backtrace(item) for item in group[key] or ()]
        standard = group.get("languageStandard") or {}
        group["languageStandard"] = standard.get("standard")
    link = data.get("link", {})
    fragments = [_without_backtrace(item) for item in link.get("commandFragments", ())]
    return TargetModel(
        name=data["name"],
        compile=json.dumps(_normalized(kept, tree), sort_keys=True),
        # a path inside the source folder is relative to it, even one in a build tree there
        sources=tuple(
            _normalized(str(source_dir / source["path"]), tree)
            for source in data.get("sources", ())
        ),
        link=json.dumps(_normalized(fragments, tree), sort_keys=True),
        dependencies=tuple(
            sorted(names.get(dep["id"], dep["id"]) for dep in data.get("dependencies", ()))
        ),
        build_includes=_build_includes(groups, tree),
        kind=str(data.get("type", "")),
    )


def _without_backtrace(item: Any) -> Any:
    if isinstance(item, dict):
        return {key: value for key, value in item.items() if key != "backtrace"}
    return item


def read_tree_model(tree: Path) -> TreeModel:
    """The code model of a configured ``tree`` (its File API reply must exist)."""
    reply, codemodel = _codemodel(tree)
    try:
        entries = codemodel["configurations"][0]["targets"]
    except (KeyError, IndexError, TypeError):
        raise InputError(f"{reply}: the code model has no configuration; configure again") from None
    names = {entry["id"]: entry["name"] for entry in entries}
    source_dir = Path(codemodel.get("paths", {}).get("source", "/"))
    targets = {}
    for entry in entries:
        model = _target_model(_load(reply / entry["jsonFile"]), tree, source_dir, names)
        targets[model.name] = model
    folders = {folder for model in targets.values() for folder in model.build_includes}
    return TreeModel(targets, _include_files(tree, folders))


HEADER_SUFFIXES = frozenset(
    {"", ".h", ".hh", ".hpp", ".hxx", ".h++", ".inc", ".inl", ".ipp", ".def"}
)
"""Files of an include folder that a compile may read (a build folder used as an include folder
also holds objects and libraries, which are outputs, not inputs)."""


def _headers_in(tree: Path, folder: str) -> Iterator[Path]:
    top = tree / folder
    # the build folder itself as an include folder: its own files only, not every output below
    candidates = top.iterdir() if folder in ("", ".") else top.rglob("*")
    for path in candidates:
        inside = path.relative_to(tree).parts
        if inside[0] in ("CMakeFiles", ".cmake") or path.suffix not in HEADER_SUFFIXES:
            continue
        if path.is_file():
            yield path


def _include_files(tree: Path, folders: Iterable[str]) -> dict[str, str]:
    """Digests of the headers configure wrote into include folders inside ``tree``."""
    spelling = str(tree.resolve()).encode()
    files = {}
    for folder in sorted(folders):
        if not (tree / folder).is_dir():
            continue
        for path in sorted(_headers_in(tree, folder)):
            text = path.read_bytes().replace(spelling, BUILD_PLACEHOLDER.encode())
            files[path.relative_to(tree).as_posix()] = hashlib.sha256(text).hexdigest()
    return files


MODULE_LIBRARY = "MODULE_LIBRARY"
"""CMake's type of a module (a plugin, an extension module): nothing can link it."""


def code_dependencies(model: TreeModel, target: TargetModel) -> tuple[str, ...]:
    """What ``target`` depends on for its code: not the modules it only orders before itself
    (``add_dependencies`` on a plugin: building the host builds its plugins; a module cannot be
    linked, so such a dependency never changes what the target compiles or links)."""
    return tuple(
        dep
        for dep in target.dependencies
        if dep not in model.targets or model.targets[dep].kind != MODULE_LIBRARY
    )


def dependency_closure(model: TreeModel, roots: Iterable[str]) -> tuple[str, ...]:
    """``roots`` and every target their code depends on, directly or not (names CMake does not
    know are left out: a target switched off by a recipe option)."""
    seen: list[str] = []
    pending = [name for name in roots if name in model.targets]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.append(name)
        dependencies = code_dependencies(model, model.targets[name])
        pending.extend(dep for dep in dependencies if dep in model.targets)
    return tuple(sorted(seen))


def runtime_differences(
    full: TreeModel,
    runtime: TreeModel,
    roots: Sequence[str],
    headers_read: Set[str] | None = None,
) -> list[str]:
    """What differs between the two configurations for the targets the runtime wheel ships
    (``roots``) and everything they depend on; empty when the full tree's are the runtime's.

    ``headers_read``: the build-tree-relative headers those targets' compiles read (ninja's
    dependency log of the full build); configured headers outside it are not compared (the
    optional libraries' own export headers). None: every configured header is compared.
    """
    differences = []
    closure = dependency_closure(full, roots)
    for name in closure:
        ours, theirs = full.targets[name], runtime.targets.get(name)
        if theirs is None:
            differences.append(f"{name}: only built with the optional libraries switched on")
            continue
        for what, a, b in (
            ("compile flags, defines or include folders", ours.compile, theirs.compile),
            ("sources", ours.sources, theirs.sources),
            ("link command", ours.link, theirs.link),
            (
                "dependencies",
                code_dependencies(full, ours),
                code_dependencies(runtime, theirs),
            ),
        ):
            if a != b:
                differences.append(f"{name}: {what} differ")
    differences += _header_differences(full, runtime, headers_read)
    return sorted(set(differences))


def _header_differences(
    full: TreeModel, runtime: TreeModel, headers_read: Set[str] | None
) -> list[str]:
    ours, theirs = full.include_files, runtime.include_files
    compared = set(ours) | set(theirs)
    if headers_read is not None:
        compared &= headers_read
    return [
        f"{path}: configured differently"
        if path in ours and path in theirs
        else f"{path}: configured only with the optional libraries switched "
        + ("on" if path in ours else "off")
        for path in sorted(compared)
        if ours.get(path) != theirs.get(path)
    ]


def headers_read(tree: Path, targets: Iterable[str]) -> set[str] | None:
    """The files inside ``tree`` that the compiles of ``targets`` read, from ninja's dependency
    log (``ninja -t deps``); None when the log does not cover every object of theirs (not built
    yet, or another generator)."""
    try:
        output = process.run(
            [cmake.ninja_executable(), "-C", tree, "-t", "deps"], stream=False, quiet=True
        )
    except ToolFailed:
        return None
    wanted = tuple(f"CMakeFiles/{name}.dir/" for name in targets)
    top = str(tree.resolve())
    found: set[str] = set()
    current = False
    for line in output.splitlines():
        if not line.startswith(" "):
            current = any(part in line for part in wanted)
            if current and "(VALID)" not in line:
                return None
            continue
        path = line.strip()
        if current and (path.startswith(top + "/") or not path.startswith("/")):
            found.add(path[len(top) + 1 :] if path.startswith(top + "/") else path)
    return found


def configure_runtime_tree(
    source_dir: Path, folder: Path, defines: Mapping[str, str], extra_args: Sequence[str]
) -> None:
    """Configure (never build) ``folder`` with the runtime distribution's ``defines``.

    An internal check, not a step of the build: the command and CMake's output (its compiler
    detection again) are logged at DEBUG, shown with ``-v``; a failure carries the last lines.
    """
    with folder_lock(folder, "configure"):
        cmake.write_file_api_query(folder)
        command = cmake.configure_command(source_dir, folder, defines, extra_args)
        process.run(command, quiet=True, output_level=logging.DEBUG)


RUNTIME_TREE = "buildtool/runtime-configuration"
"""Inside the full build tree: the configure-only tree of the runtime distribution's
configuration (where the runtime wheel builds on its own when the proof fails)."""


@dataclasses.dataclass(frozen=True)
class RuntimeProof:
    """Whether the full build's runtime targets are what a runtime-only build would make."""

    roots: tuple[str, ...]
    """The targets the runtime wheel ships (libraries, extension modules)."""
    differences: tuple[str, ...]
    """What switching the optional libraries off changes for them; empty: nothing."""
    runtime_tree: Path
    """The configure-only tree of the runtime configuration."""

    @property
    def holds(self) -> bool:
        return not self.differences


def prove_runtime_unchanged(
    source_dir: Path,
    full_tree: Path,
    runtime_defines: Mapping[str, str],
    roots: Sequence[str],
    extra_args: Sequence[str] = (),
) -> RuntimeProof:
    """Configure the runtime configuration beside ``full_tree`` (configured and built already)
    and compare the two code models for ``roots`` and what they depend on."""
    runtime_tree = full_tree / RUNTIME_TREE
    configure_runtime_tree(source_dir, runtime_tree, runtime_defines, extra_args)
    full = read_tree_model(full_tree)
    read = headers_read(full_tree, dependency_closure(full, roots))
    differences = runtime_differences(full, read_tree_model(runtime_tree), roots, read)
    return RuntimeProof(tuple(roots), tuple(differences), runtime_tree)
