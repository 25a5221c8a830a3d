"""Loading recipes: TOML -> validated, frozen ``Recipe``.

Conversion is driven by the dataclass type hints in ``recipe_model``, so every key the model
declares is accepted and every other key is refused with its key path and a "did you mean".
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import os
import re
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from buildtool.errors import RecipeError, UsageError
from buildtool.recipe.model import TARGET_NAME, FreeKey, ProjectSettings, Recipe
from buildtool.recipe.values import check_values, normalized_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TARGET_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*\Z")
_ENV_PREFIX = re.compile(r"[A-Z_][A-Z0-9_]*\Z")
_LIBRARY_PREFIX = re.compile(r"[A-Za-z0-9_.+-]*\Z")
_DISTRIBUTION = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?\Z")


def _is_target_name(key_type: Any) -> bool:
    return TARGET_NAME in getattr(key_type, "__metadata__", ())


def _bad_key(name: str, key_type: Any) -> str:
    """What is wrong with a table key of ``key_type``, or ''."""
    if key_type is FreeKey:
        return ""
    if _is_target_name(key_type):
        if _TARGET_NAME.match(name):
            return ""
        return (
            "expected a target name of letters, digits, '_', '.', '+' and '-' (not starting "
            "with '.', '+' or '-')"
        )
    if _NAME.match(name):
        return ""
    return "expected a name of letters, digits and '_' (not starting with a digit)"


@dataclasses.dataclass(frozen=True)
class LoadedRecipe:
    """A recipe with where it came from; everything downstream takes this."""

    recipe: Recipe
    """The validated recipe, with defaults filled in."""

    source: str
    """How messages name the recipe file (the path as given)."""

    path: Path
    """Absolute path of the recipe file."""

    root: Path
    """Absolute project root."""

    digest: str
    """SHA-256 of the recipe file's bytes."""

    @property
    def source_from_root(self) -> str:
        """The recipe path relative to the project root: stable across checkouts."""
        return _relative(self.path, self.root)


def _relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path, start)).as_posix()


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")


def key_path(parent: str, key: str | int) -> str:
    """``objects.gemm`` + ``sources`` -> ``objects.gemm.sources``; ints become ``[i]``; a key that
    is not bare in TOML is quoted (``migrate.renamed."libdemo.so"``)."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if not _BARE_KEY.match(key):
        key = json.dumps(key, ensure_ascii=False)
    return f"{parent}.{key}" if parent else key


_SCALAR_NAMES: dict[type, str] = {
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
}


def _type_name(value: object) -> str:
    name = _SCALAR_NAMES.get(type(value))
    if name:
        return f"{name} ({value!r})"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


class _Converter:
    """Turns parsed TOML into model instances, naming ``source`` and the key path on error."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, problem: str) -> RecipeError:
        return RecipeError(self.source, key, problem)

    def convert(self, value: object, hint: Any, key: str) -> Any:
        origin = typing.get_origin(hint)
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return self.dataclass(value, hint, key)
        if origin is typing.Literal:
            return self.literal(value, typing.get_args(hint), key)
        if origin is tuple:
            return self.array(value, typing.get_args(hint)[0], key)
        if origin is dict:
            key_type, item = typing.get_args(hint)
            return self.table(value, item, key, key_type)
        if origin in (typing.Union, types.UnionType):
            return self.convert(value, typing.get_args(hint)[0], key)
        return self.scalar(value, hint, key)

    def scalar(self, value: object, hint: type, key: str) -> object:
        if hint is float and type(value) is int:
            return float(value)
        if type(value) is not hint:
            expected = _SCALAR_NAMES.get(hint, hint.__name__)
            raise self.fail(key, f"expected {expected}, found {_type_name(value)}")
        return value

    def literal(self, value: object, choices: tuple[object, ...], key: str) -> object:
        if value not in choices:
            shown = ", ".join(repr(choice) for choice in choices)
            raise self.fail(key, f"expected one of {shown}, found {_type_name(value)}")
        return value

    def array(self, value: object, item: Any, key: str) -> tuple[object, ...]:
        if isinstance(value, str) and item is str:
            raise self.fail(key, f"expected an array of strings, found {_type_name(value)}")
        if not isinstance(value, list):
            raise self.fail(key, f"expected an array, found {_type_name(value)}")
        return tuple(self.convert(entry, item, key_path(key, i)) for i, entry in enumerate(value))

    def table(self, value: object, item: Any, key: str, key_type: Any = str) -> dict[str, object]:
        if not isinstance(value, Mapping):
            raise self.fail(key, f"expected a table, found {_type_name(value)}")
        result: dict[str, object] = {}
        for name, entry in value.items():
            entry_key = key_path(key, name)
            problem = _bad_key(name, key_type)
            if problem:
                raise self.fail(entry_key, problem)
            result[name] = self.convert(entry, item, entry_key)
        return result

    def dataclass(self, value: object, cls: type, key: str) -> object:
        if not isinstance(value, Mapping):
            raise self.fail(key, f"expected a table, found {_type_name(value)}")
        hints = typing.get_type_hints(cls, include_extras=True)
        fields = {field.name.replace("_", "-"): field for field in dataclasses.fields(cls)}
        for name in value:
            if name not in fields:
                raise self.fail(key_path(key, name), _unknown_key_message(name, list(fields)))
        kwargs: dict[str, object] = {}
        for toml_name, field in fields.items():
            if toml_name in value:
                entry_key = key_path(key, toml_name)
                kwargs[field.name] = self.convert(value[toml_name], hints[field.name], entry_key)
            elif is_required(field):
                raise self.fail(key_path(key, toml_name), "required key is missing")
        return cls(**kwargs)


def is_required(field: dataclasses.Field[object]) -> bool:
    no_default = field.default is dataclasses.MISSING
    return no_default and field.default_factory is dataclasses.MISSING


def _unknown_key_message(name: str, known: list[str]) -> str:
    message = f"unknown key {name!r}"
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:
        return message + "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    return message + "; expected one of " + ", ".join(repr(k) for k in known)


def parse_recipe(data: Mapping[str, object], source: str) -> Recipe:
    """Validate parsed TOML into a ``Recipe`` with defaults filled in (pure)."""
    recipe = _Converter(source).convert(data, Recipe, "")
    assert isinstance(recipe, Recipe)
    completed = dataclasses.replace(recipe, project=_complete_project(recipe.project, source))
    check_values(completed, source)
    _check_plugin_distributions(completed, source)
    return completed


def _check_distribution_names(name: str, runtime: str, addon: str, source: str) -> None:
    """The split's wheels: distribution names, apart from each other and from the full one."""
    seen = {_normalized(name): "project.name"}
    for key, value in (("runtime-distribution", runtime), ("addon-distribution", addon)):
        if not _DISTRIBUTION.match(value):
            raise RecipeError(
                source, f"project.{key}", f"expected a distribution name, found {value!r}"
            )
        other = seen.get(_normalized(value))
        if other is not None:
            raise RecipeError(
                source, f"project.{key}", f"{value!r} is the distribution name of {other} too"
            )
        seen[_normalized(value)] = f"project.{key}"


def _check_plugin_distributions(recipe: Recipe, source: str) -> None:
    """A plugin's wheel of its own: a distribution name, none of the project's own wheels."""
    project = recipe.project
    taken = {
        _normalized(project.name): "project.name",
        _normalized(project.runtime_distribution): "the runtime wheel",
        _normalized(project.addon_distribution): "the compiler add-on",
    }
    for name, plugin in recipe.plugins.items():
        value = plugin.distribution
        if not value:
            continue
        key = f"plugins.{name}.distribution"
        if not _DISTRIBUTION.match(value):
            raise RecipeError(source, key, f"expected a distribution name, found {value!r}")
        other = taken.get(_normalized(value))
        if other is not None:
            raise RecipeError(
                source, key, f"{value!r} is the distribution name of {other}; a plugin's own "
                "wheel needs a name of its own"
            )  # fmt: skip


def _normalized(distribution: str) -> str:
    """PEP 503's form: ``Sentence_Piece.x`` and ``sentence-piece-x`` are one distribution."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _complete_project(project: ProjectSettings, source: str) -> ProjectSettings:
    if not _DISTRIBUTION.match(project.name):
        raise RecipeError(
            source, "project.name", f"expected a distribution name, found {project.name!r}"
        )
    package = project.package or project.name.replace("-", "_").replace(".", "_")
    if not package.isidentifier():
        raise RecipeError(
            source, "project.package", f"expected a Python identifier, found {package!r}"
        )
    env_prefix = project.env_prefix or package.upper()
    if not _ENV_PREFIX.match(env_prefix):
        raise RecipeError(
            source,
            "project.env-prefix",
            f"expected upper-case letters, digits and '_', found {env_prefix!r}",
        )
    prefix = f"{package}_" if project.library_prefix is None else project.library_prefix
    if not _LIBRARY_PREFIX.match(prefix):
        raise RecipeError(
            source,
            "project.library-prefix",
            "expected letters, digits and '_', '.', '+', '-' (it begins CMake target and file "
            f"names), found {prefix!r}",
        )
    runtime = project.runtime_distribution or f"{project.name}-runtime"
    addon = project.addon_distribution or f"{project.name}-compiler"
    _check_distribution_names(project.name, runtime, addon, source)
    return dataclasses.replace(
        project,
        runtime_distribution=runtime,
        addon_distribution=addon,
        package=package,
        env_prefix=env_prefix,
        library_prefix=prefix,
        version=normalized_version(project.version, source),
    )


TOO_DEEP = (
    "not a readable recipe: arrays or inline tables are nested too deeply for the TOML parser"
    " (a recipe needs at most a few levels)"
)


def _read_toml(path: Path, source: str) -> dict[str, Any]:
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{source}: recipe file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise RecipeError(source, "", f"cannot read the recipe: {error}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RecipeError(source, "", f"not valid TOML: {error}") from None
    except RecursionError:  # the parser recurses once per level of nesting
        raise RecipeError(source, "", TOO_DEEP) from None


def _recipe_table(data: dict[str, Any], path: Path, source: str) -> Mapping[str, object]:
    if path.name != "pyproject.toml":
        return data
    table = data.get("tool", {}).get("buildtool") if isinstance(data.get("tool"), dict) else None
    if not isinstance(table, Mapping):
        raise RecipeError(source, "tool.buildtool", "expected a [tool.buildtool] table")
    return table


def load_recipe(path: Path, source: str | None = None) -> LoadedRecipe:
    """Read and validate a recipe file (a recipe TOML or a pyproject.toml)."""
    shown = source or str(path)
    data = _read_toml(path, shown)
    recipe = parse_recipe(_recipe_table(data, path, shown), shown)
    absolute = path.resolve()
    root = (absolute.parent / recipe.project.root).resolve()
    if not root.is_dir():
        raise RecipeError(shown, "project.root", f"expected a folder, found nothing at {root}")
    digest = hashlib.sha256(absolute.read_bytes()).hexdigest()
    return LoadedRecipe(recipe=recipe, source=shown, path=absolute, root=root, digest=digest)


DEFAULT_RECIPE_NAME = "buildtool.toml"
RECIPES_DIR = "recipes"


def _has_tool_table(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        if "tool.buildtool" in text:  # meant as the recipe: say why it cannot be read
            raise RecipeError(str(pyproject), "", f"not valid TOML: {error}") from None
        return False
    except RecursionError:
        if "tool.buildtool" in text:
            raise RecipeError(str(pyproject), "", TOO_DEEP) from None
        return False
    tool = data.get("tool")
    return isinstance(tool, dict) and "buildtool" in tool


def find_default_recipe(cwd: Path) -> Path | None:
    """The recipe a command uses without ``--recipe``, or None when there is none.

    In order: ``./buildtool.toml``; ``[tool.buildtool]`` in ``./pyproject.toml``; the only
    ``./recipes/*.toml`` (several are a usage error listing them: which one is meant?).
    """
    own = cwd / DEFAULT_RECIPE_NAME
    if own.is_file():
        return own
    pyproject = cwd / "pyproject.toml"
    if pyproject.is_file() and _has_tool_table(pyproject):
        return pyproject
    found = sorted((cwd / RECIPES_DIR).glob("*.toml"))
    if len(found) > 1:
        listed = ", ".join(str(Path(RECIPES_DIR) / path.name) for path in found)
        raise UsageError(f"no recipe given and {len(found)} found: {listed}; pass --recipe FILE")
    return found[0] if found else None


NO_RECIPE_FOUND = (
    f"no recipe given and none found: pass --recipe FILE, or add ./{DEFAULT_RECIPE_NAME}, a "
    f"[tool.buildtool] table in ./pyproject.toml, or a single ./{RECIPES_DIR}/*.toml"
)
