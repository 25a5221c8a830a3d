"""BT106 judges undefined symbols and version needs the way ld.so binds them: each case is built
with gcc here and opened by the real loader (ctypes with RTLD_NOW, an import in a real
interpreter) before verify-linkage judges it."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.builders import check, gcc, ids

pytestmark = pytest.mark.integration

ORIGIN = "-Wl,--enable-new-dtags,-rpath,$ORIGIN"


def open_alone(library: Path) -> subprocess.CompletedProcess[str]:
    """``ctypes.CDLL(library, RTLD_NOW)`` in a fresh interpreter."""
    code = f"import ctypes, os; ctypes.CDLL({str(library)!r}, os.RTLD_NOW)"
    command = [sys.executable, "-c", code]
    return subprocess.run(command, check=False, capture_output=True, text=True)


# --- a version need on a provider that defines no versions -----------------------------------

PROVIDER = '#include <stdio.h>\nint foo(void) { return 7; }\nvoid say(void) { puts("hi"); }\n'
BARE_PROVIDER = "int foo(void) { return 7; }\n"  # imports nothing: no version table at all


def consumer_of_a_versioned_provider(folder: Path) -> Path:
    """``pkg/libcons.so``, linked against a ``build/libprov.so`` that defines ``foo@@VERS_1``:
    it needs VERS_1 from libprov.so."""
    build = folder / "build"
    build.mkdir(parents=True)
    (build / "prov.map").write_text("VERS_1 { global: foo; say; local: *; };\n")
    gcc(build, build / "libprov.so", PROVIDER, "-Wl,-soname,libprov.so",
        f"-Wl,--version-script={build / 'prov.map'}")  # fmt: skip
    cons = "int foo(void);\nint cons(void) { return foo(); }\n"
    return gcc(
        build, folder / "pkg" / "libcons.so", cons, "-Wl,-soname,libcons.so", "-lprov", ORIGIN
    )


def test_a_provider_without_versions_but_with_a_version_table_satisfies_the_need(
    tmp_path: Path,
) -> None:
    # Debian's libpq (no versions) under a libqsqlpsql linked against a versioned one
    consumer = consumer_of_a_versioned_provider(tmp_path)
    gcc(tmp_path, consumer.parent / "libprov.so", PROVIDER, "-Wl,-soname,libprov.so")
    run = open_alone(consumer)
    assert run.returncode == 0, run.stderr
    assert ids(check(consumer.parent)) == set()


def test_a_provider_without_any_version_table_stays_bt106(tmp_path: Path) -> None:
    consumer = consumer_of_a_versioned_provider(tmp_path)
    bare = consumer.parent / "libprov.so"
    gcc(tmp_path, bare, BARE_PROVIDER, "-Wl,-soname,libprov.so", "-nostdlib")
    run = open_alone(consumer)
    assert run.returncode != 0
    assert "check_match: Assertion" in run.stderr  # ld.so aborts binding foo@VERS_1
    report = check(consumer.parent)
    assert ids(report) == {("BT106", "libcons.so")}
    assert "versions not defined: libprov.so VERS_1" in report.findings[0].evidence


def test_a_provider_with_the_version_is_clean(tmp_path: Path) -> None:
    consumer = consumer_of_a_versioned_provider(tmp_path)
    (tmp_path / "build" / "libprov.so").rename(consumer.parent / "libprov.so")
    assert open_alone(consumer).returncode == 0
    assert ids(check(consumer.parent)) == set()


# --- an extension module's symbols that the interpreter's own libraries define ---------------

MODULE = """
#include <Python.h>
double nextafter(double, double);  // libm's: the module does not NEED libm
{extra}
static PyObject* step(PyObject*, PyObject* arg) {{
    return PyFloat_FromDouble(nextafter(PyFloat_AsDouble(arg), 2.0){call});
}}
static PyMethodDef methods[] = {{{{"step", step, METH_O, NULL}}, {{NULL}}}};
static PyModuleDef module = {{PyModuleDef_HEAD_INIT, "_ext", NULL, -1, methods}};
PyMODINIT_FUNC PyInit__ext(void) {{ return PyModule_Create(&module); }}
"""


def extension_module(
    folder: Path, extra: str = "", call: str = ""
) -> subprocess.CompletedProcess[str]:
    """``pkg/_ext<EXT_SUFFIX>`` built with gcc and no ``-lm`` (nor libpython), and its import
    with LD_BIND_NOW=1 in this interpreter."""
    include = f"-I{sysconfig.get_paths()['include']}"
    module = folder / "pkg" / f"_ext{sysconfig.get_config_var('EXT_SUFFIX')}"
    source = MODULE.format(extra=extra, call=call)
    gcc(folder, module, source, include, "-fno-builtin", "-Wl,--as-needed")
    readelf = subprocess.run(["readelf", "-d", module], check=True, capture_output=True, text=True)
    assert "libm.so" not in readelf.stdout
    env = {**os.environ, "LD_BIND_NOW": "1", "PYTHONPATH": str(module.parent)}
    command = [sys.executable, "-c", "import _ext; print(_ext.step(1.0) > 1.0)"]
    return subprocess.run(command, check=False, capture_output=True, text=True, env=env)


def test_a_modules_libm_symbol_the_interpreter_loads_is_clean(tmp_path: Path) -> None:
    run = extension_module(tmp_path)
    assert run.stdout == "True\n", run.stderr
    assert ids(check(tmp_path / "pkg")) == set()


def test_a_modules_symbol_the_interpreter_does_not_load_stays_bt106(tmp_path: Path) -> None:
    # C++'s operator new, from a module linked with gcc instead of g++: libstdc++ is not loaded
    extra = "void* _Znwm(unsigned long);"
    run = extension_module(tmp_path, extra, call=" + (_Znwm(8) != NULL)")
    assert run.returncode != 0
    assert "undefined symbol: _Znwm" in run.stderr
    report = check(tmp_path / "pkg")
    assert ids(report) == {("BT106", f"_ext{sysconfig.get_config_var('EXT_SUFFIX')}")}
    assert "_Znwm" in report.findings[0].evidence
    assert "nextafter" not in report.findings[0].evidence
