"""BT106 judges undefined symbols and version needs the way ld.so binds them: each case is built
with gcc here and opened by the real loader (ctypes with RTLD_NOW, an import in a real
interpreter) before verify-linkage judges it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_verdicts import check, gcc, ids

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
