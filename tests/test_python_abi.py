"""BT153/BT154: an extension module's C-API names against the CPython it is built for, both
ways, each verdict checked by importing the module with the interpreter that runs the tests.

The modules are compiled here against this interpreter's headers; a module "built for another
CPython" references a name this release does not export (declared by hand, as a newer header
would declare it), which is exactly what such a module holds.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from buildtool.linkage.loaders.cpython_abi import KNOWN, release_read, target_of
from tests.builders import check, gcc, ids, write_wheel
from tests.conftest import require

RUNNING = sys.version_info[:2]
SUFFIX = str(sysconfig.get_config_var("EXT_SUFFIX"))
INCLUDE = sysconfig.get_paths()["include"]

NEWER_ONLY = "PyUnstable_Code_NewWithPosOnlyArgs"
"""Exported from CPython 3.12 on: a 3.12 build of a Cython module references it."""


def _module(folder: Path, file_name: str, calls: str = "", *flags: str) -> Path:
    """An extension module ``m`` whose init also calls ``calls`` (declared here) when a
    variable no compiler can fold says so: the reference stays, the call never runs."""
    declared = f"extern PyObject *{calls}(void);" if calls else ""
    called = f'if (getenv("M_NEVER")) {calls}();' if calls else ""
    source = f"""
#include <stdlib.h>
#include <Python.h>
{declared}
static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "m", NULL, -1, NULL}};
PyMODINIT_FUNC PyInit_m(void) {{ {called} return PyModule_Create(&def); }}
"""
    return gcc(folder, folder / file_name, source, f"-I{INCLUDE}", *flags)


def _import_error(folder: Path) -> str:
    """What importing ``m`` from ``folder`` with this interpreter says ('' when it imports)."""
    run = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(folder)!r}); import m"],
        capture_output=True,
        text=True,
        check=False,
    )
    return run.stderr.strip().splitlines()[-1] if run.returncode else ""


@pytest.fixture(autouse=True)
def _listed() -> None:
    require(RUNNING in KNOWN, f"no export list for CPython {RUNNING} (tools/cpython_exports.py)")


def test_a_module_built_for_this_release_is_clean_and_imports(tmp_path: Path) -> None:
    module = _module(tmp_path, f"m{SUFFIX}")
    assert _import_error(tmp_path) == ""
    assert ids(check(module)) == set()


def test_a_module_built_for_a_newer_release_is_an_error_and_fails_to_import(
    tmp_path: Path,
) -> None:
    module = _module(tmp_path, f"m{SUFFIX}", NEWER_ONLY)
    assert f"undefined symbol: {NEWER_ONLY}" in _import_error(tmp_path)
    report = check(module)
    assert ids(report) == {("BT153", module.name)}
    finding = report.findings[0]
    assert finding.severity == "error"
    assert NEWER_ONLY in finding.message
    assert f"libpython {release_read(RUNNING)}" in finding.evidence
    assert "is exported by CPython 3.12" in finding.evidence


def test_the_same_file_named_for_the_release_that_exports_it_is_clean(tmp_path: Path) -> None:
    module = _module(tmp_path, "m.cpython-312-x86_64-linux-gnu.so", NEWER_ONLY)
    assert ids(check(module)) == set()


def test_a_plain_suffix_in_a_wheel_is_judged_by_the_wheel_tag(tmp_path: Path) -> None:
    """``m.so`` says nothing; the wheel's cp3X tag says which interpreter imports it."""
    tag = f"cp{RUNNING[0]}{RUNNING[1]}"
    good = _module(tmp_path / "good", "m.so").read_bytes()
    bad = _module(tmp_path / "bad", "m.so", NEWER_ONLY).read_bytes()
    clean = write_wheel(tmp_path / f"x-1.0-{tag}-{tag}-linux_x86_64.whl", "x", {"x/m.so": good})
    broken = write_wheel(tmp_path / f"y-1.0-{tag}-{tag}-linux_x86_64.whl", "y", {"y/m.so": bad})
    assert ids(check(clean)) == set()
    report = check(broken)
    assert ids(report) == {("BT153", "m.so")}
    assert f"the wheel tag {tag}" in report.findings[0].evidence


ABI3_WHEEL = "a-1.0-cp38-abi3-linux_x86_64.whl"


def _abi3(tmp_path: Path, calls: str = "") -> tuple[Path, Path]:
    """An abi3 module (``Py_LIMITED_API`` 3.8) and the cp38-abi3 wheel holding it."""
    folder = tmp_path / (calls or "plain")
    module = _module(folder, "m.abi3.so", calls, "-DPy_LIMITED_API=0x03080000")
    wheel = write_wheel(tmp_path / calls / ABI3_WHEEL, "a", {"a/m.abi3.so": module.read_bytes()})
    return folder, wheel


def test_an_abi3_module_within_the_stable_abi_is_clean_and_imports(tmp_path: Path) -> None:
    folder, wheel = _abi3(tmp_path)
    assert _import_error(folder) == ""
    assert ids(check(wheel)) == set()


def test_an_abi3_module_using_a_name_newer_than_its_tag_is_an_error(tmp_path: Path) -> None:
    """PyType_FromMetaclass joined the stable ABI in 3.12: a cp38-abi3 wheel installs on this
    interpreter, which lacks it."""
    folder, wheel = _abi3(tmp_path, "PyType_FromMetaclass")
    if RUNNING < (3, 12):
        assert "undefined symbol: PyType_FromMetaclass" in _import_error(folder)
    report = check(wheel)
    assert ids(report) == {("BT153", "m.abi3.so")}
    assert "3.8-3.11" in report.findings[0].evidence


def test_an_abi3_module_using_a_name_outside_the_stable_abi_is_a_warning(tmp_path: Path) -> None:
    """PyDict_SetDefault is exported by every listed release but is no stable-ABI member: it
    imports (a warning, not an error), with no promise for later releases."""
    folder, wheel = _abi3(tmp_path, "PyDict_SetDefault")
    assert _import_error(folder) == ""
    report = check(wheel)
    assert ids(report) == {("BT154", "m.abi3.so")}
    assert report.findings[0].severity == "warning"


@pytest.mark.parametrize(
    ("name", "tags", "shown"),
    [
        ("m.cpython-311-x86_64-linux-gnu.so", (), "CPython 3.11"),
        ("m.cpython-36m-x86_64-linux-gnu.so", (), "CPython 3.6"),
        ("m.abi3.so", ("cp39", "abi3"), "CPython 3.9+ (abi3)"),
        ("m.so", ("cp312", "cp312"), "CPython 3.12"),
        ("m.cpython-311-x86_64-linux-gnu.so", ("cp312", "cp312"), "CPython 3.11"),
    ],
)
def test_the_target_comes_from_the_name_first_then_the_tag(
    name: str, tags: tuple[str, ...], shown: str
) -> None:
    target = target_of(name, tags)
    assert target is not None
    assert target.shown == shown


@pytest.mark.parametrize(
    ("name", "tags"),
    [
        ("m.cpython-313t-x86_64-linux-gnu.so", ()),  # free-threaded: no list
        ("m.cpython-311d-x86_64-linux-gnu.so", ()),  # debug build
        ("m.so", ()),
        ("m.so", ("py3", "none")),
        ("m.abi3.so", ()),  # abi3 from which release: only a tag says
        ("m.so", ("pp310", "pypy310_pp73")),
    ],
)
def test_builds_no_list_describes_are_not_judged(name: str, tags: tuple[str, ...]) -> None:
    assert target_of(name, tags) is None
