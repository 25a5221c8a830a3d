"""A project shaped like google/sentencepiece (``tests/packages/spmlike``): the file names its
users link against (``output-name``, ``file``), default visibility (no export macros), bundled
object code owned by the runtime, tools, and split wheels named by the project
(``addon-distribution``). Built for real; the binaries are loaded and run."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from tests.conftest import PACKAGES, CliRunner

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

pytestmark = pytest.mark.integration


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "spmlike"
    shutil.copytree(PACKAGES / "spmlike", root)
    return root


def _exported(library: Path) -> set[str]:
    """Names the library's .dynsym defines with default visibility (what others can bind)."""
    with library.open("rb") as stream:
        table = ELFFile(stream).get_section_by_name(".dynsym")
        assert isinstance(table, SymbolTableSection)
        return {
            sym.name
            for sym in table.iter_symbols()
            if sym["st_shndx"] != "SHN_UNDEF" and sym["st_other"]["visibility"] == "STV_DEFAULT"
        }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from buildtool.cli import main

    root = _copy(tmp_path_factory.mktemp("spm"))
    argv = ["-q", "build", "--recipe", str(root / "buildtool.toml"), "-j", "2",
            "--build-dir", str(root / "build")]  # fmt: skip
    assert main(argv) == 0
    return root


def test_files_keep_the_names_users_link_against(built: Path) -> None:
    lib = built / "build" / "lib"
    assert sorted(p.name for p in lib.glob("*.so")) == [
        "libsentencepiece.so",
        "libsentencepiece_train.so",
    ]
    with (lib / "libsentencepiece_train.so").open("rb") as stream:
        dynamic = ELFFile(stream).get_section_by_name(".dynamic")
        assert isinstance(dynamic, DynamicSection)
        needed = [
            getattr(tag, "needed", "")
            for tag in dynamic.iter_tags()
            if tag.entry.d_tag == "DT_NEEDED"
        ]
    assert "libsentencepiece.so" in needed


def test_default_visibility_exports_what_has_no_export_macro(built: Path) -> None:
    lib = built / "build" / "lib"
    exported = _exported(lib / "libsentencepiece.so")
    assert "spm_encode_length" in exported
    assert any("3spm6Encode" in name for name in exported)  # spm::Encode, a C++ function
    assert any("9protolite9Serialize" in name for name in exported)  # the owned object code
    runtime = ctypes.CDLL(str(lib / "libsentencepiece.so"))
    assert runtime.spm_encode_length(b"abc", b"a-b-c-d") == len("a b c")


def test_configured_header_carries_the_version_and_options(built: Path) -> None:
    runtime = ctypes.CDLL(str(built / "build" / "lib" / "libsentencepiece.so"))
    runtime.spm_version.restype = ctypes.c_char_p
    assert runtime.spm_version() == b"0.2.0"
    assert runtime.spm_nfkc_enabled() == 1
    header = (built / "build" / "buildtool" / "include" / "config.h").read_text()
    assert '#define SPM_RELEASE "0.2.0"' in header
    assert "#define SPM_ENABLE_NFKC" in header


def test_a_missing_template_is_refused(tmp_path: Path, run_cli: CliRunner) -> None:
    root = _copy(tmp_path)
    (root / "src" / "config.h.in").unlink()
    result = run_cli("configure", "--recipe", str(root / "buildtool.toml"),
                     "--build-dir", str(root / "build"))  # fmt: skip
    assert result.exit_code == 2
    assert 'configured-headers."config.h".template: expected a template file' in result.stderr


def test_the_tools_run(built: Path) -> None:
    bin_dir = built / "build" / "bin"
    encoded = subprocess.run([bin_dir / "spm_encode", "abc", "aXbYc"], capture_output=True,
                             text=True, check=True)  # fmt: skip
    assert encoded.stdout == "a b c\n"
    trained = subprocess.run([bin_dir / "spm_train", "hello world"], capture_output=True,
                             text=True, check=True)  # fmt: skip
    assert trained.stdout == "helowrd\n"


def test_the_split_is_clean_and_names_its_halves(built: Path, run_cli: CliRunner) -> None:
    recipe = str(built / "buildtool.toml")
    result = run_cli("verify-linkage", str(built / "build"), "--recipe", recipe)
    assert result.exit_code == 0, result.stdout + result.stderr
    addon = tomllib.loads((built / "packaging" / "spmlike-train" / "pyproject.toml").read_text())
    assert addon["project"]["name"] == "spmlike-train"
    assert addon["project"]["dependencies"] == ["spmlike-runtime==0.2.0"]
    assert (built / "packaging" / "spmlike-runtime" / "pyproject.toml").is_file()


def test_hidden_visibility_breaks_a_project_without_export_macros(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    root = _copy(tmp_path)
    recipe = root / "buildtool.toml"
    recipe.write_text(recipe.read_text().replace('visibility = "default"', 'visibility = "hidden"'))
    result = run_cli("build", "--recipe", str(recipe), "--build-dir", str(root / "build"))
    assert result.exit_code == 1
    assert "undefined reference to `spm::Encode" in result.stderr
    assert "spm_encode_length" not in _exported(root / "build" / "lib" / "libsentencepiece.so")


def test_a_file_name_the_build_cannot_make_is_refused(tmp_path: Path, run_cli: CliRunner) -> None:
    root = _copy(tmp_path)
    recipe = root / "buildtool.toml"
    recipe.write_text(recipe.read_text().replace('"libsentencepiece_train.so"', '"train.so.1"'))
    result = run_cli("configure", "--recipe", str(recipe), "--build-dir", str(root / "build"))
    assert result.exit_code == 2
    assert "libraries.train.file: the generated build makes libspmlike_train.so" in result.stderr
    recipe.write_text(
        recipe.read_text().replace('"train.so.1"', '"libother.so"\noutput-name = "x"')
    )
    result = run_cli("configure", "--recipe", str(recipe), "--build-dir", str(root / "build"))
    assert result.exit_code == 2
    assert "libraries.train.file: output-name 'x' makes libx.so" in result.stderr


SESSION = """
import json, spmlike
from spmlike import base
result = {"runtime_only": base.runtime_only(), "loaded": sorted(base.loaded_libraries())}
model = "abcdelorhw"
try:
    model = spmlike.train("hello world")
    result["trained"] = model
except ImportError as error:
    result["train_error"] = str(error)
try:
    result["optional"] = type(base.optional_library("train")).__name__
except ImportError as error:
    result["optional_error"] = str(error)
pieces = spmlike.encode(model, "hello world")
result["pieces"] = pieces
result["decoded"] = spmlike.decode(model, pieces)
print(json.dumps(result))
"""


def _session(python: Path) -> dict[str, object]:
    import json

    ran = subprocess.run([python, "-c", SESSION], capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    loaded: dict[str, object] = json.loads(ran.stdout)
    return loaded


def _pip(python: Path, *argv: str) -> None:
    command = [sys.executable, "-m", "pip", "--python", str(python), "-q", *argv]
    subprocess.run(command, check=True, capture_output=True)


@pytest.mark.wheel
def test_split_wheels_train_with_the_addon_and_encode_runtime_only(
    tmp_path: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy(tmp_path)
    monkeypatch.chdir(root)
    assert run_cli("-q", "configure").exit_code == 0
    ci = run_cli("ci", "-j", "2", "--out-dir", "out", "--build-dir", "build")
    assert ci.exit_code == 0, ci.stdout + ci.stderr
    runtime_wheel = next((root / "out").glob("spmlike_runtime-0.2.0-*.whl"))
    addon_wheel = next((root / "out").glob("spmlike_train-0.2.0-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"

    _pip(python, "install", "--no-index", "--no-deps", str(runtime_wheel))
    runtime_only = _session(python)
    assert runtime_only["runtime_only"] is True
    assert runtime_only["loaded"] == ["sentencepiece"]
    assert "pip install spmlike-train" in str(runtime_only["train_error"])
    assert "install spmlike-train" in str(runtime_only["optional_error"])
    assert runtime_only["pieces"] == "h e l l o w o r l d"
    assert runtime_only["decoded"] == "helloworld"

    _pip(python, "install", "--no-index", "--no-deps", str(addon_wheel))
    full = _session(python)
    assert full["runtime_only"] is False
    assert full["loaded"] == ["sentencepiece", "train"]
    assert full["trained"] == "helowrd"
    assert full["optional"] == "CDLL"
    assert full["pieces"] == "h e l l o w o r l d"
    assert full["decoded"] == "helloworld"

    _pip(python, "uninstall", "-y", "spmlike-train")  # back to a working runtime-only install
    assert _session(python)["runtime_only"] is True


def test_extensions_ship_where_their_libraries_are(tmp_path: Path, run_cli: CliRunner) -> None:
    root = _copy(tmp_path)
    recipe = root / "buildtool.toml"
    text = recipe.read_text()
    recipe.write_text(text.replace("addon = true\n", ""))  # the trainer binding, with the package
    result = run_cli("configure", "--recipe", str(recipe), "--build-dir", str(root / "build"))
    assert result.exit_code == 2
    assert "extensions._trainer.links[0]: extension '_trainer' ships with the Python package" in (
        result.stderr
    )
    assert "set addon = true" in result.stderr
    module = 'sources = ["python_ext/processor_module.cc"]\nlinks = ["sentencepiece"]\n'
    recipe.write_text(text.replace(module, module + "addon = true\n"))
    result = run_cli("configure", "--recipe", str(recipe), "--build-dir", str(root / "build"))
    assert result.exit_code == 2
    assert "extensions._processor.addon: extension '_processor' ships in the add-on" in (
        result.stderr
    )
