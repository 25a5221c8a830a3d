"""check-cmake and init --from-cmake: pure parts first, then a hand-written CMake project
(tests/packages/cmake-split) configured and built for real, each planted defect reported by
check-cmake from the code model and by verify-linkage on the built binaries alike."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from buildtool.ci import pipeline
from buildtool.cmake.run import cmake_executable, ninja_executable
from buildtool.cmakecheck.codemodel import CmakeTarget, Codemodel, LinkFragment, read_codemodel
from buildtool.cmakecheck.linkline import (
    artifact_index,
    as_needed_per_fragment,
    linked_file_names,
    linked_targets,
    rpath_entries,
    unescape,
)
from buildtool.cmakecheck.policy import policy_for_recipe
from buildtool.cmakecheck.query import (
    linker_defaults_as_needed,
    load_codemodel,
    reply_is_current,
    toolchain_as_needed,
)
from buildtool.cmakecheck.rules import check_codemodel
from buildtool.cmakecheck.starter import project_name, recipe_name, starter_recipe, table_key
from buildtool.plan import make_plan
from buildtool.recipe.load import load_recipe
from tests.cmake_projects import (
    SplitBuild,
    built_on_first_use,
    check_ids,
    findings_of,
    load_in_order,
)
from tests.conftest import PACKAGES, REPO, CliRunner, require

SPLIT = PACKAGES / "cmake-split"
SPLIT_RECIPE = SPLIT / "buildtool.toml"
BENCHMARK = REPO / "benchmarks" / "check_cmake.py"

# --- pure: link lines, the driver's dry run, names -----------------------------------------------


def fragments(*texts: str) -> tuple[LinkFragment, ...]:
    return tuple(LinkFragment(text, "libraries") for text in texts)


def target_with(*texts: str) -> CmakeTarget:
    return CmakeTarget("t", "EXECUTABLE", (), (), (), fragments(*texts), None, "CMakeLists.txt", 1)


def test_ninja_escaped_rpath_is_read_as_the_linker_sees_it() -> None:
    assert unescape('-Wl,-rpath,"\\$$ORIGIN/../lib"') == "-Wl,-rpath,$ORIGIN/../lib"
    target = target_with('-Wl,-rpath,"\\$$ORIGIN":/abs/lib', "-Wl,-rpath=/x", "lib/a.so")
    assert rpath_entries(target) == ("$ORIGIN", "/abs/lib", "/x")


def test_only_the_build_trees_own_targets_are_linked_targets() -> None:
    library = CmakeTarget(
        "a", "SHARED_LIBRARY", ("/b/lib/liba.so",), (), (), (), None, "CMakeLists.txt", 1
    )
    user = target_with("lib/liba.so", "/usr/lib/libz.so", "ext/libbacktrace.a", "-ldl")
    assert linked_targets(user, "/b", artifact_index([library, user])) == ["a"]
    assert list(linked_file_names(user)) == ["liba.so", "libz.so", "libbacktrace.a", "libdl.so"]


def test_a_source_compiled_into_two_libraries_loaded_together() -> None:
    def library(name: str, *links: str, sources: tuple[str, ...] = ("/s/util.cc",)) -> CmakeTarget:
        line = tuple(LinkFragment(f"lib/lib{link}.so.0.0.0", "libraries") for link in links)
        artifact = (f"/b/lib/lib{name}.so",)
        return CmakeTarget(
            name, "SHARED_LIBRARY", artifact, sources, (), line, None, "CMakeLists.txt", 3
        )

    def model(*targets: CmakeTarget) -> Codemodel:
        return Codemodel("/s", "/b", "p", targets)

    # b links a (by its versioned file): the duplicate-code defect, an error
    (finding,) = check_codemodel(model(library("a"), library("b", "a")), None, True)
    assert finding.check_id == "BT211"
    assert finding.severity == "error"
    assert finding.message == (
        "target b (CMakeLists.txt:3): util.cc is also compiled into a, and b links a"
    )
    assert check_codemodel(model(library("a"), library("b")), None, True) == ()
    # one executable linking both puts them in one process too: a warning
    exe = dataclasses.replace(target_with("lib/liba.so", "lib/libb.so"), name="app")
    (finding,) = check_codemodel(model(library("a"), library("b"), exe), None, True)
    assert finding.check_id == "BT202"
    assert finding.severity == "warning"
    assert finding.message.endswith("util.cc is also compiled into a, and app links both")
    # forty shared sources are one finding, not forty
    many = tuple(f"/s/src/f{i:02}.cc" for i in range(40))
    pair = model(library("a", sources=many), library("b", "a", sources=many))
    (finding,) = check_codemodel(pair, None, True)
    assert finding.message.endswith(
        "40 sources (src/f00.cc, src/f01.cc, src/f02.cc and 37 more) are also compiled into a, "
        "and b links a"
    )


def test_as_needed_state_follows_push_and_pop() -> None:
    line = fragments(
        "lib/a.so",
        "-Wl,--push-state,--no-as-needed",
        "lib/b.so",
        "-Wl,--pop-state",
        "lib/c.so",
        "-Xlinker --no-as-needed",
        "lib/d.so",
    )
    assert as_needed_per_fragment(line, default=True) == (
        True,
        False,
        False,
        True,
        True,
        False,
        False,
    )
    assert as_needed_per_fragment(line, default=False)[0] is False


def test_driver_dry_run_tells_the_linker_default() -> None:
    debian = (
        ' /usr/lib/gcc/x86_64-linux-gnu/12/collect2 -plugin x "--hash-style=gnu" --as-needed '
        "-pie -o a.out Scrt1.o buildtool-probe.o -lstdc++ --push-state --as-needed -lgcc_s "
        "--pop-state"
    )
    assert linker_defaults_as_needed("COLLECT_GCC_OPTIONS='-o'\n" + debian)
    assert not linker_defaults_as_needed(debian.replace(" --as-needed -pie", " -pie"))
    assert not linker_defaults_as_needed("no linker line at all")


def test_the_install_script_says_which_rpath_each_file_gets() -> None:
    from buildtool.linkage.inputs.cmake_install import install_rpaths

    script = """
  foreach(file
      "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/libr.so.0.0.0"
      "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/libr.so.0"
      )
    if(EXISTS "${file}" AND NOT IS_SYMLINK "${file}")
      file(RPATH_CHECK
           FILE "${file}"
           RPATH "\\$ORIGIN/../lib")
    endif()
  endforeach()
  if(EXISTS "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/libd.so")
    file(RPATH_CHECK
         FILE "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/libd.so"
         RPATH "")
  endif()
"""
    assert install_rpaths(script) == {
        "libr.so.0.0.0": "$ORIGIN/../lib",
        "libr.so.0": "$ORIGIN/../lib",
        "libd.so": "",
    }


def test_names_become_recipe_names() -> None:
    """A CMake target name is a recipe name as it is (ggml's ``ggml-base``, ``test-backend-ops``);
    only what CMake itself would not take is replaced."""
    assert recipe_name("tvm-ffi") == "tvm-ffi"
    assert recipe_name("3rd") == "3rd"
    assert recipe_name("a.b", ["a.b"]) == "a.b_2"
    assert recipe_name("-x") == "_-x"
    assert recipe_name("a b") == "a_b"
    assert table_key("ggml-base") == "ggml-base"
    assert table_key("a.b") == '"a.b"'
    assert project_name("My Project!") == "My-Project"
    assert project_name("$$") == "project"


# --- the hand-written project, configured and built for real ------------------------------------


def configure_split(folder: Path, defect: str) -> Path:
    """A copy of tests/packages/cmake-split configured with one planted defect (no File API
    query: check-cmake must ask for the code model itself)."""
    source = folder / "project"
    shutil.copytree(SPLIT, source)
    build = folder / "build"
    subprocess.run(
        [
            cmake_executable(), "-S", source, "-B", build, "-G", "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={ninja_executable()}", f"-DSPLIT_DEFECT={defect}",
            f"-DCMAKE_INSTALL_PREFIX={folder / 'prefix'}",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return build


@pytest.fixture(scope="session")
def split_build(tmp_path_factory: pytest.TempPathFactory) -> SplitBuild:
    """Builds a defect's copy of the project on first use, once per session."""
    require(shutil.which("c++") is not None, "no C++ compiler")
    return built_on_first_use(
        lambda defect: configure_split(tmp_path_factory.mktemp(f"split-{defect}"), defect)
    )


@dataclasses.dataclass(frozen=True)
class Agreement:
    """One planted defect: what check-cmake reads from the code model, and what verify-linkage
    finds on the built binaries: the same mistake."""

    defect: str
    cmake_ids: tuple[str, ...]
    binary_ids: tuple[str, ...]
    folders: tuple[str, ...] = ()
    """Build-tree folders also given to verify-linkage (inside the build tree it searches
    whole: each file is read once)."""


AGREEMENT = [
    pytest.param(Agreement("none", (), ()), id="the-fixed-split-is-clean"),
    # the seed's bug: gemm (static-init registration) in runtime and compiler, which link
    pytest.param(
        Agreement("double-owner", ("BT201", "BT205"), ("BT103", "BT104")), id="double-ownership"
    ),
    pytest.param(
        Agreement("runtime-links-compiler", ("BT203", "BT209"), ("BT101", "BT102")),
        id="runtime-links-compiler",
    ),
    # minrpc needs only the runtime's registrations; --as-needed (gcc's default here) drops it
    pytest.param(Agreement("as-needed", ("BT204",), ("BT101",)), id="registration-only-dropped"),
    # the compiler in plugins/: its RUNPATH $ORIGIN no longer finds the runtime
    pytest.param(
        Agreement("scattered", ("BT206",), ("BT107", "BT120"), ("plugins",)), id="scattered"
    ),
    pytest.param(Agreement("build-rpath", ("BT207",), ("BT110",)), id="absolute-build-rpath"),
    pytest.param(Agreement("legacy", ("BT208",), ("BT121",)), id="legacy-monolith-still-built"),
    # TVM's patterns: objects linked by target_link_libraries, and a conditional genex; the
    # File API leaves both out of objectDependencies
    pytest.param(
        Agreement("linked-objects", ("BT201", "BT205"), ("BT103", "BT104")),
        id="object-library-linked-by-target-link-libraries",
    ),
    pytest.param(
        Agreement("genex-objects", ("BT201", "BT205"), ("BT103", "BT104")),
        id="object-library-in-a-conditional-genex",
    ),
]


@pytest.mark.integration
@pytest.mark.parametrize("case", AGREEMENT)
def test_check_cmake_and_verify_linkage_agree(
    run_cli: CliRunner, split_build: SplitBuild, case: Agreement
) -> None:
    build = split_build(case.defect)
    recipe = str(SPLIT_RECIPE)
    code, found = check_ids(run_cli, "check-cmake", str(build), "--recipe", recipe)
    assert tuple(sorted(set(found))) == case.cmake_ids
    assert code == (1 if case.cmake_ids else 0)
    inputs = [str(build), *(str(build / folder) for folder in case.folders)]
    code, found = check_ids(run_cli, "verify-linkage", *inputs, "--recipe", recipe)
    assert tuple(sorted(set(found))) == case.binary_ids
    assert code == (1 if case.binary_ids else 0)


@pytest.mark.integration
def test_as_needed_verdict_rests_on_the_toolchain() -> None:
    """The BT204 case above is only a defect because this compiler links with --as-needed."""
    require(shutil.which("c++") is not None, "no C++ compiler")
    output = subprocess.run(
        ["c++", "-dumpspecs"], capture_output=True, text=True, check=False
    ).stdout
    assert toolchain_as_needed(shutil.which("c++") or "") == ("--as-needed" in output)


@pytest.mark.integration
def test_without_a_recipe_the_double_ownership_is_found_and_the_graph_printed(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    build = configure_split(tmp_path, "double-owner")  # configured only: nothing compiled
    result = run_cli("check-cmake", str(build))
    assert result.exit_code == 1, result.stderr
    assert (
        "error BT201 cmake-object-library-twice: target runtime (CMakeLists.txt:" in result.stdout
    )
    assert "  object library gemm: objects linked into compiler, runtime" in result.stdout
    assert "  shared library compiler (libcompiler.so) -> runtime, ffi" in result.stdout
    assert "BT203" not in result.stdout  # needs the recipe
    assert not list((tmp_path / "build").glob("lib/*.so")), "check-cmake must not build"
    github = run_cli("check-cmake", str(build), "--format", "github").stdout.splitlines()
    assert github[0].startswith(
        "::error file=CMakeLists.txt,title=BT201 cmake-object-library-twice::target runtime ("
    )


@pytest.mark.integration
def test_the_reply_is_asked_for_when_missing_or_stale(run_cli: CliRunner, tmp_path: Path) -> None:
    build = configure_split(tmp_path, "none")
    reply = build / ".cmake" / "api" / "v1" / "reply"
    assert not reply.exists()
    assert run_cli("check-cmake", str(build)).exit_code == 0
    first = sorted(reply.glob("index-*.json"))
    assert first
    # reconfigured with the defect (the query is in place: cmake answers it itself)
    subprocess.run(
        [cmake_executable(), "-DSPLIT_DEFECT=double-owner", build], check=True, capture_output=True
    )
    code, found = check_ids(run_cli, "check-cmake", str(build))
    assert (code, found) == (1, ["BT201"])
    # a cache changed after the reply (a cache edit, `cmake -D` without a query): asked again
    cache_time = (build / "CMakeCache.txt").stat().st_mtime
    for index in reply.glob("index-*.json"):
        os.utime(index, (cache_time - 10, cache_time - 10))
    assert not reply_is_current(build)
    stale = run_cli("check-cmake", str(build))
    assert stale.exit_code == 1
    assert "asking CMake for its code model" in stale.stderr
    assert reply_is_current(build)


@pytest.mark.integration
def test_object_libraries_are_found_without_object_dependencies(tmp_path: Path) -> None:
    """Code models before 2.9 only list the object files among the sources."""
    build = configure_split(tmp_path, "double-owner")
    query = build / ".cmake" / "api" / "v1" / "query" / "codemodel-v2"
    query.parent.mkdir(parents=True)
    query.touch()
    subprocess.run([cmake_executable(), build], check=True, capture_output=True)
    reply = build / ".cmake" / "api" / "v1" / "reply"
    for path in reply.glob("target-*.json"):
        document = json.loads(path.read_text(encoding="utf-8"))
        document.pop("objectDependencies", None)
        path.write_text(json.dumps(document), encoding="utf-8")
    model = read_codemodel(reply)
    assert model.target("compiler").object_libraries == ("gemm",)
    assert model.target("runtime").object_libraries == ("gemm",)


@pytest.mark.integration
def test_init_writes_a_recipe_both_tools_accept(
    run_cli: CliRunner, split_build: SplitBuild, tmp_path: Path
) -> None:
    build = split_build("none")
    recipe = tmp_path / "buildtool.toml"
    assert run_cli("init", "--from-cmake", str(build), "--output", str(recipe)).exit_code == 0
    loaded = load_recipe(recipe)
    assert loaded.recipe.libraries["runtime"].objects == ("gemm",)
    # nothing links the compiler: optional, with a comment saying so
    assert loaded.recipe.libraries["compiler"].optional
    assert not loaded.recipe.libraries["runtime"].optional
    assert "# decide: nothing in the build links it" in recipe.read_text(encoding="utf-8")
    assert loaded.recipe.executables["minrpc"].no_as_needed == ("runtime",)
    assert check_ids(run_cli, "check-cmake", str(build), "--recipe", str(recipe)) == (0, [])
    assert check_ids(run_cli, "verify-linkage", str(build), "--recipe", str(recipe)) == (0, [])
    # never overwritten
    before = recipe.read_bytes()
    refused = run_cli("init", "--from-cmake", str(build), "--output", str(recipe))
    assert refused.exit_code == 2
    assert "already exists" in refused.stderr
    assert recipe.read_bytes() == before
    # nor is a link that points nowhere (yet): writing would replace the user's link
    dangling = tmp_path / "linked.toml"
    dangling.symlink_to(tmp_path / "elsewhere.toml")
    refused = run_cli("init", "--from-cmake", str(build), "--output", str(dangling))
    assert refused.exit_code == 2
    assert dangling.is_symlink()
    assert not (tmp_path / "elsewhere.toml").exists()


def test_a_folder_that_is_not_a_build_tree_is_bad_input(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli("check-cmake", str(tmp_path))
    assert result.exit_code == 2
    assert f"{tmp_path}: not a configured CMake build folder (no CMakeCache.txt)" in result.stderr
    output = tmp_path / "recipe.toml"
    assert run_cli("init", "--from-cmake", str(tmp_path), "--output", str(output)).exit_code == 2
    assert not output.exists()


@pytest.mark.integration
def test_ci_step_fails_before_anything_compiles(tmp_path: Path) -> None:
    build = configure_split(tmp_path, "double-owner")
    loaded = load_recipe(SPLIT_RECIPE)
    request = pipeline.CiRequest(loaded, tmp_path / "dist", build)
    workspace = pipeline.Workspace(request, make_plan(loaded.recipe, loaded.source, {}))
    outcome = pipeline.step_check_cmake(workspace)
    assert outcome.status == "failed"
    assert "BT201 cmake-object-library-twice" in outcome.detail
    assert {finding.check_id for finding in outcome.findings} == {"BT201", "BT205"}


@pytest.mark.integration
def test_the_benchmark_project_is_clean_and_fully_checked(tmp_path: Path) -> None:
    """benchmarks/check_cmake.py times a run in which every check goes through every target."""
    spec = importlib.util.spec_from_file_location("check_cmake_bench", BENCHMARK)
    assert spec is not None
    assert spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    recipe, targets = bench.generate(tmp_path / "big", 20)
    bench.configure_fresh(recipe.parent, tmp_path / "build")
    model = read_codemodel(tmp_path / "build" / ".cmake" / "api" / "v1" / "reply")
    assert len(model.targets) == targets == 42
    policy = policy_for_recipe(load_recipe(recipe))
    assert len(policy.libraries) == 20
    assert len(policy.executables) == 2
    assert check_codemodel(model, policy, as_needed_default=True) == ()


@pytest.mark.integration
def test_a_reply_to_another_client_is_not_ours(tmp_path: Path) -> None:
    build = configure_split(tmp_path, "none")
    client = build / ".cmake" / "api" / "v1" / "query" / "client-ide" / "codemodel-v2"
    client.parent.mkdir(parents=True)
    client.touch()
    subprocess.run([cmake_executable(), build], check=True, capture_output=True)
    assert not reply_is_current(build)
    assert load_codemodel(build).target("runtime").object_libraries == ("gemm",)
    assert reply_is_current(build)


@pytest.mark.integration
def test_a_damaged_reply_is_bad_input_naming_the_file(run_cli: CliRunner, tmp_path: Path) -> None:
    build = configure_split(tmp_path, "none")
    assert run_cli("check-cmake", str(build)).exit_code == 0
    reply = build / ".cmake" / "api" / "v1" / "reply"
    (runtime,) = reply.glob("target-runtime-*.json")
    document = json.loads(runtime.read_text(encoding="utf-8"))
    del document["type"]
    runtime.write_text(json.dumps(document), encoding="utf-8")
    result = run_cli("check-cmake", str(build))
    assert result.exit_code == 2
    assert f"{runtime}: not a File API target as expected: KeyError('type')" in result.stderr
    runtime.write_text("{", encoding="utf-8")
    result = run_cli("check-cmake", str(build))
    assert result.exit_code == 2
    assert f"{runtime}: cannot read CMake's File API reply: " in result.stderr
    assert "Traceback" not in result.stderr
    document["type"] = "SHARED_LIBRARY"
    document["link"]["commandFragments"][0]["fragment"] = 1  # a number where a string goes
    runtime.write_text(json.dumps(document), encoding="utf-8")
    result = run_cli("check-cmake", str(build))
    assert result.exit_code == 2
    assert f"{runtime}: not a File API target as expected: TypeError(" in result.stderr
    runtime.write_text("[]", encoding="utf-8")
    result = run_cli("check-cmake", str(build))
    assert result.exit_code == 2
    assert f"{runtime}: not a File API reply: expected a JSON object, found list" in result.stderr


@pytest.mark.integration
def test_an_index_that_is_not_an_object_is_asked_for_again(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    build = configure_split(tmp_path, "none")
    assert run_cli("check-cmake", str(build)).exit_code == 0
    (index,) = (build / ".cmake" / "api" / "v1" / "reply").glob("index-*.json")
    index.write_text("[]", encoding="utf-8")
    assert not reply_is_current(build)
    result = run_cli("check-cmake", str(build))
    assert result.exit_code == 0, result.stderr


def test_starter_recipe_of_awkward_names_loads(tmp_path: Path) -> None:
    library = CmakeTarget(
        "tvm-ffi", "SHARED_LIBRARY", ("/b/lib/libtvm-ffi.so",), (), (), (), (), "CMakeLists.txt", 1
    )
    tool = dataclasses.replace(
        target_with("lib/libtvm-ffi.so"), name="my-tool", artifacts=("/b/bin/my-tool",)
    )
    app = dataclasses.replace(target_with("lib/libtvm-ffi.so"), name="app", artifacts=("/b/app",))
    text = starter_recipe(Codemodel("/s", "/b", "My Project", (library, tool, app)), "build")
    assert "[executables.my-tool]" in text  # a dashed target name is a recipe name (ggml's)
    recipe = tmp_path / "buildtool.toml"
    recipe.write_text(text, encoding="utf-8")
    loaded = load_recipe(recipe)
    assert loaded.recipe.project.name == "My-Project"
    assert loaded.recipe.libraries["tvm-ffi"].file == "libtvm-ffi.so"
    assert list(loaded.recipe.executables) == ["my-tool", "app"]
    assert loaded.recipe.executables["app"].links == ("tvm-ffi",)


@pytest.mark.integration
def test_an_object_library_in_three_libraries_is_reported_per_loaded_pair(
    run_cli: CliRunner, split_build: SplitBuild
) -> None:
    build = split_build("three-holders")
    code, found = findings_of(run_cli, "check-cmake", str(build))
    assert code == 1
    assert sorted(message.split(": ", 1)[1] for _id, message in found) == [
        "the objects of OBJECT library gemm are also linked into compiler, and compiler links "
        "runtime",
        "the objects of OBJECT library gemm are also linked into compiler, and plugin links "
        "compiler",
        "the objects of OBJECT library gemm are also linked into plugin, and plugin links runtime",
    ]
    assert {check for check, _message in found} == {"BT201"}
    text = run_cli("check-cmake", str(build)).stdout
    assert "  object library gemm: objects linked into compiler, plugin, runtime" in text
    # and it really is the defect: the runtime and the plugin in one process register gemm twice
    loaded = load_in_order(build / "lib" / "libruntime.so", build / "lib" / "libplugin.so")
    assert loaded.returncode != 0
    assert "duplicate registration: contrib.gemm_fp16_int" in loaded.stderr


@pytest.mark.integration
def test_versioned_libraries_keep_their_links(
    run_cli: CliRunner, split_build: SplitBuild, tmp_path: Path
) -> None:
    """VERSION/SOVERSION: the link line names libruntime.so.1.2.0, the code model libruntime.so."""
    build = split_build("versioned")
    assert (build / "lib" / "libruntime.so.1.2.0").is_file()
    assert check_ids(run_cli, "check-cmake", str(build), "--recipe", str(SPLIT_RECIPE)) == (0, [])
    graph = json.loads(run_cli("check-cmake", str(build), "--format", "json").stdout)["graph"]
    assert {entry["name"]: entry["links"] for entry in graph}["compiler"] == ["runtime", "ffi"]
    recipe = tmp_path / "buildtool.toml"
    assert run_cli("init", "--from-cmake", str(build), "--output", str(recipe)).exit_code == 0
    loaded = load_recipe(recipe).recipe
    assert loaded.libraries["compiler"].links == ("runtime",)
    assert loaded.libraries["runtime"].links == ("ffi",)
    assert loaded.executables["minrpc"].no_as_needed == ("runtime",)
    assert check_ids(run_cli, "check-cmake", str(build), "--recipe", str(recipe)) == (0, [])
    assert (
        load_in_order(build / "lib" / "libruntime.so", build / "lib" / "libcompiler.so").returncode
        == 0
    )
    # an executable the project builds outside CMake (TVM's minrpc is built by Python) is named
    outside = tmp_path / "outside.toml"
    outside.write_text(
        SPLIT_RECIPE.read_text("utf-8") + '\n[executables.rpcserver]\nlinks = ["runtime"]\n',
        encoding="utf-8",
    )
    code, found = findings_of(run_cli, "check-cmake", str(build), "--recipe", str(outside))
    assert (code, found) == (
        0,
        [
            (
                "BT210",
                "executable rpcserver: no CMake target builds it, so its links, --no-as-needed "
                "libraries and RUNPATH were not checked (when it is built outside CMake, check "
                "the built binary with verify-linkage)",
            )
        ],
    )


@pytest.mark.integration
def test_sources_compiled_into_a_library_and_one_it_links_are_an_error(
    run_cli: CliRunner, split_build: SplitBuild
) -> None:
    build = split_build("versioned-twice")
    for recipe in ((), ("--recipe", str(SPLIT_RECIPE))):
        code, found = findings_of(run_cli, "check-cmake", str(build), *recipe)
        assert code == 1
        assert found == [
            (
                "BT211",
                "target runtime (CMakeLists.txt:37): src/runtime.cc is also compiled into "
                "compiler, and compiler links runtime",
            )
        ]
    # the loader's order: runtime, then compiler; its registrations run twice
    loaded = load_in_order(build / "lib" / "libruntime.so", build / "lib" / "libcompiler.so")
    assert loaded.returncode != 0
    assert "duplicate registration: rpc.testing.GetShapeSize" in loaded.stderr


def install_split(build: Path) -> Path:
    subprocess.run([cmake_executable(), "--install", build], check=True, capture_output=True)
    return build.parent / "prefix"


@pytest.mark.integration
def test_the_rpath_judged_is_the_one_that_gets_installed(
    run_cli: CliRunner, split_build: SplitBuild
) -> None:
    recipe = str(SPLIT_RECIPE)
    # CMake's default absolute build RPATH, INSTALL_RPATH $ORIGIN: what is installed is right
    build = split_build("install-origin")
    assert "-Wl,-rpath," + str(build / "lib") in (build / "build.ninja").read_text("utf-8")
    assert check_ids(run_cli, "check-cmake", str(build), "--recipe", recipe) == (0, [])
    prefix = install_split(build)
    assert check_ids(run_cli, "verify-linkage", str(prefix), "--recipe", recipe) == (0, [])
    assert (
        load_in_order(
            prefix / "lib" / "libruntime.so", prefix / "lib" / "libcompiler.so"
        ).returncode
        == 0
    )
    # the compiler installed without an RPATH: it cannot find the runtime once installed
    build = split_build("install-no-rpath")
    code, found = findings_of(run_cli, "check-cmake", str(build), "--recipe", recipe)
    assert (code, found) == (
        1,
        [
            (
                "BT207",
                "target compiler (CMakeLists.txt:41): no install RPATH, but it links libraries "
                "of the split",
            )
        ],
    )
    prefix = install_split(build)
    assert check_ids(run_cli, "verify-linkage", str(prefix), "--recipe", recipe)[0] == 1
    loaded = load_in_order(prefix / "lib" / "libcompiler.so")
    assert "libruntime.so: cannot open shared object file" in loaded.stderr


@pytest.mark.integration
def test_the_working_folders_recipe_applies_and_the_html_page_explains_itself(
    run_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check-cmake finds the recipe as verify-linkage does: the working folder's, when the
    build folder lies inside it; the report says which and why, in every format."""
    configure_split(tmp_path, "runtime-links-compiler")  # configured only: tmp_path/build
    shutil.copy2(SPLIT_RECIPE, tmp_path / "buildtool.toml")
    monkeypatch.chdir(tmp_path)
    found = run_cli("check-cmake", "build")
    assert found.exit_code == 1
    assert "BT203" in found.stdout  # a check that needs the recipe
    reason = "found in the working folder: ./buildtool.toml comes first"
    assert f"recipe: buildtool.toml ({reason})" in found.stdout
    assert (
        json.loads(run_cli("check-cmake", "build", "--format", "json").stdout)["recipe_reason"]
        == reason
    )
    without = run_cli("check-cmake", "build", "--no-recipe")
    assert "BT203" not in without.stdout
    assert "no recipe (--no-recipe)" in without.stdout
    page = tmp_path / "check-cmake.html"
    assert run_cli("check-cmake", "build", "--format", "html", "--output", str(page)).exit_code == 1
    html = page.read_text(encoding="utf-8")
    assert '<a href="#check-BT203"><code>BT203</code></a>' in html
    assert '<tr id="check-BT203">' in html
    assert f"buildtool.toml ({reason})" in html
    assert "<script" not in html
    assert "Content-Security-Policy" in html


def test_init_says_when_its_recipe_takes_the_place_of_the_recipes_folders(
    run_cli: CliRunner, split_build: SplitBuild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = split_build("none")
    (tmp_path / "recipes").mkdir()
    shutil.copy2(SPLIT_RECIPE, tmp_path / "recipes" / "split.toml")
    monkeypatch.chdir(tmp_path)
    result = run_cli("init", "--from-cmake", str(build))
    assert result.exit_code == 0
    assert (
        "buildtool.toml is now the recipe commands run here find first, before "
        "recipes/split.toml; pass --recipe to use another" in result.stderr
    )
    elsewhere = run_cli("init", "--from-cmake", str(build), "--output", "other.toml")
    assert "find first" not in elsewhere.stderr
