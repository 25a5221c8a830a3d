"""Rendering the plan into CMake: ``LinkPlan`` + templates -> file texts. Pure.

Templates use ``@NAME@`` placeholders (as CMake's ``configure_file`` does) because ``${}`` is
CMake's own syntax. A placeholder without a value, or a value without a placeholder, is a bug in
buildtool and fails loudly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from buildtool import __version__
from buildtool.plan import ExecutablePlan, LibraryPlan, LinkPlan, ObjectPlan
from buildtool.recipe.values import cmake_version

_PLACEHOLDER = re.compile(r"@([A-Z_]+)@")

CMAKELISTS = "CMakeLists.txt"
HELPERS = "cmake/buildtool/buildtool.cmake"


class TemplateError(Exception):
    """A template and the values given to it disagree (a buildtool bug, not a user error)."""


def fill(template: str, values: Mapping[str, str]) -> str:
    """Replace every ``@NAME@``; every name must have a value and every value must be used."""
    used: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise TemplateError(f"no value for @{name}@")
        used.add(name)
        return values[name]

    text = _PLACEHOLDER.sub(replace, template)
    unused = set(values) - used
    if unused:
        raise TemplateError(f"values without a placeholder: {sorted(unused)}")
    return text


def _cmake_list(items: Iterable[str]) -> str:
    """Arguments one per line after a keyword; quoted so spaces survive."""
    return "".join(f'\n    "{item}"' if " " in item else f"\n    {item}" for item in items)


def _guard(templates: Mapping[str, str], options: Iterable[str], body: str) -> str:
    conditions = list(options)
    if not conditions:
        return body
    indented = "".join(f"  {line}\n" if line else "\n" for line in body.splitlines())
    return fill(
        templates["guard.cmake.in"], {"CONDITION": " AND ".join(conditions), "BODY": indented}
    )


def _render_library(templates: Mapping[str, str], lib: LibraryPlan) -> str:
    body = fill(
        templates["library.cmake.in"],
        {
            "NAME": lib.name,
            "OUTPUT_NAME": lib.output_name,
            "EXPORT_MACRO": lib.export_macro,
            "SOURCES": _cmake_list(lib.sources),
            "LINKS": _cmake_list(lib.links),
            "OBJECTS": _cmake_list(lib.objects),
            "EXTERNALS": _cmake_list(lib.externals),
            "INCLUDE_DIRS": _cmake_list(lib.include_dirs),
        },
    )
    return _guard(templates, lib.requires_options, body)


def _render_object(templates: Mapping[str, str], plan: LinkPlan, obj: ObjectPlan) -> str:
    body = fill(
        templates["object.cmake.in"],
        {"NAME": obj.name, "OWNER": obj.owner, "SOURCES": _cmake_list(obj.sources)},
    )
    if obj.build_info:
        body += fill(
            templates["build-info.cmake.in"],
            {
                "NAME": obj.name,
                "ENV_PREFIX": plan.project.env_prefix,
                "PROJECT_VERSION": plan.project.version,
            },
        )
    return _guard(templates, plan.library(obj.owner).requires_options, body)


def _render_executable(templates: Mapping[str, str], exe: ExecutablePlan) -> str:
    body = fill(
        templates["executable.cmake.in"],
        {
            "NAME": exe.name,
            "KIND": "TEST" if exe.is_test else "EXECUTABLE",
            "SOURCES": _cmake_list(exe.sources),
            "LINKS": _cmake_list(exe.links),
            "NO_AS_NEEDED": _cmake_list(exe.no_as_needed),
            "ARGS": _cmake_list(exe.args),
        },
    )
    return _guard(templates, exe.requires_options, body)


def _render_options(templates: Mapping[str, str], plan: LinkPlan) -> str:
    return "".join(
        fill(
            templates["option.cmake.in"],
            {"OPTION": lib.option, "LIBRARY": lib.name, "OUTPUT_NAME": lib.output_name},
        )
        for lib in plan.libraries
        if lib.option
    )


def _render_externals(templates: Mapping[str, str], plan: LinkPlan) -> str:
    return "".join(
        fill(
            templates["external.cmake.in"],
            {"NAME": ext.name, "FIND_PACKAGE": ext.find_package, "LINK": _cmake_list(ext.link)},
        )
        for ext in plan.externals
    )


def render_cmakelists(plan: LinkPlan, templates: Mapping[str, str], recipe_digest: str) -> str:
    """The project's top-level CMakeLists.txt."""
    project = plan.project
    python_package = ""
    if project.python_package_dir:
        python_package = fill(
            templates["python-package.cmake.in"],
            {"PYTHON_PACKAGE_DIR": project.python_package_dir},
        )
    return fill(
        templates["CMakeLists.txt.in"],
        {
            "BUILDTOOL_VERSION": __version__,
            "RECIPE": plan.recipe_source,
            "RECIPE_DIGEST": recipe_digest,
            "PROJECT_NAME": project.package,
            "PROJECT_VERSION": cmake_version(project.version),
            "CXX_STANDARD": str(project.cxx_standard),
            "PACKAGE": project.package,
            "ENV_PREFIX": project.env_prefix,
            "OPTIONS": _render_options(templates, plan),
            "EXTERNALS": _render_externals(templates, plan),
            "OBJECTS": "".join(_render_object(templates, plan, obj) for obj in plan.objects),
            "LIBRARIES": "".join(_render_library(templates, lib) for lib in plan.libraries),
            "EXECUTABLES": "".join(_render_executable(templates, exe) for exe in plan.executables),
            "PYTHON_PACKAGE": python_package,
        },
    )


def render_build_files(
    plan: LinkPlan, templates: Mapping[str, str], recipe_digest: str
) -> dict[str, str]:
    """Every generated CMake file, by path relative to the project root."""
    return {
        CMAKELISTS: render_cmakelists(plan, templates, recipe_digest),
        HELPERS: templates["buildtool.cmake"],
    }
