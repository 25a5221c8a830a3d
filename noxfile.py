"""Contributor sessions: ``nox -s tests``, ``nox -s lint``, ``nox -s browser``, ``nox -s demo``,
``nox -s schema``, ``nox -s fuzz``, ``nox -s bench``, ``nox -s linearcost``,
``nox -s realprojects``, ``nox -s realwheels``, ``nox -s docs``."""

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
def browser(session: nox.Session) -> None:
    """The HTML report opened in headless chromium (needs Debian's ``chromium`` package)."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "browser", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """``buildtool ci`` on the bundled example; posargs go to it (``-- --launcher ccache``)."""
    session.install(".")
    session.run("buildtool", "ci", *session.posargs)


@nox.session
def schema(session: nox.Session) -> None:
    """Regenerate the committed recipe JSON Schema, docs/recipe.md and docs/checks.md after a
    model change."""
    session.install("-e", ".")
    with Path("buildtool/schemas/recipe.schema.json").open("w", encoding="utf-8") as handle:
        session.run("buildtool", "schema", stdout=handle)
    session.run(
        "python",
        "-c",
        "from buildtool.linkage.checks.catalogue import render_checks_doc as r; "
        "open('docs/checks.md', 'w', encoding='utf-8').write(r())",
    )
    session.run(
        "python",
        "-c",
        "from buildtool.recipe.schema import render_recipe_doc as r; "
        "open('docs/recipe.md', 'w', encoding='utf-8').write(r())",
    )


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site, built strictly into site/ (a broken link, a broken anchor or a page
    missing from the nav fails); ``-- serve`` previews it instead."""
    session.install("-e", ".[docs]")
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", *session.posargs[1:])
    else:
        session.run("mkdocs", "build", "--strict", *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """The long ELF fuzz run: 100k mutated binaries through verify-linkage (needs gcc); rewrites
    tests/fuzz/SUMMARY.md. ``-- --cases N`` for another count, ``--first I --cases 1`` for one."""
    session.install("-e", ".[test]")
    session.run(
        "python", "-m", "tests.fuzz.run_elf_fuzz", "--summary", "tests/fuzz/SUMMARY.md",
        *session.posargs,
    )  # fmt: skip


@nox.session
def bench(session: nox.Session) -> None:
    """verify-linkage on the torch 2.13.0 wheel beside zipfile, auditwheel and readelf (a few
    minutes; downloads the wheel); rewrites benchmarks/README.md. ``-- --runs 7`` for more
    runs, ``-- --work-dir DIR`` to keep the downloads between runs."""
    session.install("-e", ".")
    session.run("python", "benchmarks/verify_torch.py", *session.posargs)


@nox.session
def linearcost(session: nox.Session) -> None:
    """verify-linkage on synthetic inputs at N and 4N (NEEDED entries, symbols, RUNPATH entries,
    files), ratios side by side (needs gcc and patchelf); rewrites its section of
    benchmarks/README.md. ``-- --size N --runs N``."""
    session.install("-e", ".")
    session.run("python", "benchmarks/linear_cost.py", *session.posargs)


@nox.session
def realprojects(session: nox.Session) -> None:
    """check-cmake, init --from-cmake and verify-linkage on third-party CMake projects from PyPI's
    sdists (apache-tvm-ffi): downloads and builds them (a few minutes)."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "realprojects", *session.posargs)


@nox.session
def realwheels(session: nox.Session) -> None:
    """verify-linkage on popular third-party wheels (apache-tvm with apache-tvm-ffi, torch,
    numpy, scipy, pyarrow, grpcio, opencv-python-headless, and the macOS, Windows, aarch64 and
    musllinux wheels of some), each verdict asserted, and defects planted into pyzmq, h5py,
    scikit-learn and apache-tvm (patchelf); the wheels are downloaded
    once into $BUILDTOOL_REALWHEELS_CACHE (default ~/.cache/buildtool/realwheels). The results
    tables are docs/realwheels.md."""
    session.install("-e", ".[test]")
    session.run(
        "pytest", "-p", "no:cacheprovider", "--realwheels", "-m", "realwheels",
        "tests/test_realwheels.py", "tests/test_realwheels_planted.py",
        "tests/test_realwheels_platforms.py", "tests/test_realwheels_verdicts.py",
        *session.posargs,
    )  # fmt: skip
