"""ld.so-style NEEDED resolution: search order, the cache, symbol and version matching.

The integration tests run the executables they build: the real ld.so is the oracle.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import struct
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from buildtool.linkage.binaries import NO_NAMES, BinaryFacts
from buildtool.linkage.binaries.elf import read_elf_file
from buildtool.linkage.loaders.closure import Environment, filesystem_lookup, resolve_closure
from buildtool.linkage.loaders.glibc import (
    LD_SO_CACHE,
    CacheEntry,
    FactsLookup,
    LdSoCache,
    default_system_dirs,
    expand_dst,
    load_ld_so_cache,
    parse_ld_so_cache,
    search_dirs,
    search_steps,
)
from buildtool.linkage.loaders.loaded import Closure
from buildtool.linkage.loaders.symbols import (
    DefinitionIndex,
    Definitions,
    KeyedDefinitions,
    closure_index,
    index_definitions,
    index_object,
    is_satisfied,
    split_key,
    unresolved_against,
    unresolved_symbols,
    unsatisfied_version_needs,
)
from tests.conftest import require
from tests.test_verify import system_libraries

BASE = BinaryFacts(
    path="x", elf_class=64, little_endian=True, machine="x86_64", file_type="shared",
    interpreter=None, soname=None, needed=(), rpath=None, runpath=None, defined=frozenset(),
    versioned_definitions=False,
    undefined=frozenset(), weak_undefined=frozenset(), unique=frozenset(),
    weak_defined=frozenset(), exported_count=0,
    version_definitions=(), version_needs=(), init_array_size=0, has_symtab=False,
    static_initializers=(), symtab_functions=NO_NAMES,
    registration_strings=frozenset(), file_size=0, code_size=0, sections=(), bind_now=False,
    relro=False, exec_stack=False, textrel=False, nodeflib=False,
)  # fmt: skip


def fake(**changes: object) -> BinaryFacts:
    return dataclasses.replace(BASE, **changes)  # type: ignore[arg-type]


# --- search order (pure) --------------------------------------------------------------------


def test_runpath_hides_rpath_and_the_loader_chain() -> None:
    facts = fake(rpath=("/r",), runpath=("$ORIGIN/../lib",))
    dirs = search_dirs(facts, "/pkg/bin", [("/chain",)], None, ("/lib",))
    assert dirs == ("/pkg/lib", LD_SO_CACHE, "/lib")


def test_rpath_then_loader_chain_then_cache_then_defaults() -> None:
    facts = fake(rpath=("$ORIGIN", "${ORIGIN}/sub", "", "/abs/"))
    steps = search_steps(facts, "/pkg", [("/loader",), ("/exe",)], None, ("/lib", "/usr/lib"))
    assert steps == (
        ("rpath", "/pkg"), ("rpath", "/pkg/sub"), ("rpath", "."), ("rpath", "/abs"),
        ("rpath", "/loader"), ("rpath", "/exe"), ("cache", LD_SO_CACHE),
        ("default", "/lib"), ("default", "/usr/lib"),
    )  # fmt: skip


def test_ld_library_path_only_when_given_and_between_rpath_and_runpath() -> None:
    with_runpath = fake(runpath=("/run",))
    assert search_dirs(with_runpath, "/o", (), None, ()) == ("/run", LD_SO_CACHE)
    assert search_dirs(with_runpath, "/o", (), ["/env", ""], ()) == (
        "/env", ".", "/run", LD_SO_CACHE,
    )  # fmt: skip
    with_rpath = fake(rpath=("/rp",))
    assert search_dirs(with_rpath, "/o", (), ["/env"], ()) == ("/rp", "/env", LD_SO_CACHE)


def test_nodeflib_skips_default_dirs() -> None:
    assert search_dirs(fake(nodeflib=True), "/o", (), None, ("/lib",)) == (LD_SO_CACHE,)


def test_repeated_directories_are_searched_once() -> None:
    facts = fake(rpath=("/a", "/a/", "/b"))
    assert search_dirs(facts, "/o", [("/b",)], None, ("/a",)) == ("/a", "/b", LD_SO_CACHE)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("$ORIGIN", "/o/d"),
        ("${ORIGIN}/../lib", "/o/d/../lib"),
        ("$ORIGINAL/x", "$ORIGINAL/x"),  # not the token: an identifier continues
        ("/opt/$LIB/$PLATFORM", "/opt/lib64/x86_64"),
        ("${LIB}${PLATFORM}", "lib64x86_64"),
        ("$HOME/x", "$HOME/x"),
    ],
)
def test_expand_dst(entry: str, expected: str) -> None:
    assert expand_dst(entry, "/o/d", "lib64", "x86_64") == expected


def test_default_system_dirs() -> None:
    dirs = default_system_dirs(64, "x86_64")
    assert dirs[:2] == ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")
    assert {"/lib64", "/lib", "/usr/lib"} <= set(dirs)
    assert default_system_dirs(32, "unknown(9)") == ("/lib", "/usr/lib")


# --- closure over an in-memory tree ---------------------------------------------------------


def tree_reader(tree: dict[str, BinaryFacts]) -> tuple[list[str], FactsLookup]:
    asked: list[str] = []

    def read(path: str) -> BinaryFacts | None:
        asked.append(path)
        return tree.get(path)

    return asked, read


def test_breadth_first_order_and_reuse_by_name_and_soname() -> None:
    tree = {
        "/app/liba.so": fake(needed=("libc_.so",), soname="liba.so"),
        "/app/libb.so": fake(needed=("libc_.so", "libd.so"), soname="libb.so"),
        "/app/libc_.so": fake(soname="libc_.so"),
        "/app/libd.so": fake(needed=("liba.so",), soname="libd.so"),
    }
    root = fake(needed=("liba.so", "libb.so"), runpath=("$ORIGIN",))
    sub = {k: dataclasses.replace(v, runpath=("$ORIGIN",)) for k, v in tree.items()}
    _asked, read = tree_reader(sub)
    closure = resolve_closure("/app/main", root, read, Environment(system_dirs=()))
    assert closure.load_order == (
        "/app/main", "/app/liba.so", "/app/libb.so", "/app/libc_.so", "/app/libd.so",
    )  # fmt: skip
    assert [(e.needed, e.via) for e in closure.edges] == [
        ("liba.so", "runpath"), ("libb.so", "runpath"), ("libc_.so", "runpath"),
        ("libc_.so", "loaded"), ("libd.so", "runpath"), ("liba.so", "loaded"),
    ]  # fmt: skip
    assert closure.missing == ()
    assert closure.provider("libd.so") is sub["/app/libd.so"]


def test_incompatible_candidates_are_skipped_like_ld_so() -> None:
    tree = {
        "/first/libx.so": fake(elf_class=32, machine="i386"),
        "/second/libx.so": fake(soname="libx.so"),
    }
    _asked, read = tree_reader(tree)
    root = fake(needed=("libx.so", "liby.so"), rpath=("/first", "/second"))
    closure = resolve_closure("/r", root, read, Environment(system_dirs=("/sys",)))
    assert closure.edges[0].path == "/second/libx.so"
    assert closure.missing[0].needed == "liby.so"
    assert closure.missing[0].via == "not found"


def test_names_with_a_slash_are_paths_and_cache_entries_follow_runpath() -> None:
    cache = LdSoCache({"libz.so.1": (cache_entry("libz.so.1", "/cached/libz.so.1"),)})
    tree = {"/pkg/sub/libp.so": fake(), "/cached/libz.so.1": fake()}
    _asked, read = tree_reader(tree)
    root = fake(needed=("$ORIGIN/sub/libp.so", "libz.so.1"))
    closure = resolve_closure("/pkg/root.so", root, read, Environment(cache, system_dirs=()))
    assert [(e.path, e.via) for e in closure.edges] == [
        ("/pkg/sub/libp.so", "path"), ("/cached/libz.so.1", "cache"),
    ]  # fmt: skip


def test_a_loader_chain_rpath_applies_to_grandchildren() -> None:
    tree = {
        "/a/libmid.so": fake(needed=("libdeep.so",)),
        "/b/libdeep.so": fake(),
    }
    _asked, read = tree_reader(tree)
    root = fake(needed=("libmid.so",), rpath=("/a", "/b"))
    closure = resolve_closure("/exe", root, read, Environment(system_dirs=()))
    assert closure.edges[1].path == "/b/libdeep.so"
    assert closure.edges[1].via == "rpath"
    tree["/a/libmid.so"] = fake(needed=("libdeep.so",), runpath=("/elsewhere",))
    closure = resolve_closure("/exe", root, read, Environment(system_dirs=()))
    assert closure.edges[1].path is None


def test_default_dirs_are_the_system_ones_unless_given() -> None:
    asked, read = tree_reader({"/lib/x86_64-linux-gnu/libdeep.so": fake()})
    root = fake(needed=("libdeep.so",))
    assert resolve_closure("/exe", root, read, Environment(system_dirs=())).missing != ()
    assert "/lib/x86_64-linux-gnu/libdeep.so" not in asked
    closure = resolve_closure("/exe", root, read, Environment())
    assert closure.edges[0].path == "/lib/x86_64-linux-gnu/libdeep.so"
    assert closure.edges[0].via == "default"


# --- symbols --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "parts"),
    [
        ("memcpy", ("memcpy", None, False)),
        ("memcpy@GLIBC_2.2.5", ("memcpy", "GLIBC_2.2.5", False)),
        ("memcpy@@GLIBC_2.14", ("memcpy", "GLIBC_2.14", True)),
    ],
)
def test_split_key(key: str, parts: tuple[str, str | None, bool]) -> None:
    assert split_key(key) == parts


@pytest.mark.parametrize(
    ("undefined", "definitions", "satisfied"),
    [
        ("f@V1", {"f@@V1"}, True),
        ("f@V1", {"f@V1"}, True),  # an explicit version may bind to a hidden definition
        ("f@V1", {"f"}, True),  # a definition without versions satisfies any version
        ("f@V1", {"f@@V2"}, False),
        ("f@V1", {"f@V2", "f@@V3"}, False),
        ("f", {"f"}, True),
        ("f", {"f@@V2"}, True),  # an unversioned reference takes the default version
        ("f", {"f@V2"}, False),  # but never a hidden one
        ("f", {"g", "f_", "ff@@V"}, False),
        ("f@V1", set(), False),
    ],
)
def test_is_satisfied(undefined: str, definitions: set[str], satisfied: bool) -> None:
    assert is_satisfied(undefined, index_definitions([definitions])) is satisfied


def test_unresolved_symbols_uses_the_union() -> None:
    facts = fake(undefined=frozenset({"a@V", "b", "c"}), weak_undefined=frozenset({"w"}))
    index = index_definitions([{"a@@V"}, {"b@@X"}])
    assert unresolved_symbols(facts, index) == {"c"}


@given(
    st.sets(st.sampled_from(["f", "g", "f@V1", "g@V1", "f@V2", "h@V1", "f@@V1"]), max_size=7),
    st.lists(
        st.sets(st.sampled_from(["f", "g", "f@@V1", "f@V1", "g@@V2", "h@V2", "h"]), max_size=5),
        max_size=4,
    ),
)
def test_unresolved_against_each_index_is_the_union(
    keys: set[str], objects: list[set[str]]
) -> None:
    """One index per loaded object gives what the index of their union gives."""
    union = unresolved_symbols(fake(undefined=frozenset(keys)), index_definitions(objects))
    each = unresolved_against(keys, [index_definitions([defined]) for defined in objects])
    assert each == union


_KEY_PARTS = st.text(alphabet="fg@V1_", max_size=6)


@given(st.lists(st.sets(_KEY_PARTS, max_size=6), max_size=3))
def test_the_index_holds_what_split_key_reads_from_each_key(objects: list[set[str]]) -> None:
    """Keys of any shape ("@" first, last, doubled, tripled) land where ``split_key`` says."""
    unversioned: set[str] = set()
    default: set[str] = set()
    versioned: set[str] = set()
    for key in set[str]().union(*objects):
        name, version, is_default = split_key(key)
        if version is None:
            unversioned.add(name)
        else:
            versioned.add(f"{name}@{version}")
            if is_default:
                default.add(name)
    expected = DefinitionIndex(frozenset(unversioned), frozenset(default), frozenset(versioned))
    assert index_definitions(objects) == expected


def _questions(defined: Iterable[str]) -> set[str]:
    """References one could make to these definitions: each name bare and with each version
    that occurs anywhere, a hidden form, a name defined nowhere, a doubled "@"."""
    names = {split_key(key)[0] for key in defined}
    versions = {version for key in defined if (version := split_key(key)[1]) is not None}
    asked = {*names, "nowhere", "nowhere@V1", *(f"{n}@@{v}" for n in names for v in versions)}
    asked.update(f"{name}@{version}" for name in names for version in [*versions, "V9"])
    return asked


def _same_answers(facts: BinaryFacts, asked: set[str], looked_up: Definitions) -> None:
    indexed = index_definitions([facts.defined])
    for key in asked:
        assert is_satisfied(key, looked_up) is is_satisfied(key, indexed), key
    assert unresolved_against(asked, [looked_up]) == unresolved_against(asked, [indexed])


LLVM_LIBRARY = Path("/usr/lib/llvm-14/lib/libLLVM-14.so")
"""44k exports, each ``name@@LLVM_14`` (llvm-14-dev): a version script's library, as
tensorflow's are."""


def test_one_object_is_looked_up_as_if_every_key_were_indexed() -> None:
    """``index_object`` trusts ``versioned_definitions`` and ``default_versions`` instead of
    splitting every key: the system's libraries (libc's and libstdc++'s many versions, indexed)
    and libLLVM (looked up) answer every question as the index of all their keys does."""
    require(LLVM_LIBRARY.exists(), f"{LLVM_LIBRARY} is missing (llvm-14-dev)")
    libraries = [*system_libraries(), LLVM_LIBRARY]
    plain = fake(defined=frozenset({"a", "b"}))
    kinds: dict[str, type] = {}
    for name, one in [*((path.name, read_elf_file(path)) for path in libraries), ("-", plain)]:
        assert one is not None
        assert one.versioned_definitions == any("@" in key for key in one.defined)
        asked = _questions(one.defined) | set(one.undefined)
        if len(asked) > 20_000:  # libstdc++: every name with every version is millions
            asked = set(sorted(asked)[::50]) | set(one.defined) | set(one.undefined)
        kinds[name] = type(index_object(one))
        _same_answers(one, asked, index_object(one))
    assert kinds["libLLVM-14.so"] is KeyedDefinitions
    assert kinds["libc.so.6"] is DefinitionIndex  # 36 versions: each name asked 36 times


_NAME = st.text(alphabet="fg_", min_size=1, max_size=3)
_VERSION = st.sampled_from(["V1", "V2", "V3"])


@given(
    st.sets(st.tuples(_NAME, st.sampled_from(["", "@", "@@"]), _VERSION), max_size=8),
    st.sets(st.text(alphabet="fg@V12_", max_size=7), max_size=8),
)
def test_keys_looked_up_answer_as_the_index(
    parts: set[tuple[str, str, str]], asked: set[str]
) -> None:
    """Keys that read as a name and a version without doubt (the decoder's ``default_versions``
    says which): looking them up answers any question (odd ones included) as the index."""
    defined = frozenset(name + (at + version if at else "") for name, at, version in parts)
    defaults = tuple(sorted({version for _name, at, version in parts if at == "@@"}))
    facts = fake(defined=defined, versioned_definitions=any("@" in key for key in defined))
    _same_answers(facts, asked | _questions(defined), KeyedDefinitions(defined, defaults))


def test_a_name_holding_an_at_sign_is_indexed_whole() -> None:
    """A name with an "@" (no compiler makes one) reads two ways: the decoders then leave
    ``default_versions`` unknown and every key is split, as before."""
    facts = fake(defined=frozenset({"a@@b@@V1"}), versioned_definitions=True)
    assert facts.default_versions is None
    assert isinstance(index_object(facts), DefinitionIndex)
    assert is_satisfied("a", index_object(facts))


# --- /etc/ld.so.cache -----------------------------------------------------------------------


def cache_entry(soname: str, path: str, flags: int = 0x0303, hwcap: int = 0) -> CacheEntry:
    return CacheEntry(soname, path, flags, hwcap)


def build_cache(entries: list[tuple[str, str, int, int]], big: bool = False) -> bytes:
    """A new-format cache, laid out as ldconfig writes it."""
    e = ">" if big else "<"
    header_size, entry_size = 48, 24
    strings = bytearray()
    rows = []
    start = header_size + entry_size * len(entries)
    for soname, path, flags, hwcap in entries:
        key = start + len(strings)
        strings += soname.encode() + b"\0"
        value = start + len(strings)
        strings += path.encode() + b"\0"
        rows.append(struct.pack(e + "iIIIQ", flags, key, value, 0, hwcap))
    header = struct.pack(e + "20sIIB3xI12x", b"glibc-ld.so.cache1.1", len(entries),
                         len(strings), 3 if big else 2, 0)  # fmt: skip
    return header + b"".join(rows) + bytes(strings)


@pytest.mark.parametrize("big", [False, True])
def test_parse_cache_filters_by_abi(big: bool) -> None:
    data = build_cache(
        [
            ("libz.so.1", "/usr/lib/glibc-hwcaps/x86-64-v3/libz.so.1", 0x0303, 1 << 62),
            ("libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1", 0x0303, 0),
            ("libz.so.1", "/lib/i386-linux-gnu/libz.so.1", 0x0003, 0),
        ],
        big,
    )
    cache = parse_ld_so_cache(data)
    assert cache is not None
    assert cache.paths("libz.so.1", 64, "x86_64") == (
        "/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/glibc-hwcaps/x86-64-v3/libz.so.1",
    )  # fmt: skip
    assert cache.paths("libz.so.1", 32, "i386") == ("/lib/i386-linux-gnu/libz.so.1",)
    assert cache.paths("libz.so.1", 64, "unknown(7)") == (  # any libc6 entry, plain dirs first
        "/lib/x86_64-linux-gnu/libz.so.1",
        "/lib/i386-linux-gnu/libz.so.1",
        "/usr/lib/glibc-hwcaps/x86-64-v3/libz.so.1",
    )
    assert cache.paths("libnope.so", 64, "x86_64") == ()


def test_old_format_prefix_is_skipped() -> None:
    new = build_cache([("liba.so", "/lib/liba.so", 0x0303, 0)])
    old = b"ld.so-1.7.0\0" + struct.pack("<I", 1) + bytes(12)  # one 12-byte legacy entry
    data = old + bytes(-len(old) % 8) + new
    combined = parse_ld_so_cache(data)  # strings are relative to the new header, as in glibc
    assert combined is not None
    assert combined.paths("liba.so", 64, "x86_64") == ("/lib/liba.so",)
    assert parse_ld_so_cache(old) is None


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(st.binary(max_size=400), st.integers(0, 200))
def test_garbage_cache_never_raises(junk: bytes, cut: int) -> None:
    valid = build_cache([("liba.so", "/lib/liba.so", 0x0303, 0)] * 3)
    for data in (junk, b"glibc-ld.so.cache1.1" + junk, valid[:cut], valid[:cut] + junk):
        result = parse_ld_so_cache(data)
        assert result is None or isinstance(result, LdSoCache)


def test_missing_cache_is_empty(tmp_path: Path) -> None:
    assert load_ld_so_cache(str(tmp_path / "absent")).entries == {}
    (tmp_path / "junk").write_bytes(b"not a cache")
    assert load_ld_so_cache(str(tmp_path / "junk")).entries == {}


def test_system_cache_matches_ldconfig() -> None:
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    require(
        Path("/etc/ld.so.cache").exists() and Path(ldconfig).exists(),
        "needs /etc/ld.so.cache and ldconfig",
    )
    listing = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, check=True).stdout
    expected = {
        (line.split(" (")[0].strip(), line.rsplit(" => ", 1)[1].strip())
        for line in listing.splitlines()[1:]
        if " => " in line
    }
    cache = load_ld_so_cache()
    parsed = {(name, e.path) for name, found in cache.entries.items() for e in found}
    assert parsed == expected
    assert len(parsed) > 10


# --- real binaries, with the real ld.so as the oracle ---------------------------------------


def _run(*command: str | Path, cwd: Path) -> None:
    subprocess.run([str(c) for c in command], cwd=cwd, check=True, capture_output=True)


def _shared(d: Path, out: str, source: str, *flags: str) -> None:
    (d / f"{out}.c").write_text(source)
    _run("gcc", "-shared", "-fPIC", f"{out}.c", "-o", f"{out}.so", *flags, cwd=d)


@dataclass(frozen=True)
class Tree:
    root: Path

    def path(self, name: str) -> Path:
        return self.root / name


MAIN_C = "int mid2(void);\nint main(void) { return mid2() - 5; }\n"


def _build_chain(r: Path) -> None:
    for sub in ("x", "ya", "yb", "s", "m"):
        (r / sub).mkdir()
    _shared(r / "x", "libdeep", "int deep(void) { return 5; }\n", "-Wl,-soname,libdeep.so")
    mid = "int deep(void);\nint mid2(void) { return deep(); }\n"
    _shared(r / "ya", "libmid2", mid, "-L../x", "-ldeep")
    _shared(r / "yb", "libmid2", mid, "-L../x", "-ldeep", "-Wl,-rpath,/nonexistent",
            "-Wl,--enable-new-dtags")  # fmt: skip
    (r / "main.c").write_text(MAIN_C)
    exes = {
        "exe_a": ("$ORIGIN/ya:$ORIGIN/x", "--disable-new-dtags", "ya"),
        "exe_b": ("$ORIGIN/yb:$ORIGIN/x", "--disable-new-dtags", "yb"),
        "exe_c": ("$ORIGIN/ya:$ORIGIN/x", "--enable-new-dtags", "ya"),
    }
    for exe, (rpath, tags, mid_dir) in exes.items():
        _run("gcc", "main.c", "-o", exe, f"-L{mid_dir}", "-lmid2", "-Wl,-rpath-link,x",
             f"-Wl,-rpath,{rpath}", f"-Wl,{tags}", cwd=r)  # fmt: skip


def _build_siblings(r: Path) -> None:
    _shared(r / "s", "libsib_leaf", "int leaf(void) { return 1; }\n", "-Wl,-soname,libsib_leaf.so")
    _shared(r / "s", "libsib", "int leaf(void);\nint sib(void) { return leaf(); }\n", "-L.",
            "-lsib_leaf", "-Wl,-rpath,${ORIGIN}", "-Wl,--enable-new-dtags")  # fmt: skip
    _shared(r / "m", "libgone", "int gone(void) { return 1; }\n", "-Wl,-soname,libgone.so")
    _shared(r / "m", "libneeds_gone", "int gone(void);\nint g(void) { return gone(); }\n",
            "-L.", "-lgone", "-Wl,-rpath,$ORIGIN")  # fmt: skip
    (r / "m" / "libgone.so").unlink()


PROVIDER_V1 = "int f(void) { return 1; }\nint g(void) { return 2; }\n"
CONSUMER_C = "int g(void);\nint main(void) { return g() - 2; }\n"


def _build_versions(r: Path) -> None:
    v = r / "v"
    v.mkdir()
    (v / "v1.map").write_text("PROV_1 { global: f; g; local: *; };\n")
    (v / "v2.map").write_text("PROV_2 { global: f; local: *; };\n")
    (v / "v3.map").write_text("PROV_1 { global: f; local: *; };\n")
    _shared(v, "libprov", PROVIDER_V1, "-Wl,--version-script=v1.map", "-Wl,-soname,libprov.so")
    (v / "consumer.c").write_text(CONSUMER_C)
    _run("gcc", "consumer.c", "-o", "consumer", "-L.", "-lprov", "-Wl,-rpath,$ORIGIN", cwd=v)
    shutil.copy(v / "libprov.so", v / "libprov_v1.so")
    for variant in ("v2", "v3"):
        _shared(v, f"libprov_{variant}", PROVIDER_V1, f"-Wl,--version-script={variant}.map",
                "-Wl,-soname,libprov.so")  # fmt: skip


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    require(shutil.which("gcc") is not None, "needs gcc")
    root = tmp_path_factory.mktemp("resolve")
    _build_chain(root)
    _build_siblings(root)
    _build_versions(root)
    return Tree(root)


def closure_of(path: Path, env: Environment | None = None) -> Closure:
    facts = read_elf_file(path)
    assert facts is not None
    return resolve_closure(str(path), facts, filesystem_lookup(), env or system_env())


def system_env(ld_library_path: list[str] | None = None) -> Environment:
    return Environment(load_ld_so_cache(), None, ld_library_path)


def runs(exe: Path, ld_library_path: str | None = None) -> bool:
    """Whether the real loader starts ``exe`` (and main returns 0)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LD_BIND_NOW": "1"}
    if ld_library_path is not None:
        env["LD_LIBRARY_PATH"] = ld_library_path
    return subprocess.run([str(exe)], env=env, capture_output=True, check=False).returncode == 0


def edge(closure: Closure, needed: str) -> tuple[str | None, str]:
    found = [e for e in closure.edges if e.needed == needed]
    assert found, needed
    return (found[0].path, found[0].via)


@pytest.mark.integration
def test_exe_rpath_reaches_grandchildren(tree: Tree) -> None:
    closure = closure_of(tree.path("exe_a"))
    assert edge(closure, "libmid2.so") == (str(tree.path("ya/libmid2.so")), "rpath")
    assert edge(closure, "libdeep.so") == (str(tree.path("x/libdeep.so")), "rpath")
    assert closure.missing == ()
    assert runs(tree.path("exe_a"))


@pytest.mark.integration
def test_child_runpath_hides_the_exe_rpath(tree: Tree) -> None:
    closure = closure_of(tree.path("exe_b"))
    assert edge(closure, "libmid2.so") == (str(tree.path("yb/libmid2.so")), "rpath")
    assert edge(closure, "libdeep.so") == (None, "not found")
    assert not runs(tree.path("exe_b"))


@pytest.mark.integration
def test_runpath_is_not_inherited_and_ld_library_path_only_when_asked(tree: Tree) -> None:
    exe = tree.path("exe_c")
    closure = closure_of(exe)
    assert edge(closure, "libmid2.so") == (str(tree.path("ya/libmid2.so")), "runpath")
    assert edge(closure, "libdeep.so") == (None, "not found")
    assert not runs(exe)
    x = str(tree.path("x"))
    with_env = closure_of(exe, system_env([x]))
    assert edge(with_env, "libdeep.so") == (f"{x}/libdeep.so", "ld_library_path")
    assert with_env.missing == ()
    assert runs(exe, ld_library_path=x)


@pytest.mark.integration
def test_runpath_origin_finds_sibling(tree: Tree) -> None:
    closure = closure_of(tree.path("s/libsib.so"))
    assert edge(closure, "libsib_leaf.so") == (str(tree.path("s/libsib_leaf.so")), "runpath")
    assert closure.missing == ()
    assert unresolved_symbols(closure.objects[closure.root], closure_index(closure)) == set()


@pytest.mark.integration
def test_missing_library_is_reported(tree: Tree) -> None:
    closure = closure_of(tree.path("m/libneeds_gone.so"))
    assert [(e.needed, e.path, e.via) for e in closure.missing] == [
        ("libgone.so", None, "not found")
    ]
    facts = closure.objects[closure.root]
    assert unresolved_symbols(facts, closure_index(closure)) == {"gone"}


@pytest.mark.integration
def test_libc_through_the_cache_or_the_default_dirs(tree: Tree) -> None:
    exe = tree.path("exe_a")
    cached_path, via = edge(closure_of(exe), "libc.so.6")
    assert cached_path is not None
    assert Path(cached_path).exists()
    assert via == ("cache" if load_ld_so_cache().entries else "default")
    default_path, via = edge(closure_of(exe, Environment()), "libc.so.6")
    assert via == "default"
    assert default_path is not None
    assert Path(default_path).resolve() == Path(cached_path).resolve()


@pytest.mark.integration
@pytest.mark.parametrize(
    ("variant", "unresolved", "missing_versions"),
    [
        ("v1", set(), ()),
        ("v2", {"g@PROV_1"}, (("libprov.so", "PROV_1"),)),  # the version node is gone
        ("v3", {"g@PROV_1"}, ()),  # the version stays, the symbol is gone
    ],
)
def test_shipped_provider_lacks_a_symbol(
    tree: Tree, variant: str, unresolved: set[str], missing_versions: tuple[tuple[str, str], ...]
) -> None:
    v = tree.path("v")
    shutil.copy(v / f"libprov_{variant}.so", v / "libprov.so")
    closure = closure_of(v / "consumer")
    consumer = closure.objects[closure.root]
    assert "g@PROV_1" in consumer.undefined
    assert unresolved_symbols(consumer, closure_index(closure)) == unresolved
    assert unsatisfied_version_needs(consumer, closure) == missing_versions
    assert runs(v / "consumer") is (not unresolved)
