"""The recipe model: frozen dataclasses, one docstring per field.

The docstrings are read back (``buildtool.recipe.schema``) to produce the committed JSON Schema,
so they are the reference documentation of every key. TOML keys are the field names with ``-``
for ``_``.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Final, Literal, NewType

FreeKey = NewType("FreeKey", str)
"""A table key that is free text (a file name, a header path, a dotted registration name)
rather than a name of letters, digits and ``_``; written quoted in TOML."""

TARGET_NAME: Final = "target-name"
TargetName = Annotated[str, TARGET_NAME]
"""The name of a library, object library, executable or test: letters, digits, ``_``, ``.``,
``+`` and ``-`` (what CMake allows in a target name: ``ggml-base``, ``test-backend-ops``), not
starting with ``.``, ``+`` or ``-``; quoted in TOML when it has more than letters, digits, ``_``
and ``-``. Where a name must be an identifier (an export macro, a build switch), the other
characters become ``_``. Annotated, not a NewType: code indexes these tables with plain
strings."""

LoadMode = Literal["global", "local"]
LauncherName = Literal["none", "ccache", "sccache", "distcc"]
Binding = Literal["c", "pybind11"]
Visibility = Literal["hidden", "default"]


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

    runtime_distribution: str = ""
    """Name of the split's runtime wheel (the package and the required libraries). Defaults to
    ``<name>-runtime``."""

    addon_distribution: str = ""
    """Name of the split's add-on wheel (the optional libraries and the extension modules that
    link them), which requires the runtime wheel of the same version: ``sentencepiece-train``.
    Defaults to ``<name>-compiler``."""

    python_package_dir: str = ""
    """Folder (under ``root``) holding the import package's Python files; empty when there are
    none."""

    cxx_standard: int = 17
    """C++ standard the targets compile with (98, 11, 14, 17, 20, 23 or 26)."""

    c_standard: int = 11
    """C standard the targets' C sources (``.c``) compile with (90, 99, 11, 17 or 23)."""

    library_prefix: str | None = None
    """Prefix of the CMake target names (``<prefix><name>``: ``acme_core``) and of the libraries'
    default file names (``lib<prefix><name>.so``). Not given: ``<package>_``; empty (``""``):
    no prefix, so ``[libraries.core]`` is the target ``core`` building ``libcore.so``."""

    cmake_file: str = "cmake/buildtool/targets.cmake"
    """Where the targets go when the project root has a hand-written ``CMakeLists.txt``
    (*included* mode): that file must call ``include(<cmake-file>)`` after its own
    ``project()``, ``option()`` and ``find_package()`` calls. Unused when buildtool generates
    the root ``CMakeLists.txt`` itself (*generated* mode: no root ``CMakeLists.txt`` yet, or one
    buildtool wrote)."""

    headers: tuple[str, ...] = ()
    """Public header folders (root-relative) to install: into wheels under
    ``<package>/include/``, with a CMake package config at
    ``<package>/lib/cmake/<name>/<name>Config.cmake`` defining the imported targets
    ``<name>::<library>`` of the libraries installed beside it, so a downstream CMake project
    does ``find_package(<name> CONFIG)`` with ``CMAKE_PREFIX_PATH=<site-packages>/<package>``
    (``cmake --install`` gives the same layout under its prefix). The generated ``libinfo``
    offers ``include_paths()`` and ``cmake_dir()``."""

    cmake_include: tuple[str, ...] = ()
    """Hand-written CMake files (root-relative) the generated root ``CMakeLists.txt`` includes
    after every target exists: the escape hatch for what the recipe has no key for
    (``target_compile_definitions(demo_runtime PRIVATE ...)``). Meant for generated mode; in
    included mode the targets file includes them too, though the project's own
    ``CMakeLists.txt`` (after its ``include``) is the natural place."""

    @property
    def target_prefix(self) -> str:
        """``library_prefix`` as it applies: ``<package>_`` when the recipe gives none."""
        return f"{self.package}_" if self.library_prefix is None else self.library_prefix


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
    """File name of the built library; defaults to ``lib<output-name>.so``. A generated build
    makes exactly this file: ``libsentencepiece.so`` sets ``output-name`` to ``sentencepiece``
    (any other form than ``lib<output-name>.so`` is refused there)."""

    output_name: str = ""
    """Base name of the built file (CMake's ``OUTPUT_NAME``): ``sentencepiece`` gives
    ``libsentencepiece.so``, the name the project's users link with ``-lsentencepiece``.
    Defaults to what ``file`` says, else ``<library-prefix><name>``. The CMake target stays
    ``<library-prefix><name>`` whatever the file is called, so in included mode the file can
    keep the name of the project's own target ``sentencepiece`` while the targets differ (a
    target name both define is refused, naming the key)."""

    visibility: Visibility = "hidden"
    """Symbol visibility of its sources and object libraries: ``hidden`` (only what the export
    macro marks is exported; smaller, faster to load) or ``default`` (every symbol is exported,
    as a project that has no export macros needs: its users link against all of them)."""

    include_dirs: tuple[str, ...] = ("include",)
    """Public include folders, relative to the project root."""

    definitions: tuple[str, ...] = ()
    """Compile definitions (``NAME`` or ``NAME=VALUE``), PUBLIC: the library's own sources, its
    object libraries and whoever links it see them."""

    private_definitions: tuple[str, ...] = ()
    """Compile definitions for the library's own sources and object libraries only."""

    compile_options: tuple[str, ...] = ()
    """Compiler flags for its sources and object libraries (``-Wall``), PRIVATE."""

    link_options: tuple[str, ...] = ()
    """Linker flags of the library's link (``-Wl,--defsym=x=y``, ``LINKER:-z,defs``)."""

    when: str = ""
    """Name of an ``[options.<name>]``: the library is built only while that option is ON
    (whatever links it only then, too). Empty: always."""

    plugin_folder: str = "lib"
    """Where this library opens its plugins (``[plugins.<name>]`` with ``host`` naming it) at
    run time: a folder of the install layout, the same relative path in a wheel's
    ``<package>/``, under ``cmake --install``'s prefix and in the build folder (``lib``: beside
    this library; ``lib/backends``; ``bin``: beside the programs, as ggml does). Its sources get
    the folder relative to the library's own (``backends``, ``../bin``, ``.``) as the
    definition ``<TARGET>_PLUGIN_DIR``; the Python loader's ``plugin_folder(name)`` gives the
    folder itself."""


@dataclasses.dataclass(frozen=True)
class PluginLibrary:
    """A ``[plugins.<name>]`` table: a module a library of the split (its host) opens at run
    time (``dlopen``), from the host's ``plugin-folder``: nothing links it, and it has no
    SONAME. It is built as a CMake MODULE library with the RUNPATH that finds the libraries in
    ``lib/`` from that folder (``$ORIGIN/..`` from ``lib/backends``, ``$ORIGIN/../lib`` from
    ``bin``), installed as the CMake install component of its name, and shipped in the wheel
    of its host (the add-on wheel when the host or a library it links is optional), or in a
    split's wheel of its own (``distribution``).
    verify-linkage judges it as its host opens it: everything the host loads is loaded
    already."""

    host: str
    """The library (``[libraries.<name>]``) that opens it."""

    alternatives: str = ""
    """A name shared by plugins of one host of which the host keeps at most one loaded (ggml's
    CPU variants, ``cpu``: the best-scoring one): alternatives may hold the same code and
    register the same names, never being resident together. Empty: resident beside every other
    plugin of its host."""

    sources: tuple[str, ...] = ()
    """Source files or globs (``**`` allowed), relative to the project root. Empty in a recipe
    that only describes binaries built elsewhere (verification policy only)."""

    links: tuple[str, ...] = ()
    """Libraries of the recipe it links (PRIVATE: nothing links a plugin)."""

    objects: tuple[str, ...] = ()
    """Object libraries it owns (each object library has exactly one owner, a library or a
    plugin)."""

    externals: tuple[str, ...] = ()
    """Externals (``[externals.<name>]``) it compiles and links against."""

    registers: tuple[str, ...] = ()
    """Global names it registers in its host's registry when it is opened: no other plugin
    resident beside it (and no library) may register them too; alternatives may."""

    file: str = ""
    """File name of the built plugin; defaults to ``lib<output-name>.so``."""

    output_name: str = ""
    """Base name of the built file (CMake's ``OUTPUT_NAME``); defaults to what ``file`` says,
    else ``<library-prefix><name>``."""

    visibility: Visibility = "hidden"
    """Symbol visibility of its sources: ``hidden`` (only what it marks is exported, which is
    what its host looks up with ``dlsym``) or ``default``."""

    definitions: tuple[str, ...] = ()
    """Compile definitions (``NAME`` or ``NAME=VALUE``) of its sources and object libraries."""

    include_dirs: tuple[str, ...] = ()
    """Include folders of its sources, relative to the project root."""

    compile_options: tuple[str, ...] = ()
    """Compiler flags of its sources (``-mavx2``)."""

    link_options: tuple[str, ...] = ()
    """Linker flags of its link."""

    when: str = ""
    """Name of an ``[options.<name>]``: built only while that option is ON (and while its host
    is built). Empty: always."""

    distribution: str = ""
    """A split's wheel of its own that ships it (``ggmlplug-cuda``): an add-on requiring its
    host's wheel at the same version (the runtime wheel, and the compiler add-on too when the
    host or a library it links is optional), so a heavy backend is installed only where it is
    wanted. Plugins naming one distribution share its wheel. Empty: its host's wheel. The full
    wheel holds every plugin either way."""


@dataclasses.dataclass(frozen=True)
class ObjectLibrary:
    """An ``[objects.<name>]`` table: object code linked into exactly one shared library."""

    sources: tuple[str, ...] = ()
    """Source files or globs, relative to the project root."""

    registers: tuple[str, ...] = ()
    """Global names its static initializers register: they must live in exactly one library."""

    build_info: bool = False
    """Compile with the build-info definitions (version, git commit, compiler, build type)."""

    definitions: tuple[str, ...] = ()
    """Compile definitions (``NAME`` or ``NAME=VALUE``) of its sources."""

    include_dirs: tuple[str, ...] = ()
    """Include folders of its sources, relative to the project root."""

    compile_options: tuple[str, ...] = ()
    """Compiler flags of its sources (``-Wall``)."""

    link_options: tuple[str, ...] = ()
    """Linker flags (``-Wl,--defsym=x=y``); they go on the owner's link."""

    externals: tuple[str, ...] = ()
    """Externals (``[externals.<name>]``) it compiles and links against (the owner links them)."""

    when: str = ""
    """Name of an ``[options.<name>]``: built only while that option is ON; its registrations
    are then expected nowhere. Empty: always."""


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

    definitions: tuple[str, ...] = ()
    """Compile definitions (``NAME`` or ``NAME=VALUE``) of its sources."""

    include_dirs: tuple[str, ...] = ()
    """Include folders of its sources, relative to the project root."""

    compile_options: tuple[str, ...] = ()
    """Compiler flags of its sources (``-Wall``)."""

    link_options: tuple[str, ...] = ()
    """Linker flags (``-Wl,--defsym=x=y``)."""

    externals: tuple[str, ...] = ()
    """Externals (``[externals.<name>]``) it compiles and links against."""

    when: str = ""
    """Name of an ``[options.<name>]``: built only while that option is ON. Empty: always."""


@dataclasses.dataclass(frozen=True)
class Extension:
    """An ``[extensions.<name>]`` table: a CPython extension module ``<package>.<name>``,
    installed beside the package's ``__init__.py`` with RUNPATH ``$ORIGIN/lib`` (the package's
    libraries). Wheels holding one are tagged for the interpreter that built them."""

    sources: tuple[str, ...] = ()
    """Source files or globs, relative to the project root."""

    links: tuple[str, ...] = ()
    """Libraries of the recipe it links: required ones only, unless ``addon`` is set."""

    addon: bool = False
    """Ship it in the split's add-on wheel (``addon-distribution``) rather than with the
    package in the runtime wheel: it may then link optional libraries (and must link one),
    like a binding that wraps a runtime and its trainer. A runtime-only install has no such
    module, so the package imports it inside ``try``/``except ImportError``. The other ways out:
    split the extension (a runtime module and an add-on module), or keep one runtime module and
    reach the optional library through the loader's ``optional_library(name)``."""

    binding: Binding = "c"
    """How it is written: ``c`` (the CPython C API), or ``pybind11`` (its headers, found through
    the ``pybind11`` package of the interpreter that builds, which must have it installed). Built
    with CMake's FindPython3 ``Development.Module`` either way."""

    definitions: tuple[str, ...] = ()
    """Compile definitions (``NAME`` or ``NAME=VALUE``) of its sources."""

    include_dirs: tuple[str, ...] = ()
    """Include folders of its sources, relative to the project root."""

    compile_options: tuple[str, ...] = ()
    """Compiler flags of its sources."""

    link_options: tuple[str, ...] = ()
    """Linker flags of its link."""

    externals: tuple[str, ...] = ()
    """Externals (``[externals.<name>]``) it compiles and links against."""

    when: str = ""
    """Name of an ``[options.<name>]``: built only while that option is ON. Empty: always."""


@dataclasses.dataclass(frozen=True)
class External:
    """An ``[externals.<name>]`` table: a library outside the recipe (system or prebuilt)."""

    link: tuple[str, ...] = ()
    """Items passed to ``target_link_libraries`` (``dl``, ``Threads::Threads``, a path)."""

    find_package: str = ""
    """CMake package to find first (``Threads``); empty for none. Link its imported targets
    with ``link`` (``Threads::Threads``)."""

    version: str = ""
    """Least version of ``find-package`` (``find_package(<pkg> <version> REQUIRED)``)."""

    components: tuple[str, ...] = ()
    """Components of ``find-package`` (``find_package(<pkg> REQUIRED COMPONENTS ...)``)."""

    pkg_config: str = ""
    """A pkg-config module, with an optional version constraint (``zlib >= 1.2``): found with
    CMake's FindPkgConfig and linked as its imported target (flags, include folders and
    libraries). Empty for none."""

    when: str = ""
    """Name of an ``[options.<name>]``: looked for and linked only while that option is ON (the
    targets listing it build without it otherwise). Empty: always."""


@dataclasses.dataclass(frozen=True)
class ConfiguredHeader:
    """A ``[configured-headers."<path>"]`` table: a header CMake's ``configure_file`` writes
    from a template at configure time (``config.h`` from ``config.h.in``), into the build's
    generated include folder, which every library's users have on their include path (and
    wheels with ``project.headers`` install). ``<path>`` is where it lands under that folder
    (``config.h``, ``spm/config.h``): sources include it as ``"config.h"``."""

    template: str
    """The template, relative to the project root. ``@NAME@`` in it becomes the CMake variable
    ``NAME`` (``configure_file(... @ONLY)``): ``@PROJECT_VERSION@`` (the release numbers),
    ``@BT_VERSION@`` (the full version), and every ``[options.<NAME>]`` for
    ``#cmakedefine NAME`` (``#define NAME`` while the option is ON)."""


@dataclasses.dataclass(frozen=True)
class BuildOption:
    """An ``[options.<NAME>]`` table: a CMake ``option()`` the project's build can switch
    (``-D NAME=OFF``); ``when = "NAME"`` ties targets and externals to it."""

    default: bool = False
    """Whether it is ON when nobody sets it."""

    help: str = ""
    """What it switches, shown by ``cmake -LH`` and in the CMake GUI."""


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

    forbidden_needed: dict[TargetName, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Per library or executable: NEEDED patterns it must never have
    (``runtime = ["libLLVM*"]``)."""

    removed: tuple[str, ...] = ()
    """Legacy file names that must no longer exist (a stale monolith such as ``libdemo.so``)."""

    size_budget_mb: dict[TargetName, float] = dataclasses.field(default_factory=dict)
    """Per library: largest allowed file size in MB (10**6 bytes)."""

    max_growth_percent: dict[TargetName, float] = dataclasses.field(default_factory=dict)
    """Per library: largest allowed growth of its file size, in percent, against the report of an
    earlier build (``verify-linkage --baseline previous.json``); more fails the run (BT131).
    ``runtime = 2.0`` lets the runtime grow by 2 %; libraries not listed may grow freely. A
    table, like ``size-budget-mb``, because the libraries of a split differ in what growth
    matters: the runtime every deployment ships, the compiler far less."""

    hardening: bool = False
    """Also check hardening (BT140-BT145): full RELRO with BIND_NOW, a non-executable stack, no
    DT_RPATH, no search path relative to the current directory or in a world-writable folder, no
    text relocations, and PIE executables."""

    host_provided: tuple[str, ...] = ()
    """NEEDED names (globs allowed: ``"libmyvendor_driver.so.*"``) that the machines the binaries
    run on provide and no wheel may ship: a vendor's driver or a library of the deployment's
    base image. Not found, such a NEEDED is a warning (BT108) instead of an error (BT109). The
    platform's own libraries (the wheel tag's manylinux/musllinux policy) and GPU driver
    libraries (``libcuda.so.1``, ...) need no entry."""


@dataclasses.dataclass(frozen=True)
class MigrateSettings:
    """The ``[migrate]`` table: the names a split removed or renamed, which ``buildtool migrate``
    finds (and with ``--fix`` rewrites) in the project's own files. A name matches only as a whole
    name: not inside a longer identifier (``libdemo.so`` is not in ``mylibdemo.so`` or
    ``libdemo_runtime.so``) nor as the tail of a dotted name (``testing.GetShapeElem`` is not in
    ``rpc.testing.GetShapeElem``); a library name ending in ``.so`` also matches its versioned
    sonames (``libdemo.so.0``), and ``lib<stem>.so`` its other platforms' names
    (``libdemo.dylib``, ``demo.dll``, ``libdemo.dll``, a quoted bare ``"libdemo"``)."""

    renamed: dict[FreeKey, str] = dataclasses.field(default_factory=dict)
    """Old name -> the name that replaces it (``"libdemo.so" = "libdemo_compiler.so"``): library
    files, macros, functions, registration names. ``--fix`` rewrites them."""

    removed: dict[FreeKey, str] = dataclasses.field(default_factory=dict)
    """Old name -> advice shown with every use (``"BUILD_DUMMY_LIB" = "link libdemo_runtime.so
    directly"``). Reported only: there is nothing to rewrite them to."""

    renamed_headers: dict[FreeKey, str] = dataclasses.field(default_factory=dict)
    """Old include path -> new include path (``"demo/c_api.h" = "demo/ffi.h"``), both relative to
    an include folder. Matched only in ``#include`` directives and in CMake and Python string
    literals."""

    shims: str = ""
    """Folder (under the project root) where ``buildtool migrate --shims`` writes a forwarding
    header at each old include path; empty when the command line names the folder."""

    exclude: tuple[str, ...] = ()
    """Files (globs relative to the project root, ``**`` allowed) never scanned: a changelog or a
    migration guide that names the old names on purpose."""


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A whole recipe: a TOML file, or the ``[tool.buildtool]`` table of a pyproject.toml."""

    project: ProjectSettings
    """Names shared by generation, packaging and the loader."""

    libraries: dict[TargetName, SharedLibrary] = dataclasses.field(default_factory=dict)
    """Shared libraries of the split, by name (``ffi``, ``runtime``, ``compiler``)."""

    plugins: dict[TargetName, PluginLibrary] = dataclasses.field(default_factory=dict)
    """Modules a library of the split opens at run time, by name (``ggml-cpu-haswell``)."""

    objects: dict[TargetName, ObjectLibrary] = dataclasses.field(default_factory=dict)
    """Object libraries, by name; each owned by exactly one shared library or plugin."""

    executables: dict[TargetName, Executable] = dataclasses.field(default_factory=dict)
    """Executables, by name (``minrpc``)."""

    tests: dict[TargetName, Executable] = dataclasses.field(default_factory=dict)
    """Test executables run by ctest, by name."""

    externals: dict[str, External] = dataclasses.field(default_factory=dict)
    """Libraries from outside the recipe, by name."""

    extensions: dict[str, Extension] = dataclasses.field(default_factory=dict)
    """CPython extension modules of the package, by module name (``_native``)."""

    options: dict[str, BuildOption] = dataclasses.field(default_factory=dict)
    """CMake options of the build, by name (``USE_ZLIB``); see ``when``."""

    configured_headers: dict[FreeKey, ConfiguredHeader] = dataclasses.field(default_factory=dict)
    """Headers written from templates at configure time, by path under the generated include
    folder (``"config.h"``)."""

    build: BuildSettings = dataclasses.field(default_factory=BuildSettings)
    """How the compiles run (a compiler launcher)."""

    wheel: WheelSettings = dataclasses.field(default_factory=WheelSettings)
    """How wheels are built and repaired."""

    verify: VerifySettings = dataclasses.field(default_factory=VerifySettings)
    """Linkage policy for ``buildtool verify-linkage``."""

    migrate: MigrateSettings = dataclasses.field(default_factory=MigrateSettings)
    """Old names for ``buildtool migrate`` to find in the project's files."""
