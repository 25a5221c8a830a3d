"""A project shaped like ggml (tests/packages/ggmllike), configured and built for real: versioned
libraries (``libggml.so -> libggml.so.0 -> libggml.so.0.21.0``), a registry that opens backend
MODULE libraries from the program's folder (for each name the best-scoring variant: the CPU
variants are alternatives, blas and rpc resident beside them), programs named with dashes. The
recipe names each library once, by any of its names, and its rules hold for the file, its
SONAME and its version links; a library it names that no file is, is reported. Its
``[plugins]`` describe the modules as their host opens them, judged on the build tree and on
what ``cmake --install`` installs, each verdict against what the program really does.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

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


PLUGINS = """
[libraries.ggml-extra]
file = "libggml-extra.so"

[plugins.ggml-cpu-haswell]
host = "ggml"
alternatives = "cpu"
links = ["ggml-base"]
registers = ["ggmllike.backend.cpu"]

[plugins.ggml-cpu-zen4]
host = "ggml"
alternatives = "cpu"
links = ["ggml-base"]
registers = ["ggmllike.backend.cpu"]

[plugins.ggml-blas]
host = "ggml"
links = ["ggml-base"]
registers = ["ggmllike.backend.blas"]

[plugins.ggml-rpc]
host = "ggml"
links = ["ggml-base"]
registers = ["ggmllike.backend.rpc"]
"""
"""The backends as plugins of libggml, opened from the programs' folder (``bin``, ggml's)."""


def plugin_recipe(folder: Path, base: str = "libggml-base.so", ggml: str = "libggml.so") -> Path:
    """The recipe with the backends as plugins (``PLUGINS``), written into ``folder``."""
    recipe = folder / "plugins.toml"
    libraries = RECIPE.format(base=base, ggml=ggml).split("[verify]")[0]
    libraries = libraries.replace('name = "ggmllike"\n', 'name = "ggmllike"\nlibrary-prefix = ""\n')
    libraries = libraries.replace(
        'links = ["ggml-base"]\n', 'links = ["ggml-base"]\nplugin-folder = "bin"\n', 1
    )
    recipe.write_text(libraries + PLUGINS, encoding="utf-8")
    return recipe


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
    assert run.stdout.strip() == "blas rpc zen4"
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
    INSTALL_RPATH $ORIGIN/../lib: the build tree was 9 BT110 errors, now clean (with the
    backends described as the plugins they are), and the installed tree runs. An absolute
    INSTALL_RPATH is what breaks the install, and is judged."""
    good = _configure(tmp_path / "good")
    assert _program_runs(tmp_path / "good" / "prefix") == ""
    plugins = str(plugin_recipe(tmp_path))
    result = run_cli("verify-linkage", str(good), "--recipe", plugins, "--format", "json")
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


def _all_findings(run_cli: CliRunner, path: Path, recipe: Path) -> list[tuple[str, str]]:
    result = run_cli("verify-linkage", str(path), "--recipe", str(recipe), "--format", "json")
    document = json.loads(result.stdout)
    return sorted((f["id"], Path(f["path"]).name) for f in document["findings"])


def _backends(prefix: Path) -> subprocess.CompletedProcess[str]:
    """The installed program: the backends it loaded on stdout, what failed on stderr."""
    return subprocess.run([prefix / "bin" / "test-backend-ops"], capture_output=True, text=True,
                          check=False)  # fmt: skip


@pytest.mark.parametrize(
    ("base", "ggml"),
    [("libggml-base.so", "libggml.so"), ("libggml-base.so.0.21.0", "libggml.so.0")],
    ids=["link-names", "file-and-soname"],
)
def test_plugins_are_judged_as_their_host_opens_them(
    tmp_path: Path, run_cli: CliRunner, base: str, ggml: str
) -> None:
    """The modules are installed without a RUNPATH and call the registry's
    ggml_backend_register, which they do not NEED: they load, because libggml has loaded
    libggml-base and is in the global scope when it opens them, and the program runs every
    backend. Declared as plugins they are clean on the build tree and the install (no BT106,
    BT112, BT120): the CPU variants register one name and hold the same code, but are
    alternatives (one resident); blas and rpc are resident beside them with names of their
    own."""
    build = _configure(tmp_path)
    assert _backends(tmp_path / "prefix").stdout == "blas rpc zen4\n"
    recipe = plugin_recipe(tmp_path, base, ggml)
    assert _all_findings(run_cli, build, recipe) == []
    assert _all_findings(run_cli, tmp_path / "prefix", recipe) == []
    # Not declared, a module is judged as if opened on its own; the evidence says what to do.
    alone = run_cli("verify-linkage", str(build), "--no-recipe", "--format", "json")
    hints = {f["id"]: f["evidence"] for f in json.loads(alone.stdout)["findings"]}
    assert hints["BT106"].endswith("declare it as that library's plugin ([plugins]) to judge "
                                   "it with its host's closure loaded")  # fmt: skip


def test_a_plugin_needing_what_its_host_does_not_load_fails_and_is_caught(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    """blas needs libggml-extra, which libggml's closure lacks and blas's (absent) RUNPATH
    cannot find: dlopen fails and the registry carries on without blas. BT112 on blas, with the
    RUNPATH that finds it from bin/; with that RUNPATH blas loads and the install is clean."""
    _configure(tmp_path, "-DGGMLLIKE_BLAS_NEEDS_EXTRA=ON")
    prefix = tmp_path / "prefix"
    run = _backends(prefix)
    assert run.stdout == "rpc zen4\n"
    assert "libggml-blas.so: libggml-extra.so.0: cannot open shared object file" in run.stderr
    recipe = plugin_recipe(tmp_path)
    result = run_cli("verify-linkage", str(prefix), "--recipe", str(recipe), "--format", "json")
    found = [(f["id"], Path(f["path"]).name, f["message"])
             for f in json.loads(result.stdout)["findings"]]  # fmt: skip
    assert found == [("BT112", "libggml-blas.so", "needs libggml-extra.so.0, which ship with it, "
                      "but has no RUNPATH (RUNPATH $ORIGIN/../lib would find them)")]  # fmt: skip
    blas = prefix / "bin" / "libggml-blas.so"
    subprocess.run(["patchelf", "--set-rpath", "$ORIGIN/../lib", blas], check=True)
    assert _backends(prefix).stdout == "blas rpc zen4\n"
    assert _all_findings(run_cli, prefix, recipe) == []


def test_resident_plugins_registering_one_name_abort_and_are_caught(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    """blas registers rpc's name: both are resident, the registry aborts. BT104 on blas (and
    BT105: its own name is not in it); the CPU variants, which share a name as alternatives,
    stay clean."""
    build = _configure(tmp_path, "-DGGMLLIKE_BLAS_REGISTERS_RPC=ON")
    run = _backends(tmp_path / "prefix")
    assert run.returncode < 0
    assert "backend ggmllike.backend.rpc registered twice" in run.stderr
    recipe = plugin_recipe(tmp_path)
    expected = [("BT104", "libggml-blas.so"), ("BT105", "libggml-blas.so")]
    assert _all_findings(run_cli, tmp_path / "prefix", recipe) == expected
    assert _all_findings(run_cli, build, recipe) == expected


def test_plugins_outside_their_hosts_folder_are_not_found_and_are_caught(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    """Installed into lib/ beside libggml, the backends are not where the registry looks (the
    program's folder): the program finds none. BT128 on each, in the install and in the build
    tree (whose install scripts say where they go)."""
    build = _configure(tmp_path, "-DGGMLLIKE_PLUGIN_DIR=lib")
    run = _backends(tmp_path / "prefix")
    assert (run.returncode, run.stderr) == (1, "no backend\n")
    recipe = plugin_recipe(tmp_path)
    expected = [
        ("BT128", f"libggml-{name}.so") for name in ("blas", "cpu-haswell", "cpu-zen4", "rpc")
    ]
    assert _all_findings(run_cli, tmp_path / "prefix", recipe) == expected
    assert _all_findings(run_cli, build, recipe) == expected


def test_a_plugin_built_for_another_machine_is_caught(tmp_path: Path, run_cli: CliRunner) -> None:
    """An aarch64 build of rpc in the x86-64 install: dlopen fails, the program runs without
    it; BT128 on it."""
    from tests.conftest import require

    compiler = "aarch64-linux-gnu-gcc"
    require(shutil.which(compiler) is not None, f"{compiler} is not installed")
    _configure(tmp_path)
    prefix = tmp_path / "prefix"
    rpc = prefix / "bin" / "libggml-rpc.so"
    source = PACKAGES / "ggmllike" / "src" / "rpc.c"
    defines = ["-DBACKEND=rpc", "-DREGISTERS=ggmllike.backend.rpc"]
    subprocess.run([compiler, "-shared", "-fPIC", *defines, "-o", rpc, source], check=True)
    run = _backends(prefix)
    assert run.stdout == "blas zen4\n"
    assert f"cannot open {rpc}" in run.stderr
    result = run_cli("verify-linkage", str(prefix), "--recipe", str(plugin_recipe(tmp_path)),
                     "--format", "json")  # fmt: skip
    found = [(f["id"], f["message"]) for f in json.loads(result.stdout)["findings"]
             if Path(f["path"]).name == "libggml-rpc.so"]  # fmt: skip
    assert ("BT128", "is built for aarch64 (64-bit), its host libggml.so.0.21.0 for x86_64 "
            "(64-bit): the host cannot open it") in found  # fmt: skip


def test_init_writes_the_backends_as_plugins_of_the_registry(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    """init finds each module's host in the code model (libggml depends on the modules without
    linking them), its plugin folder in the install rules (bin/), and the CPU variants, which
    compile the same sources, as alternatives; each variant's feats object library has its
    variant as its one owner (init used to say "give it one owner"). With that recipe
    check-cmake and verify-linkage are clean on the build tree and the install; the variants
    resident side by side would be BT202 (one source compiled into two modules ggml opens)."""
    from buildtool.recipe.load import load_recipe

    build = _configure(tmp_path)
    recipe = tmp_path / "init.toml"
    assert run_cli("init", "--from-cmake", str(build), "--output", str(recipe)).exit_code == 0
    text = recipe.read_text(encoding="utf-8")
    assert "give it one owner" not in text
    written = load_recipe(recipe).recipe
    assert written.libraries["ggml"].plugin_folder == "bin"
    plugins = {name: (p.host, p.alternatives, p.objects) for name, p in written.plugins.items()}
    assert plugins == {
        "ggml-blas": ("ggml", "", ()),
        "ggml-cpu-haswell": ("ggml", "ggml-cpu", ("ggml-cpu-haswell-feats",)),
        "ggml-cpu-zen4": ("ggml", "ggml-cpu", ("ggml-cpu-zen4-feats",)),
        "ggml-rpc": ("ggml", "", ()),
    }
    checked = run_cli("check-cmake", str(build), "--recipe", str(recipe), "--format", "json")
    assert (checked.exit_code, json.loads(checked.stdout)["findings"]) == (0, [])
    assert _all_findings(run_cli, build, recipe) == []
    assert _all_findings(run_cli, tmp_path / "prefix", recipe) == []
    resident = tmp_path / "resident.toml"
    resident.write_text(text.replace('alternatives = "ggml-cpu"\n', ""), encoding="utf-8")
    checked = run_cli("check-cmake", str(build), "--recipe", str(resident), "--format", "json")
    found = [(f["id"], f["message"]) for f in json.loads(checked.stdout)["findings"]]
    assert found == [("BT202", "target ggml-cpu-zen4 (CMakeLists.txt:35): src/cpu.c is also "
                      "compiled into ggml-cpu-haswell, and ggml opens both")]  # fmt: skip


def _needing(folder: Path, name: str) -> list[Path]:
    """The ELF files in ``folder`` (not its links) whose DT_NEEDED names ``name``, read with
    pyelftools."""
    found = []
    for path in sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink()):
        with path.open("rb") as stream:
            if stream.read(4) != b"\x7fELF":
                continue
            stream.seek(0)
            dynamic = ELFFile(stream).get_section_by_name(".dynamic")
            assert isinstance(dynamic, DynamicSection)
            tags = dynamic.iter_tags()
            needed = [getattr(tag, "needed", "") for tag in tags if tag.entry.d_tag == "DT_NEEDED"]
        if name in needed:
            found.append(path)
    return found


def _load_error(path: Path, *first: Path) -> str:
    """What the loader says when ``ctypes.CDLL`` loads ``path`` in a fresh interpreter, after
    ``first`` (a plugin's host: RTLD_GLOBAL, as it opens them)."""
    code = (
        "import ctypes, sys\n"
        "for host in sys.argv[2:]: ctypes.CDLL(host, mode=ctypes.RTLD_GLOBAL)\n"
        "ctypes.CDLL(sys.argv[1])"
    )
    loaded = subprocess.run([sys.executable, "-c", code, str(path), *map(str, first)],
                            capture_output=True, text=True, check=False)  # fmt: skip
    return loaded.stderr.strip().splitlines()[-1] if loaded.returncode else ""


def test_a_deleted_library_is_one_finding_listing_every_file_it_hits(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    """libggml-base deleted from the build: each file that needs it fails to load, and the
    program fails to start; the report names the library once and lists those files, in
    text, JSON, GitHub annotations and HTML (before: a BT109 per file). The build with the
    library has no such finding, and everything loads."""
    build = _configure(tmp_path)
    needing = _needing(build / "bin", "libggml-base.so.0")
    assert {p.name for p in needing} >= {"libggml.so.0.21.0", "libggml-cpu-zen4.so"}
    host = build / "bin" / "libggml.so.0"
    assert [_load_error(path, host) for path in needing] == [""] * len(needing)
    clean = json.loads(
        run_cli("verify-linkage", str(build), "--no-recipe", "--format", "json").stdout
    )
    assert [f for f in clean["findings"] if f["id"] == "BT109"] == []

    for library in (build / "bin").glob("libggml-base.so*"):
        library.unlink()
    for path in needing:
        assert "libggml-base.so.0: cannot open shared object file" in _load_error(path)
    assert "libggml" in _program_fails(build / "bin" / "test-backend-ops")

    result = run_cli("verify-linkage", str(build), "--no-recipe", "--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    (finding,) = [f for f in document["findings"] if f["id"] == "BT109"]
    assert "libggml-base.so.0" in finding["message"]
    assert finding["files"] == [str(path) for path in needing]
    assert finding["path"] == finding["files"][0]
    assert document["summary"]["errors"] == 1

    text = run_cli("verify-linkage", str(build), "--no-recipe").stdout
    assert text.count("BT109 needed-not-shipped: needs libggml-base.so.0") == 1
    assert f"in {len(needing)} files: bin/" in text
    assert f"BT109 needed-not-shipped: 1 finding in {len(needing)} files" in text
    github = run_cli("verify-linkage", str(build), "--no-recipe", "--format", "github").stdout
    (annotation,) = [line for line in github.splitlines() if "title=BT109" in line]
    assert annotation.startswith(f"::error file={needing[0]},")
    assert all(str(path) in annotation for path in needing)
    page = tmp_path / "report.html"
    run_cli("verify-linkage", str(build), "--no-recipe", "--format", "html", "--output", str(page))
    (row,) = re.findall(
        r'<tr id="[^"]*finding-\d+" class="finding error">.*?</tr>', page.read_text()
    )
    assert all(f">{path.name}<" in row for path in needing)


def _program_fails(program: Path) -> str:
    """What ``program`` says on stderr when it fails to start ('' when it runs)."""
    run = subprocess.run([program], capture_output=True, text=True, check=False)
    return run.stderr.strip() if run.returncode else ""


def test_a_plugin_binds_its_hosts_symbols_only_when_the_host_is_global(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    """The modules call libggml's ggml_backend_register without NEEDing libggml. Opened
    RTLD_GLOBAL (a program linking it, the recipe's default load), libggml's symbols are in the
    global scope and the modules load; opened RTLD_LOCAL (load = "local"), dlopen fails with
    "undefined symbol" and every module is BT106."""
    import ctypes

    _configure(tmp_path)
    lib = tmp_path / "prefix" / "lib"
    script = (
        "import ctypes, sys\n"
        f"ctypes.CDLL({str(lib / 'libggml-base.so.0')!r}, ctypes.RTLD_GLOBAL)\n"
        f"ggml = ctypes.CDLL({str(lib / 'libggml.so.0')!r}, int(sys.argv[1]))\n"
        "ggml.ggml_backend_load_all.restype = ctypes.c_char_p\n"
        f"print(ggml.ggml_backend_load_all({str(tmp_path / 'prefix' / 'bin')!r}.encode()))\n"
    )
    modes = {"global": ctypes.RTLD_GLOBAL, "local": ctypes.RTLD_LOCAL}
    runs = {load: subprocess.run([sys.executable, "-c", script, str(mode)], capture_output=True,
                                 text=True, check=True)
            for load, mode in modes.items()}  # fmt: skip
    assert runs["global"].stdout == "b'blas rpc zen4'\n"
    assert runs["local"].stdout == "None\n"
    assert "libggml-rpc.so: undefined symbol: ggml_backend_register" in runs["local"].stderr
    recipe = plugin_recipe(tmp_path)
    assert _all_findings(run_cli, tmp_path / "prefix", recipe) == []
    text = recipe.read_text(encoding="utf-8")
    recipe.write_text(
        text.replace('plugin-folder = "bin"\n', 'plugin-folder = "bin"\nload = "local"\n')
    )
    result = run_cli("verify-linkage", str(tmp_path / "prefix"), "--recipe", str(recipe),
                     "--format", "json")  # fmt: skip
    found = [(f["id"], Path(f["path"]).name, f["evidence"])
             for f in json.loads(result.stdout)["findings"]]  # fmt: skip
    evidence = ("1 undefined: ggml_backend_register (closure: libggml-base.so.0); its host "
                'libggml.so.0.21.0 is opened RTLD_LOCAL (load = "local"), so only what the '
                "plugin NEEDs is in its scope")  # fmt: skip
    assert found == [("BT106", f"libggml-{name}.so", evidence)
                     for name in ("blas", "cpu-haswell", "cpu-zen4", "rpc")]  # fmt: skip
