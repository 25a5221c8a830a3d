"""The recipe model: frozen dataclasses, one docstring per field.

The docstrings are read back (``buildtool.recipe.schema``) to produce the committed JSON Schema,
so they are the reference documentation of every key. TOML keys are the field names with ``-``
for ``_``.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

LoadMode = Literal["global", "local"]
LauncherName = Literal["none", "ccache", "sccache", "distcc"]


@dataclasses.dataclass(frozen=True)
class ProjectSettings:
    """The ``[project]`` table: names shared by generation, packaging and the loader."""

    name: str
    """Distribution base name: ``demo`` gives the wheels ``demo``, ``demo-runtime`` and
    ``demo-compiler``."""

    package: str = ""
    """Import package; wheels keep the libraries under ``<package>/lib/``. Defaults to ``name``."""

    env_prefix: str = ""
    """Prefix of the loader's variables (``DEMO`` gives ``DEMO_USE_RUNTIME_LIB``). Defaults to
    ``package`` in upper case."""

    version: str = "0.1.0"
    """Version of the project, its wheels and its build-info: any PEP 440 version (``1.2.3``,
    ``0.19.dev0``, ``1.0.0rc1``, ``1.0.post1``, ``1.0.0+cu121``), normalized as ``packaging``
    does; CMake's ``project(VERSION)`` gets its release numbers (``0.19``)."""

    root: str = "."
    """Project root relative to the recipe file: sources and generated files live under it."""

    python_package_dir: str = ""
    """Folder (under ``root``) holding the import package's Python files; empty when there are
    none."""

    cxx_standard: int = 17
    """C++ standard the targets compile with."""

    library_prefix: str = ""
    """Prefix of library file names: ``<prefix><library>`` gives ``lib<prefix><library>.so``.
    Defaults to ``<package>_``."""


@dataclasses.dataclass(frozen=True)
class SharedLibrary:
    """A ``[libraries.<name>]`` table: one shared library of the split."""

    sources: tuple[str, ...] = ()
    """Source files or globs (``**`` allowed), relative to the project root. Empty in a recipe that
    only describes binaries built elsewhere (verification policy only)."""

    links: tuple[str, ...] = ()
    """Other libraries of the recipe this one links PUBLIC: whoever links it gets them too."""

    objects: tuple[str, ...] = ()
    """Object libraries this library owns. Each object library has exactly one owner."""

    externals: tuple[str, ...] = ()
    """Externals (``[externals.<name>]``) attached to this library only."""

    registers: tuple[str, ...] = ()
    """Global names this library's own sources register at static initialization."""

    optional: bool = False
    """Deployments work without this library (the compiler). One CMake option per optional
    library; a non-optional library may never link an optional one."""

    load: LoadMode = "global"
    """How the Python loader opens it: ``global`` (RTLD_GLOBAL) or ``local`` (RTLD_LOCAL)."""

    file: str = ""
    """File name of the built library; defaults to ``lib<library-prefix><name>.so``."""

    include_dirs: tuple[str, ...] = ("include",)
    """Public include folders, relative to the project root."""


@dataclasses.dataclass(frozen=True)
class ObjectLibrary:
    """An ``[objects.<name>]`` table: object code linked into exactly one shared library."""

    sources: tuple[str, ...] = ()
    """Source files or globs, relative to the project root."""

    registers: tuple[str, ...] = ()
    """Global names its static initializers register: they must live in exactly one library."""

    build_info: bool = False
    """Compile with the build-info definitions (version, git commit, compiler, build type)."""


@dataclasses.dataclass(frozen=True)
class Executable:
    """An ``[executables.<name>]`` or ``[tests.<name>]`` table."""

    sources: tuple[str, ...] = ()
    """Source files or globs, relative to the project root."""

    links: tuple[str, ...] = ()
    """Libraries of the recipe the executable links."""

    no_as_needed: tuple[str, ...] = ()
    """Linked libraries kept in DT_NEEDED although no symbol of theirs is referenced (their static
    registrations are what the executable needs). Each must also be in ``links``."""

    args: tuple[str, ...] = ()
    """Arguments ctest passes (tests only)."""

    allowed_needed: tuple[str, ...] = ()
    """Verification: the only non-system libraries it may need (file names or globs); empty means
    exactly its ``links`` and what they link."""


@dataclasses.dataclass(frozen=True)
class External:
    """An ``[externals.<name>]`` table: a library outside the recipe (system or prebuilt)."""

    link: tuple[str, ...] = ()
    """Items passed to ``target_link_libraries`` (``dl``, ``Threads::Threads``, a path)."""

    find_package: str = ""
    """CMake package to find first (``Threads``); empty for none."""


@dataclasses.dataclass(frozen=True)
class WheelSettings:
    """The ``[wheel]`` table: how ``buildtool wheel`` packages the split."""

    platform_tag: str = "auto"
    """Platform tag ``auditwheel repair --plat`` pins (``manylinux_2_34_x86_64``); ``auto`` takes
    the most compatible one auditwheel finds."""

    python_requires: str = ">=3.9"
    """``Requires-Python`` of the wheels."""


@dataclasses.dataclass(frozen=True)
class BuildSettings:
    """The ``[build]`` table: how ``configure``, ``build``, ``wheel`` and ``ci`` compile."""

    launcher: LauncherName = "none"
    """Compiler launcher passed as ``CMAKE_C_COMPILER_LAUNCHER``/``CMAKE_CXX_COMPILER_LAUNCHER``:
    ``ccache`` or ``sccache`` (a compile cache), ``distcc`` (compiles on the hosts of
    ``DISTCC_HOSTS``). ``none`` leaves CMake's own choice. ``--launcher`` overrides it."""


@dataclasses.dataclass(frozen=True)
class VerifySettings:
    """The ``[verify]`` table: the linkage policy beyond what the libraries already imply."""

    forbidden_needed: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Per library or executable: NEEDED patterns it must never have
    (``runtime = ["libLLVM*"]``)."""

    removed: tuple[str, ...] = ()
    """Legacy file names that must no longer exist (a stale monolith such as ``libdemo.so``)."""

    size_budget_mb: dict[str, float] = dataclasses.field(default_factory=dict)
    """Per library: largest allowed file size in MB (10**6 bytes)."""

    hardening: bool = False
    """Also check hardening (BT140-BT145): full RELRO with BIND_NOW, a non-executable stack, no
    DT_RPATH, no search path relative to the current directory or in a world-writable folder, no
    text relocations, and PIE executables."""


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A whole recipe: a TOML file, or the ``[tool.buildtool]`` table of a pyproject.toml."""

    project: ProjectSettings
    """Names shared by generation, packaging and the loader."""

    libraries: dict[str, SharedLibrary] = dataclasses.field(default_factory=dict)
    """Shared libraries of the split, by name (``ffi``, ``runtime``, ``compiler``)."""

    objects: dict[str, ObjectLibrary] = dataclasses.field(default_factory=dict)
    """Object libraries, by name; each owned by exactly one shared library."""

    executables: dict[str, Executable] = dataclasses.field(default_factory=dict)
    """Executables, by name (``minrpc``)."""

    tests: dict[str, Executable] = dataclasses.field(default_factory=dict)
    """Test executables run by ctest, by name."""

    externals: dict[str, External] = dataclasses.field(default_factory=dict)
    """Libraries from outside the recipe, by name."""

    build: BuildSettings = dataclasses.field(default_factory=BuildSettings)
    """How the compiles run (a compiler launcher)."""

    wheel: WheelSettings = dataclasses.field(default_factory=WheelSettings)
    """How wheels are built and repaired."""

    verify: VerifySettings = dataclasses.field(default_factory=VerifySettings)
    """Linkage policy for ``buildtool verify-linkage``."""
