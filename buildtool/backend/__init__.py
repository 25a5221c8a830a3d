"""buildtool's PEP 517 build backend: pip, build, uv and cibuildwheel make the split's wheels.

A project names it in its ``pyproject.toml``::

    [build-system]
    requires = ["buildtool-split"]
    build-backend = "buildtool.backend"

scikit-build-core stays the engine: each wheel is one of the recipe's distributions, built by
scikit-build-core's own ``build_wheel`` from the one shared build tree (see
``buildtool.packaging.wheel``), so ``pip wheel .`` after ``buildtool build`` compiles nothing
again, and a second ``pip wheel .`` in a fresh isolated environment neither. Config settings
(``-C`` for pip, build and uv):

``buildtool.distribution``
    ``full`` (the default: the package with every library), ``runtime`` (the runtime wheel),
    ``addon`` (the compiler add-on), or a distribution's own name.
``buildtool.build-dir``
    The shared CMake build tree, relative to the project root (default ``build``). It lives
    outside the front end's isolated environment, so rebuilds are incremental.
``buildtool.recipe``
    The recipe, relative to the project root (default: ``buildtool.toml``, a
    ``[tool.buildtool]`` table in ``pyproject.toml``, or the only ``recipes/*.toml``).

A wheel leaves the backend with ``<package>/lib/`` laid out and verified (verify-linkage); a
failed verification fails the build and prints the report. Repair (auditwheel, delocate) stays
the separate step the ecosystem expects. These hooks import their machinery when called, so the
``get_requires_*`` hooks stay cheap.
"""

from __future__ import annotations

from collections.abc import Mapping

ConfigSettings = Mapping[str, "str | list[str]"] | None


def get_requires_for_build_wheel(config_settings: ConfigSettings = None) -> list[str]:
    """Nothing beyond buildtool's own requirements (scikit-build-core, cmake, ninja), but
    pybind11 when one of the distribution's extension modules uses it."""
    from buildtool.backend.build import requirements

    return requirements(config_settings)


def get_requires_for_build_sdist(config_settings: ConfigSettings = None) -> list[str]:
    del config_settings
    return []


def build_wheel(
    wheel_directory: str,
    config_settings: ConfigSettings = None,
    metadata_directory: str | None = None,
) -> str:
    """Build the chosen distribution's wheel into ``wheel_directory``; return its file name."""
    del metadata_directory  # no prepare_metadata_for_build_wheel hook: nothing to reuse
    from buildtool.backend.build import build_wheel as build

    return build(wheel_directory, config_settings)


def build_sdist(sdist_directory: str, config_settings: ConfigSettings = None) -> str:
    """The project's sdist: its files, its own pyproject.toml (which names this backend) and
    its recipe; every wheel builds from it as from the project."""
    from buildtool.backend.build import build_sdist as build

    return build(sdist_directory, config_settings)
