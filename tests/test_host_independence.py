"""A manylinux wheel gets the same verdict on every host: a library it needs, does not bundle
and its tag's policy does not provide is BT109 even where this machine has it (libgomp here,
from gcc), because a compliant system without it fails to load the wheel. The ground truth of
"a system without it": this machine with libgomp hidden in a private mount namespace (root,
``unshare``), where the wheel's library fails and its bundled twin still loads.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.verify import verify_paths
from tests.builders import check, gcc, ids, write_wheel
from tests.conftest import require

GOMP = "libgomp.so.1"
TAG = "py3-none-manylinux_2_36_x86_64"
USES_GOMP = """
#include <omp.h>
int threads(void) { return omp_get_max_threads(); }
"""


def _system_gomp() -> Path:
    command = ["gcc", f"-print-file-name={GOMP}"]
    found = subprocess.run(command, capture_output=True, text=True, check=True)
    path = Path(found.stdout.strip()).resolve()
    require(path.is_file(), "gcc's libgomp.so.1 is not installed")
    return path


def _load_without_system_gomp(library: Path, tmp_path: Path) -> str:
    """What ``ctypes.CDLL(library)`` says on this machine with its libgomp hidden ('': loads)."""
    require(shutil.which("unshare") is not None and os.geteuid() == 0,
            "hiding a system library needs root and unshare (util-linux)")  # fmt: skip
    empty = tmp_path / "hidden"
    empty.write_bytes(b"")
    script = (
        f"mount --bind {empty} {_system_gomp()} && "
        f"{sys.executable} -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' {library}"
    )
    command = ["unshare", "-m", "sh", "-c", script]
    run = subprocess.run(command, capture_output=True, text=True, check=False)
    return run.stderr.strip().splitlines()[-1] if run.returncode else ""


@pytest.fixture
def uses_gomp(tmp_path: Path) -> Path:
    return gcc(tmp_path / "build", tmp_path / "build" / "libuses.so", USES_GOMP, "-fopenmp",
               "-Wl,-soname,libuses.so")  # fmt: skip


def test_an_unbundled_library_outside_the_policy_is_an_error_though_this_machine_has_it(
    tmp_path: Path, uses_gomp: Path
) -> None:
    wheel = write_wheel(
        tmp_path / f"g-1.0-{TAG}.whl", "g", {"g/libuses.so": uses_gomp.read_bytes()}
    )
    report = check(wheel)
    assert ids(report) == {("BT109", "libuses.so")}
    (finding,) = report.findings
    assert finding.severity == "error"
    assert "manylinux_2_36_x86_64 does not provide" in finding.message
    assert "this machine has it (/" in finding.evidence
    assert _load_without_system_gomp(uses_gomp, tmp_path) != ""


def test_the_same_library_bundled_is_clean_and_loads_without_the_systems(
    tmp_path: Path, uses_gomp: Path
) -> None:
    folder = tmp_path / "g"
    folder.mkdir()
    shutil.copy(_system_gomp(), folder / GOMP)
    bundled = shutil.copy(uses_gomp, folder / "libuses.so")
    subprocess.run(["patchelf", "--set-rpath", "$ORIGIN", bundled], check=True)
    members = {f"g/{p.name}": p.read_bytes() for p in folder.iterdir()}
    assert ids(check(write_wheel(tmp_path / f"g-1.0-{TAG}.whl", "g", members))) == set()
    assert _load_without_system_gomp(Path(bundled), tmp_path) == ""


def test_a_build_tree_is_judged_by_the_machine_it_was_built_for(uses_gomp: Path) -> None:
    """No tag, no promise beyond this machine: libgomp found here is found."""
    assert ids(check(uses_gomp.parent)) == set()


def test_the_recipe_accepts_it_as_host_provided(tmp_path: Path, uses_gomp: Path) -> None:
    wheel = write_wheel(
        tmp_path / f"g-1.0-{TAG}.whl", "g", {"g/libuses.so": uses_gomp.read_bytes()}
    )
    policy = dataclasses.replace(LinkagePolicy.empty(), host_provided=(GOMP,))
    accepted = verify_paths([wheel], policy)
    assert ids(accepted) == {("BT108", "libuses.so")}
    assert accepted.findings[0].severity == "warning"
