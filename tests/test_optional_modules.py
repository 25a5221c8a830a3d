"""BT118: an extension module that cannot load, which its package imports only where it catches
ImportError (numba's OpenMP and TBB threading layers), against BT109 for one it imports outside
such a handler. Each verdict is checked by importing the package with the interpreter that runs
the tests; the import analysis itself is tested on source texts."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from buildtool.linkage.inputs.python_imports import (
    import_sites,
    import_statements,
    is_test_file,
    module_of,
)
from tests.builders import check, gcc, ids, lib, write_wheel
from tests.conftest import require

SUFFIX = str(sysconfig.get_config_var("EXT_SUFFIX"))
INCLUDE = sysconfig.get_paths()["include"]
TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"
MODULE = "pkg.sub.fast"


def _guards(source: str, path: str = "pkg/sub/user.py") -> list[bool] | None:
    sites = import_sites(textwrap.dedent(source), path, MODULE)
    return None if sites is None else [site.guarded for site in sites]


@pytest.mark.parametrize(
    ("source", "guards"),
    [
        ("try:\n    import pkg.sub.fast\nexcept ImportError:\n    pass\n", [True]),
        ("try:\n    from pkg.sub import fast\nexcept (KeyError, ImportError):\n    pass\n", [True]),
        ("try:\n    from . import fast\nexcept (ValueError, ImportError):\n    pass\n", [True]),
        ("try:\n    from .fast import speed\nexcept Exception:\n    pass\n", [True]),
        ("try:\n    from ..sub import fast\nexcept:\n    pass\n", [True]),
        ("try:\n    import pkg.sub.fast\nexcept builtins.ImportError:\n    pass\n", [True]),
        ("with contextlib.suppress(ImportError):\n    import pkg.sub.fast\n", [True]),
        ("try:\n    importlib.import_module('pkg.sub.fast')\nexcept ImportError:\n    pass\n",
         [True]),
        ("def pick():\n    try:\n        from pkg.sub import fast\n    except ImportError:\n"
         "        return None\n    return fast\n", [True]),
        ("import pkg.sub.fast\n", [False]),
        ("from pkg.sub.fast import speed\n", [False]),
        ("__import__('pkg.sub.fast')\n", [False]),
        ("try:\n    import pkg.sub.fast\nexcept OSError:\n    pass\n", [False]),
        ("try:\n    import pkg.sub.fast\nexcept ModuleNotFoundError:\n    pass\n", [False]),
        ("try:\n    pass\nexcept ImportError:\n    import pkg.sub.fast\n", [False]),
        ("try:\n    pass\nexcept ImportError:\n    pass\nelse:\n    import pkg.sub.fast\n",
         [False]),
        ("try:\n    def load():\n        import pkg.sub.fast\nexcept ImportError:\n    pass\n",
         [False]),
        ("with open('x'):\n    import pkg.sub.fast\n", [False]),
        ("try:\n    import pkg.sub.fast\nexcept ImportError as e:\n"
         "    raise RuntimeError('needs libabsent') from e\n", [False]),
        ("try:\n    import pkg.sub.fast\nexcept ImportError:\n    if STRICT:\n        raise\n",
         [False]),
        ("try:\n    import pkg.sub.fast\nexcept ImportError:\n    def later():\n"
         "        raise ValueError\n", [True]),
        ("import pkg.sub.slow\nfrom pkg.sub import slow\nfrom . import faster\n", []),
        ("from ... import fast\n", []),
    ],
)  # fmt: skip
def test_import_sites_say_which_imports_a_handler_catches(source: str, guards: list[bool]) -> None:
    assert _guards(source) == guards


def test_a_script_outside_any_package_has_its_absolute_imports_read() -> None:
    path = "pkg/example-scripts/run.py"
    assert _guards("import pkg.sub.fast\nfrom . import fast\n", path) == [False]


def test_a_package_import_is_an_import_of_its_modules_packages() -> None:
    # importing pkg.sub.fast.inner imports pkg.sub.fast first
    assert _guards("import pkg.sub.fast.inner\n") == [False]
    assert _guards("from pkg.sub.fast.inner import x\n") == [False]


@pytest.mark.parametrize(
    "source", ["def broken(:\n    import pkg.sub.fast\n", "import pkg.sub.fast\0\n"]
)
def test_text_that_is_no_python_tells_nothing(source: str) -> None:
    assert _guards(source) is None


def test_what_the_compiler_warns_about_is_read_and_says_nothing() -> None:
    # an invalid escape: a DeprecationWarning (3.11) or SyntaxWarning (3.12), an error here
    source = 'PATTERN = "\\d+"\ntry:\n    import pkg.sub.fast\nexcept ImportError:\n    pass\n'
    assert _guards(source) == [True]


TOKENS = (*"()[]{}:.,=\"'\\\n\t #@", "import ", "from ", "try", "except", "ImportError",
          "pkg", "sub", "fast", "\0", "\ud800", "é", "if ", "def f():", "    ",
          "with ")  # fmt: skip
PYTHONISH = st.lists(st.sampled_from(TOKENS), max_size=80).map("".join)
"""Text near Python: import statements, handlers and the characters that break them."""


@settings(max_examples=400, deadline=None)
@given(text=PYTHONISH | st.text(max_size=200), path=st.text(max_size=30) | st.just("pkg/a.py"))
def test_any_text_and_path_give_statements_or_none_never_an_error(text: str, path: str) -> None:
    found = import_statements(text, path)
    assert found is None or all(statement.names for statement in found)


def test_nesting_too_deep_to_read_tells_nothing() -> None:
    deep = "x = " + "(" * 5000 + "1" + ")" * 5000 + "\nimport pkg.sub.fast\n"
    assert _guards(deep) is None


def test_module_names_and_test_files() -> None:
    assert module_of("pkg/sub/fast.cpython-311-x86_64-linux-gnu.so") == ("pkg.sub.fast", "pkg.sub")
    assert module_of("pkg/sub/__init__.py") == ("pkg.sub", "pkg.sub")
    assert module_of("pkg-1.0.dist-info/x.py") is None  # a script, if anything
    assert is_test_file("pkg/tests/test_fast.py")
    assert is_test_file("pkg/sub/conftest.py")
    assert is_test_file("pkg/sub/fast_test.py")
    assert not is_test_file("pkg/sub/testing_tools.py")


# --- a wheel whose module needs a library nothing ships ----------------------------------


def _extension(folder: Path) -> bytes:
    """``pkg/sub/fast``: an extension module that needs ``libabsent.so``, which no wheel ships
    (built here to link against, then left out)."""
    lib(folder, "absent", "int absent_speed(void) { return 7; }")
    source = """
#include <Python.h>
extern int absent_speed(void);
static PyObject *speed(PyObject *self, PyObject *args) { return PyLong_FromLong(absent_speed()); }
static PyMethodDef methods[] = {{"speed", speed, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "fast", NULL, -1, methods};
PyMODINIT_FUNC PyInit_fast(void) { return PyModule_Create(&def); }
"""
    module = gcc(folder, folder / "build" / f"fast{SUFFIX}", source, f"-I{INCLUDE}", "-labsent")
    return module.read_bytes()


GUARDED_INIT = """
try:
    from pkg.sub import fast
except ImportError:
    fast = None

def speed():
    return fast.speed() if fast is not None else 1
"""

UNGUARDED_INIT = """
from pkg.sub import fast

def speed():
    return fast.speed()
"""

TEST_FILE = "from pkg.sub import fast  # a test suite may import it outright\n"


def _wheel(folder: Path, init: str, at: str = "pkg/sub/", suffix: str = SUFFIX) -> Path:
    """A wheel with ``pkg/sub/__init__.py`` (``init``) and the module ``fast`` in ``at``,
    its file named ``fast`` + ``suffix``."""
    members = {
        "pkg/__init__.py": b"",
        "pkg/sub/__init__.py": init.encode(),
        f"{at}fast{suffix}": _extension(folder),
        "pkg/tests/test_fast.py": TEST_FILE.encode(),
    }
    name = f"pkg-1.0-{TAG}-{TAG}-manylinux_2_28_x86_64.whl"
    return write_wheel(folder / name, "pkg", members)


def _imported(wheel: Path, folder: Path) -> str:
    """What ``import pkg.sub; print(pkg.sub.speed())`` says with this interpreter, the wheel
    unpacked as an install would lay it out (the last line of its error when it fails)."""
    site = folder / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    run = subprocess.run(
        [sys.executable, "-c", "import pkg.sub; print(pkg.sub.speed())"],
        capture_output=True,
        text=True,
        check=False,
        cwd=folder,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
    )
    return run.stdout.strip() if run.returncode == 0 else run.stderr.strip().splitlines()[-1]


def test_a_module_imported_only_inside_a_handler_is_a_warning_and_the_package_imports(
    tmp_path: Path,
) -> None:
    wheel = _wheel(tmp_path, GUARDED_INIT)
    assert _imported(wheel, tmp_path) == "1"  # the package goes on without the module
    report = check(wheel)
    assert ids(report) == {("BT118", f"fast{SUFFIX}")}
    (finding,) = report.findings
    assert finding.severity == "warning"
    assert finding.needed == "libabsent.so"
    assert "pkg/sub/__init__.py:3, each inside try/except ImportError" in finding.evidence


def test_a_module_imported_outside_a_handler_stays_an_error_and_the_import_fails(
    tmp_path: Path,
) -> None:
    wheel = _wheel(tmp_path, UNGUARDED_INIT)
    assert "libabsent.so: cannot open shared object file" in _imported(wheel, tmp_path)
    report = check(wheel)
    assert ids(report) == {("BT109", f"fast{SUFFIX}")}
    assert report.findings[0].severity == "error"


def test_a_handler_for_a_missing_module_only_does_not_catch_a_failed_load(
    tmp_path: Path,
) -> None:
    # ModuleNotFoundError is raised for a module that is not there; a failed load is ImportError
    wheel = _wheel(
        tmp_path, GUARDED_INIT.replace("except ImportError", "except ModuleNotFoundError")
    )
    assert "libabsent.so: cannot open shared object file" in _imported(wheel, tmp_path)
    assert ids(check(wheel)) == {("BT109", f"fast{SUFFIX}")}


def test_a_handler_that_raises_again_does_not_make_the_module_optional(
    tmp_path: Path,
) -> None:
    reraising = GUARDED_INIT.replace("fast = None", "raise ImportError('pkg needs libabsent')")
    wheel = _wheel(tmp_path, reraising)
    assert "pkg needs libabsent" in _imported(wheel, tmp_path)
    assert ids(check(wheel)) == {("BT109", f"fast{SUFFIX}")}


def test_a_module_no_python_file_imports_stays_an_error(tmp_path: Path) -> None:
    # loaded some other way (ctypes, another module's code): nothing says the failure is caught
    wheel = _wheel(tmp_path, "def speed():\n    return 1\n")
    assert ids(check(wheel)) == {("BT109", f"fast{SUFFIX}")}


def test_a_module_named_in_python_that_cannot_be_read_stays_an_error(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, GUARDED_INIT + "\nfast = (\n")  # a syntax error
    assert ids(check(wheel)) == {("BT109", f"fast{SUFFIX}")}


def test_an_installed_package_is_judged_as_its_wheel(tmp_path: Path) -> None:
    for init, verdict in ((GUARDED_INIT, "BT118"), (UNGUARDED_INIT, "BT109")):
        folder = tmp_path / verdict
        folder.mkdir()
        site = folder / "site"
        with zipfile.ZipFile(_wheel(folder, init)) as archive:
            archive.extractall(site)
        assert ids(check(site)) == {(verdict, f"fast{SUFFIX}")}


def test_a_top_level_module_is_looked_for_in_every_package(tmp_path: Path) -> None:
    init = GUARDED_INIT.replace("from pkg.sub import fast", "import fast")
    wheel = _wheel(tmp_path, init, at="")
    assert _imported(wheel, tmp_path) == "1"
    assert ids(check(wheel)) == {("BT118", f"fast{SUFFIX}")}


# --- the same on Windows: a .pyd module whose DLL no wheel ships -------------------------

MINGW = "x86_64-w64-mingw32-gcc"


def _windows_wheel(folder: Path, init: str) -> Path:
    """``pkg/sub/fast.cp311-win_amd64.pyd`` importing ``absent.dll``, built with mingw-w64
    (the DLL left out, as above). The verdict is about the file and the Python code; that
    Python raises ImportError for a DLL that fails to load ("DLL load failed while importing
    fast") is what makes the handler catch it there too."""
    require(shutil.which(MINGW) is not None, "mingw-w64 is not installed (g++-mingw-w64-x86-64)")
    (folder / "absent.c").write_text("__declspec(dllexport) int absent_speed(void) { return 7; }")
    (folder / "fast.c").write_text(
        "__declspec(dllimport) int absent_speed(void);\n"
        "__declspec(dllexport) long long PyInit_fast(void) { return absent_speed(); }"
    )
    pyd = folder / "fast.cp311-win_amd64.pyd"
    for command in (
        [MINGW, "-shared", "-o", str(folder / "absent.dll"), str(folder / "absent.c")],
        [MINGW, "-shared", "-o", str(pyd), str(folder / "fast.c"), str(folder / "absent.dll")],
    ):
        subprocess.run(command, check=True, capture_output=True)
    members = {
        "pkg/__init__.py": b"",
        "pkg/sub/__init__.py": init.encode(),
        "pkg/sub/fast.cp311-win_amd64.pyd": pyd.read_bytes(),
    }
    return write_wheel(folder / "pkg-1.0-cp311-cp311-win_amd64.whl", "pkg", members)


def test_a_windows_module_imported_only_inside_a_handler_is_a_warning(tmp_path: Path) -> None:
    for init, verdict in ((GUARDED_INIT, "BT118"), (UNGUARDED_INIT, "BT109")):
        folder = tmp_path / verdict
        folder.mkdir()
        report = check(_windows_wheel(folder, init))
        assert ids(report) == {(verdict, "fast.cp311-win_amd64.pyd")}
        assert report.findings[0].needed == "absent.dll"


def test_a_module_named_without_an_abi_tag_is_known_by_its_init_function(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, GUARDED_INIT, suffix=".so")  # the interpreter imports fast.so too
    assert _imported(wheel, tmp_path) == "1"
    assert ids(check(wheel)) == {("BT118", "fast.so")}
