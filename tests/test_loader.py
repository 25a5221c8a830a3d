"""The loader rendered into the example's package: search order, strict variables, fallbacks.

The rendered ``libinfo`` is imported from a throw-away checkout layout (``<checkout>/src/python/
demo``) with empty files standing in for libraries; the tests that really load libraries build
tiny ones with the C compiler.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from buildtool.cmake.configure import generated_files, plan_recipe
from buildtool.packaging.loader import file_stem, render_loader, worktree_levels
from buildtool.plan import LinkPlan
from buildtool.recipe.load import load_recipe
from buildtool.resources import read_templates
from tests.conftest import DEMO_RECIPE, REPO

PACKAGE_DIR = Path("src") / "python" / "demo"
LIB_NAMES = {
    "ffi": "libdemo_ffi.so",
    "runtime": "libdemo_runtime.so",
    "compiler": "libdemo_compiler.so",
}


def demo_plan() -> LinkPlan:
    return plan_recipe(load_recipe(DEMO_RECIPE))


@dataclasses.dataclass(frozen=True)
class Checkout:
    """A fake source checkout holding the rendered package."""

    root: Path

    @property
    def package(self) -> Path:
        return self.root / PACKAGE_DIR

    def put_libraries(self, folder: Path, *names: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            (folder / LIB_NAMES[name]).write_bytes(b"")
        return folder

    def libinfo(self) -> ModuleType:
        path = self.package / "libinfo.py"
        spec = importlib.util.spec_from_file_location(f"libinfo_{abs(hash(path))}", path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


def render_into(root: Path) -> Checkout:
    files = render_loader(demo_plan(), read_templates("loader"))
    for relative, text in files.items():
        target = root / "src" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return Checkout(root)


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    return render_into(tmp_path / "checkout")


@pytest.mark.parametrize("value", ["1", "true", "yes", "TRUE", "Yes"])
def test_use_runtime_lib_accepts_true_values(checkout: Checkout, value: str) -> None:
    assert checkout.libinfo().use_runtime_lib({"DEMO_USE_RUNTIME_LIB": value}) is True


@pytest.mark.parametrize("value", ["0", "false", "no", "", "FALSE", "No"])
def test_use_runtime_lib_accepts_false_values(checkout: Checkout, value: str) -> None:
    assert checkout.libinfo().use_runtime_lib({"DEMO_USE_RUNTIME_LIB": value}) is False


def test_use_runtime_lib_is_off_when_unset(checkout: Checkout) -> None:
    assert checkout.libinfo().use_runtime_lib({}) is False


@pytest.mark.parametrize("value", ["maybe", "2", " 1", "on", "y"])
def test_use_runtime_lib_rejects_anything_else(checkout: Checkout, value: str) -> None:
    with pytest.raises(ValueError, match="DEMO_USE_RUNTIME_LIB=") as error:
        checkout.libinfo().use_runtime_lib({"DEMO_USE_RUNTIME_LIB": value})
    message = str(error.value)
    assert repr(value) in message
    assert "1, true or yes" in message
    assert "0, false, no, an empty value" in message


def test_search_order_is_variable_then_wheel_then_worktrees_nearest_first(
    checkout: Checkout,
) -> None:
    environ = {"DEMO_LIBRARY_PATH": os.pathsep.join(["/opt/a", "", "/opt/b"])}
    paths = checkout.libinfo().package_lib_paths(environ)
    src = checkout.root / "src"
    assert paths == [
        Path("/opt/a"),
        Path("/opt/b"),
        checkout.package / "lib",
        src / "python" / "build" / "lib",
        src / "python" / "lib",
        src / "build" / "lib",
        src / "lib",
        checkout.root / "build" / "lib",
        checkout.root / "lib",
    ]


def test_worktree_search_is_bounded_by_the_package_depth() -> None:
    assert worktree_levels("python/demo") == 3
    assert worktree_levels("demo") == 2


def test_wheel_lib_folder_wins_over_the_worktree(checkout: Checkout) -> None:
    checkout.put_libraries(checkout.root / "build" / "lib", "ffi", "runtime", "compiler")
    wheel_lib = checkout.put_libraries(checkout.package / "lib", "ffi", "runtime", "compiler")
    selected = checkout.libinfo().libraries_to_load({}, "linux")
    assert [(name, path.parent, mode) for name, path, mode in selected] == [
        ("ffi", wheel_lib, "global"),
        ("runtime", wheel_lib, "global"),
        ("compiler", wheel_lib, "local"),
    ]


def test_variable_wins_over_everything(checkout: Checkout, tmp_path: Path) -> None:
    checkout.put_libraries(checkout.package / "lib", "ffi", "runtime", "compiler")
    chosen = checkout.put_libraries(tmp_path / "elsewhere", "ffi", "runtime")
    environ = {"DEMO_LIBRARY_PATH": str(chosen)}
    selected = checkout.libinfo().libraries_to_load(environ, "linux")
    assert {path.parent for _, path, _ in selected} == {chosen}


def test_checkout_build_lib_is_found_from_the_package(checkout: Checkout) -> None:
    build_lib = checkout.put_libraries(checkout.root / "build" / "lib", "ffi", "runtime")
    libinfo = checkout.libinfo()
    assert libinfo.find_runtime_dir(libinfo.package_lib_paths({}), "linux") == build_lib


def test_compiler_absent_means_runtime_only(checkout: Checkout) -> None:
    checkout.put_libraries(checkout.package / "lib", "ffi", "runtime")
    selected = checkout.libinfo().libraries_to_load({}, "linux")
    assert [name for name, _, _ in selected] == ["ffi", "runtime"]


def test_compiler_is_taken_from_the_runtime_folder_only(checkout: Checkout) -> None:
    checkout.put_libraries(checkout.package / "lib", "ffi", "runtime")
    checkout.put_libraries(checkout.root / "build" / "lib", "ffi", "runtime", "compiler")
    selected = checkout.libinfo().libraries_to_load({}, "linux")
    assert [name for name, _, _ in selected] == ["ffi", "runtime"]


def test_variable_asks_for_runtime_only(checkout: Checkout) -> None:
    checkout.put_libraries(checkout.package / "lib", "ffi", "runtime", "compiler")
    selected = checkout.libinfo().libraries_to_load({"DEMO_USE_RUNTIME_LIB": "yes"}, "linux")
    assert [name for name, _, _ in selected] == ["ffi", "runtime"]


def test_missing_runtime_lists_every_folder_searched(checkout: Checkout) -> None:
    libinfo = checkout.libinfo()
    environ = {"DEMO_LIBRARY_PATH": "/nowhere/at/all"}
    with pytest.raises(libinfo.LibraryNotFoundError) as error:
        libinfo.libraries_to_load(environ, "linux")
    message = str(error.value)
    assert "libdemo_runtime.so" in message
    assert "DEMO_LIBRARY_PATH" in message
    for folder in libinfo.package_lib_paths(environ):
        assert f"\n  {folder}" in message


def test_required_library_missing_beside_the_runtime(checkout: Checkout) -> None:
    folder = checkout.put_libraries(checkout.package / "lib", "runtime")
    libinfo = checkout.libinfo()
    with pytest.raises(libinfo.LibraryNotFoundError, match=r"not libdemo_ffi\.so") as error:
        libinfo.libraries_to_load({}, "linux")
    assert str(folder) in str(error.value)


def test_platform_file_names(checkout: Checkout) -> None:
    libinfo = checkout.libinfo()
    assert libinfo.library_file_names("libdemo_runtime", "linux") == ("libdemo_runtime.so",)
    assert libinfo.library_file_names("libdemo_runtime", "darwin") == (
        "libdemo_runtime.dylib",
        "libdemo_runtime.so",
    )
    assert libinfo.library_file_names("libdemo_runtime", "win32") == (
        "demo_runtime.dll",
        "libdemo_runtime.dll",
    )


def test_dylib_is_found_on_macos(checkout: Checkout) -> None:
    lib = checkout.package / "lib"
    lib.mkdir(parents=True)
    for stem in ("libdemo_ffi", "libdemo_runtime"):
        (lib / f"{stem}.dylib").write_bytes(b"")
    selected = checkout.libinfo().libraries_to_load({}, "darwin")
    assert [path.name for _, path, _ in selected] == ["libdemo_ffi.dylib", "libdemo_runtime.dylib"]


def test_rendering_is_pure_and_follows_the_plan() -> None:
    plan = demo_plan()
    templates = read_templates("loader")
    first = render_loader(plan, templates)
    assert first == render_loader(plan, templates)
    assert sorted(first) == ["python/demo/base.py", "python/demo/libinfo.py"]
    libinfo = first["python/demo/libinfo.py"]
    assert '("compiler", "libdemo_compiler", "local", True),' in libinfo
    assert 'RUNTIME = "runtime"' in libinfo
    assert [file_stem(lib) for lib in plan.libraries] == [
        "libdemo_ffi",
        "libdemo_runtime",
        "libdemo_compiler",
    ]
    no_package = dataclasses.replace(
        plan, project=dataclasses.replace(plan.project, python_package_dir="")
    )
    assert render_loader(no_package, templates) == {}


def test_example_package_holds_the_current_loader() -> None:
    loaded = load_recipe(DEMO_RECIPE)
    files = generated_files(loaded, plan_recipe(loaded))
    for relative in ("python/demo/libinfo.py", "python/demo/base.py"):
        on_disk = (REPO / "src" / relative).read_text(encoding="utf-8")
        assert on_disk == files[relative], "run `buildtool configure` to regenerate"


# --- real libraries: tiny ones built with the C compiler --------------------------------------

SOURCES = {
    "ffi": "int demo_ffi_marker(void) { return 1; }\n",
    "runtime": "int demo_runtime_marker(void) { return 2; }\n",
    "compiler": "int demo_compiler_marker(void) { return 3; }\n",
}

PROBE = """
import ctypes, json, demo.base as base
process = ctypes.CDLL(None)
print(json.dumps({
    "loaded": {name: lib._name for name, lib in base._LIBS.items()},
    "runtime_only": base._RUNTIME_ONLY,
    "lib_is_runtime": base._LIB is base._LIB_RUNTIME,
    "global": [s for s in ("demo_runtime_marker", "demo_compiler_marker") if hasattr(process, s)],
    "api": [base.loaded_libraries(), base.runtime_only()],
}))
"""


def compile_library(folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"{name}.c"
    source.write_text(SOURCES[name], encoding="utf-8")
    output = folder / LIB_NAMES[name]
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(output), str(source)], check=True)
    source.unlink()


def probe(checkout: Checkout, **environ: str) -> dict[str, object]:
    (checkout.package / "__init__.py").write_text("", encoding="utf-8")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(checkout.package.parent),
        **environ,
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded: dict[str, object] = json.loads(result.stdout)
    return loaded


@pytest.mark.integration
def test_real_load_modes_and_full_mode(checkout: Checkout) -> None:
    for name in SOURCES:
        compile_library(checkout.root / "build" / "lib", name)
    result = probe(checkout)
    assert list(result["loaded"]) == ["ffi", "runtime", "compiler"]  # type: ignore[call-overload]
    assert result["runtime_only"] is False
    assert result["lib_is_runtime"] is False
    # The documented API says the same as the internals.
    assert result["api"] == [result["loaded"], False]
    # The runtime is RTLD_GLOBAL (its symbols are visible process-wide), the compiler RTLD_LOCAL.
    assert result["global"] == ["demo_runtime_marker"]


@pytest.mark.integration
def test_real_runtime_only_when_compiler_is_absent(checkout: Checkout) -> None:
    for name in ("ffi", "runtime"):
        compile_library(checkout.package / "lib", name)
    result = probe(checkout)
    assert list(result["loaded"]) == ["ffi", "runtime"]  # type: ignore[call-overload]
    assert result["runtime_only"] is True
    assert result["lib_is_runtime"] is True
    assert result["api"] == [result["loaded"], True]


@pytest.mark.integration
def test_real_rejected_variable_fails_the_import(checkout: Checkout) -> None:
    for name in ("ffi", "runtime"):
        compile_library(checkout.package / "lib", name)
    (checkout.package / "__init__.py").write_text("", encoding="utf-8")
    env = {"PYTHONPATH": str(checkout.package.parent), "DEMO_USE_RUNTIME_LIB": "sometimes"}
    result = subprocess.run(
        [sys.executable, "-c", "import demo.base"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "ValueError: DEMO_USE_RUNTIME_LIB='sometimes' is not understood" in result.stderr
