"""The recipe: its model (frozen dataclasses), loading and validation, source globs, and the
JSON Schema generated from the model."""
