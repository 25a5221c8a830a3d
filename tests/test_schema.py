"""The committed JSON Schema must be what the model generates today."""

from __future__ import annotations

import json

from buildtool.recipe.model import Recipe
from buildtool.recipe.schema import field_docs, recipe_schema, render_schema
from buildtool.resources import schema_path
from tests.conftest import CliRunner


def test_committed_schema_is_current() -> None:
    committed = schema_path("recipe").read_text(encoding="utf-8")
    assert committed == render_schema(), (
        "run: buildtool schema > buildtool/schemas/recipe.schema.json"
    )


def test_schema_command_prints_it(run_cli: CliRunner) -> None:
    result = run_cli("schema")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == recipe_schema()


def test_every_field_of_every_table_is_documented() -> None:
    schema = recipe_schema()
    tables = [schema, *schema["$defs"].values()]
    undocumented = [
        (table.get("description", "?")[:30], name)
        for table in tables
        for name, entry in table["properties"].items()
        if not entry["description"]
    ]
    assert undocumented == []


def test_field_docs_reads_attribute_docstrings() -> None:
    assert field_docs(Recipe)["objects"].startswith("Object libraries, by name")


def test_schema_keys_use_toml_spelling() -> None:
    properties = recipe_schema()["$defs"]["Executable"]["properties"]
    assert "no-as-needed" in properties
    assert "no_as_needed" not in properties
    assert recipe_schema()["$defs"]["ProjectSettings"]["required"] == ["name"]


def test_committed_recipe_reference_is_current() -> None:
    from buildtool.recipe.schema import render_recipe_doc
    from tests.conftest import REPO

    committed = (REPO / "docs" / "recipe.md").read_text(encoding="utf-8")
    assert committed == render_recipe_doc(), "regenerate docs/recipe.md (command in its header)"


def test_the_reference_types_each_table_by_its_values() -> None:
    """A table of names to strings (``[migrate] renamed``) reads "table of strings", one of
    numbers "table of numbers": the type column follows each schema entry's value type."""
    from buildtool.recipe.schema import render_recipe_doc

    words = {"string": "strings", "number": "numbers", "integer": "integers"}
    rows = render_recipe_doc().splitlines()
    checked = {}
    for definition in recipe_schema()["$defs"].values():
        for key, entry in definition.get("properties", {}).items():
            values = entry.get("additionalProperties")
            if not isinstance(values, dict) or "$ref" in values:
                continue
            if values.get("type") == "array":
                expected = f"table of arrays of {words[values['items']['type']]}"
            else:
                expected = f"table of {words[values['type']]}"
            assert f"| `{key}` | {expected} |" in "\n".join(rows), key
            checked[key] = expected
    assert checked["renamed"] == checked["renamed-headers"] == "table of strings"
    assert checked["removed"] == "table of strings"
    assert checked["size-budget-mb"] == "table of numbers"
