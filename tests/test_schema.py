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
