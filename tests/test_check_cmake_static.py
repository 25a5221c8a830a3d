"""check-cmake's BT212 both ways: a static library that two shared libraries one process loads
both link, its symbols exported from both, on tests/packages/cmake-static-twice built for real.

Ground truth: both libraries loaded ``RTLD_GLOBAL`` and ``RTLD_LOCAL`` in a child process. LLVM's
imported archives (Debian's LLVM 14: LLVMSupport's option registry, the MC layer's options) and a
static library built here (a registry and a registration) fail when both export them; hidden
visibility, ``--exclude-libs,ALL`` and a link that takes the archive's code from the other
library load. verify-linkage, on the built tree, agrees."""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from buildtool.cmake.run import cmake_executable, ninja_executable
from buildtool.cmakecheck.codemodel import CmakeTarget, LinkFragment
from buildtool.cmakecheck.linkline import keeps_archives_private
from tests.builders import check
from tests.cmake_projects import findings_of
from tests.conftest import PACKAGES, CliRunner, require

PROJECT = PACKAGES / "cmake-static-twice"
LLVM_DIR = Path("/usr/lib/llvm-14/lib/cmake/llvm")
LOAD = """import ctypes, sys
mode = ctypes.RTLD_GLOBAL if sys.argv[1] == "global" else ctypes.RTLD_LOCAL
for name in sys.argv[2:]:
    ctypes.CDLL(name, mode=mode)
"""
FAILURES = {"llvm": "registered more than once", "built": "duplicate registration"}

Built = Callable[[str, str, str], Path]


@pytest.fixture(scope="session")
def static_twice(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The project's build folder for (archive, keep, shape), configured and built on first use."""
    root = tmp_path_factory.mktemp("static-twice")

    @functools.cache
    def built(archive: str, keep: str, shape: str) -> Path:
        if archive == "llvm":
            require(LLVM_DIR.is_dir(), f"{LLVM_DIR} is missing (llvm-14-dev)")
        build = root / f"{archive}-{keep}-{shape}"
        configure: list[str | Path] = [
            cmake_executable(), "-S", PROJECT, "-B", build, "-G", "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}", f"-DLLVM_DIR={LLVM_DIR}",
            f"-DSTATIC_TWICE_ARCHIVE={archive}", f"-DSTATIC_TWICE_KEEP={keep}",
            f"-DSTATIC_TWICE_SHAPE={shape}",
        ]  # fmt: skip
        subprocess.run(configure, check=True, capture_output=True)
        subprocess.run([ninja_executable(), "-C", build], check=True, capture_output=True)
        return build

    return built


def _failed_loads(build: Path, archive: str) -> set[str]:
    libraries = [str(build / "lib" / "libone.so"), str(build / "lib" / "libtwo.so")]
    failed = set()
    for mode in ("global", "local"):
        run = subprocess.run(
            [sys.executable, "-c", LOAD, mode, *libraries],
            check=False,
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            assert FAILURES[archive] in run.stderr, run.stderr
            failed.add(mode)
    return failed


class Case(NamedTuple):
    archive: str
    keep: str
    shape: str
    fails: frozenset[str]
    """The loads that fail (as measured)."""


CASES = [
    pytest.param(Case("llvm", "exported", "app", frozenset({"global"})), id="llvm-exported"),
    pytest.param(Case("llvm", "exclude-libs", "app", frozenset()), id="llvm-exclude-libs"),
    pytest.param(Case("built", "exported", "app", frozenset({"global"})), id="built-exported"),
    pytest.param(Case("built", "hidden", "app", frozenset()), id="built-hidden"),
    pytest.param(Case("built", "exported", "chain", frozenset()), id="built-from-the-other"),
]


@pytest.mark.integration
@pytest.mark.parametrize("case", CASES)
def test_a_static_library_in_two_libraries_is_bt212_exactly_when_loading_fails(
    static_twice: Built, run_cli: CliRunner, case: Case
) -> None:
    archive, keep, shape, fails = case
    build = static_twice(archive, keep, shape)
    assert _failed_loads(build, archive) == fails
    code, found = findings_of(run_cli, "check-cmake", str(build))
    errors = [(check_id, message) for check_id, message in found if check_id != "BT206"]
    binary_errors = {f.check_id for f in check(build).findings if f.severity == "error"}
    if not fails:
        assert (code, errors, binary_errors) == (0, [], set())
        return
    assert code == 1
    assert [check_id for check_id, _ in errors] == ["BT212"]
    named = "libLLVMSupport.a" if archive == "llvm" else "libregistry.a"
    assert "target two" in errors[0][1]
    assert named in errors[0][1] or "static libraries" in errors[0][1]
    assert "exported from both, and app links both" in errors[0][1]
    assert binary_errors == {"BT103"}


def _linked(*fragments: str) -> CmakeTarget:
    link = tuple(LinkFragment(text, "flags") for text in fragments)
    return CmakeTarget("t", "SHARED_LIBRARY", (), (), (), link, None, "CMakeLists.txt", 1)


def test_the_link_options_that_keep_an_archive_private() -> None:
    archive = "/usr/lib/llvm-14/lib/libLLVMSupport.a"
    assert keeps_archives_private(_linked("-shared"), archive) is None
    assert keeps_archives_private(_linked("-Wl,--exclude-libs,ALL"), archive)
    assert keeps_archives_private(_linked("-Wl,--exclude-libs=libLLVMSupport.a"), archive)
    assert keeps_archives_private(_linked("-Wl,--exclude-libs,liba.a:libLLVMSupport.a"), archive)
    # another archive's name keeps this one exported
    assert keeps_archives_private(_linked("-Wl,--exclude-libs,libz.a"), archive) is None
    assert keeps_archives_private(_linked("-Wl,-Bsymbolic"), archive) == "-Bsymbolic"
    assert keeps_archives_private(_linked("-Wl,--version-script=api.map"), archive)
