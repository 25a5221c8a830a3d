"""Adopting buildtool in an existing project, built for real: included mode and the recipe keys
real builds need, each proven on the binaries, the installed headers and package config, and
extension modules. The refusals and the generated text are in tests/test_adoption_rules.py."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import sysconfig
import textwrap
import zlib
from pathlib import Path

import pytest

from buildtool.cmake.run import cmake_executable, ninja_executable
from tests.adoption_project import MINIMAL, write_project
from tests.conftest import CliRunner

# --- a project in included mode, built for real: every new key is proven on the binaries ----

ACME_FILES = {
    "CMakeLists.txt": """\
        cmake_minimum_required(VERSION 3.24)
        project(acme LANGUAGES CXX)  # C comes from the sources: the targets file enables it
        include(cmake/buildtool/targets.cmake)
        # The project extends buildtool's targets by their documented names.
        target_compile_definitions(acme_core PRIVATE ACME_FROM_PROJECT=7)
        add_executable(acme_own own.cc)
        target_link_libraries(acme_own PRIVATE acme::core)
        # CMake's default build RPATH is absolute (the build tree, in /tmp here: BT110)
        set_target_properties(acme_own PROPERTIES
          BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH "$ORIGIN/lib")
        """,
    "buildtool.toml": """\
        [project]
        name = "acme"
        version = "1.4.2"
        headers = ["include"]
        python-package-dir = "python/acme"

        [options.ACME_FAST]
        default = true
        help = "Build the fast kernels"

        [externals.zlib]
        pkg-config = "zlib >= 1.2"

        [externals.threads]
        find-package = "Threads"
        link = ["Threads::Threads"]

        [externals.m]
        find-package = ""
        link = ["m"]

        [libraries.core]
        sources = ["core/*.cc", "core/*.c"]
        objects = ["fast"]
        definitions = ["ACME_PUBLIC_DEF"]
        private-definitions = ["ACME_PRIVATE_DEF=1"]
        compile-options = ["-Wall"]
        link-options = ["-Wl,--defsym=acme_defsym_marker=acme_c"]
        externals = ["zlib", "m"]

        [objects.fast]
        sources = ["fast/*.cc"]
        registers = ["fast.kernel"]
        include-dirs = ["private_inc"]
        definitions = ["FAST_LEVEL=3"]
        when = "ACME_FAST"

        [executables.tool]
        sources = ["tool/*.cc"]
        links = ["core"]
        definitions = ["TOOL_MODE=2"]
        externals = ["threads"]

        [tests.unit]
        sources = ["unit/*.cc"]
        links = ["core"]

        [extensions._native]
        sources = ["ext/native.c"]
        links = ["core"]
        definitions = ["NATIVE_GREETING=7"]

        [extensions._bound]
        sources = ["ext/bound.cc"]
        links = ["core"]
        binding = "pybind11"
        """,
    "ext/bound.cc": """\
        #include <pybind11/pybind11.h>
        #include <string>
        #include "acme/core.h"
        PYBIND11_MODULE(_bound, m) {
          m.def("crc", [](const std::string& text) { return acme_crc(text.c_str()); });
        }
        """,
    "python/acme/__init__.py": """\
        \"\"\"acme: the libraries load with the package (base), the C API through _native.\"\"\"

        from . import base as base
        """,
    "ext/native.c": """\
        #define PY_SSIZE_T_CLEAN
        #include <Python.h>
        #include "acme/core.h"
        static PyObject* version(PyObject* self, PyObject* args) {
          return Py_BuildValue("(si)", acme_version(), NATIVE_GREETING + acme_c());
        }
        static PyMethodDef methods[] = {
            {"version", version, METH_NOARGS, "acme's version"}, {NULL, NULL, 0, NULL}};
        static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};
        PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
        """,
    "include/acme/core.h": """\
        #ifndef ACME_CORE_H
        #define ACME_CORE_H
        #ifdef __cplusplus
        extern "C" {
        #endif
        #define ACME_EXPORT __attribute__((visibility("default")))
        ACME_EXPORT const char* acme_version(void);
        ACME_EXPORT int acme_c(void);
        ACME_EXPORT unsigned long acme_crc(const char* text);
        ACME_EXPORT int acme_from_project(void);
        #ifdef __cplusplus
        }
        #endif
        #endif
        """,
    "core/core.cc": """\
        #include "acme/core.h"
        #include <zlib.h>
        #include <cstring>
        #ifndef ACME_PUBLIC_DEF
        #error "libraries.core.definitions did not reach the library's sources"
        #endif
        #if ACME_PRIVATE_DEF != 1
        #error "libraries.core.private-definitions did not reach the library's sources"
        #endif
        const char* acme_version(void) { return ACME_VERSION; }
        unsigned long acme_crc(const char* text) {
          return crc32(0L, reinterpret_cast<const Bytef*>(text), std::strlen(text));
        }
        int acme_from_project(void) {
        #ifdef ACME_FROM_PROJECT
          return ACME_FROM_PROJECT;
        #else
          return 0;
        #endif
        }
        """,
    "core/helper.c": """\
        #include "acme/core.h"
        #if !defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L
        #error "not compiled as C11"
        #endif
        /* sizeof('a') is sizeof(int) in C and 1 in C++. */
        int acme_c(void) { return (int)sizeof('a'); }
        """,
    "private_inc/fast_impl.h": "#define FAST_IMPL_BONUS 10\n",
    "fast/fast.cc": """\
        #include "fast_impl.h"
        #include "acme/core.h"
        #ifndef FAST_LEVEL
        #error "objects.fast.definitions did not reach the object library"
        #endif
        #ifndef ACME_PUBLIC_DEF
        #error "the owner's definitions did not reach its object library"
        #endif
        extern "C" ACME_EXPORT const char* acme_fast_name(void) { return "fast.kernel"; }
        extern "C" ACME_EXPORT int acme_fast_level(void) { return FAST_LEVEL + FAST_IMPL_BONUS; }
        """,
    "tool/tool.cc": """\
        #include <cstdio>
        #include <cstring>
        #include <thread>
        #include "acme/core.h"
        #ifndef ACME_PUBLIC_DEF
        #error "a library's PUBLIC definitions did not reach what links it"
        #endif
        #ifdef ACME_PRIVATE_DEF
        #error "a library's private definitions leaked to what links it"
        #endif
        int main() {
          int c = 0;
          std::thread worker([&] { c = acme_c(); });
          worker.join();
          std::printf("macro=%s lib=%s mode=%d c=%d crc=%lu project=%d\\n", ACME_VERSION,
                      acme_version(), TOOL_MODE, c, acme_crc("acme"), acme_from_project());
          return std::strcmp(ACME_VERSION, acme_version()) == 0 ? 0 : 1;
        }
        """,
    "unit/unit.cc": """\
        #include "acme/core.h"
        int main() { return acme_c() == sizeof(int) && acme_from_project() == 7 ? 0 : 1; }
        """,
    "own.cc": """\
        #include <cstdio>
        #include "acme/core.h"
        int main() { std::printf("own %s\\n", acme_version()); return 0; }
        """,
}


def write_acme(root: Path) -> Path:
    for relative, text in ACME_FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root / "buildtool.toml"


def buildtool(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildtool", *map(str, argv)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@dataclasses.dataclass(frozen=True)
class AcmeBuild:
    root: Path
    build_on: Path
    build_off: Path
    log_on: str


@pytest.fixture(scope="session")
def acme(tmp_path_factory: pytest.TempPathFactory) -> AcmeBuild:
    root = tmp_path_factory.mktemp("acme")
    recipe = write_acme(root)
    on = buildtool("build", "--recipe", recipe, "--build-dir", root / "build", cwd=root)
    assert on.returncode == 0, on.stderr
    off = buildtool(
        "build",
        "--recipe",
        recipe,
        "--build-dir",
        root / "build-off",
        "-D",
        "ACME_FAST=OFF",
        cwd=root,
    )
    assert off.returncode == 0, off.stderr
    return AcmeBuild(root, root / "build", root / "build-off", on.stderr)


def dynamic_symbols(path: Path) -> set[str]:
    out = subprocess.run(
        ["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def needed(path: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True)
    return [
        line.split("[", 1)[1].rstrip("]") for line in out.stdout.splitlines() if "(NEEDED)" in line
    ]


@pytest.mark.integration
def test_included_mode_keeps_the_projects_cmakelists_and_generates_the_targets(
    acme: AcmeBuild,
) -> None:
    cmakelists = (acme.root / "CMakeLists.txt").read_text()
    assert cmakelists == textwrap.dedent(ACME_FILES["CMakeLists.txt"])
    targets = (acme.root / "cmake" / "buildtool" / "targets.cmake").read_text()
    assert targets.startswith("# Generated by buildtool ")
    assert "bt_library(acme_core\n  LIBRARY core\n" in targets
    assert "enable_language(C CXX)" in targets
    assert "CMP0174" not in acme.log_on, "an empty find-package must not warn"
    assert "CMake Warning" not in acme.log_on


@pytest.mark.integration
def test_definitions_c_sources_version_and_the_projects_own_cmake_reach_the_binaries(
    acme: AcmeBuild,
) -> None:
    # Every #error above guards a key: the build succeeding proves definitions (public, private,
    # an object library's), the object library's include-dirs and the C standard.
    tool = subprocess.run(
        [acme.build_on / "bin" / "tool"], capture_output=True, text=True, check=False
    )
    assert tool.returncode == 0, tool.stderr
    crc = zlib.crc32(b"acme")
    assert tool.stdout == f"macro=1.4.2 lib=1.4.2 mode=2 c=4 crc={crc} project=7\n"
    # The project's own target keeps CMake's defaults (its folder, its build RUNPATH).
    own_path = acme.build_on / "acme_own"
    own = subprocess.run([own_path], capture_output=True, text=True, check=False)
    assert own.stdout == "own 1.4.2\n", own.stderr
    ctest_exe = cmake_executable().with_name("ctest")
    ctest = subprocess.run(
        [ctest_exe, "--test-dir", acme.build_on], capture_output=True, check=False
    )
    assert ctest.returncode == 0


@pytest.mark.integration
def test_link_option_and_pkg_config_external_are_in_the_elf(acme: AcmeBuild) -> None:
    core = acme.build_on / "lib" / "libacme_core.so"
    assert "acme_defsym_marker" in dynamic_symbols(core)
    assert "libz.so.1" in needed(core)
    assert "acme_defsym_marker" not in dynamic_symbols(acme.build_on / "bin" / "tool")


@pytest.mark.integration
def test_an_option_switches_the_object_library_and_the_policy_follows(
    acme: AcmeBuild, run_cli: CliRunner
) -> None:
    assert "acme_fast_level" in dynamic_symbols(acme.build_on / "lib" / "libacme_core.so")
    assert "acme_fast_level" not in dynamic_symbols(acme.build_off / "lib" / "libacme_core.so")
    recipe = str(acme.root / "buildtool.toml")
    for build in (acme.build_on, acme.build_off):
        result = run_cli("verify-linkage", str(build), "--recipe", recipe)
        assert result.exit_code == 0, result.stdout
    # Without the build's option values, the switched-off registration is expected and missing.
    from buildtool.linkage.verify import verify_paths
    from buildtool.recipe.load import load_recipe
    from buildtool.verification import policy_for_recipe

    loaded = load_recipe(acme.root / "buildtool.toml")
    stale = verify_paths([acme.build_off], policy_for_recipe(loaded, {"ACME_FAST": True}))
    assert [(f.check_id, f.message) for f in stale.findings] == [
        ("BT105", "registration 'fast.kernel' is not in this library")
    ]


@pytest.mark.integration
def test_cmake_include_runs_after_the_targets_exist_in_generated_mode(tmp_path: Path) -> None:
    recipe = write_project(
        tmp_path,
        MINIMAL.replace("[project]\n", '[project]\ncmake-include = ["cmake/extra.cmake"]\n')
        + '[executables.probe]\nsources = ["probe.cc"]\nlinks = ["core"]\n',
    )
    (tmp_path / "cmake").mkdir()
    (tmp_path / "cmake" / "extra.cmake").write_text(
        "target_compile_definitions(acme_probe PRIVATE FROM_INCLUDE=5)\n"
        "target_link_libraries(acme_probe PRIVATE acme::core)\n"
    )
    (tmp_path / "probe.cc").write_text(
        "#ifndef FROM_INCLUDE\n#error cmake-include did not run\n#endif\n"
        "int main() { return FROM_INCLUDE - 5; }\n"
    )
    built = buildtool("build", "--recipe", recipe, "--build-dir", tmp_path / "build", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "CMakeLists.txt").read_text().startswith("# Generated by buildtool ")
    assert subprocess.run([tmp_path / "build" / "bin" / "probe"], check=False).returncode == 0


DOWNSTREAM_CMAKELISTS = """\
cmake_minimum_required(VERSION 3.24)
project(downstream LANGUAGES CXX)
find_package(acme CONFIG REQUIRED)
add_executable(down down.cc)
target_link_libraries(down PRIVATE acme::core)
"""

DOWNSTREAM_SOURCE = """\
#include <cstdio>
#include "acme/core.h"
#ifndef ACME_PUBLIC_DEF
#error "the package config did not carry the library's public definitions"
#endif
int main() { std::printf("downstream %s %d\\n", acme_version(), acme_c()); return 0; }
"""


def build_downstream(tmp_path: Path, prefix: Path) -> Path:
    """Configure and build the downstream project against ``prefix``; return its build folder."""
    downstream = tmp_path / "downstream"
    downstream.mkdir()
    (downstream / "CMakeLists.txt").write_text(DOWNSTREAM_CMAKELISTS)
    (downstream / "down.cc").write_text(DOWNSTREAM_SOURCE)
    build = tmp_path / "down-build"
    configure: list[str | Path] = [cmake_executable(), "-S", downstream, "-B", build, "-G", "Ninja"]
    configure += [f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}", f"-DCMAKE_PREFIX_PATH={prefix}"]
    subprocess.run(configure, check=True, capture_output=True)
    subprocess.run([ninja_executable(), "-C", build], check=True, capture_output=True)
    return build


@pytest.mark.integration
def test_installed_headers_and_package_config_serve_a_downstream_project(
    acme: AcmeBuild, tmp_path: Path
) -> None:
    cmake = cmake_executable()
    prefix = tmp_path / "prefix"
    subprocess.run(
        [cmake, "--install", acme.build_on, "--prefix", prefix], check=True, capture_output=True
    )
    assert (prefix / "include" / "acme" / "core.h").is_file()
    assert (prefix / "include" / "acme_core_export.h").is_file()
    config = prefix / "lib" / "cmake" / "acme" / "acmeConfig.cmake"
    assert config.read_text().startswith("# Generated by buildtool ")
    build = build_downstream(tmp_path, prefix)
    down = subprocess.run([build / "down"], capture_output=True, text=True, check=True)
    assert down.stdout == "downstream 1.4.2 4\n"
    assert "libacme_core.so" in needed(build / "down")


LOAD_NATIVE = """
import importlib.util, sys
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
print(load("acme._native", sys.argv[1]).version())
print(load("acme._bound", sys.argv[2]).crc("acme"))
"""


def runpath(path: Path) -> str:
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True)
    line = next(line for line in out.stdout.splitlines() if "(RUNPATH)" in line)
    return line.split("[", 1)[1].rstrip("]")


@pytest.mark.integration
def test_extension_module_is_built_for_this_interpreter_and_calls_the_library(
    acme: AcmeBuild,
) -> None:
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    module = acme.build_on / "python" / "acme" / f"_native{suffix}"
    assert runpath(module) == "$ORIGIN/../../lib"
    assert "libacme_core.so" in needed(module)
    bound = module.with_name(f"_bound{suffix}")
    assert runpath(bound) == "$ORIGIN/../../lib"
    loaded = subprocess.run(
        [sys.executable, "-c", LOAD_NATIVE, module, bound],
        capture_output=True,
        text=True,
        check=False,
    )
    assert loaded.stdout == f"('1.4.2', 11)\n{zlib.crc32(b'acme')}\n", loaded.stderr


USE_THE_WHEEL = """
import acme
from acme import _bound, _native, libinfo
print(_native.version(), _bound.crc("acme"))
print([str(path.relative_to(libinfo.PACKAGE_DIR)) for path in libinfo.include_paths()])
print(libinfo.cmake_dir().relative_to(libinfo.PACKAGE_DIR))
"""


@pytest.mark.wheel
def test_wheel_with_an_extension_is_tagged_for_the_interpreter_and_serves_downstream(
    acme: AcmeBuild, tmp_path: Path
) -> None:
    out = tmp_path / "dist"
    built = buildtool(
        "wheel",
        "--recipe",
        acme.root / "buildtool.toml",
        "--out-dir",
        out,
        cwd=acme.root,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = out.glob("*.whl")
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert wheel.name.startswith(f"acme-1.4.2-{tag}-{tag}-"), wheel.name
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site, wheel],
        check=True,
        capture_output=True,
    )
    module = site / "acme" / f"_native{sysconfig.get_config_var('EXT_SUFFIX')}"
    assert runpath(module) == "$ORIGIN/lib"
    used = subprocess.run(
        [sys.executable, "-c", USE_THE_WHEEL],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(site)},
        cwd=tmp_path,
    )
    crc = zlib.crc32(b"acme")
    assert used.stdout == f"('1.4.2', 11) {crc}\n['include']\nlib/cmake/acme\n", used.stderr
    build = build_downstream(tmp_path, site / "acme")
    down = subprocess.run([build / "down"], capture_output=True, text=True, check=True)
    assert down.stdout == "downstream 1.4.2 4\n"


@pytest.mark.integration
def test_a_project_on_old_policies_still_gets_the_targets_policies(tmp_path: Path) -> None:
    # The targets file sets CMake 3.24's policies in its own scope: without that, an old
    # cmake_minimum_required stops check_pie_supported (CMP0083 unset) and builds no PIE.
    old = "cmake_minimum_required(VERSION 3.5)\nproject(acme LANGUAGES C CXX)\n"
    recipe = write_project(
        tmp_path,
        MINIMAL + '[executables.probe]\nsources = ["probe.cc"]\nlinks = ["core"]\n',
        old + "include(cmake/buildtool/targets.cmake)\nadd_executable(own probe.cc)\n",
    )
    (tmp_path / "probe.cc").write_text("int main() { return 0; }\n")
    built = buildtool("build", "--recipe", recipe, "--build-dir", tmp_path / "build", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert "CMake Error" not in built.stderr
    header = subprocess.run(
        ["readelf", "-h", tmp_path / "build" / "bin" / "probe"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "DYN (Position-Independent Executable file)" in header
    cache = (tmp_path / "build" / "CMakeCache.txt").read_text()
    assert "CMAKE_POLICY_DEFAULT" not in cache, "the project's own policies are left as they are"
