"""A project shaped like ggml (tests/packages/ggmllike), configured and built for real: versioned
libraries (``libggml.so -> libggml.so.0 -> libggml.so.0.21.0``), a registry that opens CPU
variant MODULE libraries from the program's folder and keeps the best by score, programs named
with dashes. The recipe names each library once, by any of its names, and its rules hold for the
file, its SONAME and its version links; a library it names that no file is, is reported.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from buildtool.cmake.run import cmake_executable, ninja_executable
from tests.conftest import PACKAGES, CliRunner

pytestmark = pytest.mark.integration

RECIPE = """\
[project]
name = "ggmllike"

[libraries.ggml-base]
file = "{base}"

[libraries.ggml]
file = "{ggml}"
links = ["ggml-base"]

[executables."test-backend-ops"]
links = ["ggml"]

[verify]
forbidden-needed = {{ ggml = ["libggml-base.so*"] }}
size-budget-mb = {{ ggml-base = 0.000001 }}
"""


@pytest.fixture(scope="module")
def ggml_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = tmp_path_factory.mktemp("ggmllike") / "build"
    subprocess.run([cmake_executable(), "-G", "Ninja", "-S", PACKAGES / "ggmllike", "-B", build,
                    f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}"],
                   check=True, capture_output=True)  # fmt: skip
    subprocess.run([ninja_executable(), "-C", build], check=True, capture_output=True)
    return build


RULES = {"BT101", "BT102", "BT120", "BT126", "BT130"}
"""The recipe's rules under test; the build tree keeps its libraries in bin/ beside the
programs, as ggml does, and installs them to lib/ (judged there)."""


def _findings(run_cli: CliRunner, build: Path, recipe: Path) -> list[tuple[str, str]]:
    result = run_cli("verify-linkage", str(build), "--recipe", str(recipe), "--format", "json")
    document = json.loads(result.stdout)
    return sorted((f["id"], Path(f["path"]).name) for f in document["findings"] if f["id"] in RULES)


def test_the_registry_picks_the_best_variant_from_the_programs_folder(ggml_build: Path) -> None:
    run = subprocess.run([ggml_build / "bin" / "test-backend-ops"], capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert run.stdout.strip() == "zen4"
    assert (ggml_build / "bin" / "libggml.so").is_symlink()
    assert (ggml_build / "bin" / "libggml.so.0.21.0").is_file()


@pytest.mark.parametrize(
    ("base", "ggml"),
    [
        ("libggml-base.so", "libggml.so"),  # the link names
        ("libggml-base.so.0", "libggml.so.0"),  # the SONAMEs
        ("libggml-base.so.0.21.0", "libggml.so.0.21.0"),  # the files
    ],
)
def test_a_recipe_names_a_versioned_library_once_by_any_of_its_names(
    ggml_build: Path, tmp_path: Path, run_cli: CliRunner, base: str, ggml: str
) -> None:
    """The forbidden NEEDED and the size budget fire on the versioned files, whatever name the
    recipe uses; the program's NEEDED libggml.so.0 is its link (no BT101) and inside its
    allow-list (no BT102 on the program)."""
    recipe = tmp_path / "buildtool.toml"
    recipe.write_text(RECIPE.format(base=base, ggml=ggml), encoding="utf-8")
    assert _findings(run_cli, ggml_build, recipe) == [
        ("BT102", "libggml.so.0.21.0"),
        ("BT130", "libggml-base.so.0.21.0"),
    ]


def test_a_recipe_library_no_file_is_is_reported(
    ggml_build: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    recipe = tmp_path / "buildtool.toml"
    text = RECIPE.format(base="libggml-base.so", ggml="libggml.so").split("[verify]")[0]
    recipe.write_text(text + '[libraries.ggml-cuda]\nfile = "libggml-cuda.so"\n', encoding="utf-8")
    result = run_cli("verify-linkage", str(ggml_build), "--recipe", str(recipe), "--format", "json")
    document = json.loads(result.stdout)
    found = [(f["id"], f["severity"], f["message"]) for f in document["findings"]
             if f["id"] in RULES]  # fmt: skip
    message = "library ggml-cuda (libggml-cuda.so) matches no file of the inputs"
    assert found == [("BT126", "warning", message)]


def _configure(folder: Path, *defines: str) -> Path:
    build = folder / "build"
    subprocess.run([cmake_executable(), "-G", "Ninja", "-S", PACKAGES / "ggmllike", "-B", build,
                    f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}",
                    f"-DCMAKE_INSTALL_PREFIX={folder / 'prefix'}", *defines],
                   check=True, capture_output=True)  # fmt: skip
    subprocess.run([ninja_executable(), "-C", build], check=True, capture_output=True)
    subprocess.run([cmake_executable(), "--install", build], check=True, capture_output=True)
    return build


def _program_runs(prefix: Path) -> str:
    """What the installed program says on stderr ('' when it runs)."""
    run = subprocess.run([prefix / "bin" / "test-backend-ops"], capture_output=True, text=True,
                         check=False)  # fmt: skip
    return run.stderr.strip() if run.returncode else ""


def test_a_build_tree_is_judged_by_what_it_installs(tmp_path: Path, run_cli: CliRunner) -> None:
    """CMake's build RPATH (absolute, ending in an empty entry) is replaced at install by
    INSTALL_RPATH $ORIGIN/../lib: the build tree was 9 BT110 errors, now clean, and the
    installed tree runs. An absolute INSTALL_RPATH is what breaks the install, and is judged."""
    good = _configure(tmp_path / "good")
    assert _program_runs(tmp_path / "good" / "prefix") == ""
    result = run_cli("verify-linkage", str(good), "--no-recipe", "--format", "json")
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)["findings"] == []
    bad = _configure(tmp_path / "bad", "-DGGMLLIKE_INSTALL_RPATH=/opt/ggml/lib")
    assert "libggml.so.0: cannot open shared object file" in _program_runs(
        tmp_path / "bad" / "prefix"
    )
    recipe = tmp_path / "buildtool.toml"
    recipe.write_text(RECIPE.format(base="libggml-base.so", ggml="libggml.so").split("[verify]")[0])
    result = run_cli("verify-linkage", str(bad), "--recipe", str(recipe), "--format", "json")
    found = {(f["id"], f["message"]) for f in json.loads(result.stdout)["findings"]
             if f["id"] == "BT110"}  # fmt: skip
    assert ("BT110", "install RUNPATH entry '/opt/ggml/lib' is absolute") in found
    assert result.exit_code == 1


@pytest.mark.parametrize("stripped", [False, True], ids=["unstripped", "stripped"])
def test_a_program_linking_two_cpu_variants_is_an_error(
    tmp_path: Path, run_cli: CliRunner, stripped: bool
) -> None:
    """zen4's call to its own exported score binds to haswell's copy, loaded first (LD_DEBUG=
    bindings says so), and the program gets haswell's answer from zen4's code. The variants as
    modules the registry opens one at a time (the published layout) stay clean."""
    build = _configure(tmp_path, "-DGGMLLIKE_LINK_TWO_VARIANTS=ON")
    bin_dir = build / "bin"
    if stripped:
        for variant in bin_dir.glob("libggml-cpu-*-linked.so"):
            subprocess.run(["strip", variant], check=True)
    run = subprocess.run([bin_dir / "two-variants"], capture_output=True, text=True, check=False,
                         env={"LD_DEBUG": "bindings"})  # fmt: skip
    assert run.returncode == 1
    assert "haswell 10, zen4 10" in run.stdout
    assert "libggml-cpu-haswell-linked.so [0]: normal symbol `ggml_backend_score'" in run.stderr
    result = run_cli("verify-linkage", str(build), "--no-recipe", "--format", "json")
    duplicates = [(f["id"], Path(f["path"]).name) for f in json.loads(result.stdout)["findings"]
                  if f["id"] in {"BT103", "BT124"}]  # fmt: skip
    assert duplicates == [("BT103", "libggml-cpu-zen4-linked.so")]
    assert subprocess.run([bin_dir / "test-backend-ops"], check=False).returncode == 0


def test_where_the_install_puts_the_libraries_is_where_they_are_judged(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    """The build tree keeps the libraries in bin/; the install puts them in lib/, where the
    programs' RUNPATH $ORIGIN/../lib finds them: clean. Installed to bin/ instead, the
    installed program fails and the libraries are BT120."""
    recipe = tmp_path / "buildtool.toml"
    recipe.write_text(RECIPE.format(base="libggml-base.so", ggml="libggml.so").split("[verify]")[0])
    good = _configure(tmp_path / "good")
    assert _program_runs(tmp_path / "good" / "prefix") == ""
    assert _findings(run_cli, good, recipe) == []
    bad = _configure(tmp_path / "bad", "-DGGMLLIKE_LIB_DIR=bin")
    assert "cannot open shared object file" in _program_runs(tmp_path / "bad" / "prefix")
    assert ("BT120", "libggml.so.0.21.0") in _findings(run_cli, bad, recipe)


def test_the_runpath_hint_fits_the_files_folder(tmp_path: Path) -> None:
    """A program in bin/ that needs a library in lib/ without a RUNPATH fails to start; BT112
    says the RUNPATH that finds it from bin/ ($ORIGIN/../lib, not $ORIGIN), and with that
    RUNPATH it runs and is clean."""
    from tests.builders import check, gcc, lib

    lib(tmp_path / "lib", "ggml", "int ggml(void) { return 0; }\n")
    source = "int ggml(void);\nint main(void) { return ggml(); }\n"
    program = gcc(tmp_path / "lib", tmp_path / "bin" / "test-backend-ops", source, "-exe", "-lggml")
    assert subprocess.run([program], capture_output=True, check=False).returncode != 0
    (finding,) = check(tmp_path).findings
    assert finding.check_id == "BT112"
    assert finding.message.endswith("(RUNPATH $ORIGIN/../lib would find them)")
    subprocess.run(["patchelf", "--set-rpath", "$ORIGIN/../lib", program], check=True)
    assert subprocess.run([program], check=False).returncode == 0
    assert check(tmp_path).findings == ()
