"""The layers of docs/architecture.md, enforced: each room of the package imports only the rooms
below it. Every import counts, lazy ones inside functions and ``TYPE_CHECKING`` ones included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "buildtool"

GROUND = {"__init__", "errors", "console", "process", "fsutil", "resources"}
"""Top-level modules every room may use; they import only each other."""

ROOMS = (
    "ground",
    "recipe",
    "plan",
    "linkage",
    "cmake",
    "packaging",
    "verification",
    "cmakecheck",
    "migrate",
    "ci",
    "backend",
)

ALLOWED: dict[str, set[str]] = {
    "ground": {"ground"},
    "recipe": {"ground", "recipe"},
    "plan": {"ground", "recipe", "plan"},
    "linkage": {"ground", "linkage"},
    # configure writes every generated file, the packaging ones included; wheel builds configure
    "cmake": {"ground", "recipe", "plan", "cmake", "packaging"},
    "packaging": {"ground", "recipe", "plan", "cmake", "packaging"},
    "verification": {"ground", "recipe", "plan", "linkage", "verification"},
    # check-cmake: a code model (cmake writes the query) against a recipe's plan; findings and
    # their renderings are verify-linkage's
    "cmakecheck": {"ground", "recipe", "plan", "cmake", "linkage", "verification", "cmakecheck"},
    "migrate": {"ground", "recipe", "migrate"},
    "ci": {
        "ground",
        "recipe",
        "plan",
        "cmake",
        "packaging",
        "linkage",
        "verification",
        "cmakecheck",
        "migrate",
        "ci",
    },
    # the PEP 517 backend: a distribution built from the shared tree, then verified
    "backend": {
        "ground",
        "recipe",
        "plan",
        "cmake",
        "packaging",
        "linkage",
        "verification",
        "backend",
    },
    "commands": {*ROOMS, "commands"},
    "cli": {"ground", "cli"},
}


def room_of(module: str) -> str:
    """``buildtool.linkage.elf`` -> ``linkage``; ``buildtool.errors`` -> ``ground``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "ground"
    head = parts[1]
    if head == "__main__":
        return "cli"
    return "ground" if head in GROUND else head


def module_name(path: Path) -> str:
    relative = path.relative_to(REPO).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> set[str]:
    """Every ``buildtool`` module a file imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] == "buildtool" and _exists(name)}


def _exists(module: str) -> bool:
    relative = Path(*module.split("."))
    return (REPO / relative).with_suffix(".py").is_file() or (REPO / relative).is_dir()


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_room_is_known() -> None:
    rooms = {room_of(module_name(path)) for path in SOURCES}
    assert rooms <= set(ALLOWED), rooms - set(ALLOWED)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_layers(path: Path) -> None:
    room = room_of(module_name(path))
    wrong = {m for m in imported_modules(path) if room_of(m) not in ALLOWED[room]}
    assert not wrong, f"{room} may not import {sorted(wrong)}"


def test_the_rule_sees_a_lazy_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from buildtool.plan import make_plan\n", encoding="utf-8")
    assert {room_of(m) for m in imported_modules(sample)} == {"plan"}


def test_docs_list_every_room() -> None:
    """docs/architecture.md's table of rules names every room this test enforces, and no other."""
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = doc.split("| room | may import |", 1)[1].split("\n\n", 1)[0]
    first_cells = [line.split("|")[1] for line in table.splitlines()[2:]]
    documented = {cell.split()[0] for cell in first_cells if cell.strip().startswith("ground")}
    for cell in first_cells:
        for name in cell.replace("`", " ").replace(",", " ").split():
            if name.endswith(("/", ".py")):
                documented.add(name.removesuffix("/").removesuffix(".py"))
    assert documented == set(ALLOWED)


LINKAGE = PACKAGE / "linkage"

LINKAGE_ROOMS: dict[str, set[str]] = {
    "binaries": {"binaries"},
    "inputs": {"binaries", "inputs"},
    "loaders": {"binaries", "loaders"},
    "checks": {"binaries", "inputs", "loaders", "checks"},
    "report": {"binaries", "inputs", "loaders", "checks", "report"},
    "checking": {"binaries", "inputs", "loaders", "checks", "report", "checking"},
    "verify": {"binaries", "inputs", "loaders", "checks", "report", "checking", "verify"},
    "__init__": set(),
}
"""Inside ``linkage/``: each room imports only the rooms before it (docs/architecture.md)."""


def linkage_room_of(module: str) -> str | None:
    """``buildtool.linkage.checks.needed`` -> ``checks``; None outside ``linkage/``."""
    parts = module.split(".")
    if parts[:2] != ["buildtool", "linkage"]:
        return None
    return parts[2] if len(parts) > 2 else "__init__"


LINKAGE_SOURCES = sorted(LINKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", LINKAGE_SOURCES, ids=lambda p: str(p.relative_to(LINKAGE)))
def test_linkage_rooms_follow_their_order(path: Path) -> None:
    room = linkage_room_of(module_name(path))
    assert room in LINKAGE_ROOMS, f"{path}: a module outside linkage's rooms"
    rooms = (linkage_room_of(m) for m in imported_modules(path))
    found = {r for r in rooms if r is not None}
    assert found <= LINKAGE_ROOMS[room], (
        f"{room} may not import {sorted(found - LINKAGE_ROOMS[room])}"
    )


@pytest.mark.parametrize("path", sorted((LINKAGE / "checks").rglob("*.py")), ids=lambda p: p.name)
def test_checks_know_no_binary_format(path: Path) -> None:
    """The checks see ``BinaryFacts`` and a loader, never a format's structures."""
    formats = {m for m in imported_modules(path) if m.startswith("buildtool.linkage.binaries.")}
    assert formats <= {"buildtool.linkage.binaries.facts"}, sorted(formats)


def test_the_format_rule_sees_an_elf_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from buildtool.linkage.binaries.elf import facts\n", encoding="utf-8")
    assert "buildtool.linkage.binaries.elf" in imported_modules(sample)


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the modules of the package it imports (lazy and
    ``TYPE_CHECKING`` imports included; a package's ``__init__`` counted as the package)."""
    modules = {module_name(path): path for path in SOURCES}
    return {
        name: {m for m in imported_modules(path) if m in modules and m != name}
        for name, path in modules.items()
    }


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph[module])
    return seen


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other (through others or directly), each
    sorted."""
    reach = {module: reachable(graph, module) for module in graph}
    groups = {
        frozenset({module, *(other for other in reach[module] if module in reach[other])})
        for module in graph
        if module in reach[module]
    }
    return sorted(sorted(group) for group in groups)


def test_no_module_imports_itself_through_others() -> None:
    """No import cycle, lazy imports included: each module can be read (and replaced) knowing
    only what it imports."""
    assert import_cycles(import_graph()) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_telling_a_format_imports_no_reader() -> None:
    """Every run asks ``magic`` what each file is: that must not import the Mach-O and PE
    readers, which an ELF-only run never uses (a tenth of the time its imports take)."""
    readers = ("buildtool.linkage.binaries.macho", "buildtool.linkage.binaries.pe")
    found = reachable(import_graph(), "buildtool.linkage.binaries.magic")
    assert not {module for module in found if module.startswith(readers)}, sorted(found)
