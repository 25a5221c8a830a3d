"""Rendering the plan into CMake: ``LinkPlan`` + templates -> file texts. Pure.

Templates use ``@NAME@`` placeholders (as CMake's ``configure_file`` does) because ``${}`` is
CMake's own syntax. A placeholder without a value, or a value without a placeholder, is a bug in
buildtool and fails loudly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Literal

from buildtool import __version__
from buildtool.cmake.collisions import ClaimedTarget, claimed_targets
from buildtool.fsutil import carries_generated_header
from buildtool.plan import (
    ExecutablePlan,
    LibraryPlan,
    LinkPlan,
    ObjectPlan,
    PluginPlan,
    TargetSettings,
)
from buildtool.recipe.values import cmake_version

_PLACEHOLDER = re.compile(r"@([A-Z_]+)@")

CMAKELISTS = "CMakeLists.txt"
HELPERS = "cmake/buildtool/buildtool.cmake"

CMakeMode = Literal["generated", "included"]
"""``generated``: buildtool owns the root CMakeLists.txt; ``included``: the project's own
CMakeLists.txt includes the generated targets file."""


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


def _keywords(pairs: Iterable[tuple[str, Sequence[str]]]) -> str:
    """``KEYWORD`` lines with their arguments, only for keywords that have any (so an empty
    one-value keyword never reaches CMake: policy CMP0174 warns about those)."""
    return "".join(f"\n  {keyword}{_cmake_list(values)}" for keyword, values in pairs if values)


def _settings(settings: TargetSettings, externals: Sequence[str] = ()) -> str:
    return _keywords(
        (
            ("DEFINITIONS", settings.definitions),
            ("PRIVATE_DEFINITIONS", settings.private_definitions),
            ("INCLUDE_DIRS", settings.include_dirs),
            ("COMPILE_OPTIONS", settings.compile_options),
            ("LINK_OPTIONS", settings.link_options),
            ("EXTERNALS", externals),
        )
    )


def _guard(requires_on: Iterable[str], body: str) -> str:
    """``body`` inside ``if(A AND B)`` when it builds only with those options ON."""
    conditions = list(requires_on)
    if not conditions:
        return body
    indented = "".join(f"  {line}\n" if line else "\n" for line in body.splitlines())
    return f"if({' AND '.join(conditions)})\n{indented}endif()\n"


def _targets(plan: LinkPlan, names: Iterable[str]) -> list[str]:
    """Recipe names of libraries and externals -> their CMake targets."""
    by_name = {lib.name: lib.target for lib in plan.libraries}
    by_name.update({f"external:{ext.name}": ext.target for ext in plan.externals})
    return [by_name[name] for name in names]


def _external_targets(plan: LinkPlan, names: Iterable[str]) -> list[str]:
    return _targets(plan, (f"external:{name}" for name in names))


def _render_library(templates: Mapping[str, str], plan: LinkPlan, lib: LibraryPlan) -> str:
    body = fill(
        templates["library.cmake.in"],
        {
            "TARGET": lib.target,
            "NAME": lib.name,
            "OUTPUT_NAME": lib.output_name,
            "VISIBILITY": lib.visibility,
            "EXPORT_MACRO": lib.export_macro,
            "SOURCES": _cmake_list(lib.sources),
            "LINKS": _cmake_list(_targets(plan, lib.links)),
            "OBJECTS": _cmake_list(plan.object(name).target for name in lib.objects),
            "INCLUDE_DIRS": _cmake_list(lib.include_dirs),
            "SETTINGS": _settings(lib.settings, _external_targets(plan, lib.externals))
            + _plugin_dir(plan, lib),
        },
    )
    return _guard(lib.requires_on, body)


def _plugin_dir(plan: LinkPlan, lib: LibraryPlan) -> str:
    """A host's plugin folder relative to its own, for its sources; nothing for a library that
    hosts no plugins."""
    if not plan.plugins_of(lib.name):
        return ""
    return _keywords(
        (("PLUGIN_DIR_MACRO", (lib.plugin_dir_macro,)), ("PLUGIN_DIR", (lib.plugin_dir,)))
    )


def _render_plugin(templates: Mapping[str, str], plan: LinkPlan, plugin: PluginPlan) -> str:
    body = fill(
        templates["plugin.cmake.in"],
        {
            "TARGET": plugin.target,
            "NAME": plugin.name,
            "HOST": plan.library(plugin.host).target,
            "OUTPUT_NAME": plugin.output_name,
            "FOLDER": plugin.folder,
            "ORIGIN_SUFFIX": plugin.origin_suffix,
            "VISIBILITY": plugin.visibility,
            "SOURCES": _cmake_list(plugin.sources),
            "LINKS": _cmake_list(_targets(plan, plugin.links)),
            "OBJECTS": _cmake_list(plan.object(name).target for name in plugin.objects),
            "SETTINGS": _settings(plugin.settings, _external_targets(plan, plugin.externals)),
        },
    )
    return _guard(plugin.requires_on, body)


def _render_object(templates: Mapping[str, str], plan: LinkPlan, obj: ObjectPlan) -> str:
    body = fill(
        templates["object.cmake.in"],
        {
            "TARGET": obj.target,
            "OWNER": plan.owner_target(obj.owner),
            "SOURCES": _cmake_list(obj.sources),
            "SETTINGS": _settings(obj.settings, _external_targets(plan, obj.settings.externals)),
        },
    )
    if obj.build_info:
        body += f"bt_build_info({obj.target} PREFIX {plan.project.env_prefix})\n"
    return _guard(obj.requires_on, body)


def _render_executable(templates: Mapping[str, str], plan: LinkPlan, exe: ExecutablePlan) -> str:
    body = fill(
        templates["executable.cmake.in"],
        {
            "TARGET": exe.target,
            "NAME": exe.name,
            "KIND": "TEST" if exe.is_test else "EXECUTABLE",
            "SOURCES": _cmake_list(exe.sources),
            "LINKS": _cmake_list(_targets(plan, exe.links)),
            "NO_AS_NEEDED": _cmake_list(_targets(plan, exe.no_as_needed)),
            "ARGS": _cmake_list(exe.args),
            "SETTINGS": _settings(exe.settings, _external_targets(plan, exe.settings.externals)),
        },
    )
    return _guard(exe.requires_on, body)


def _render_plugins(templates: Mapping[str, str], plan: LinkPlan) -> str:
    if not plan.plugins:
        return ""
    parts = "".join(_render_plugin(templates, plan, plugin) for plugin in plan.plugins)
    return f"# Plugins, opened by their host at run time from its plugin folder.\n{parts}"


def _render_extensions(templates: Mapping[str, str], plan: LinkPlan) -> str:
    if not plan.extensions:
        return ""
    parts = [
        "# CPython extension modules of the package.\n",
        "find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)\n",
    ]
    if any(module.binding == "pybind11" for module in plan.extensions):
        parts.append("bt_find_pybind11()\n")
    for module in plan.extensions:
        body = fill(
            templates["extension.cmake.in"],
            {
                "TARGET": module.target,
                "NAME": module.name,
                "BINDING": module.binding,
                "COMPONENT": module.component,
                "SOURCES": _cmake_list(module.sources),
                "LINKS": _cmake_list(_targets(plan, module.links)),
                "SETTINGS": _settings(
                    module.settings, _external_targets(plan, module.settings.externals)
                ),
            },
        )
        parts.append(_guard(module.requires_on, body))
    return "".join(parts) + "\n"


def _render_options(plan: LinkPlan) -> str:
    """The recipe's options, then one build switch per optional library."""
    options = "".join(
        f'option({option.name} "{option.help or f"{option.name} (declared in the recipe)"}" '
        f"{'ON' if option.default else 'OFF'})\n"
        for option in plan.options
    )
    return options + "".join(
        f"option({lib.build_switch} \"Build the optional library '{lib.name}' "
        f'(lib{lib.output_name})" ON)\n'
        for lib in plan.libraries
        if lib.build_switch
    )


_PKG_CONFIG_OPERATOR = re.compile(r"\s*(>=|<=|=|<|>)\s*")


def pkg_config_spec(spec: str) -> str:
    """``zlib >= 1.2`` -> ``zlib>=1.2``: FindPkgConfig's module spec takes no spaces."""
    return _PKG_CONFIG_OPERATOR.sub(r"\1", spec.strip())


def _render_externals(plan: LinkPlan) -> str:
    parts = []
    for ext in plan.externals:
        find_package = (ext.find_package,) if ext.find_package else ()
        settings = _keywords(
            (
                ("FIND_PACKAGE", find_package),
                ("VERSION", (ext.version,) if ext.version and find_package else ()),
                ("COMPONENTS", ext.components if find_package else ()),
                ("PKG_CONFIG", (pkg_config_spec(ext.pkg_config),) if ext.pkg_config else ()),
                ("LINK", ext.link),
            )
        )
        body = f"bt_external({ext.target}{settings})\n"
        parts.append(_guard((ext.when,) if ext.when else (), body))
    return "".join(parts)


def _render_claims(plan: LinkPlan) -> str:
    """Included mode: every target name claimed before any target exists, each under the
    options it is created with (``bt_claim_targets`` in ``buildtool.cmake``)."""
    groups: dict[tuple[str, ...], list[ClaimedTarget]] = {}
    for claim in claimed_targets(plan):
        groups.setdefault(claim.requires_on, []).append(claim)
    calls = "".join(
        _guard(
            requires_on,
            "bt_claim_targets("
            + "".join(f"\n  {claim.target} {claim.key}" for claim in claims)
            + ")\n",
        )
        for requires_on, claims in groups.items()
    )
    return (
        "# The targets below, with the recipe keys that make them: the project's own targets\n"
        "# must have other names.\n"
        f'{calls}bt_refuse_taken_targets("{plan.recipe_source}")\n\n'
    )


def render_targets(plan: LinkPlan, templates: Mapping[str, str], mode: CMakeMode) -> str:
    """The targets of the split: the body both modes share (included mode first claims their
    names)."""
    project = plan.project
    python_package = ""
    if project.python_package_dir:
        python_package = f'bt_python_package("{project.python_package_dir}")\n'
    return fill(
        templates["targets-body.cmake.in"],
        {
            "PACKAGE": project.package,
            "NAMESPACE": project.name,
            "ENV_PREFIX": project.env_prefix,
            "VERSION": project.version,
            "CXX_STANDARD": str(project.cxx_standard),
            "C_STANDARD": str(project.c_standard),
            "OPTIONS": _render_options(plan),
            "CLAIMS": _render_claims(plan) if mode == "included" else "",
            "CONFIGURED_HEADERS": _render_configured_headers(plan),
            "EXTERNALS": _render_externals(plan),
            "OBJECTS": "".join(_render_object(templates, plan, obj) for obj in plan.objects),
            "LIBRARIES": "".join(_render_library(templates, plan, lib) for lib in plan.libraries),
            "PLUGINS": _render_plugins(templates, plan),
            "EXECUTABLES": "".join(
                _render_executable(templates, plan, exe) for exe in plan.executables
            ),
            "EXTENSIONS": _render_extensions(templates, plan),
            "PYTHON_PACKAGE": python_package,
            "HEADERS": _render_headers(plan),
        },
    )


def _render_configured_headers(plan: LinkPlan) -> str:
    if not plan.configured_headers:
        return ""
    lines = "".join(
        f'bt_configure_header("{template}" "{path}")\n'
        for path, template in plan.configured_headers
    )
    return f"# Headers written from templates ([configured-headers]).\n{lines}"


def package_config_path(plan: LinkPlan) -> str:
    """Root-relative path of the generated CMake package config (``cmake/buildtool/...``)."""
    return f"cmake/buildtool/{plan.project.name}Config.cmake"


def _render_headers(plan: LinkPlan) -> str:
    headers = plan.project.headers
    if not headers:
        return ""
    return (
        "# Public headers and the CMake package config "
        f"(find_package({plan.project.name} CONFIG)).\n"
        f"bt_headers(CONFIG {package_config_path(plan)}\n  DIRS{_cmake_list(headers)})\n"
    )


def render_package_config(plan: LinkPlan, templates: Mapping[str, str]) -> str:
    """``<name>Config.cmake``: imported ``<name>::<library>`` targets for the libraries an
    install holds (an optional library only when it is installed)."""
    project = plan.project
    targets = "".join(
        fill(
            templates["package-config-target.cmake.in"],
            {
                "NAME": project.name,
                "PACKAGE": project.package,
                "LIBRARY": lib.name,
                "FILE": lib.file_name,
                "DEFINITIONS": ";".join(lib.settings.definitions),
                "LINKS": ";".join(f"{project.name}::{name}" for name in lib.links),
            },
        )
        for lib in plan.libraries
    )
    return fill(
        templates["package-config.cmake.in"],
        {
            "BUILDTOOL_VERSION": __version__,
            "RECIPE": plan.recipe_source,
            "NAME": project.name,
            "PACKAGE": project.package,
            "VERSION": project.version,
            "TARGETS": targets,
        },
    )


def _cmake_includes(plan: LinkPlan) -> str:
    if not plan.project.cmake_include:
        return ""
    return "\n# Hand-written CMake (project.cmake-include), after every target exists.\n" + "".join(
        f'include("${{BT_SOURCE_DIR}}/{path}")\n' for path in plan.project.cmake_include
    )


def render_cmakelists(plan: LinkPlan, templates: Mapping[str, str], recipe_digest: str) -> str:
    """The project's top-level CMakeLists.txt (generated mode)."""
    return fill(
        templates["CMakeLists.txt.in"],
        {
            "BUILDTOOL_VERSION": __version__,
            "RECIPE": plan.recipe_source,
            "RECIPE_DIGEST": recipe_digest,
            "PROJECT_NAME": plan.project.package,
            "PROJECT_VERSION": cmake_version(plan.project.version),
            "LANGUAGES": " ".join(plan.languages),
            "TARGETS": render_targets(plan, templates, "generated"),
            "CMAKE_INCLUDES": _cmake_includes(plan),
        },
    )


def render_targets_file(plan: LinkPlan, templates: Mapping[str, str], recipe_digest: str) -> str:
    """``cmake/buildtool/targets.cmake`` (included mode): the project's CMakeLists.txt includes
    it after its own ``project()``."""
    cmake_file = plan.project.cmake_file
    up = "/".join([".."] * (len(PurePosixPath(cmake_file).parts) - 1)) or "."
    return fill(
        templates["targets.cmake.in"],
        {
            "BUILDTOOL_VERSION": __version__,
            "RECIPE": plan.recipe_source,
            "RECIPE_DIGEST": recipe_digest,
            "CMAKE_FILE": cmake_file,
            "UP": up,
            "LANGUAGES": " ".join(plan.languages),
            "TARGETS": render_targets(plan, templates, "included"),
            "CMAKE_INCLUDES": _cmake_includes(plan),
        },
    )


def render_build_files(
    plan: LinkPlan, templates: Mapping[str, str], recipe_digest: str, mode: CMakeMode = "generated"
) -> dict[str, str]:
    """Every generated CMake file, by path relative to the project root."""
    if mode == "included":
        main = {plan.project.cmake_file: render_targets_file(plan, templates, recipe_digest)}
    else:
        main = {CMAKELISTS: render_cmakelists(plan, templates, recipe_digest)}
    files = {**main, HELPERS: templates["buildtool.cmake"]}
    if plan.project.headers:
        files[package_config_path(plan)] = render_package_config(plan, templates)
    return files


def is_generated(text: str) -> bool:
    """Whether a file's text carries buildtool's header (in its first lines)."""
    return carries_generated_header(text)


def includes_targets(cmakelists: str, cmake_file: str) -> bool | None:
    """Whether a hand-written CMakeLists.txt includes ``cmake_file`` after its ``project()``:
    True, False (missing), or None (present but before ``project()``)."""
    code = "\n".join(line.split("#", 1)[0] for line in cmakelists.splitlines())
    variables = (
        "CMAKE_CURRENT_SOURCE_DIR|CMAKE_CURRENT_LIST_DIR|CMAKE_SOURCE_DIR|PROJECT_SOURCE_DIR"
    )
    prefix = r"(\$\{(" + variables + r")\}/)?"
    pattern = r"\binclude\s*\(\s*\"?" + prefix + re.escape(cmake_file) + r"\"?\s*\)"
    found = re.search(pattern, code, re.IGNORECASE)
    if not found:
        return False
    project = re.search(r"\bproject\s*\(", code, re.IGNORECASE)
    return True if project is not None and project.start() < found.start() else None
