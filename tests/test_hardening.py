"""Hardening checks (BT140-BT145) on binaries built here: the deliberately weak ones fail each
check, the hardened ones pass, and nothing is judged while the policy switch is off."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

from buildtool.linkage.checks.hardening import search_path_problem
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from buildtool.recipe.load import load_recipe
from buildtool.verification import policy_for_recipe
from tests.conftest import DEMO_RECIPE, require

pytestmark = pytest.mark.integration

HARDENING = dataclasses.replace(LinkagePolicy.empty(), hardening=True)
HARDENING_IDS = frozenset(f"BT14{n}" for n in range(6))

MAIN_C = "int main(void) { return 0; }\n"
LIB_C = "int lib(void) { return 1; }\n"
TEXTREL_S = """
    .text
    .globl f
    .type f, @function
f:  ret
    .quad f
    .section .note.GNU-stack,"",@progbits
"""

WEAK = ["-Wl,-z,norelro", "-Wl,-z,lazy", "-Wl,-z,execstack"]
STRONG = ["-Wl,-z,relro,-z,now", "-Wl,-z,noexecstack", "-Wl,--enable-new-dtags,-rpath,$ORIGIN"]

BUILDS: dict[str, list[str]] = {
    # no RELRO, lazy binding, executable stack, DT_RPATH into /tmp and the current folder, ET_EXEC
    "weak_exe": ["main.c", "-no-pie", *WEAK, "-Wl,--disable-new-dtags,-rpath,/tmp/plugins:lib"],
    "partial_relro_exe": ["main.c", "-fPIE", "-pie", "-Wl,-z,relro,-z,lazy,-z,noexecstack"],
    "libweak.so": ["lib.c", "-shared", "-fPIC", *WEAK, "-Wl,--enable-new-dtags,-rpath,/dev/shm"],
    "libtextrel.so": ["textrel.s", "-shared", "-nostdlib", "-Wl,-z,notext", *STRONG],
    "hardened_exe": ["main.c", "-fPIE", "-pie", *STRONG],
    "libhardened.so": ["lib.c", "-shared", "-fPIC", *STRONG],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require(shutil.which("gcc") is not None, "needs gcc")
    folder = tmp_path_factory.mktemp("hardening")
    sources = folder / "sources"
    sources.mkdir()
    for name, text in (("main.c", MAIN_C), ("lib.c", LIB_C), ("textrel.s", TEXTREL_S)):
        (sources / name).write_text(text, encoding="utf-8")
    out = folder / "bin"
    out.mkdir()
    for name, args in BUILDS.items():
        command = ["gcc", *args, "-o", str(out / name)]
        subprocess.run(command, cwd=sources, check=True, capture_output=True)
    return out


def hardening_ids(report: Report) -> set[tuple[str, str]]:
    return {(f.check_id, Path(f.path).name) for f in report.findings if f.check_id in HARDENING_IDS}


def test_each_weakness_fails_its_check(built: Path) -> None:
    found = hardening_ids(verify_paths([built], HARDENING))
    assert found == {
        ("BT140", "weak_exe"),
        ("BT141", "weak_exe"),
        ("BT142", "weak_exe"),
        ("BT143", "weak_exe"),
        ("BT145", "weak_exe"),
        ("BT140", "partial_relro_exe"),
        ("BT140", "libweak.so"),
        ("BT141", "libweak.so"),
        ("BT143", "libweak.so"),
        ("BT144", "libtextrel.so"),
    }


def test_messages_name_what_is_wrong(built: Path) -> None:
    report = verify_paths([built], HARDENING)
    messages = {(f.check_id, Path(f.path).name, f.message) for f in report.findings}
    assert messages >= {
        (
            "BT140",
            "partial_relro_exe",
            "has partial RELRO only: lazy binding leaves the GOT writable",
        ),
        ("BT140", "weak_exe", "has no RELRO segment: relocated data stays writable"),
        ("BT143", "weak_exe", "RPATH entry '/tmp/plugins' is in the world-writable folder /tmp"),
        ("BT143", "weak_exe", "RPATH entry 'lib' is relative to the current directory"),
        (
            "BT143",
            "libweak.so",
            "RUNPATH entry '/dev/shm' is in the world-writable folder /dev/shm",
        ),
    }
    for finding in report.findings:
        assert finding.check.hint


def test_hardened_binaries_pass(built: Path) -> None:
    report = verify_paths([built / "hardened_exe", built / "libhardened.so"], HARDENING)
    assert hardening_ids(report) == set()


def test_nothing_is_judged_with_the_switch_off(built: Path) -> None:
    assert hardening_ids(verify_paths([built], LinkagePolicy.empty())) == set()


def test_the_example_recipe_switches_hardening_on() -> None:
    """tests/test_verify.py's good build has no findings under this policy: the example passes."""
    assert policy_for_recipe(load_recipe(DEMO_RECIPE)).hardening


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("$ORIGIN", None),
        ("${ORIGIN}/../lib", None),
        ("/usr/lib/x86_64-linux-gnu", None),
        ("/tmpfoo", None),
        ("", "relative to the current directory"),
        (".", "relative to the current directory"),
        ("lib", "relative to the current directory"),
        ("$LIB/x", "relative to the current directory"),
        ("/tmp", "in the world-writable folder /tmp"),
        ("/var/tmp/../tmp/x", "in the world-writable folder /var/tmp"),
        ("/usr/../tmp/x", "in the world-writable folder /tmp"),
        ("/dev/shm/", "in the world-writable folder /dev/shm"),
    ],
)
def test_search_path_problem(entry: str, problem: str | None) -> None:
    assert search_path_problem(entry) == problem
