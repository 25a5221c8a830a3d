"""The stored CPython export lists are the real libpython's (``loaders.cpython_exports``).

A list that drifted from its release would fail modules that import, or pass ones that do not.
The running interpreter's release is compared with its list (read with pyelftools, as
``tools/cpython_exports.py`` reads it); under CI an interpreter whose release or build differs
from the list's fails, since the lists follow the machine CI runs on.
"""

from __future__ import annotations

import platform
import sys
import sysconfig
from pathlib import Path

from buildtool.linkage.loaders.cpython_exports import CPYTHON_EXPORTS, RELEASES
from tests.conftest import require
from tools.cpython_exports import exported_c_api


def _libpython() -> Path | None:
    """The running interpreter's shared libpython, when it has one."""
    name, folder = sysconfig.get_config_var("LDLIBRARY"), sysconfig.get_config_var("LIBDIR")
    if not sysconfig.get_config_var("Py_ENABLE_SHARED") or not name or not folder:
        return None
    path = Path(folder) / str(name)
    return path if path.exists() else None


def test_the_running_releases_list_is_its_libpythons_exports() -> None:
    minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
    library = _libpython()
    require(platform.machine() == "x86_64" and library is not None,
            "this interpreter has no shared libpython on x86_64 to compare with")  # fmt: skip
    assert library is not None
    listed = RELEASES.get(minor, "absent")
    require(RELEASES.get(minor) == platform.python_version(),
            f"CPython {platform.python_version()} runs, the list of {minor} is {listed}'s "
            "(regenerate with tools/cpython_exports.py)")  # fmt: skip
    installed = exported_c_api(library)
    assert sorted(installed - CPYTHON_EXPORTS[minor]) == []
    assert sorted(CPYTHON_EXPORTS[minor] - installed) == []


def test_the_lists_differ_where_cpython_changed() -> None:
    """Known changes: 3.12 added the PyUnstable_ names, 3.11 dropped _PyObject_GC_Malloc."""
    assert "PyUnstable_Code_NewWithPosOnlyArgs" not in CPYTHON_EXPORTS["3.11"]
    assert "PyUnstable_Code_NewWithPosOnlyArgs" in CPYTHON_EXPORTS["3.12"]
    assert "_PyObject_GC_Malloc" in CPYTHON_EXPORTS["3.10"]
    assert "_PyObject_GC_Malloc" not in CPYTHON_EXPORTS["3.11"]
    assert all(len(names) > 1500 for names in CPYTHON_EXPORTS.values())
