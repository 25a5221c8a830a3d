"""BT117: a library that uses symbols only its loader defines fails when opened alone. Each case
is built with g++ here and opened by the real loader (ctypes with RTLD_NOW, a program run with
LD_BIND_NOW=1, an import in a real interpreter) before verify-linkage judges it."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.builders import check, cxx, ids

pytestmark = pytest.mark.integration

ORIGIN = "-Wl,--enable-new-dtags,-rpath,$ORIGIN"

COMPILER = """
extern "C" int runtime_version();
extern "C" int runtime_hook() __attribute__((weak));  // optional: null when nothing defines it
extern "C" int compiler_version() {
    return runtime_version() + (runtime_hook ? runtime_hook() : 0);
}
"""
RUNTIME = """
extern "C" int runtime_version() { return 1; }
extern "C" int runtime_hook() { return 10; }
"""
RUNTIME_NEEDING_COMPILER = (
    RUNTIME
    + """
extern "C" int compiler_version();
extern "C" int runtime_calls_compiler() { return compiler_version(); }
"""
)
MAIN = """
extern "C" int compiler_version();
int main() { return compiler_version() == 11 ? 0 : 1; }
"""


def open_alone(library: Path) -> subprocess.CompletedProcess[str]:
    """``ctypes.CDLL(library, RTLD_NOW)`` in a fresh interpreter: nothing else loaded first."""
    code = f"import ctypes, os; ctypes.CDLL({str(library)!r}, os.RTLD_NOW)"
    return subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)


def bind_now(program: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LD_BIND_NOW": "1"}
    return subprocess.run([program], check=False, capture_output=True, text=True, env=env)


def test_a_compiler_using_the_runtime_it_does_not_need_is_caught(tmp_path: Path) -> None:
    # the runtime NEEDs the compiler; the compiler uses runtime_version without NEEDing it
    cxx(tmp_path, "libcompiler.so", {"compiler.cc": COMPILER}, "-shared", "-fPIC",
        "-Wl,-soname,libcompiler.so")  # fmt: skip
    cxx(tmp_path, "libruntime.so", {"runtime.cc": RUNTIME_NEEDING_COMPILER}, "-shared", "-fPIC",
        "-Wl,-soname,libruntime.so", "-lcompiler", ORIGIN)  # fmt: skip
    cxx(tmp_path, "main", {"main.cc": MAIN}, "-Wl,--no-as-needed", "-lruntime", "-lcompiler",
        ORIGIN)  # fmt: skip
    assert bind_now(tmp_path / "main").returncode == 0  # loaded below the runtime, it works
    alone = open_alone(tmp_path / "libcompiler.so")
    assert alone.returncode != 0
    assert "undefined symbol: runtime_version" in alone.stderr
    report = check(tmp_path)
    assert ids(report) == {("BT117", "libcompiler.so")}
    (finding,) = report.findings
    assert finding.severity == "warning"
    assert not report.failed
    assert "runtime_version from libruntime.so" in finding.evidence
    assert "link libruntime.so" in finding.evidence
    assert "runtime_hook" not in finding.evidence  # weak: opening alone leaves it null


def test_a_compiler_that_needs_the_runtime_is_clean(tmp_path: Path) -> None:
    cxx(tmp_path, "libruntime.so", {"runtime.cc": RUNTIME}, "-shared", "-fPIC",
        "-Wl,-soname,libruntime.so")  # fmt: skip
    cxx(tmp_path, "libcompiler.so", {"compiler.cc": COMPILER}, "-shared", "-fPIC",
        "-Wl,-soname,libcompiler.so", "-lruntime", ORIGIN)  # fmt: skip
    cxx(tmp_path, "main", {"main.cc": MAIN}, "-lcompiler", ORIGIN)
    assert bind_now(tmp_path / "main").returncode == 0
    assert open_alone(tmp_path / "libcompiler.so").returncode == 0
    assert ids(check(tmp_path)) == set()


def test_a_weak_reference_only_a_loader_defines_is_clean(tmp_path: Path) -> None:
    source = 'extern "C" int hook() __attribute__((weak));\n'
    source += 'extern "C" int plugin() { return hook ? hook() : 0; }\n'
    cxx(tmp_path, "libplugin.so", {"plugin.cc": source}, "-shared", "-fPIC",
        "-Wl,-soname,libplugin.so")  # fmt: skip
    host = 'extern "C" int plugin();\nextern "C" int hook() { return 1; }\n'
    host += 'extern "C" int host() { return plugin(); }\n'
    cxx(tmp_path, "libhost.so", {"host.cc": host}, "-shared", "-fPIC", "-Wl,-soname,libhost.so",
        "-lplugin", ORIGIN)  # fmt: skip
    assert open_alone(tmp_path / "libplugin.so").returncode == 0
    assert ids(check(tmp_path)) == set()


HELPER = """
#include <Python.h>
extern "C" PyObject* helper_value() { return PyLong_FromLong(42); }
"""
MODULE = """
#include <Python.h>
extern "C" PyObject* helper_value();
static PyObject* value(PyObject*, PyObject*) { return helper_value(); }
static PyMethodDef methods[] = {{"value", value, METH_NOARGS, nullptr}, {}};
static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_mod", nullptr, -1, methods};
PyMODINIT_FUNC PyInit__mod() { return PyModule_Create(&module); }
"""


def test_python_symbols_a_module_and_its_library_take_from_the_interpreter_are_clean(
    tmp_path: Path,
) -> None:
    # neither NEEDs libpython (as manylinux requires): the interpreter defines every Py* symbol
    include = f"-I{sysconfig.get_paths()['include']}"
    libs = tmp_path / "site" / "pkg.libs"
    libs.mkdir(parents=True)
    cxx(libs, "libpyhelper.so", {"helper.cc": HELPER}, "-shared", "-fPIC", include,
        "-Wl,-soname,libpyhelper.so")  # fmt: skip
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    cxx(libs, f"../_mod{suffix}", {"module.cc": MODULE}, "-shared", "-fPIC", include,
        "-lpyhelper", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/pkg.libs")  # fmt: skip
    site = tmp_path / "site"
    env = {**os.environ, "LD_BIND_NOW": "1", "PYTHONPATH": str(site)}
    code = "import _mod; print(_mod.value())"
    command = [sys.executable, "-c", code]
    run = subprocess.run(command, check=False, capture_output=True, text=True, env=env)
    assert run.stdout == "42\n", run.stderr
    assert ids(check(site)) == set()
