"""Recipes are untrusted: random TOML shapes and types, path escapes and glob explosions always end
in a RecipeError or UsageError (exit 2 with a message through ``main``), never another exception."""

from __future__ import annotations

import contextlib
import copy
import datetime
import io
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buildtool.cli import main
from buildtool.errors import RecipeError, UsageError
from buildtool.plan import make_plan
from buildtool.recipe import sources
from buildtool.recipe.load import load_recipe, parse_recipe
from buildtool.recipe.model import Recipe
from buildtool.recipe.sources import expand_pattern
from tests.conftest import DEMO_RECIPE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

MODEL_KEYS = [
    "project", "name", "package", "env-prefix", "version", "root", "python-package-dir",
    "libraries", "objects", "executables", "tests", "externals", "sources", "links",
    "registers", "optional", "load", "file", "include-dirs", "no-as-needed", "args",
    "allowed-needed", "link", "find-package", "verify", "hardening", "forbidden-needed",
    "removed", "size-budget-mb", "wheel", "platform-tag", "build", "launcher", "runtime", "ffi",
]  # fmt: skip
"""Keys the model knows, so random tables often get past the unknown-key check."""

PROPERTY = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

keys = st.sampled_from(MODEL_KEYS) | st.text(max_size=12)
scalars = (
    st.text(max_size=20)
    | st.sampled_from(["../x", "/etc", "*.cc", "**/*", "a)\n#", "1.0rc1", "demo", "DEMO", "C:x"])
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats()
    | st.booleans()
    | st.datetimes()
    | st.dates()
    | st.times()
)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=20,
)
tables = st.dictionaries(keys, values, max_size=6)


def _accepts_or_refuses(data: dict[str, Any]) -> Recipe | None:
    """parse_recipe, then make_plan: a Recipe, or None after a RecipeError with a message."""
    try:
        recipe = parse_recipe(data, "random.toml")
        make_plan(recipe, "random.toml", {})
    except RecipeError as error:
        refused = error
    else:
        return recipe
    assert str(refused).startswith("random.toml"), refused
    assert refused.problem
    return None


@PROPERTY
@given(tables)
def test_random_tables_are_recipes_or_recipe_errors(data: dict[str, Any]) -> None:
    _accepts_or_refuses(data)


@PROPERTY
@given(st.dictionaries(keys, values, max_size=3).map(lambda p: {"project": p, "libraries": {}}))
def test_random_project_tables(data: dict[str, Any]) -> None:
    _accepts_or_refuses(data)


DEMO = tomllib.loads(DEMO_RECIPE.read_text(encoding="utf-8"))


def _paths(node: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every key path of a parsed TOML document."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, child in node.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += _paths(child, (*prefix, index))
    return found


DEMO_PATHS = _paths(DEMO)


def _edited(path: tuple[str | int, ...], action: str, value: Any) -> dict[str, Any]:
    document = copy.deepcopy(DEMO)
    parent: Any = document
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "delete":
        del parent[last]
    elif action == "replace":
        parent[last] = value
    elif isinstance(parent, dict):
        parent[f"{last}x"] = value  # an unknown key beside a known one
    return document


@PROPERTY
@given(st.sampled_from(DEMO_PATHS), st.sampled_from(["delete", "replace", "add"]), values)
def test_the_example_with_one_value_broken(
    path: tuple[str | int, ...], action: str, value: Any
) -> None:
    _accepts_or_refuses(_edited(path, action, value))


# --- through main: random TOML files exit 2 with a message ------------------------------------


def _toml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return json.dumps(value)  # a string: JSON's escapes are TOML's


def _toml_value(value: Any) -> str:
    """``value`` as TOML (inline tables and arrays for nesting)."""
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return _toml_scalar(value)


def toml_document(data: dict[str, Any]) -> str:
    return "".join(f"{json.dumps(key)} = {_toml_value(value)}\n" for key, value in data.items())


def run_main(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, err.getvalue()


@settings(PROPERTY, max_examples=150)
@given(tables | st.builds(lambda p: {"project": p}, st.dictionaries(keys, values, max_size=4)))
def test_random_recipe_files_exit_2_with_a_message(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any]
) -> None:
    recipe = tmp_path_factory.getbasetemp() / "random.toml"
    recipe.write_text(toml_document(data), encoding="utf-8")
    code, err = run_main("configure", "--check", "--recipe", str(recipe))
    assert code == 2, err
    assert err.startswith(f"error: {recipe}"), err
    assert "Traceback" not in err


@settings(PROPERTY, max_examples=100)
@given(st.binary(max_size=200))
def test_random_bytes_exit_2(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    recipe = tmp_path_factory.getbasetemp() / "bytes.toml"
    recipe.write_bytes(raw)
    code, err = run_main("configure", "--check", "--recipe", str(recipe))
    assert code == 2, err
    assert str(recipe) in err
    assert "Traceback" not in err


# --- path escapes -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project root with sources, a symlinked file and folder leading out, and a link loop."""
    base = tmp_path_factory.mktemp("escapes")
    outside = base / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "secret.cc").write_text("int secret;\n")
    (outside / "deep" / "more.cc").write_text("int more;\n")
    root = base / "root"
    (root / "src" / "sub").mkdir(parents=True)
    (root / "src" / "a.cc").write_text("int a;\n")
    (root / "src" / "sub" / "b.cc").write_text("int b;\n")
    (root / "src" / "leak.cc").symlink_to(outside / "secret.cc")
    (root / "src" / "door").symlink_to(outside)
    (root / "src" / "loop").symlink_to(root / "src")
    return root.resolve()


segments = st.sampled_from(["..", ".", "src", "sub", "door", "deep", "loop", "*", "**", "*.cc",
                            "a.cc", "leak.cc", "", "C:", "\\", "[", "a**b"])  # fmt: skip
patterns = st.lists(segments, min_size=1, max_size=6).map("/".join) | st.text(max_size=30)


@PROPERTY
@given(patterns)
def test_globs_never_lead_out_of_the_root(project: Path, pattern: str) -> None:
    try:
        found = expand_pattern(project, pattern, "r.toml", "libraries.x.sources[0]")
    except RecipeError as error:
        found, refused = (), str(error)
    else:
        refused = "r.toml: libraries.x.sources[0]: "
    assert refused.startswith("r.toml: libraries.x.sources[0]: ")
    for relative in found:
        assert (project / relative).resolve().is_relative_to(project), relative


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("../outside/*.cc", "paths may not escape the project root"),
        ("src/../../outside/*.cc", "paths may not escape the project root"),
        ("/etc/*.conf", "expected a path relative to the project root"),
        ("src/leak.cc", "src/leak.cc leads outside the project root"),
        ("src/door/*.cc", "src/door/secret.cc leads outside the project root"),
        ("src/**/*.cc", "leads outside the project root"),
        ("src/a**b", "cannot expand"),
        (".", "expected files, found the project root"),
        ("x/" * 600, "too long"),
    ],
)
def test_escapes_are_refused(project: Path, pattern: str, message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        expand_pattern(project, pattern, "r.toml", "k")


def test_symlinked_package_folder_leading_out_is_refused(tmp_path: Path) -> None:
    """The loader is generated into python-package-dir: never through a symlink out."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "src").mkdir(parents=True)
    outside.mkdir()
    (outside / "__init__.py").write_text("")
    (root / "src" / "core.cc").write_text("int core;\n")
    (root / "python").symlink_to(outside)
    recipe = root / "recipe.toml"
    recipe.write_text(
        '[project]\nname = "p"\npython-package-dir = "python"\n'
        '[libraries.core]\nsources = ["src/*.cc"]\ninclude-dirs = []\n'
    )
    code, err = run_main("configure", "--recipe", str(recipe), "--build-dir", str(tmp_path / "b"))
    assert code == 2
    assert "python/base.py would be written outside the project root" in err
    assert [path.name for path in outside.iterdir()] == ["__init__.py"]


def test_glob_explosion_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "MAX_MATCHES_PER_PATTERN", 50)
    for index in range(60):
        (tmp_path / f"f{index}.cc").write_text("")
    started = time.monotonic()
    with pytest.raises(RecipeError, match=r"'\*\*/\*' matches more than 50 files"):
        expand_pattern(tmp_path, "**/*", "r.toml", "k")
    assert time.monotonic() - started < 5


def test_many_double_stars_over_a_deep_tree_stay_fast(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*"abcdefghijkl")
    deep.mkdir(parents=True)
    (deep / "x.cc").write_text("")
    started = time.monotonic()
    assert expand_pattern(tmp_path, "**/" * 6 + "*.cc", "r.toml", "k") == (
        "a/b/c/d/e/f/g/h/i/j/k/l/x.cc",
    )
    assert time.monotonic() - started < 5


def test_recipe_errors_are_usage_errors_at_the_file_level(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="recipe file not found"):
        load_recipe(tmp_path / "missing.toml")
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(RecipeError, match="cannot read the recipe"):
        load_recipe(tmp_path / "dir.toml")
