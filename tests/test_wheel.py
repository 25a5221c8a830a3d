"""``buildtool wheel``: distributions, repair commands, content checks, and real installs.

The tests marked ``wheel`` build the example's wheels once per session (full with its sdist, and
split), install them with pip into fresh virtual environments and import them there.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import subprocess
import sys
import venv
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from buildtool import process
from buildtool.cmake.configure import plan_recipe
from buildtool.errors import ChecksFailed
from buildtool.packaging import repair, wheel
from buildtool.packaging.distributions import (
    WheelVariant,
    all_distributions,
    render_pyprojects,
    split_distributions,
)
from buildtool.plan import LinkPlan
from buildtool.recipe.load import load_recipe
from buildtool.recipe.model import WheelSettings
from buildtool.resources import read_templates
from tests.conftest import DEMO_RECIPE, REPO, CliRunner

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

PACKAGE_FILES = {"demo/__init__.py", "demo/base.py", "demo/libinfo.py"}
LIB = "demo/lib/"


def demo_plan() -> LinkPlan:
    return plan_recipe(load_recipe(DEMO_RECIPE))


def registered(plan: LinkPlan, *, runtime_only: bool) -> list[str]:
    optional = {lib.name for lib in plan.libraries if lib.optional}
    return sorted(
        name for name, lib in plan.registrations if not (runtime_only and lib in optional)
    )


# --- pure: distributions, commands, content checks --------------------------------------------


def test_split_distributions_never_own_the_same_file() -> None:
    plan = demo_plan()
    runtime, compiler = split_distributions(plan)
    assert (runtime.name, compiler.name) == ("demo-runtime", "demo-compiler")
    assert runtime.components == ("python", "ffi", "runtime")
    assert compiler.components == ("compiler",)
    assert runtime.defines == (("DEMO_BUILD_COMPILER", "OFF"),)
    assert compiler.defines == (("DEMO_BUILD_COMPILER", "ON"),)
    assert compiler.dependencies == ("demo-runtime==0.1.0",)
    files = {
        d.name: wheel.expected_files(plan, d, frozenset(PACKAGE_FILES)) for d in (runtime, compiler)
    }
    assert not files["demo-runtime"] & files["demo-compiler"]


def test_generated_pyprojects_point_back_at_the_project_root() -> None:
    plan = demo_plan()
    files = render_pyprojects(plan, WheelSettings(), read_templates("packaging"))
    assert sorted(files) == [
        "packaging/demo-compiler/pyproject.toml",
        "packaging/demo-runtime/pyproject.toml",
        "pyproject.toml",
    ]
    runtime = tomllib.loads(files["packaging/demo-runtime/pyproject.toml"])
    skb = runtime["tool"]["scikit-build"]
    assert skb["cmake"]["source-dir"] == "../.."
    assert skb["wheel"]["packages"] == []
    assert skb["install"]["components"] == ["python", "ffi", "runtime"]
    assert skb["cmake"]["define"] == {"DEMO_BUILD_COMPILER": "OFF"}
    full = tomllib.loads(files["pyproject.toml"])
    assert full["project"]["name"] == "demo"
    assert full["tool"]["scikit-build"]["cmake"]["source-dir"] == "."
    assert [d.project_dir for d in all_distributions(plan)] == [
        ".",
        "packaging/demo-runtime",
        "packaging/demo-compiler",
    ]


def test_auditwheel_excludes_every_own_library(tmp_path: Path) -> None:
    plan = demo_plan()
    command = repair.auditwheel_command(tmp_path / "w.whl", tmp_path / "out", plan, "auto")
    excluded = [command[i + 1] for i, part in enumerate(command) if part == "--exclude"]
    assert len(excluded) == len(plan.libraries)  # one glob each (auditwheel fnmatches SONAMEs)
    for lib in plan.libraries:
        assert [p for p in excluded if fnmatch.fnmatch(lib.file_name, p)] == [f"{lib.file_name}*"]
    assert "--only-plat" not in command
    pinned = repair.auditwheel_command(tmp_path / "w.whl", tmp_path, plan, "manylinux_2_34_x86_64")
    assert pinned[pinned.index("--plat") + 1] == "manylinux_2_34_x86_64"
    assert "--only-plat" in pinned


def test_wheel_build_environment_drops_ld_library_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LD_LIBRARY_PATH", "/somewhere/build/lib")
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    env = process.tool_environment(wheel_build=True)
    assert "LD_LIBRARY_PATH" not in env
    assert env["SOURCE_DATE_EPOCH"] == process.REPRODUCIBLE_EPOCH
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert process.tool_environment(wheel_build=True)["SOURCE_DATE_EPOCH"] == "1700000000"


def test_content_problems_name_strays_missing_files_and_grafted_copies() -> None:
    plan = demo_plan()
    expected = {"demo/__init__.py", "demo/lib/libdemo_runtime.so"}
    members = [
        "demo/",
        "demo/__init__.py",
        "demo/stray.txt",
        "demo-0.1.0.dist-info/RECORD",
        "demo.libs/libgomp-abc123.so.1",
        "demo.libs/libdemo_runtime-1a2b3c4d.so",
    ]
    assert wheel.content_problems(members, expected, plan) == [
        "demo.libs/libdemo_runtime-1a2b3c4d.so: a grafted copy of a project library",
        "demo/stray.txt: unexpected",
        "demo/lib/libdemo_runtime.so: missing",
    ]


def test_wheel_has_split_not_variant_which_means_the_libraries_built(run_cli: CliRunner) -> None:
    """``--variant`` chooses the libraries configure and build make (full|runtime); which
    wheels ``wheel`` makes is ``--split``: one meaning per option name."""
    result = run_cli("wheel", "--variant", "split")
    assert result.exit_code == 2
    assert "usage: buildtool wheel" in result.stderr
    assert "[--split]" in result.stderr
    assert "unrecognized arguments: --variant split" in result.stderr


# --- real wheels --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def build_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wheel-build")


def build(
    out_dir: Path,
    build_root: Path,
    variant: WheelVariant,
    *,
    sdist: bool = False,
    verify: wheel.WheelVerifier | None = None,
) -> list[Path]:
    loaded = load_recipe(DEMO_RECIPE)
    request = wheel.WheelRequest(loaded, variant, out_dir, build_root, sdist=sdist)
    return [artifact.path for artifact in wheel.build_wheels(request, verify=verify)]


@pytest.fixture(scope="session")
def full_dist(tmp_path_factory: pytest.TempPathFactory, build_root: Path) -> Path:
    out = tmp_path_factory.mktemp("dist-full")
    build(out, build_root, "full", sdist=True)
    return out


@pytest.fixture(scope="session")
def split_dist(tmp_path_factory: pytest.TempPathFactory, build_root: Path) -> Path:
    out = tmp_path_factory.mktemp("dist-split")
    build(out, build_root, "split")
    return out


def one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, (pattern, found)
    return found[0]


def wheel_files(path: Path) -> set[str]:
    with zipfile.ZipFile(path) as archive:
        return {name for name in archive.namelist() if not name.endswith("/")}


def clean_environment() -> dict[str, str]:
    drop = ("LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("DEMO_")}


class Venv:
    """A fresh virtual environment driven through its own python."""

    def __init__(self, folder: Path) -> None:
        venv.EnvBuilder(with_pip=True).create(folder)
        self.python = folder / "bin" / "python"

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), *args],
            env={**clean_environment(), **(env or {})},
            capture_output=True,
            text=True,
            check=False,
            cwd="/",
        )

    def pip(self, *args: str) -> None:
        result = self.run("-m", "pip", "--disable-pip-version-check", "-q", *args)
        assert result.returncode == 0, result.stdout + result.stderr

    def probe(self, env: dict[str, str] | None = None, script: str = "") -> dict[str, object]:
        result = self.run("-c", PROBE + script, env=env)
        assert result.returncode == 0, result.stderr
        data: dict[str, object] = json.loads(result.stdout.splitlines()[-1])
        return data


PROBE = """
import json, os, demo, demo.base as base
def mapped(stem):
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps}
    return sorted(p for p in paths if os.path.basename(p).startswith(stem))
facts = {
    "names": demo.list_global_functions(),
    "runtime_only": demo._RUNTIME_ONLY,
    "lib_is_runtime": base._LIB is base._LIB_RUNTIME,
    "loaded": {name: lib._name for name, lib in base._LIBS.items()},
    "shape_size": demo.call("rpc.testing.GetShapeSize", 2, 3, 4),
    "runtime_maps": mapped("libdemo_runtime"),
}
"""
PRINT = "print(json.dumps(facts))\n"
TVM_FFI_PROBE = """
from tvm_ffi.libinfo import load_lib_ctypes
facts["tvm_ffi"] = {t: load_lib_ctypes(d, t, m)._name for d, t, m in LOOKUPS}
facts["runtime_maps_after"] = mapped("libdemo_runtime")
"""


def install_venv(folder: Path, dist: Path, *requirements: str) -> Venv:
    environment = Venv(folder)
    environment.pip("install", "--no-index", "--find-links", str(dist), *requirements)
    environment.pip("install", "apache-tvm-ffi")
    return environment


@pytest.fixture(scope="session")
def full_venv(tmp_path_factory: pytest.TempPathFactory, full_dist: Path) -> Venv:
    return install_venv(tmp_path_factory.mktemp("venv-full"), full_dist, "demo")


@pytest.fixture(scope="session")
def split_venv(tmp_path_factory: pytest.TempPathFactory, split_dist: Path) -> Venv:
    return install_venv(tmp_path_factory.mktemp("venv-split"), split_dist, "demo-runtime")


@pytest.mark.wheel
def test_full_wheel_contents(full_dist: Path) -> None:
    full = one(full_dist, "demo-0.1.0-py3-none-*.whl")
    assert wheel_files(full) == PACKAGE_FILES | {
        f"{LIB}libdemo_ffi.so",
        f"{LIB}libdemo_runtime.so",
        f"{LIB}libdemo_compiler.so",
        "demo-0.1.0.dist-info/METADATA",
        "demo-0.1.0.dist-info/WHEEL",
        "demo-0.1.0.dist-info/RECORD",
    }
    assert "manylinux" in full.name


@pytest.mark.wheel
def test_split_wheel_contents(split_dist: Path) -> None:
    runtime = wheel_files(one(split_dist, "demo_runtime-0.1.0-py3-none-*.whl"))
    compiler_wheel = one(split_dist, "demo_compiler-0.1.0-py3-none-*.whl")
    compiler = wheel_files(compiler_wheel)
    assert runtime == PACKAGE_FILES | {
        f"{LIB}libdemo_ffi.so",
        f"{LIB}libdemo_runtime.so",
        "demo_runtime-0.1.0.dist-info/METADATA",
        "demo_runtime-0.1.0.dist-info/WHEEL",
        "demo_runtime-0.1.0.dist-info/RECORD",
    }
    assert compiler == {
        f"{LIB}libdemo_compiler.so",
        "demo_compiler-0.1.0.dist-info/METADATA",
        "demo_compiler-0.1.0.dist-info/WHEEL",
        "demo_compiler-0.1.0.dist-info/RECORD",
    }
    with zipfile.ZipFile(compiler_wheel) as archive:
        metadata = archive.read("demo_compiler-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: demo-runtime==0.1.0" in metadata.splitlines()


@pytest.mark.wheel
def test_rebuild_in_another_build_root_gives_identical_wheels(
    full_dist: Path, build_root: Path, tmp_path: Path, run_cli: CliRunner
) -> None:
    """Same sources, recipe and toolchain, another build folder: the same bytes, and no build
    path in any member (-ffile-prefix-map, RUNPATH $ORIGIN, fixed zip timestamps)."""
    other_root, out = tmp_path / "elsewhere" / "build", tmp_path / "dist"
    result = run_cli("-q", "wheel", "--build-root", str(other_root), "--out-dir", str(out))
    assert result.exit_code == 0, result.stderr
    first, second = one(full_dist, "demo-0.1.0-*.whl"), one(out, "demo-0.1.0-*.whl")
    assert first.name == second.name
    assert sha256(first) == sha256(second)
    with zipfile.ZipFile(second) as archive:
        for info in archive.infolist():
            content = archive.read(info)
            for folder in (build_root, other_root, tmp_path, REPO):
                assert str(folder).encode() not in content, (info.filename, folder)
            assert info.date_time == (1980, 1, 1, 0, 0, 0), info.filename


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.wheel
def test_wheel_sizes_are_reported(
    full_dist: Path, split_dist: Path, record_property: Callable[[str, object], None]
) -> None:
    full = one(full_dist, "demo-0.1.0-*.whl").stat().st_size
    runtime = one(split_dist, "demo_runtime-*.whl").stat().st_size
    compiler = one(split_dist, "demo_compiler-*.whl").stat().st_size
    record_property("wheel_bytes_full", full)
    record_property("wheel_bytes_runtime", runtime)
    record_property("wheel_bytes_compiler", compiler)
    share = f"{runtime / full:.0%}"
    print(f"wheel sizes: full {full} B, runtime {runtime} B ({share}), add-on {compiler} B")
    assert runtime < full


@pytest.mark.wheel
def test_full_wheel_loads_both_libraries(full_venv: Venv) -> None:
    plan = demo_plan()
    facts = full_venv.probe(script=f"LOOKUPS = {LOOKUPS_FULL!r}\n" + TVM_FFI_PROBE + PRINT)
    assert facts["names"] == registered(plan, runtime_only=False)
    assert facts["runtime_only"] is False
    assert facts["lib_is_runtime"] is False
    assert list(facts["loaded"]) == ["ffi", "runtime", "compiler"]  # type: ignore[call-overload]
    assert facts["shape_size"] == "24"
    maps = facts["runtime_maps"]
    assert isinstance(maps, list)
    assert len(maps) == 1
    assert maps[0].endswith("/site-packages/demo/lib/libdemo_runtime.so")
    # tvm_ffi's loader finds the very same files through the distribution's RECORD.
    assert facts["tvm_ffi"] == {
        "demo_runtime": maps[0],
        "demo_compiler": maps[0].replace("libdemo_runtime", "libdemo_compiler"),
    }
    assert facts["runtime_maps_after"] == maps


LOOKUPS_FULL = [("demo", "demo_runtime", "RTLD_GLOBAL"), ("demo", "demo_compiler", "RTLD_LOCAL")]
LOOKUPS_SPLIT = [
    ("demo-runtime", "demo_runtime", "RTLD_GLOBAL"),
    ("demo-compiler", "demo_compiler", "RTLD_LOCAL"),
]


@pytest.mark.wheel
@pytest.mark.parametrize(
    ("value", "runtime_only"),
    [
        ("1", True),
        ("true", True),
        ("yes", True),
        ("0", False),
        ("false", False),
        ("no", False),
        ("", False),
    ],
)
def test_use_runtime_lib_in_an_installed_package(
    full_venv: Venv, value: str, runtime_only: bool
) -> None:
    facts = full_venv.probe(env={"DEMO_USE_RUNTIME_LIB": value}, script=PRINT)
    assert facts["runtime_only"] is runtime_only
    assert facts["lib_is_runtime"] is runtime_only
    assert facts["names"] == registered(demo_plan(), runtime_only=runtime_only)


@pytest.mark.wheel
def test_use_runtime_lib_rejected_value_in_an_installed_package(full_venv: Venv) -> None:
    result = full_venv.run("-c", "import demo", env={"DEMO_USE_RUNTIME_LIB": "maybe"})
    assert result.returncode == 1
    assert "DEMO_USE_RUNTIME_LIB='maybe' is not understood" in result.stderr
    assert "1, true or yes" in result.stderr


@pytest.mark.wheel
def test_runtime_wheel_then_compiler_add_on_then_back(split_venv: Venv, split_dist: Path) -> None:
    plan = demo_plan()
    alone = split_venv.probe(script=PRINT)
    assert alone["names"] == registered(plan, runtime_only=True)
    assert alone["runtime_only"] is True
    assert alone["lib_is_runtime"] is True
    assert alone["shape_size"] == "24"  # a minrpc-style lookup, runtime only

    split_venv.pip("install", "--no-index", "--find-links", str(split_dist), "demo-compiler")
    both = split_venv.probe(script=f"LOOKUPS = {LOOKUPS_SPLIT!r}\n" + TVM_FFI_PROBE + PRINT)
    assert both["names"] == registered(plan, runtime_only=False)
    assert both["runtime_only"] is False
    maps = both["runtime_maps"]
    assert isinstance(maps, list)
    assert len(maps) == 1
    tvm_ffi = both["tvm_ffi"]
    assert isinstance(tvm_ffi, dict)
    assert tvm_ffi["demo_runtime"] == maps[0]
    assert tvm_ffi["demo_compiler"] == maps[0].replace("libdemo_runtime", "libdemo_compiler")
    assert both["runtime_maps_after"] == maps

    split_venv.pip("uninstall", "-y", "demo-compiler")
    again = split_venv.probe(script=PRINT)
    assert again == alone
    lib_dir = Path(maps[0]).parent
    assert sorted(p.name for p in lib_dir.iterdir()) == ["libdemo_ffi.so", "libdemo_runtime.so"]


@pytest.mark.wheel
def test_failed_verification_publishes_nothing(tmp_path: Path, build_root: Path) -> None:
    out = tmp_path / "dist"
    out.mkdir()
    (out / "keep.txt").write_text("untouched", encoding="utf-8")

    def reject(wheels: Sequence[Path], plan: LinkPlan, published: Sequence[Path] = ()) -> None:
        names = ", ".join(path.name for path in published or wheels)
        raise ChecksFailed(f"{names}: rejected for the test ({plan.project.name})")

    with pytest.raises(ChecksFailed, match="rejected for the test"):
        build(out, build_root, "split", verify=reject)
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


@pytest.mark.wheel
def test_sdist_builds_without_git(full_dist: Path, tmp_path: Path) -> None:
    sdist = one(full_dist, "demo-0.1.0.tar.gz")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-build-isolation",
            "--no-deps",
            "-q",
            "--disable-pip-version-check",
            "--wheel-dir",
            str(tmp_path),
            str(sdist),
        ],
        env=clean_environment(),
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    built = one(tmp_path, "demo-0.1.0-*.whl")
    with zipfile.ZipFile(built) as archive:
        compiler = archive.read(f"{LIB}libdemo_compiler.so")
    # Unpacked outside any repository, the build info falls back instead of failing.
    assert b"git=unknown" in compiler


@pytest.fixture(autouse=True)
def _no_demo_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("DEMO_"):
            monkeypatch.delenv(name)


PLUGIN_WHEELS = """\
[project]
name = "ggmlplug"
version = "0.21.0"
library-prefix = ""
python-package-dir = "python/ggmlplug"

[libraries.ggml-base]
[libraries.ggml]
links = ["ggml-base"]
[libraries.ggml-extra]
optional = true

[plugins.ggml-cpu]
host = "ggml"
links = ["ggml-base"]
[plugins.ggml-rpc]
host = "ggml"
distribution = "ggmlplug-net"
[plugins.ggml-mpi]
host = "ggml"
distribution = "ggmlplug-net"
[plugins.ggml-blas]
host = "ggml"
links = ["ggml-extra"]
distribution = "ggmlplug-blas"
"""


@pytest.mark.parametrize("with_addon", [True, False], ids=["optional-library", "none-optional"])
def test_plugins_with_a_distribution_ship_in_wheels_of_their_own(
    tmp_path: Path, with_addon: bool
) -> None:
    """A plugin's own wheel holds only its plugins (two naming one distribution share it) and
    requires its host's wheel; one linking an optional library requires the add-on too, which
    holds what it needs (libggml-extra). Without an optional library there is no add-on, and a
    plugin wheel alone makes the split."""
    text = PLUGIN_WHEELS
    if not with_addon:
        text = text.replace("[libraries.ggml-extra]\noptional = true\n", "")
        text = text.replace('links = ["ggml-extra"]\n', "")
    path = tmp_path / "buildtool.toml"
    path.write_text(text, encoding="utf-8")
    plan = plan_recipe(load_recipe(path))
    dists = {dist.name: dist for dist in split_distributions(plan)}
    addon = ["ggmlplug-compiler"] if with_addon else []
    assert list(dists) == ["ggmlplug-runtime", *addon, "ggmlplug-blas", "ggmlplug-net"]
    assert dists["ggmlplug-runtime"].plugins == ("ggml-cpu",)
    assert dists["ggmlplug-net"].components == ("ggml-mpi", "ggml-rpc")
    assert dists["ggmlplug-net"].dependencies == ("ggmlplug-runtime==0.21.0",)
    assert dists["ggmlplug-blas"].dependencies == (
        "ggmlplug-runtime==0.21.0", *(f"{name}==0.21.0" for name in addon))  # fmt: skip
    if with_addon:
        assert dists["ggmlplug-compiler"].components == ("ggml-extra",)
    files = {name: wheel.expected_files(plan, d, frozenset()) for name, d in dists.items()}
    assert sum(len(f) for f in files.values()) == len(set().union(*files.values()))
    assert files["ggmlplug-blas"] == {"ggmlplug/lib/libggml-blas.so"}
