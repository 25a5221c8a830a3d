"""What verify-linkage reads of an input: a CMake build tree whole (its libraries in ``src/``,
its extension modules under ``python/``, like sentencepiece's own CMake), less what is not the
build's output; and an input with nothing to check is bad input, never a pass. The tree is
built here (``tests/packages/srctree``), and its binaries are loaded and run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from buildtool.cmake.run import cmake_executable, ninja_executable
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs.wheel_archive import record_line
from buildtool.linkage.verify import verify_paths
from tests.conftest import PACKAGES, CliRunner

pytestmark = pytest.mark.integration

EXTENSION = f"_ext{sysconfig.get_config_var('EXT_SUFFIX')}"


def _load(extension: Path) -> subprocess.CompletedProcess[str]:
    """Load the extension and call it in a fresh interpreter (this one may hold a libcore.so)."""
    program = f"import ctypes; print(ctypes.CDLL({str(extension)!r}).ext_answer())"
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )


def _build(build_dir: Path, *defines: str) -> Path:
    cmake, ninja = cmake_executable(), ninja_executable()
    subprocess.run(
        [cmake, "-S", PACKAGES / "srctree", "-B", build_dir, "-G", "Ninja",
         f"-DCMAKE_MAKE_PROGRAM={ninja}", f"-DSRCTREE_EXT_SUFFIX={EXTENSION[4:]}", *defines],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run([ninja, "-C", build_dir], check=True, capture_output=True)
    return build_dir


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The tree built as it is, and built without ``sp::answer`` (which the extension calls)."""
    root = tmp_path_factory.mktemp("srctree")
    return _build(root / "good"), _build(root / "dropped", "-DSRCTREE_DROP_ANSWER=ON")


def _litter(tree: Path) -> None:
    """What a build tree holds besides its outputs, each with a copy of the extension whose
    RUNPATH ($ORIGIN/../src) finds nothing there: a false alarm if it were checked."""
    extension = (tree / "python" / EXTENSION).read_bytes()
    for folder in ("venv/lib", "skb/cp311/python", "_deps/fmt-src/python"):
        (tree / folder).mkdir(parents=True)
        (tree / folder / EXTENSION).write_bytes(extension)
    (tree / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tree / "skb" / "cp311" / "CMakeCache.txt").write_text("# a nested build\n")
    objects = sorted((tree / "src" / "CMakeFiles").rglob("*.o"))
    assert objects, "the build left no object files"
    shutil.copy2(objects[0], tree / "stray.o")  # an object file outside CMakeFiles/


def _tree(builds: tuple[Path, Path], tmp_path: Path) -> Path:
    tree = tmp_path / "build"
    shutil.copytree(builds[0], tree, symlinks=True)
    _litter(tree)
    return tree


def test_a_build_tree_is_searched_whole_and_stays_clean(
    builds: tuple[Path, Path], tmp_path: Path
) -> None:
    tree = _tree(builds, tmp_path)
    assert _load(tree / "python" / EXTENSION).stdout == "42\n"
    assert subprocess.run([tree / "src" / "tool"], check=False).returncode == 0
    assert list((tree / "CMakeFiles").rglob("a.out")), "CMake left no compiler-id executable"
    report = verify_paths([tree], LinkagePolicy.empty())
    assert report.findings == ()
    assert report.files_checked == 3  # src/libcore.so, src/tool, python/_ext*.so; no litter
    assert sorted(Path(entry.path).name for entry in report.sizes) == sorted(
        [EXTENSION, "libcore.so"]
    )


def test_a_broken_library_in_src_is_caught(
    builds: tuple[Path, Path], tmp_path: Path, run_cli: CliRunner
) -> None:
    tree = _tree(builds, tmp_path)
    shutil.copy2(builds[1] / "src" / "libcore.so", tree / "src" / "libcore.so")
    loaded = _load(tree / "python" / EXTENSION)
    assert loaded.returncode == 1
    assert "undefined symbol: _ZN2sp6answerEi" in loaded.stderr
    result = run_cli("verify-linkage", "--no-recipe", str(tree))
    assert result.exit_code == 1
    assert result.stdout.splitlines()[:4] == [
        str(tree),  # the input as given, then its files relative to it
        f"  python/{EXTENSION}",
        "    error BT106 undefined-symbol: has undefined symbols that nothing it loads defines",
        "      evidence: 1 undefined: sp::answer(int) (closure: libcore.so)",
    ]
    assert "library sizes" not in result.stdout  # no budgets, no --sizes
    with_sizes = run_cli("verify-linkage", "--no-recipe", "--sizes", str(tree))
    assert f"  python/{EXTENSION}: " in with_sizes.stdout.split("library sizes\n")[1]
    document = json.loads(
        run_cli("verify-linkage", "--no-recipe", "--format", "json", str(tree)).stdout
    )
    assert "_ZN2sp6answerEi" in document["findings"][0]["evidence"]  # JSON keeps the mangled name


def test_a_folder_with_nothing_to_check_is_bad_input(
    builds: tuple[Path, Path], tmp_path: Path, run_cli: CliRunner
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("verify-linkage", "--no-recipe", str(empty))
    assert result.exit_code == 2
    assert f"{empty}: nothing to check: no shared library, executable or extension" in (
        result.stderr
    )
    objects = tmp_path / "objects"
    objects.mkdir()
    for number, found in enumerate(sorted(builds[0].rglob("*.o"))[:2]):
        shutil.copy2(found, objects / f"{number}.o")
    result = run_cli("verify-linkage", "--no-recipe", str(objects))
    assert result.exit_code == 2
    assert "its 2 object files (.o) are not loaded by anything" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_build_tree_with_only_litter_is_bad_input(
    builds: tuple[Path, Path], tmp_path: Path, run_cli: CliRunner
) -> None:
    tree = _tree(builds, tmp_path)
    for output in ("src/libcore.so", "src/tool", f"python/{EXTENSION}"):
        (tree / output).unlink()
    result = run_cli("verify-linkage", "--no-recipe", str(tree))
    assert result.exit_code == 2
    assert f"{tree}: nothing to check" in result.stderr
    assert "in this CMake build tree (searched every folder but CMakeFiles/" in result.stderr


def test_a_wheel_with_nothing_to_check_is_bad_input(tmp_path: Path, run_cli: CliRunner) -> None:
    wheel = tmp_path / "pure-1.0-py3-none-any.whl"
    members = {
        "pure/__init__.py": b"ANSWER = 42\n",
        "pure-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pure\nVersion: 1.0\n",
        "pure-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n",
    }
    _wheel(wheel, members)
    result = run_cli("verify-linkage", "--no-recipe", str(wheel))
    assert result.exit_code == 2
    assert f"{wheel}: nothing to check: the wheel holds no shared library" in result.stderr


def test_a_wheel_without_binaries_beside_one_with_them_is_valid_input(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    """polars (pure Python) with polars-runtime-32 (its binary): checked together, exit 0."""
    pure = tmp_path / "pure-1.0-py3-none-any.whl"
    _wheel(pure, {
        "pure/__init__.py": b"ANSWER = 42\n",
        "pure-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pure\nVersion: 1.0\n"
                                       b"Requires-Dist: pure-runtime==1.0\n",
        "pure-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n",
    })  # fmt: skip
    library = tmp_path / "libruntime.so"
    source = tmp_path / "runtime.c"
    source.write_text("int runtime(void) { return 42; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    runtime = tmp_path / "pure_runtime-1.0-py3-none-manylinux_2_17_x86_64.whl"
    _wheel(runtime, {
        "pure_runtime/libruntime.so": library.read_bytes(),
        "pure_runtime-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pure-runtime\n"
                                               b"Version: 1.0\n",
        "pure_runtime-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n",
    })  # fmt: skip
    result = run_cli("verify-linkage", "--no-recipe", str(pure), str(runtime))
    assert result.exit_code == 0, result.stderr
    report = verify_paths([pure, runtime], LinkagePolicy.empty())
    assert report.findings == ()
    assert report.files_checked == 1


def _wheel(path: Path, members: dict[str, bytes]) -> Path:
    record = [record_line(name, content) for name, content in members.items()]
    record.append("pure-1.0.dist-info/RECORD,,")
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
        archive.writestr("pure-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def test_an_object_file_named_like_an_extension_is_caught(
    builds: tuple[Path, Path], tmp_path: Path
) -> None:
    obj = sorted((builds[0] / "python" / "CMakeFiles").rglob("*.o"))[0]
    loaded = _load(obj)
    assert loaded.returncode == 1
    assert "only ET_DYN and ET_EXEC can be loaded" in loaded.stderr
    members = {
        "pure/_ext.so": obj.read_bytes(),
        "pure/__init__.py": b"",
        "pure-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pure\nVersion: 1.0\n",
    }
    wheel = _wheel(tmp_path / "pure-1.0-cp311-cp311-linux_x86_64.whl", members)
    report = verify_paths([wheel], LinkagePolicy.empty())
    assert [(f.check_id, f.path.split("!/")[1]) for f in report.findings] == [
        ("BT100", "pure/_ext.so")
    ]
    assert "is an object file" in report.findings[0].message
    # the same wheel with a real shared library in that place is clean
    members["pure/_ext.so"] = (builds[0] / "src" / "libcore.so").read_bytes()
    clean = _wheel(tmp_path / "pure-1.0-cp311-cp311-linux_x86_64.whl", members)
    assert verify_paths([clean], LinkagePolicy.empty()).findings == ()
