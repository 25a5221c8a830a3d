"""Where a package's Python code imports a module, and whether it catches the import failing.

An extension module that the package imports only inside ``try: ... except ImportError:`` is
optional: when it cannot load (numba's OpenMP and TBB threading layers, without libgomp or
libtbb), the import fails quietly and the package goes on without it (numba picks its
``workqueue`` layer). Pure: Python source text in, import sites out.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from typing import Final, NamedTuple

CATCHING_IMPORT_ERROR: Final = frozenset({"ImportError", "Exception", "BaseException"})
"""Exception classes whose handler catches a module failing to load: the interpreter raises
``ImportError`` itself when the loader cannot open a library the module needs. Not
``ModuleNotFoundError``, its subclass for a module that is not there at all, which such a
handler lets through."""

TEST_FOLDERS: Final = frozenset({"tests", "test", "testing"})
"""Folders whose Python files are a test suite: what ``import package`` never runs."""


class ImportSite(NamedTuple):
    """One statement that imports the module."""

    file: str
    """The Python file, as the input names it (a wheel member's name)."""
    line: int
    guarded: bool
    """Inside a ``try`` with a handler that catches ``ImportError`` and raises nothing (or in
    ``contextlib.suppress`` of it), in the same function: a failure to load ends there."""


class ModuleImports(NamedTuple):
    """Where a package's Python code imports one of its extension modules."""

    sites: tuple[ImportSite, ...]
    """The import statements found, outside the package's tests."""
    unread: tuple[str, ...]
    """Python files that name the module but could not be read as Python (too big, broken):
    an import there is not known, guarded or not."""


def module_of(path: str) -> tuple[str, str] | None:
    """The dotted name of the module a wheel member's path (``a/b/c.py``, ``a/b/__init__.py``,
    ``a/b/m.cpython-311-x86_64-linux-gnu.so``) defines, and the package its relative imports
    start from; None when a path part is no identifier."""
    parts = path.split("/")
    stem = parts[-1].split(".", 1)[0]
    package = parts[:-1]
    names = package if stem == "__init__" else [*package, stem]
    if not names or not all(name.isidentifier() for name in names):
        return None
    return ".".join(names), ".".join(package)


def is_test_file(path: str) -> bool:
    """Whether a Python file belongs to a test suite (a ``tests`` folder, ``test_*.py``,
    ``*_test.py``, ``conftest.py``): importing the package runs none of them."""
    parts = path.split("/")
    name = parts[-1]
    in_tests = not TEST_FOLDERS.isdisjoint(parts[:-1])
    return (
        in_tests or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
    )


class ImportStatement(NamedTuple):
    """A statement of a Python file that imports something."""

    line: int
    guarded: bool
    """As ``ImportSite.guarded``."""
    names: frozenset[str]
    """The dotted names it imports, the packages above each included (importing ``a.b.c``
    imports ``a`` and ``a.b`` first; ``from a import b`` may import the module ``a.b``)."""


def import_statements(text: str, path: str) -> tuple[ImportStatement, ...] | None:
    """The statements of the Python file ``path`` (its text) that import: ``import``,
    ``from ... import`` (relative ones resolved from ``path``) and ``importlib.import_module``
    or ``__import__`` of a literal name. None when the text is no Python this can read (a
    syntax error, a NUL byte, nesting too deep). A file in a folder named like no package (an
    example script) has its absolute imports read; its relative ones cannot run."""
    place = module_of(path)
    package = place[1] if place is not None else None  # a script: only absolute imports
    try:
        with warnings.catch_warnings():  # a package's invalid escapes are no concern here
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
        calls = "import_module" in text or "__import__" in text
        found = [
            ImportStatement(node.lineno, guarded, frozenset(_imported(node, package)))
            for node, guarded in _statements(tree.body, guarded=False, calls=calls)
        ]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tuple(statement for statement in found if statement.names)


def sites_in(statements: tuple[ImportStatement, ...], path: str, module: str) -> list[ImportSite]:
    """The statements of ``path`` that import ``module`` (a dotted name)."""
    return [ImportSite(path, s.line, s.guarded) for s in statements if module in s.names]


def import_sites(text: str, path: str, module: str) -> list[ImportSite] | None:
    """The statements of a Python file that import ``module`` (see ``import_statements``)."""
    statements = import_statements(text, path)
    return None if statements is None else sites_in(statements, path, module)


_Importing = ast.Import | ast.ImportFrom | ast.Call
"""The nodes that may import a module."""

_TRY_NODES: Final = tuple({ast.Try, getattr(ast, "TryStar", ast.Try)})
"""``try`` and, from Python 3.11 on, ``try``/``except*``."""


_BLOCKS: Final = (ast.stmt, ast.excepthandler, ast.match_case)
"""Nodes that hold statements: all a walk for ``import`` statements enters."""


def _statements(
    body: list[ast.stmt], guarded: bool, calls: bool
) -> Iterator[tuple[_Importing, bool]]:
    """Every node under ``body`` that may import (``calls``: calls too, which may be
    ``import_module``), and whether a handler around it in its own function catches
    ``ImportError``."""
    for node in body:
        yield from _node(node, guarded, calls)


def _node(node: ast.AST, guarded: bool, calls: bool) -> Iterator[tuple[_Importing, bool]]:
    if isinstance(node, _TRY_NODES):
        yield from _statements(node.body, guarded or _catches(node.handlers), calls)
        for rest in (*node.handlers, *node.orelse, *node.finalbody):
            yield from _node(rest, guarded, calls)
        return
    if isinstance(node, (ast.With, ast.AsyncWith)):
        suppressed = any(_suppresses(item.context_expr) for item in node.items)
        yield from _statements(node.body, guarded or suppressed, calls)
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        guarded = False  # its body runs when called, outside the handlers around its definition
    if isinstance(node, (ast.Import, ast.ImportFrom)) or (calls and isinstance(node, ast.Call)):
        yield node, guarded
    for child in ast.iter_child_nodes(node):
        if calls or isinstance(child, _BLOCKS):  # expressions hold no import statement
            yield from _node(child, guarded, calls)


def _catches(handlers: list[ast.ExceptHandler]) -> bool:
    """Whether a handler catches ``ImportError`` and goes on: one that may raise again (a
    clearer message for the same failure) lets the import fail all the same."""
    return any(
        (handler.type is None or _names_catching(handler.type)) and not _may_raise(handler.body)
        for handler in handlers
    )


def _may_raise(body: list[ast.stmt]) -> bool:
    """Whether a ``raise`` statement runs in ``body`` (those of functions it defines do not)."""
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Raise):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _names_catching(expression: ast.expr) -> bool:
    """Whether an ``except`` clause's class (or tuple of classes) catches ``ImportError``."""
    if isinstance(expression, ast.Tuple):
        return any(_names_catching(element) for element in expression.elts)
    if isinstance(expression, ast.Name):
        return expression.id in CATCHING_IMPORT_ERROR
    if isinstance(expression, ast.Attribute):  # builtins.ImportError
        return expression.attr in CATCHING_IMPORT_ERROR
    return False


def _suppresses(expression: ast.expr) -> bool:
    """``contextlib.suppress(ImportError)`` (or ``suppress(...)``) of a class catching it."""
    if not isinstance(expression, ast.Call):
        return False
    function = expression.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    return name == "suppress" and any(_names_catching(arg) for arg in expression.args)


def _imported(node: ast.AST, package: str | None) -> set[str]:
    """The dotted names a statement imports (each ``from a import b`` as ``a`` and ``a.b``:
    ``b`` may be a module or a name); ``package``: where its relative imports start, None for
    a file no import reaches (a script in a folder named like no package)."""
    if isinstance(node, ast.Import):
        return {prefix for alias in node.names for prefix in _prefixes(alias.name)}
    if isinstance(node, ast.ImportFrom):
        base = _absolute(node.module or "", node.level, package)
        if base is None:
            return set()
        found = _prefixes(base) if base else set()
        return found | {f"{base}.{alias.name}" if base else alias.name for alias in node.names}
    if isinstance(node, ast.Call) and _imports_by_name(node.func) and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return _prefixes(first.value)
    return set()


def _prefixes(name: str) -> set[str]:
    """``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``: importing a module imports its packages."""
    parts = name.split(".")
    return {".".join(parts[: count + 1]) for count in range(len(parts))}


def _absolute(module: str, level: int, package: str | None) -> str | None:
    """The absolute name of a ``from`` import's module; None when it climbs above the top
    (or starts nowhere)."""
    if level == 0:
        return module
    if package is None:
        return None
    parts = package.split(".") if package else []
    if level - 1 >= len(parts):
        return None  # above the top-level package: Python refuses it
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _imports_by_name(function: ast.expr) -> bool:
    """``importlib.import_module``, ``import_module`` or ``__import__``."""
    if isinstance(function, ast.Attribute):
        return function.attr == "import_module"
    return isinstance(function, ast.Name) and function.id in ("import_module", "__import__")
