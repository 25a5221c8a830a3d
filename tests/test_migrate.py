"""``buildtool migrate``: the boundary rule on single lines (pure), then a fixture tree with every
file kind the command reads: exact reports, ``--fix`` compared byte for byte, idempotence,
encodings, line endings and modes kept, files skipped with counts, bad ``[migrate]`` tables, and
forwarding headers compiled by the real compiler.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from buildtool.ci import pipeline
from buildtool.cmake.configure import plan_recipe
from buildtool.migrate.files import decode, scan_paths
from buildtool.migrate.ignore import is_ignored, parse_gitignore
from buildtool.migrate.rules import compile_rules
from buildtool.migrate.scan import file_kind, scan_text
from buildtool.recipe.load import load_recipe, parse_recipe
from tests.conftest import DEMO_RECIPE, REPO, CliRunner, require

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

OLD_HEADER = "tvm/runtime/container/array.h"


def found(text: str, kind: str = "text") -> list[tuple[str, int]]:
    """(old name, column) of every match on a one-line text."""
    return [(m.rule.old, m.column) for m in scan_text(text, RULES, kind)]  # type: ignore[arg-type]


# --- the boundary rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("libtvm.so", [("libtvm.so", 1)]),
        ("load lib/libtvm.so.", [("libtvm.so", 10)]),
        ("libtvm.so.0 and libtvm.so.0.18", [("libtvm.so", 1), ("libtvm.so", 17)]),
        ('"libtvm.so"', [("libtvm.so", 2)]),
        ("testing.GetShapeElem", [("testing.GetShapeElem", 1)]),
        ('Get("testing.GetShapeElem")', [("testing.GetShapeElem", 6)]),
        ("-DBUILD_DUMMY_LIBTVM=ON", [("BUILD_DUMMY_LIBTVM", 3)]),
        ("${BUILD_DUMMY_LIBTVM}", [("BUILD_DUMMY_LIBTVM", 3)]),
        ("if(BUILD_DUMMY_LIBTVM)", [("BUILD_DUMMY_LIBTVM", 4)]),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_a_whole_name_matches(text: str, expected: list[tuple[str, int]]) -> None:
    assert found(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "libtvm_runtime.so",
        "mylibtvm.so",
        "libtvm.so_old",
        "libtvm.sox",
        "libtvm.so.x",
        "rpc.testing.GetShapeElem",
        "testing.GetShapeElemX",
        "testing.GetShapeElem.inner",
        "NO_BUILD_DUMMY_LIBTVM",
        "BUILD_DUMMY_LIBTVM_2",
        "x-DBUILD_DUMMY_LIBTVM",
        "ns::testing.GetShapeElem",
    ],
)
def test_a_name_inside_another_does_not_match(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    ("text", "kind", "column"),
    [
        (f'#include "{OLD_HEADER}"', "c", 11),
        (f"  #  include <{OLD_HEADER}>", "c", 15),
        (f"#include <{OLD_HEADER}>", "markdown", 11),
        (f'set(H "${{ROOT}}/include/{OLD_HEADER}")', "cmake", 24),
        (f"HEADER = '{OLD_HEADER}'", "python", 11),
        (f'path = "include/{OLD_HEADER}"', "python", 17),
    ],
)
def test_a_header_matches_in_includes_and_build_strings(text: str, kind: str, column: int) -> None:
    assert found(text, kind) == [(OLD_HEADER, column)]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f'const char* h = "{OLD_HEADER}";', "c"),  # a C string is not an include
        (f"# moved from {OLD_HEADER}", "python"),  # a comment
        (f"HEADER = 'my{OLD_HEADER}'", "python"),  # another path
        (f"HEADER = '{OLD_HEADER}.in'", "python"),
        (f'set(H "{OLD_HEADER}")', "yaml"),  # strings count in CMake and Python only
        (f"#include <x/{OLD_HEADER}>", "c"),
        (f"see {OLD_HEADER}", "markdown"),
    ],
)
def test_a_header_path_elsewhere_does_not_match(text: str, kind: str) -> None:
    assert found(text, kind) == []


def test_encodings_are_detected() -> None:
    assert decode("Jos\u00e9".encode())[1].name == "UTF-8"  # type: ignore[index]
    assert decode(b"Jos\xe9")[1].name == "LATIN-1"  # type: ignore[index]
    assert decode(b"\xef\xbb\xbfx")[1].name == "UTF-8 with BOM"  # type: ignore[index]
    assert decode(b"\xff\xfex\x00")[0] == "x"  # type: ignore[index]
    assert decode(b"ELF\x00\x01") is None


# --- a fixture tree with every file kind ----------------------------------------------------------

RECIPE = """\
[project]
name = "tree"
root = "tree"

[migrate.renamed]
"libtvm.so" = "libtvm_compiler.so"
"testing.GetShapeElem" = "rpc.testing.GetShapeElem"

[migrate.removed]
BUILD_DUMMY_LIBTVM = "link libtvm_runtime.so directly"

[migrate.renamed-headers]
"tvm/runtime/container/array.h" = "tvm/ffi/container/array.h"
"""

NEW_HEADER = "tvm/ffi/container/array.h"
RULES = compile_rules(parse_recipe(tomllib.loads(RECIPE), "test").migrate, "test")

TREE: dict[str, tuple[bytes, bytes]] = {
    # path: (before, after --fix)
    "src/a.cc": (
        (
            f'#include "{OLD_HEADER}"\n'
            f"#include <{OLD_HEADER}>\n"
            "// loads libtvm.so, never libtvm_runtime.so or mylibtvm.so\n"
            'auto f = Get("testing.GetShapeElem"), g = Get("rpc.testing.GetShapeElem");\n'
            f'const char* h = "{OLD_HEADER}";\n'
        ).encode(),
        (
            f'#include "{NEW_HEADER}"\n'
            f"#include <{NEW_HEADER}>\n"
            "// loads libtvm_compiler.so, never libtvm_runtime.so or mylibtvm.so\n"
            'auto f = Get("rpc.testing.GetShapeElem"), g = Get("rpc.testing.GetShapeElem");\n'
            f'const char* h = "{OLD_HEADER}";\n'
        ).encode(),
    ),
    "CMakeLists.txt": (
        (
            'option(BUILD_DUMMY_LIBTVM "a stub" OFF)\n'
            f'install(FILES "${{SRC}}/include/{OLD_HEADER}" lib/libtvm.so.0 '
            "DESTINATION x)\n"
        ).encode(),
        (
            'option(BUILD_DUMMY_LIBTVM "a stub" OFF)\n'
            f'install(FILES "${{SRC}}/include/{NEW_HEADER}" lib/libtvm_compiler.so.0 '
            "DESTINATION x)\n"
        ).encode(),
    ),
    "cmake/windows.cmake": (
        b"set(LIB libtvm.so)\r\nset(OTHER libtvm_runtime.so)\r\n",
        b"set(LIB libtvm_compiler.so)\r\nset(OTHER libtvm_runtime.so)\r\n",
    ),
    "python/loader.py": (
        (f"LIB = \"libtvm.so\"\nHEADER = 'include/{OLD_HEADER}'\n# was {OLD_HEADER}\n").encode(),
        (
            f"LIB = \"libtvm_compiler.so\"\nHEADER = 'include/{NEW_HEADER}'\n# was {OLD_HEADER}\n"
        ).encode(),
    ),
    "ci/build.sh": (
        b"#!/bin/sh\ncmake -DBUILD_DUMMY_LIBTVM=ON .. && test -f build/libtvm.so\n",
        b"#!/bin/sh\ncmake -DBUILD_DUMMY_LIBTVM=ON .. && test -f build/libtvm_compiler.so\n",
    ),
    ".github/workflows/ci.yml": (
        b"steps:\n  - run: python -c 'import ctypes; ctypes.CDLL(\"libtvm.so\")'\n",
        b"steps:\n  - run: python -c 'import ctypes; ctypes.CDLL(\"libtvm_compiler.so\")'\n",
    ),
    "docs/guide.md": (
        f"Link `libtvm.so`.\n\n```c++\n#include <{OLD_HEADER}>\n```\n".encode(),
        f"Link `libtvm_compiler.so`.\n\n```c++\n#include <{NEW_HEADER}>\n```\n".encode(),
    ),
    "docs/index.rst": (
        "Calls ``testing.GetShapeElem`` \u2014 d\u00e9j\u00e0 vu.\n".encode(),
        "Calls ``rpc.testing.GetShapeElem`` \u2014 d\u00e9j\u00e0 vu.\n".encode(),
    ),
    "include/legacy.h": (
        f"// (c) Jos\xe9 Mu\xf1oz\r\n#include <{OLD_HEADER}>\r\n".encode("latin-1"),
        f"// (c) Jos\xe9 Mu\xf1oz\r\n#include <{NEW_HEADER}>\r\n".encode("latin-1"),
    ),
    "clean.txt": (b"libtvm_runtime.so only\n", b"libtvm_runtime.so only\n"),
}

REPORT = [
    "tree/.github/workflows/ci.yml:2:49: renamed: libtvm.so -> libtvm_compiler.so",
    "tree/CMakeLists.txt:1:8: removed: BUILD_DUMMY_LIBTVM (link libtvm_runtime.so directly)",
    f"tree/CMakeLists.txt:2:31: header moved: {OLD_HEADER} -> {NEW_HEADER}",
    "tree/CMakeLists.txt:2:66: renamed: libtvm.so -> libtvm_compiler.so",
    "tree/ci/build.sh:2:9: removed: BUILD_DUMMY_LIBTVM (link libtvm_runtime.so directly)",
    "tree/ci/build.sh:2:51: renamed: libtvm.so -> libtvm_compiler.so",
    "tree/cmake/windows.cmake:1:9: renamed: libtvm.so -> libtvm_compiler.so",
    "tree/docs/guide.md:1:7: renamed: libtvm.so -> libtvm_compiler.so",
    f"tree/docs/guide.md:4:11: header moved: {OLD_HEADER} -> {NEW_HEADER}",
    "tree/docs/index.rst:1:9: renamed: testing.GetShapeElem -> rpc.testing.GetShapeElem",
    f"tree/include/legacy.h:2:11: header moved: {OLD_HEADER} -> {NEW_HEADER}",
    "tree/python/loader.py:1:8: renamed: libtvm.so -> libtvm_compiler.so",
    f"tree/python/loader.py:2:19: header moved: {OLD_HEADER} -> {NEW_HEADER}",
    f"tree/src/a.cc:1:11: header moved: {OLD_HEADER} -> {NEW_HEADER}",
    f"tree/src/a.cc:2:11: header moved: {OLD_HEADER} -> {NEW_HEADER}",
    "tree/src/a.cc:3:10: renamed: libtvm.so -> libtvm_compiler.so",
    "tree/src/a.cc:4:15: renamed: testing.GetShapeElem -> rpc.testing.GetShapeElem",
]
SUMMARY = (
    "migrate: 17 stale references in 9 files (6 header moved, 2 removed, 9 renamed); "
    "{scanned} files scanned; skipped 1 binary, 1 generated, 2 not a regular file"
)


def make_tree(folder: Path) -> Path:
    """The fixture tree under ``folder/tree`` and its recipe; returns the recipe."""
    tree = folder / "tree"
    for relative, (before, _after) in TREE.items():
        path = tree / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(before)
    (tree / "ci" / "build.sh").chmod(0o755)
    (tree / "include" / "legacy.h").chmod(0o600)
    (tree / "lib").mkdir()
    (tree / "lib" / "libtvm.so").write_bytes(b"\x7fELF\x02\x01\x01\x00libtvm.so\x00")
    (tree / "src" / "generated.py").write_text(
        '"""Generated by buildtool 0.1.0 from x.toml."""\nLIB = "libtvm.so"\n', encoding="utf-8"
    )
    (tree / "docs" / "gone.md").symlink_to(tree / "docs" / "missing.md")
    os.mkfifo(tree / "src" / "pipe.cc")
    (tree / ".gitignore").write_text("/build/\n*.log\n!keep.log\n", encoding="utf-8")
    (tree / "build").mkdir()
    (tree / "build" / "out.txt").write_text("libtvm.so\n", encoding="utf-8")
    (tree / "debug.log").write_text("libtvm.so\n", encoding="utf-8")
    recipe = folder / "recipe.toml"
    recipe.write_text(RECIPE, encoding="utf-8")
    return recipe


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    recipe = make_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    return recipe


def test_reports_every_stale_reference_exactly(run_cli: CliRunner, tree: Path) -> None:
    result = run_cli("migrate", "--recipe", str(tree))
    assert result.exit_code == 1, result.stderr
    assert "error" not in result.stderr, "the report said it all: main adds no error line"
    lines = result.stdout.splitlines()
    assert lines[:-1] == REPORT
    # 10 fixture files + .gitignore; ignored: build/, debug.log; skipped: lib/libtvm.so (binary),
    # src/generated.py (generated), docs/gone.md (broken symlink), src/pipe.cc (FIFO)
    assert lines[-1] == SUMMARY.format(scanned=11)
    for line in lines[:-1]:  # each position holds the old name it reports
        shown, number, column, what = line.split(":", 3)
        old = what.split(": ", 1)[1].split(" ")[0]
        text = TREE[shown.removeprefix("tree/")][0].decode(
            "latin-1" if "legacy.h" in shown else "utf-8"
        )
        assert text.splitlines()[int(number) - 1][int(column) - 1 :].startswith(old), line


def test_fix_rewrites_exactly_the_spans_and_keeps_bytes_modes_and_endings(
    run_cli: CliRunner, tree: Path
) -> None:
    root = tree.parent / "tree"
    result = run_cli("migrate", "--recipe", str(tree), "--fix")
    assert result.exit_code == 1, result.stderr  # the removed name is left to change by hand
    assert result.stdout.splitlines()[-1] == (
        "migrate --fix: rewrote 15 spans in 9 files; 2 uses of removed names left to change by hand"
    )
    assert "tree/src/a.cc:3:10: renamed: libtvm.so -> libtvm_compiler.so [fixed]" in result.stdout
    for relative, (_before, after) in TREE.items():
        assert (root / relative).read_bytes() == after, relative
    assert stat.S_IMODE((root / "ci" / "build.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "include" / "legacy.h").stat().st_mode) == 0o600
    assert (root / "build" / "out.txt").read_text(encoding="utf-8") == "libtvm.so\n"  # ignored
    assert not list(root.rglob("*.tmp"))

    again = run_cli("migrate", "--recipe", str(tree), "--fix")
    assert again.stdout.splitlines()[-1] == (
        "migrate --fix: rewrote 0 spans in 0 files; 2 uses of removed names left to change by hand"
    )
    for relative, (_before, after) in TREE.items():
        assert (root / relative).read_bytes() == after, relative


def test_a_second_fix_changes_nothing_and_exits_0(run_cli: CliRunner, tree: Path) -> None:
    root = tree.parent / "tree"
    for path in (root / "CMakeLists.txt", root / "ci" / "build.sh"):
        path.write_bytes(path.read_bytes().replace(b"BUILD_DUMMY_LIBTVM", b"USE_STUB"))
    assert run_cli("migrate", "--recipe", str(tree), "--fix").exit_code == 0
    snapshot = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}
    second = run_cli("migrate", "--recipe", str(tree), "--fix")
    assert second.exit_code == 0, second.stdout
    assert "rewrote 0 spans in 0 files" in second.stdout
    assert {p: p.read_bytes() for p in snapshot} == snapshot
    assert run_cli("migrate", "--recipe", str(tree)).exit_code == 0


def test_a_replacement_a_file_cannot_encode_stops_before_any_write(
    run_cli: CliRunner, tree: Path
) -> None:
    root = tree.parent / "tree"
    text = tree.read_text(encoding="utf-8")
    # "\u0101" is not in Latin-1, the encoding legacy.h is read in (0x80 is not UTF-8)
    moved = text.replace('"tvm/ffi/container/array.h"', '"tvm/ffi/container/\u0101rray.h"')
    tree.write_text(moved, encoding="utf-8")
    (root / "include" / "legacy.h").write_bytes(
        "// €\n".encode("cp1252") + TREE["include/legacy.h"][0]
    )
    result = run_cli("migrate", "--recipe", str(tree), "--fix")
    assert result.exit_code == 2
    assert "tree/include/legacy.h: the replacement cannot be written" in result.stderr
    assert (root / "src" / "a.cc").read_bytes() == TREE["src/a.cc"][0]


def test_dry_run_shows_a_diff_and_writes_nothing(run_cli: CliRunner, tree: Path) -> None:
    root = tree.parent / "tree"
    result = run_cli("migrate", "--recipe", str(tree), "--dry-run")
    assert result.exit_code == 1
    assert "--- a/tree/src/a.cc\n+++ b/tree/src/a.cc\n" in result.stdout
    assert "-// loads libtvm.so, never" in result.stdout
    assert "+// loads libtvm_compiler.so, never" in result.stdout
    assert "would rewrite 15 spans in 9 files" in result.stdout
    as_json = run_cli("migrate", "--recipe", str(tree), "--dry-run", "--format", "json")
    assert as_json.exit_code == 2
    assert "--dry-run prints a diff, which is not JSON" in as_json.stderr
    for relative, (before, _after) in TREE.items():
        assert (root / relative).read_bytes() == before, relative


def test_file_kinds_come_from_names() -> None:
    names = ["a.cc", "b.HPP", "CMakeLists.txt", "x.cmake.in", "y.py", "z.sh", "w.yaml", "v.md"]
    kinds = ["c", "c", "cmake", "cmake", "python", "shell", "yaml", "markdown"]
    assert [file_kind(name) for name in names] == kinds
    assert [file_kind(name) for name in ("doc.rst", "config.h.in", "notes.txt")] == [
        "rst",
        "c",
        "text",
    ]


def test_json_and_github_formats(run_cli: CliRunner, tree: Path) -> None:
    document = json.loads(run_cli("migrate", "--recipe", str(tree), "--format", "json").stdout)
    assert document["version"] == 1
    assert document["stale"] == len(REPORT)
    assert document["skipped"] == {"binary": 1, "generated": 1, "not a regular file": 2}
    first = document["findings"][0]
    assert first == {
        "path": "tree/.github/workflows/ci.yml",
        "line": 2,
        "column": 49,
        "kind": "renamed",
        "old": "libtvm.so",
        "new": "libtvm_compiler.so",
        "advice": None,
        "fixed": False,
    }
    github = run_cli("migrate", "--recipe", str(tree), "--format", "github").stdout.splitlines()
    assert github[1] == (
        "::error file=tree/CMakeLists.txt,line=1,col=8,title=stale name (removed)::"
        "removed: BUILD_DUMMY_LIBTVM (link libtvm_runtime.so directly)"
    )


def test_git_checkout_scans_tracked_files_only(run_cli: CliRunner, tree: Path) -> None:
    require(shutil.which("git") is not None, "git is not installed")
    root = tree.parent / "tree"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "src/a.cc", "clean.txt"], check=True)
    result = run_cli("migrate", "--recipe", str(tree))
    reported = {line.split(":")[0] for line in result.stdout.splitlines()[:-1]}
    assert reported == {"tree/src/a.cc"}
    assert "; 2 files scanned" in result.stdout


def test_named_files_and_excludes(run_cli: CliRunner, tree: Path) -> None:
    result = run_cli("migrate", "--recipe", str(tree), "tree/docs/guide.md")
    assert result.stdout.splitlines()[:-1] == [line for line in REPORT if "guide.md" in line]
    missing = run_cli("migrate", "--recipe", str(tree), "tree/nothing-here")
    assert missing.exit_code == 2
    assert "tree/nothing-here: no such file or folder" in missing.stderr
    text = tree.read_text(encoding="utf-8")
    tree.write_text(text + '\n[migrate]\nexclude = ["docs/**", "**/*.sh"]\n', encoding="utf-8")
    result = run_cli("migrate", "--recipe", str(tree))
    assert "docs/" not in result.stdout
    assert "build.sh" not in result.stdout
    assert result.exit_code == 1


def test_unreadable_and_large_files_are_skipped_with_a_count(tree: Path) -> None:
    root = tree.parent / "tree"
    (root / "secret.h").write_text("libtvm.so\n", encoding="utf-8")
    (root / "secret.h").chmod(0)
    try:
        result = scan_paths([root], RULES, root=root, max_bytes=200)
    finally:
        (root / "secret.h").chmod(0o644)
    assert result.skipped["too large"] == sum(len(before) > 200 for before, _ in TREE.values())
    if os.geteuid() == 0:
        pytest.skip("root reads a file with mode 000; the FIFO and the broken link stand in")
    assert result.skipped["unreadable"] == 1


def test_no_migrate_table_is_clean(run_cli: CliRunner, tree: Path) -> None:
    tree.write_text('[project]\nname = "tree"\nroot = "tree"\n', encoding="utf-8")
    result = run_cli("migrate", "--recipe", str(tree))
    assert result.exit_code == 0
    assert "has no [migrate] entries" in result.stderr


# --- bad [migrate] tables -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            "renamd = {}",
            "migrate.renamd: unknown key 'renamd'; did you mean 'renamed' or 'removed'?",
        ),
        ('renamed = { "" = "x" }', 'migrate.renamed."": expected a non-empty name'),
        ('renamed = { "a" = "" }', "migrate.renamed.a: expected a non-empty replacement"),
        ('renamed = { "a" = 1 }', "migrate.renamed.a: expected a string, found an integer (1)"),
        ('renamed = { " a" = "b" }', 'migrate.renamed." a": a name may not hold'),
        ('removed = { "OLD" = " " }', "migrate.removed.OLD: expected advice"),
        (
            'renamed-headers = { "/usr/include/a.h" = "b.h" }',
            'migrate.renamed-headers."/usr/include/a.h": expected a path relative to an include',
        ),
        (
            'renamed-headers = { "a.h" = "../b.h" }',
            'migrate.renamed-headers."a.h": paths may not escape an include folder',
        ),
        (
            'renamed = { "libx.so" = "liby.so" }\nremoved = { "libx.so" = "gone" }',
            "migrate.removed.\"libx.so\": 'libx.so' is already in migrate.renamed",
        ),
        (
            'renamed = { "a" = "b", "b" = "c" }',
            "migrate.renamed.a: the replacement 'b' is itself an old name (in migrate.renamed)",
        ),
        (
            'renamed = { "foo" = "foo bar" }',
            "migrate.renamed.foo: the replacement 'foo bar' contains the old name 'foo'",
        ),
        ('shims = "/abs"', "migrate.shims: expected a path relative to the project root"),
        ('exclude = ["../x"]', "migrate.exclude[0]: paths may not escape the project root"),
    ],
)
def test_bad_migrate_tables_exit_2_naming_the_key(
    run_cli: CliRunner, tmp_path: Path, table: str, message: str
) -> None:
    (tmp_path / "tree").mkdir()
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(
        f'[project]\nname = "tree"\nroot = "tree"\n\n[migrate]\n{table}\n', encoding="utf-8"
    )
    result = run_cli("migrate", "--recipe", str(recipe))
    assert result.exit_code == 2
    assert f"{recipe}: {message}" in result.stderr
    assert "Traceback" not in result.stderr


# --- forwarding headers ---------------------------------------------------------------------------


def compile_through_shim(include: Path, work: Path, *flags: str) -> str:
    """Compile a translation unit that includes the old header twice; return the compiler's
    stderr."""
    unit = work / "unit.cc"
    unit.write_text(
        f"#include <{OLD_HEADER}>\n#include <{OLD_HEADER}>\n"
        "int main() { return answer() - 42; }\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-Werror",
            "-I",
            str(include),
            *flags,
            "-c",
            str(unit),
            "-o",
            str(work / "unit.o"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_shims_forward_and_warn_once_until_the_macro_is_defined(
    run_cli: CliRunner, tree: Path
) -> None:
    require(shutil.which("g++") is not None, "g++ is not installed")
    include = tree.parent / "include"
    new = include / NEW_HEADER
    new.parent.mkdir(parents=True)
    new.write_text("#pragma once\ninline int answer() { return 42; }\n", encoding="utf-8")
    result = run_cli("migrate", "--recipe", str(tree), "--shims", str(include))
    assert result.exit_code == 0, result.stderr
    assert "1 forwarding headers, 1 written, 0 already current" in result.stdout
    shim = (include / OLD_HEADER).read_text(encoding="utf-8")
    assert shim.startswith("// Generated by buildtool ")
    assert f"#include <{NEW_HEADER}>\n" in shim

    stderr = compile_through_shim(include, tree.parent)
    warning = f"#pragma message: {OLD_HEADER} is deprecated: include <{NEW_HEADER}> instead"
    assert stderr.count(warning) == 1, stderr  # included twice, said once
    assert "TREE_NO_DEPRECATED_HEADER_WARNINGS" in stderr
    quiet = compile_through_shim(include, tree.parent, "-DTREE_NO_DEPRECATED_HEADER_WARNINGS")
    assert warning not in quiet

    again = run_cli("migrate", "--recipe", str(tree), "--shims", str(include))
    assert "0 written, 1 already current" in again.stdout
    # the shims carry buildtool's header: a scan skips them as generated
    assert str(include) not in run_cli("migrate", "--recipe", str(tree), str(include)).stdout


def test_shims_never_overwrite_a_file_buildtool_did_not_generate(
    run_cli: CliRunner, tree: Path
) -> None:
    include = tree.parent / "include"
    mine = include / OLD_HEADER
    mine.parent.mkdir(parents=True)
    mine.write_text("// the project's own header\n", encoding="utf-8")
    result = run_cli("migrate", "--recipe", str(tree), "--shims", str(include))
    assert result.exit_code == 2
    assert f"{mine}: exists and was not generated by buildtool" in result.stderr
    assert mine.read_text(encoding="utf-8") == "// the project's own header\n"
    no_folder = run_cli("migrate", "--recipe", str(tree), "--shims")
    assert no_folder.exit_code == 2
    assert "--shims needs a folder" in no_folder.stderr


# --- the bundled example -------------------------------------------------------------------------


def test_the_example_is_clean_and_its_table_finds_its_old_names(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    loaded = load_recipe(DEMO_RECIPE)
    assert loaded.recipe.migrate.renamed == {
        "libdemo.so": "libdemo_compiler.so",
        "testing.GetShapeElem": "rpc.testing.GetShapeElem",
        "testing.GetShapeSize": "rpc.testing.GetShapeSize",
    }
    clean = run_cli("migrate", "--recipe", str(DEMO_RECIPE))
    assert clean.exit_code == 0, clean.stdout
    assert clean.stdout.startswith("migrate: no stale names; ")

    stale = tmp_path / "stale.py"
    stale.write_text(
        'CDLL("libdemo.so"); call("testing.GetShapeElem"); call("rpc.testing.GetShapeSize")\n'
        '#include "demo/c_runtime_api.h"\n',
        encoding="utf-8",
    )
    result = run_cli("migrate", "--recipe", str(DEMO_RECIPE), str(stale))
    assert result.exit_code == 1
    assert result.stdout.count(": renamed: ") == 2
    assert result.stdout.count(": header moved: ") == 1


def test_the_ci_step_passes_on_the_example_and_fails_on_a_stale_name(tmp_path: Path) -> None:
    assert [step.name for step in pipeline.STEPS][:2] == ["generated", "migrate"]
    loaded = load_recipe(DEMO_RECIPE)
    workspace = pipeline.Workspace(
        pipeline.CiRequest(loaded, tmp_path, tmp_path), plan_recipe(loaded)
    )
    outcome = pipeline.step_migrate(workspace)
    assert outcome.detail.startswith("migrate: no stale names; ")

    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    shutil.copytree(REPO / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "src" / "load.sh").write_text("ls lib/libdemo.so\n", encoding="utf-8")
    copy = load_recipe(tmp_path / "recipes" / "demo.toml")
    workspace = pipeline.Workspace(pipeline.CiRequest(copy, tmp_path, tmp_path), plan_recipe(copy))
    step = next(step for step in pipeline.STEPS if step.name == "migrate")
    result = pipeline.run_step(step, workspace)
    assert result.status == "failed"
    assert result.detail.startswith("migrate: 1 stale references in 1 files (1 renamed)")
    assert "load.sh:1:8: renamed: libdemo.so -> libdemo_compiler.so" in result.detail


def test_bare_shims_option_uses_the_recipe_folder(run_cli: CliRunner, tree: Path) -> None:
    text = tree.read_text(encoding="utf-8")
    with_folder = text.replace(
        "[migrate.renamed]", '[migrate]\nshims = "shim"\n\n[migrate.renamed]'
    )
    tree.write_text(with_folder, encoding="utf-8")
    result = run_cli("migrate", "--recipe", str(tree), "--shims")
    assert result.exit_code == 0, result.stderr
    shim = tree.parent / "tree" / "shim" / OLD_HEADER
    assert shim.read_text(encoding="utf-8").endswith(f"#include <{NEW_HEADER}>\n")


@pytest.mark.parametrize(
    ("path", "is_folder", "ignored"),
    [
        ("build", True, True),
        ("build", False, False),  # "build/" names folders only
        ("sub/build", True, False),  # "/build/" is anchored to the root
        ("debug.log", False, True),
        ("sub/deep/trace.log", False, True),
        ("keep.log", False, False),  # re-included by "!keep.log"
        ("docs/api/index.md", False, True),
        ("docs/guide.md", False, False),
        ("sub/x.tmp", False, True),  # from sub/.gitignore
        ("x.tmp", False, False),
    ],
)
def test_gitignore_rules(path: str, is_folder: bool, ignored: bool) -> None:
    rules = parse_gitignore("# comment\n/build/\n*.log\n!keep.log\ndocs/**/index.md\n", "")
    rules += parse_gitignore("*.tmp\n", "sub")
    assert is_ignored(path, is_folder, rules) is ignored


def test_a_recipe_inside_the_project_is_never_scanned(run_cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("Use libold.so.\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.buildtool.project]\nname = "x"\n\n'
        '[tool.buildtool.migrate.renamed]\n"libold.so" = "libnew.so"\n',
        encoding="utf-8",
    )
    result = run_cli("migrate", "--recipe", str(tmp_path / "pyproject.toml"))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{tmp_path}/notes.md:1:5: renamed: libold.so -> libnew.so",
        "migrate: 1 stale references in 1 files (1 renamed); 1 files scanned",
    ]


def test_the_recipe_reached_through_a_link_is_never_rewritten(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    recipe = real / "buildtool.toml"
    text = '[project]\nname = "x"\n\n[migrate.renamed]\n"libold.so" = "libnew.so"\n'
    recipe.write_text(text, encoding="utf-8")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    through_link = tmp_path / "link" / "buildtool.toml"
    result = run_cli("migrate", "--recipe", str(recipe), "--fix", str(through_link))
    assert result.exit_code == 0, result.stdout + result.stderr
    assert recipe.read_text(encoding="utf-8") == text


# --- platform file names of a library rule ------------------------------------------------------

PLATFORM_RULES = compile_rules(
    parse_recipe(
        tomllib.loads(
            '[project]\nname = "p"\n[migrate.renamed]\n"libtvm.so" = "libtvm_compiler.so"\n'
            '[migrate.removed]\n"libold.so" = "link libnew.so"\n'
        ),
        "test",
    ).migrate,
    "test",
)


@pytest.mark.parametrize(
    ("text", "kind", "old", "fixed"),
    [
        ("install libtvm.dylib", "text", "libtvm.dylib", "install libtvm_compiler.dylib"),
        ("copy tvm.dll here", "text", "tvm.dll", "copy tvm_compiler.dll here"),
        ("copy libtvm.dll here", "text", "libtvm.dll", "copy libtvm_compiler.dll here"),
        ('load(runtime="libtvm")', "python", "libtvm", 'load(runtime="libtvm_compiler")'),
        ("name = 'libtvm'", "python", "libtvm", "name = 'libtvm_compiler'"),
        ("libtvm.so.0", "text", "libtvm.so", "libtvm_compiler.so.0"),
    ],
)
def test_a_library_rule_covers_its_platform_names(
    text: str, kind: str, old: str, fixed: str
) -> None:
    from buildtool.migrate.fix import apply_fixes

    matches = scan_text(text, PLATFORM_RULES, kind)  # type: ignore[arg-type]
    assert [m.rule.old for m in matches] == [old]
    assert apply_fixes(text, matches) == (fixed, 1)


@pytest.mark.parametrize(
    "text",
    [
        "libtvm_runtime.dylib",
        "mylibtvm.dylib",
        "libtvm_runtime.dll",
        "tvm_runtime.dll",
        "tvm.dllx",
        "the libtvm library",  # a bare stem only as a whole quoted string
        '"libtvm/include"',
        '"libtvm_runtime"',
    ],
)
def test_platform_names_keep_the_boundaries(text: str) -> None:
    assert scan_text(text, PLATFORM_RULES, "python") == ()


def test_a_removed_library_is_reported_on_every_platform() -> None:
    text = 'libold.dylib old.dll "libold" libold.so.1'
    matches = scan_text(text, PLATFORM_RULES, "python")
    assert [(m.rule.old, m.rule.advice, m.rule.fixable) for m in matches] == [
        ("libold.dylib", "link libnew.so", False),
        ("old.dll", "link libnew.so", False),
        ("libold", "link libnew.so", False),
        ("libold.so", "link libnew.so", False),
    ]
