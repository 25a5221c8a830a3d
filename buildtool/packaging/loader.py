"""The stdlib-only loader rendered into the project's Python package: ``LinkPlan`` -> file texts.

Pure. The templates live in ``cmake-templates/loader/``; their docstrings are the loader's
documentation for the project's users.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath

from buildtool import __version__
from buildtool.cmake.generate import fill
from buildtool.plan import LibraryPlan, LinkPlan

LOADER_TEMPLATES = ("libinfo.py", "base.py")
"""Generated modules, by file name inside the package folder (templates add ``.in``)."""

_LIBRARY_SUFFIXES = (".so", ".dylib", ".dll")


def file_stem(lib: LibraryPlan) -> str:
    """``libdemo_runtime.so`` -> ``libdemo_runtime``; the loader adds the platform's suffix."""
    return _stem(lib.file_name)


def _stem(file_name: str) -> str:
    for suffix in _LIBRARY_SUFFIXES:
        if file_name.endswith(suffix):
            return file_name[: -len(suffix)]
    return file_name


def runtime_library(plan: LinkPlan) -> LibraryPlan:
    """The library whose folder the loader loads everything from: the last required one."""
    required = plan.runtime_libraries
    if not required:
        raise ValueError("a plan without required libraries has no runtime to load")
    return required[-1]


def worktree_levels(python_package_dir: str) -> int:
    """Folders above the package that may be a checkout: up to the project root's parent.

    ``python/demo`` inside ``src/`` gives 3 (``src/python``, ``src``, the checkout), which
    reaches ``build/lib`` both beside the project root and inside it.
    """
    return len(PurePosixPath(python_package_dir).parts) + 1


def _libraries_literal(plan: LinkPlan) -> str:
    rows = (
        f'\n    ("{lib.name}", "{file_stem(lib)}", "{lib.load}", {lib.optional}),'
        for lib in plan.libraries
    )
    return "".join(rows)


def _plugins_literal(plan: LinkPlan) -> str:
    rows = (
        f'\n    ("{plugin.name}", "{_stem(plugin.file_name)}", "{plugin.host}", '
        f'"{plugin.alternatives}"),'
        for plugin in plan.plugins
    )
    return "".join(rows) + ("\n" if plan.plugins else "")


def _plugin_folders(plan: LinkPlan) -> str:
    hosts = dict.fromkeys(plugin.host for plugin in plan.plugins)
    return ", ".join(f'"{host}": "{plan.library(host).plugin_folder}"' for host in hosts)


def render_loader(plan: LinkPlan, templates: Mapping[str, str]) -> dict[str, str]:
    """The loader modules, by path relative to the project root; empty without a package dir."""
    project = plan.project
    if not project.python_package_dir:
        return {}
    values = {
        "BUILDTOOL_VERSION": __version__,
        "RECIPE": plan.recipe_source,
        "PACKAGE": project.package,
        "ENV_PREFIX": project.env_prefix,
        "ADDON_DISTRIBUTION": project.addon_distribution or f"{project.name}-compiler",
        "LIBRARIES": _libraries_literal(plan),
        "RUNTIME": runtime_library(plan).name,
        "PLUGINS": _plugins_literal(plan),
        "PLUGIN_FOLDERS": _plugin_folders(plan),
        "WORKTREE_LEVELS": str(worktree_levels(project.python_package_dir)),
        "NAME": project.name,
        "HEADER_DIRS": "".join(f'"{folder}", ' for folder in project.headers).rstrip(" "),
        "ROOT_LEVELS": str(len(PurePosixPath(project.python_package_dir).parts)),
    }
    folder = PurePosixPath(project.python_package_dir)
    files = {}
    for name in LOADER_TEMPLATES:
        template = templates[f"{name}.in"]
        used = {key: value for key, value in values.items() if f"@{key}@" in template}
        files[str(folder / name)] = fill(template, used)
    return files
