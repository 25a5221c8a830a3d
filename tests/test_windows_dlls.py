"""The stored lists of Windows' system DLLs are delvewheel's (``loaders.windows_dlls``, written
by ``tools/windows_dlls.py``), and the loader model uses the one of the module's machine."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from buildtool.linkage.loaders.windows import provided
from tests.conftest import require
from tools.windows_dlls import render

STORED = Path(__file__).parents[1] / "buildtool/linkage/loaders/windows_dlls.py"


def test_the_stored_lists_are_what_the_tool_writes_from_delvewheel() -> None:
    require(importlib.util.find_spec("delvewheel") is not None, "delvewheel is not installed")
    assert STORED.read_text(encoding="utf-8") == render(), (
        "regenerate: python tools/windows_dlls.py > buildtool/linkage/loaders/windows_dlls.py"
    )


def test_each_machine_has_its_own_system_dlls() -> None:
    # x86_64 and arm64 Windows have wldap32.dll; a name no Windows has is provided nowhere
    assert provided("WLDAP32.dll", "x86_64") == "system"
    assert provided("wldap32.dll", "arm64") == "system"
    assert provided("bcryptprimitives.dll", "arm64ec") == "system"
    assert provided("wldap32.dll", "arm") is None  # no list for 32-bit ARM Windows
    assert provided("absent.dll", "x86_64") is None
    arm64_only = "xtajit.dll"  # the x64 emulator of ARM64 Windows
    assert provided(arm64_only, "arm64") == "system"
    assert provided(arm64_only, "x86_64") is None
