"""Contributor sessions: ``nox -s tests``, ``nox -s lint``, ``nox -s demo``, ``nox -s schema``."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.default_venv_backend = "venv"


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite (real cmake, ninja, compilers, pip and auditwheel)."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (with a complexity limit) and strict mypy over the package, tests and this file."""
    session.install("-e", ".[test,lint]", "nox")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")


@nox.session
def demo(session: nox.Session) -> None:
    """The main job on the bundled example."""
    session.install(".")
    session.run("buildtool", "configure", "--check")
    session.run("buildtool", "build", *session.posargs)


@nox.session
def schema(session: nox.Session) -> None:
    """Regenerate the committed recipe JSON Schema after a model change."""
    session.install("-e", ".")
    with Path("buildtool/schemas/recipe.schema.json").open("w", encoding="utf-8") as handle:
        session.run("buildtool", "schema", stdout=handle)
