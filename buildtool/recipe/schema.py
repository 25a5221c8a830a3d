"""The recipe's JSON Schema, generated from the model's type hints and field docstrings."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import json
import types
import typing
from typing import Any

from buildtool.recipe import model as recipe_model
from buildtool.recipe.load import is_required

SCHEMA_ID = "https://buildtool.invalid/schemas/recipe.schema.json"


def field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings (the string literal after each field) of a dataclass."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for before, after in itertools.pairwise(body):
        if (
            isinstance(before, ast.AnnAssign)
            and isinstance(before.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
        ):
            docs[before.target.id] = inspect.cleandoc(str(after.value.value))
    return docs


def _toml_name(name: str) -> str:
    return name.replace("_", "-")


def _key_schema(key_type: Any) -> dict[str, Any]:
    """What a table's keys may be (``load._bad_key`` says the same in words)."""
    if key_type is recipe_model.FreeKey:
        return {"minLength": 1}
    if recipe_model.TARGET_NAME in getattr(key_type, "__metadata__", ()):
        return {"pattern": "^[A-Za-z0-9_][A-Za-z0-9_.+-]*$"}
    return {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}


def _type_schema(hint: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        definitions.setdefault(hint.__name__, {})
        definitions[hint.__name__] = _dataclass_schema(hint, definitions)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(hint))}
    if origin is tuple:
        return {"type": "array", "items": _type_schema(typing.get_args(hint)[0], definitions)}
    if origin is dict:
        key_type, value_type = typing.get_args(hint)
        item = _type_schema(value_type, definitions)
        names = _key_schema(key_type)
        return {"type": "object", "propertyNames": names, "additionalProperties": item}
    if origin in (typing.Union, types.UnionType):
        return _type_schema(typing.get_args(hint)[0], definitions)
    scalar = {str: "string", bool: "boolean", int: "integer", float: "number"}
    return {"type": scalar[hint]}


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return dataclasses.MISSING
    if dataclasses.is_dataclass(value) or value is None:
        # None: computed when not given (a TOML value cannot be null); the description says how
        return dataclasses.MISSING
    return list(value) if isinstance(value, tuple) else value


def _dataclass_schema(cls: type, definitions: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls, include_extras=True)
    docs = field_docs(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in dataclasses.fields(cls):
        entry = _type_schema(hints[field.name], definitions)
        entry = {"description": docs.get(field.name, ""), **entry}
        default = _default(field)
        if is_required(field):
            required.append(_toml_name(field.name))
        elif default is not dataclasses.MISSING:
            entry["default"] = default
        properties[_toml_name(field.name)] = entry
    schema: dict[str, Any] = {
        "type": "object",
        "description": inspect.cleandoc(cls.__doc__ or ""),
        "additionalProperties": False,
        "properties": properties,
    }
    if required:
        schema["required"] = required
    return schema


def recipe_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a recipe."""
    definitions: dict[str, Any] = {}
    root = _dataclass_schema(recipe_model.Recipe, definitions)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "buildtool recipe",
        **root,
        "$defs": dict(sorted(definitions.items())),
    }


def render_schema() -> str:
    """The schema as committed: sorted keys would lose field order, so only indentation is fixed."""
    return json.dumps(recipe_schema(), indent=2) + "\n"


def _type_text(entry: dict[str, Any]) -> str:
    if "$ref" in entry:
        return f"table `{entry['$ref'].rsplit('/', 1)[-1]}`"
    if "enum" in entry:
        return " \\| ".join(f"`{json.dumps(choice)}`" for choice in entry["enum"])
    if entry.get("type") == "array":
        return f"array of {_type_text(entry['items'])}"
    if entry.get("type") == "object" and "additionalProperties" in entry:
        item = entry["additionalProperties"]
        if "$ref" in item:
            return f"tables by name: {_type_text(item)}"
        return f"table of {_plural(_type_text(item))}"
    return str(entry.get("type", ""))


def _plural(type_text: str) -> str:
    """``string`` -> ``strings``, ``array of string`` -> ``arrays of strings``."""
    if type_text.startswith("array of "):
        return f"arrays of {_plural(type_text.removeprefix('array of '))}"
    return {"string": "strings", "number": "numbers", "integer": "integers"}.get(
        type_text, f"{type_text} values"
    )


def _markdown(text: str) -> str:
    return " ".join(text.replace("``", "`").split()).replace("|", "\\|")


def _table_section(title: str, schema: dict[str, Any]) -> str:
    lines = [f"## {title}", "", _markdown(schema.get("description", "")), ""]
    lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
    required = set(schema.get("required", ()))
    for key, entry in schema["properties"].items():
        default = "required" if key in required else f"`{json.dumps(entry.get('default'))}`"
        if "$ref" in entry:
            default = ""
        elif "default" not in entry and key not in required:
            default = "computed"
        row = [f"`{key}`", _type_text(entry), default, _markdown(entry.get("description", ""))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def render_recipe_doc() -> str:
    """``docs/recipe.md``: every table and key of the recipe, from the model's docstrings."""
    schema = recipe_schema()
    parts = [
        "# Recipe reference\n\n"
        "Generated from `buildtool/recipe/model.py` (the field docstrings); do not edit. "
        'Regenerate with\n`python -c "from buildtool.recipe.schema import render_recipe_doc as r; '
        "open('docs/recipe.md', 'w').write(r())\"`.\nThe same reference as JSON Schema: "
        "`buildtool schema` (`buildtool/schemas/recipe.schema.json`).\n",
        _table_section("The recipe (top level)", schema),
    ]
    parts += [_table_section(f"`{name}`", entry) for name, entry in schema["$defs"].items()]
    return "\n".join(parts)
