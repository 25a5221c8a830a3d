"""ELF facts: real binaries built here, system libraries, synthetic big-endian files, corruption."""

from __future__ import annotations

import dataclasses
import io
import mmap
import pickle
import shutil
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from hypothesis import given, settings
from hypothesis import strategies as st

from buildtool.errors import InputError
from buildtool.linkage.binaries import LINKER_GENERATED, NO_NAMES, BinaryFacts
from buildtool.linkage.binaries.elf import (
    MalformedElf,
    file_type_name,
    read_elf_facts,
    read_elf_facts_pyelftools,
    read_elf_file,
)
from tests.conftest import require

REGISTRATIONS = ("demo.gemm_fp16_int", "demo.registered_fn", "demo.absent_fn", "")

GREET_C = r"""
#include <stdio.h>
extern void optional_hook(void) __attribute__((weak));
__asm__(".symver greet_v1, greet@LIBGREET_1.0");
__asm__(".symver greet_v2, greet@@LIBGREET_2.0");
int greet_v1(void) { return 1; }
int greet_v2(void) { if (optional_hook) optional_hook(); return 2; }
int plain(void) { return puts("plain"); }
int newer(void) { return 4; }
static const char *const registered = "demo.registered_fn";
const char *registration_name(void) { return registered; }
"""

GREET_MAP = """
LIBGREET_1.0 { global: greet; plain; registration_name; local: *; };
LIBGREET_2.0 { global: newer; } LIBGREET_1.0;
"""

UNIQ_CC = r"""
#include <cstdio>
template <typename T> struct Registry { static int count; };
template <typename T> int Registry<T>::count = 0;
inline int& counter() { static int c = 0; return c; }
int bump() { return ++counter() + ++Registry<int>::count; }
struct Registrar { explicit Registrar(const char* n) { std::puts(n); } };
static Registrar registrar("demo.gemm_fp16_int");
template <typename T> T twice(T v) { return v + v; }
template int twice<int>(int);
extern "C" __attribute__((weak)) int weakfn(void) { return 1; }
"""

TEXTREL_S = """
    .text
    .globl f
    .type f, @function
f:  ret
    .quad f
    .section .note.GNU-stack,"",@progbits
"""

SYSTEM_LIBRARIES = (
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
    "/lib/x86_64-linux-gnu/libm.so.6",
)


def _run(*command: str | Path, cwd: Path) -> None:
    subprocess.run([str(c) for c in command], cwd=cwd, check=True, capture_output=True)


@dataclass(frozen=True)
class Built:
    """The binaries one fixture builds, by short name."""

    root: Path
    files: dict[str, Path]

    def __getitem__(self, name: str) -> Path:
        return self.files[name]


def _build_greet(d: Path) -> dict[str, Path]:
    (d / "greet.c").write_text(GREET_C)
    (d / "greet.map").write_text(GREET_MAP)
    _run("gcc", "-shared", "-fPIC", "-O1", "greet.c", "-o", "libgreet.so",
         "-Wl,--version-script=greet.map", "-Wl,-soname,libgreet.so.1", cwd=d)  # fmt: skip
    _run("gcc", "-shared", "-fPIC", "-O1", "greet.c", "-o", "libgreet_sysv.so",
         "-Wl,--version-script=greet.map", "-Wl,--hash-style=sysv", cwd=d)  # fmt: skip
    return {"greet": d / "libgreet.so", "greet_sysv": d / "libgreet_sysv.so"}


def _build_uniq(d: Path) -> dict[str, Path]:
    (d / "uniq.cc").write_text(UNIQ_CC)
    _run("g++", "-c", "-fPIC", "-O1", "uniq.cc", "-o", "uniq.o", cwd=d)
    _run("g++", "-shared", "uniq.o", "-o", "libuniq.so", "-Wl,-z,now", cwd=d)
    _run("strip", "-o", "libuniq_stripped.so", "libuniq.so", cwd=d)
    _run("objcopy", "--only-keep-debug", "libuniq.so", "libuniq.debug", cwd=d)
    return {
        "uniq.o": d / "uniq.o",
        "uniq": d / "libuniq.so",
        "uniq_stripped": d / "libuniq_stripped.so",
        "uniq_debug": d / "libuniq.debug",
    }


def _build_paths(d: Path) -> dict[str, Path]:
    (d / "leaf.c").write_text("int leaf(void) { return 7; }\n")
    (d / "mid.c").write_text("int leaf(void);\nint mid(void) { return leaf(); }\n")
    (d / "main.c").write_text("int mid(void);\nint main(void) { return mid() - 7; }\n")
    _run("gcc", "-shared", "-fPIC", "leaf.c", "-o", "libleaf.so", cwd=d)
    for name, tags in (("runpath", "--enable-new-dtags"), ("rpath", "--disable-new-dtags")):
        _run("gcc", "-shared", "-fPIC", "mid.c", "-o", f"libmid_{name}.so", "-L.", "-lleaf",
             "-Wl,-rpath,$ORIGIN:/opt/x::", f"-Wl,{tags}", cwd=d)  # fmt: skip
    _run("gcc", "main.c", "-o", "app", "-L.", "-lmid_runpath", "-Wl,-z,execstack",
         "-Wl,-z,norelro", "-Wl,-rpath,$ORIGIN", cwd=d)  # fmt: skip
    _run("gcc", "-no-pie", "main.c", "-o", "app_nopie", "-L.", "-lmid_runpath", cwd=d)
    return {
        "leaf": d / "libleaf.so",
        "mid_runpath": d / "libmid_runpath.so",
        "mid_rpath": d / "libmid_rpath.so",
        "app": d / "app",
        "app_nopie": d / "app_nopie",
    }


def _build_odd(d: Path) -> dict[str, Path]:
    (d / "textrel.s").write_text(TEXTREL_S)
    _run("gcc", "-shared", "-nostdlib", "textrel.s", "-o", "libtextrel.so", "-Wl,-z,notext", cwd=d)
    (d / "f32.c").write_text("int f32(void) { return 32; }\n")
    _run("gcc", "-m32", "-c", "-fPIC", "f32.c", "-o", "f32.o", cwd=d)
    _run("ld", "-m", "elf_i386", "-shared", "-soname", "libf32.so", "f32.o", "-o", "libf32.so",
         cwd=d)  # fmt: skip
    (d / "copy.c").write_text("#include <stdio.h>\nint main(void) { return stdout == 0; }\n")
    _run("gcc", "-no-pie", "-fno-pic", "copy.c", "-o", "copyreloc", cwd=d)
    return {"textrel": d / "libtextrel.so", "f32": d / "libf32.so", "copyreloc": d / "copyreloc"}


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    require(
        shutil.which("gcc") is not None and shutil.which("g++") is not None, "needs gcc and g++"
    )
    root = tmp_path_factory.mktemp("elf")
    files: dict[str, Path] = {}
    for build in (_build_greet, _build_uniq, _build_paths, _build_odd):
        files |= build(root)
    return Built(root, files)


def facts_of(path: Path, names: tuple[str, ...] = REGISTRATIONS) -> BinaryFacts:
    facts = read_elf_file(path, path.name, names)
    assert facts is not None
    return facts


def differences(a: BinaryFacts, b: BinaryFacts) -> dict[str, tuple[object, object]]:
    return {
        f.name: (getattr(a, f.name), getattr(b, f.name))
        for f in dataclasses.fields(BinaryFacts)
        if getattr(a, f.name) != getattr(b, f.name)
    }


# --- facts of binaries built here -----------------------------------------------------------


@pytest.mark.integration
def test_versioned_library(built: Built) -> None:
    facts = facts_of(built["greet"])
    assert (facts.elf_class, facts.little_endian, facts.machine) == (64, True, "x86_64")
    assert facts.file_type == "shared"
    assert facts.soname == "libgreet.so.1"
    assert facts.needed == ("libc.so.6",)
    assert {"greet@LIBGREET_1.0", "greet@@LIBGREET_2.0"} <= facts.defined
    assert {"plain@@LIBGREET_1.0", "newer@@LIBGREET_2.0"} <= facts.defined
    assert not any(k.startswith("LIBGREET_") for k in facts.defined)  # version-node markers
    assert "greet_v1" not in {k.split("@")[0] for k in facts.defined}  # localized by the script
    assert facts.version_definitions == ("LIBGREET_1.0", "LIBGREET_2.0")
    assert facts.default_versions == ("LIBGREET_1.0", "LIBGREET_2.0")
    assert facts.version_needs == (("libc.so.6", ("GLIBC_2.2.5",)),)
    assert "puts@GLIBC_2.2.5" in facts.undefined
    assert facts.weak_undefined >= {"optional_hook"}
    assert "optional_hook" not in facts.undefined
    assert facts.registration_strings == {"demo.registered_fn"}
    assert facts.exported_count == len(facts.defined)
    assert facts.rpath is None
    assert facts.runpath is None


@pytest.mark.integration
def test_cxx_unique_initializer_and_registration(built: Built) -> None:
    facts = facts_of(built["uniq"])
    assert "_ZZ7countervE1c" in facts.unique  # static local of an inline function
    assert "_ZN8RegistryIiE5countE" in facts.unique  # static member of a class template
    assert facts.unique <= facts.defined
    assert facts.static_initializers == ("_GLOBAL__sub_I_uniq.cc",)
    assert "_Z4bumpv" in facts.symtab_functions
    # neither a static initializer nor weak code (COMDAT) is code of this file alone
    assert "_GLOBAL__sub_I_uniq.cc" not in facts.symtab_functions
    weak = {"_Z5twiceIiET_S0_", "weakfn"}  # an explicit instantiation and a weak definition
    assert weak <= facts.weak_defined
    assert not any(name in facts.symtab_functions for name in weak)
    assert facts.weak_defined <= facts.defined
    assert "_Z4bumpv" not in facts.weak_defined
    assert facts.unique.isdisjoint(facts.weak_defined)
    assert facts.has_symtab
    assert facts.registration_strings == {"demo.gemm_fp16_int"}
    assert facts.init_array_size == 16  # frame_dummy's entry + the TU's initializer
    assert facts.bind_now
    assert facts.relro
    assert not facts.exec_stack
    assert not facts.textrel
    with built["uniq"].open("rb") as stream:
        code = sum(s["sh_size"] for s in ELFFile(stream).iter_sections() if s["sh_flags"] & 4)
    assert facts.code_size == code
    assert dict(facts.sections)[".text"] > 0
    assert facts.file_size == built["uniq"].stat().st_size


@pytest.mark.integration
def test_stripped_copy_keeps_dynamic_facts(built: Built) -> None:
    full, stripped = facts_of(built["uniq"]), facts_of(built["uniq_stripped"])
    assert not stripped.has_symtab
    assert stripped.static_initializers == ()
    assert stripped.symtab_functions == NO_NAMES
    assert len(full.symtab_functions) > 0
    for name in ("defined", "undefined", "unique", "needed", "registration_strings", "code_size"):
        assert getattr(stripped, name) == getattr(full, name)


@pytest.mark.integration
def test_relocatable_object(built: Built) -> None:
    facts = facts_of(built["uniq.o"])
    assert facts.file_type == "relocatable"
    assert facts.static_initializers == ("_GLOBAL__sub_I_uniq.cc",)
    assert facts.defined == frozenset()
    assert facts.needed == ()
    assert facts.init_array_size == 8


@pytest.mark.integration
def test_debug_only_file_has_no_dynamic_facts(built: Built) -> None:
    facts = facts_of(built["uniq_debug"])
    assert facts.needed == ()
    assert facts.defined == frozenset()
    assert facts.soname is None
    assert facts.static_initializers == ("_GLOBAL__sub_I_uniq.cc",)


@pytest.mark.integration
def test_rpath_runpath_and_executables(built: Built) -> None:
    runpath, rpath = facts_of(built["mid_runpath"]), facts_of(built["mid_rpath"])
    assert runpath.runpath == ("$ORIGIN", "/opt/x", "", "")
    assert runpath.rpath is None
    assert rpath.rpath == ("$ORIGIN", "/opt/x", "", "")
    assert rpath.runpath is None
    app, nopie = facts_of(built["app"]), facts_of(built["app_nopie"])
    assert app.file_type == "pie"
    assert nopie.file_type == "executable"
    assert app.interpreter == "/lib64/ld-linux-x86-64.so.2"
    assert app.exec_stack
    assert not app.relro
    assert nopie.relro
    assert not nopie.exec_stack
    assert facts_of(built["leaf"]).soname is None


@pytest.mark.integration
def test_textrel_and_32_bit(built: Built) -> None:
    assert facts_of(built["textrel"]).textrel
    f32 = facts_of(built["f32"])
    assert (f32.elf_class, f32.machine, f32.soname) == (32, "i386", "libf32.so")
    assert "f32" in f32.defined


@pytest.mark.integration
def test_copy_relocated_definition_keeps_the_reference_version(built: Built) -> None:
    facts = facts_of(built["copyreloc"])
    assert "stdout@GLIBC_2.2.5" in facts.defined  # in the executable's .bss, never "@@"
    assert facts.file_type == "executable"


@pytest.mark.parametrize(
    ("e_type", "pie_flag", "interpreter", "soname", "expected"),
    [
        (3, True, None, None, "pie"),
        (3, False, "/lib64/ld-linux-x86-64.so.2", None, "pie"),  # PIE linked before DF_1_PIE
        (3, False, "/lib64/ld-linux-x86-64.so.2", "libc.so.6", "shared"),  # runnable library
        (3, False, None, "libx.so", "shared"),
        (2, False, "/lib/ld.so", None, "executable"),
        (1, False, None, None, "relocatable"),
        (4, False, None, None, "core"),
        (0xFE00, False, None, None, "other"),
    ],
)
def test_file_type_name(
    e_type: int, pie_flag: bool, interpreter: str | None, soname: str | None, expected: str
) -> None:
    assert file_type_name(e_type, pie_flag, interpreter, soname) == expected


@pytest.mark.integration
@pytest.mark.parametrize("name", ["greet", "greet_sysv"])
def test_no_section_headers_falls_back_to_dynamic(built: Built, name: str) -> None:
    """Without section headers the symbols come from DT_SYMTAB sized by DT_HASH/DT_GNU_HASH."""
    data = bytearray(built[name].read_bytes())
    struct.pack_into("<Q", data, 0x28, 0)  # e_shoff
    struct.pack_into("<HH", data, 0x3C, 0, 0)  # e_shnum, e_shstrndx
    headerless = read_elf_facts(bytes(data), "headerless", REGISTRATIONS)
    full = facts_of(built[name])
    assert headerless is not None
    assert headerless.sections == ()
    assert not headerless.has_symtab
    same = ("defined", "undefined", "weak_undefined", "unique", "exported_count", "needed",
            "soname", "version_definitions", "version_needs", "registration_strings")  # fmt: skip
    for field in same:
        assert getattr(headerless, field) == getattr(full, field), field


@pytest.mark.integration
def test_a_defined_name_holding_an_at_sign_leaves_the_default_versions_unknown(
    built: Built, tmp_path: Path
) -> None:
    """``newer``, renamed ``n@wer`` in the string tables, makes the key ``n@wer@@V``:
    not a name and a version without doubt, so ``default_versions`` is None (the symbol checks
    then split every key), in both decoders. The unpatched library's are known."""
    data = built["greet"].read_bytes()
    assert data.count(b"\0newer\0") == 2  # .dynstr and .strtab
    patched = tmp_path / "libgreet.so.1"
    patched.write_bytes(data.replace(b"\0newer\0", b"\0n@wer\0"))
    fast, reference = facts_of(patched), read_elf_facts_pyelftools(patched, "p", REGISTRATIONS)
    assert "n@wer@@LIBGREET_2.0" in fast.defined
    assert fast.default_versions is None
    assert reference is not None
    assert reference.default_versions is None
    assert facts_of(built["greet"]).default_versions is not None


# --- the fast path equals pyelftools --------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize(
    "name",
    ["greet", "greet_sysv", "uniq.o", "uniq", "uniq_stripped", "uniq_debug", "mid_runpath",
     "mid_rpath", "app", "app_nopie", "textrel", "f32", "leaf", "copyreloc"],
)  # fmt: skip
def test_fast_path_equals_pyelftools_on_built(built: Built, name: str) -> None:
    path = built[name]
    reference = read_elf_facts_pyelftools(path, path.name, REGISTRATIONS)
    assert reference is not None
    assert differences(facts_of(path), reference) == {}


@pytest.mark.parametrize("library", SYSTEM_LIBRARIES)
def test_fast_path_equals_pyelftools_on_system_libraries(library: str) -> None:
    path = Path(library)
    require(path.exists(), f"{library} is not on this machine")
    names = ("GLIBC_2.2.5", "vector::_M_realloc_insert", "no such string at all")
    fast = read_elf_file(path, library, names)
    reference = read_elf_facts_pyelftools(path, library, names)
    assert fast is not None
    assert reference is not None
    assert differences(fast, reference) == {}
    assert len(fast.defined) > 500
    assert fast.file_type == "shared"  # libc.so.6 has an interpreter, and a SONAME


def test_buffer_kinds_agree() -> None:
    path = Path(SYSTEM_LIBRARIES[2])
    require(path.exists(), "needs libm")
    data = path.read_bytes()
    names = ("GLIBC_2.2.5",)
    expected = read_elf_facts(data, "m", names)
    assert expected is not None
    assert read_elf_facts(bytearray(data), "m", names) == expected
    assert read_elf_facts(memoryview(data), "m", names) == expected
    assert read_elf_facts(memoryview(b"pad" + data)[3:], "m", names) == expected
    with path.open("rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        assert read_elf_facts(mm, "m", names) == expected
    assert read_elf_facts_pyelftools(io.BytesIO(data), "m", names) == expected
    assert pickle.loads(pickle.dumps(expected)) == expected


# --- synthetic files: both classes and byte orders, checked against pyelftools --------------


class StrTab:
    def __init__(self) -> None:
        self.data = bytearray(b"\0")
        self.index: dict[str, int] = {}

    def add(self, text: str) -> int:
        if text not in self.index:
            self.index[text] = len(self.data)
            self.data += text.encode() + b"\0"
        return self.index[text]


@dataclass(frozen=True)
class Synth:
    elf_class: int
    little: bool

    @property
    def e(self) -> str:
        return "<" if self.little else ">"

    @property
    def word(self) -> str:
        return "Q" if self.elf_class == 64 else "I"

    def pack(self, fmt: str, *values: int) -> bytes:
        return struct.pack(self.e + fmt.replace("W", self.word), *values)

    def sym(self, name: int, info: int, other: int, shndx: int, value: int) -> bytes:
        if self.elf_class == 64:
            return self.pack("IBBHQQ", name, info, other, shndx, value, 0)
        return self.pack("IIIBBH", name, value, 0, info, other, shndx)

    def dyn(self, tag: int, value: int) -> bytes:
        return self.pack("qQ" if self.elf_class == 64 else "iI", tag, value)


SYNTH_SYMBOLS = (  # name, info (bind << 4 | type), shndx (6 = .text), versym, st_other
    ("foo", 0x12, 6, 2, 0),  # GLOBAL FUNC, default LIBS_1.0
    ("foo", 0x12, 6, 0x8003, 0),  # another version of foo, hidden LIBS_2.0
    ("bar", 0x12, 6, 3, 0),
    ("baz", 0x12, 0, 4, 0),  # undefined, needs GLIBC_2.2 from libc.so.6
    ("qux", 0x22, 0, 1, 0),  # weak undefined, unversioned
    ("uniq", 0xA1, 6, 1, 0),  # GNU_UNIQUE OBJECT
    ("LIBS_1.0", 0x11, 0xFFF1, 2, 0),  # the version node's ABS marker
    ("prot", 0x12, 6, 2, 3),  # STV_PROTECTED: defined, not counted as exported
    ("copied", 0x11, 6, 4, 0),  # a copy-relocated definition: its version is a reference
    ("caf\u00e9_\u7f16", 0x12, 6, 1, 0),  # UTF-8 in a name
    ("wdef", 0x22, 6, 1, 0),  # a weak definition
)


def _synth_tables(s: Synth, strings: StrTab) -> dict[str, bytes]:
    syms = s.sym(0, 0, 0, 0, 0) + b"".join(
        s.sym(strings.add(n), info, other, shndx, 0 if shndx == 0xFFF1 else 0x100)
        for n, info, shndx, _v, other in SYNTH_SYMBOLS
    )
    versym = s.pack("H" * (len(SYNTH_SYMBOLS) + 1), 0, *(row[3] for row in SYNTH_SYMBOLS))
    definitions = ((1, 1, "libsynth.so.1", False), (2, 0, "LIBS_1.0", False),
                   (3, 0, "LIBS_2.0", True))  # fmt: skip
    verdef = b"".join(
        s.pack("HHHHIII", 1, flags, ndx, 1, 0, 20, 0 if last else 28)
        + s.pack("II", strings.add(n), 0)
        for ndx, flags, n, last in definitions
    )
    verneed = s.pack("HHIII", 1, 1, strings.add("libc.so.6"), 16, 0) + s.pack(
        "IHHII", 0, 0, 4, strings.add("GLIBC_2.2"), 0
    )
    nsyms = len(SYNTH_SYMBOLS) + 1
    return {
        ".hash": s.pack("II", 1, nsyms) + bytes(4 * (1 + nsyms)),
        ".dynsym": syms,
        ".gnu.version": versym,
        ".gnu.version_d": verdef,
        ".gnu.version_r": verneed,
        ".text": b"\xc3" * 16,
        ".rodata": b"x.demo.synth_fn\0",
    }


SYNTH_ORDER = (".hash", ".dynsym", ".gnu.version", ".gnu.version_d", ".gnu.version_r", ".text",
               ".rodata", ".dynstr", ".dynamic", ".shstrtab")  # fmt: skip


def _align(n: int) -> int:
    return (n + 7) & ~7


def _synth_dynamic(s: Synth, strings: StrTab, at: dict[str, int]) -> bytes:
    entries = [
        (1, strings.add("libc.so.6")), (14, strings.add("libsynth.so.1")),
        (29, strings.add("$ORIGIN/../lib:")), (4, at[".hash"]), (5, at[".dynstr"]),
        (6, at[".dynsym"]), (11, 24 if s.elf_class == 64 else 16), (0x6FFFFFF0, at[".gnu.version"]),
        (0x6FFFFFFC, at[".gnu.version_d"]), (0x6FFFFFFD, 3), (0x6FFFFFFE, at[".gnu.version_r"]),
        (0x6FFFFFFF, 1), (0x6FFFFFFB, 0x1),
    ]  # fmt: skip
    entries.append((10, len(strings.data)))  # DT_STRSZ last: every string is added by now
    return b"".join(s.dyn(tag, value) for tag, value in entries) + s.dyn(0, 0)


def _synth_layout(s: Synth, blobs: dict[str, bytes]) -> dict[str, int]:
    pos = _align((64 if s.elf_class == 64 else 52) + 2 * (56 if s.elf_class == 64 else 32))
    at: dict[str, int] = {}
    for name in SYNTH_ORDER:
        at[name] = pos
        pos = _align(pos + len(blobs[name]))
    at["shdrs"] = pos
    return at


SHDR_SPEC = {  # name: (type, flags, link, info, entsize)
    ".hash": (5, 2, 2, 0, 4), ".dynsym": (11, 2, 8, 1, -1),
    ".gnu.version": (0x6FFFFFFF, 2, 2, 0, 2),
    ".gnu.version_d": (0x6FFFFFFD, 2, 8, 3, 0), ".gnu.version_r": (0x6FFFFFFE, 2, 8, 1, 0),
    ".text": (1, 6, 0, 0, 0), ".rodata": (1, 2, 0, 0, 0), ".dynstr": (3, 2, 0, 0, 0),
    ".dynamic": (6, 3, 8, 0, -2), ".shstrtab": (3, 0, 0, 0, 0),
}  # fmt: skip


def _synth_shdrs(s: Synth, blobs: dict[str, bytes], at: dict[str, int], names: StrTab) -> bytes:
    out = s.pack("IIWWWWIIWW", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    for name in SYNTH_ORDER:
        kind, flags, link, info, entsize = SHDR_SPEC[name]
        entsize = {-1: 24 if s.elf_class == 64 else 16, -2: 16 if s.elf_class == 64 else 8}.get(
            entsize, entsize
        )
        address = at[name] if flags & 2 else 0
        out += s.pack("IIWWWWIIWW", names.add(name), kind, flags, address, at[name],
                      len(blobs[name]), link, info, 8, entsize)  # fmt: skip
    return out


def synth_elf(elf_class: int, little: bool, machine: int) -> bytes:
    """A small shared object with versioned dynamic symbols, written field by field."""
    s, strings, section_names = Synth(elf_class, little), StrTab(), StrTab()
    blobs = _synth_tables(s, strings)
    blobs[".dynamic"] = _synth_dynamic(s, strings, dict.fromkeys(SYNTH_ORDER, 0))  # sizing pass
    blobs[".dynstr"] = bytes(strings.data)
    blobs[".shstrtab"] = b"\0" * 128
    at = _synth_layout(s, blobs)
    blobs[".dynamic"] = _synth_dynamic(s, strings, at)
    shdrs = _synth_shdrs(s, blobs, at, section_names)
    blobs[".shstrtab"] = bytes(section_names.data).ljust(128, b"\0")
    ehsize, phsize = (64, 56) if elf_class == 64 else (52, 32)
    header = b"\x7fELF" + bytes([elf_class // 32, 1 if little else 2, 1]) + bytes(9)
    shentsize = 64 if elf_class == 64 else 40
    header += s.pack("HHIWWWIHHHHHH", 3, machine, 1, 0, ehsize, at["shdrs"], 0, ehsize, phsize,
                     2, shentsize, len(SYNTH_ORDER) + 1, len(SYNTH_ORDER))  # fmt: skip
    image = bytearray(at["shdrs"] + len(shdrs))
    image[: len(header)] = header
    for name in SYNTH_ORDER:
        image[at[name] : at[name] + len(blobs[name])] = blobs[name]
    image[at["shdrs"] :] = shdrs
    dyn_size = len(blobs[".dynamic"])
    phdrs = _synth_phdrs(s, len(image), at[".dynamic"], dyn_size)
    image[ehsize : ehsize + len(phdrs)] = phdrs
    return bytes(image)


def _synth_phdrs(s: Synth, size: int, dynamic: int, dyn_size: int) -> bytes:
    if s.elf_class == 64:
        load = s.pack("IIQQQQQQ", 1, 5, 0, 0, 0, size, size, 0x1000)
        return load + s.pack("IIQQQQQQ", 2, 6, dynamic, dynamic, dynamic, dyn_size, dyn_size, 8)
    load = s.pack("IIIIIIII", 1, 0, 0, 0, size, size, 5, 0x1000)
    return load + s.pack("IIIIIIII", 2, dynamic, dynamic, dynamic, dyn_size, dyn_size, 6, 4)


SYNTH_CASES = [(64, True, 62), (64, False, 21), (32, True, 3), (32, False, 20)]
SMALL = synth_elf(64, True, 62)


@pytest.mark.parametrize(("elf_class", "little", "machine"), SYNTH_CASES)
def test_synthetic_both_classes_and_byte_orders(elf_class: int, little: bool, machine: int) -> None:
    data = synth_elf(elf_class, little, machine)
    names = ("demo.synth_fn", "synth_fn", "x.demo")
    fast = read_elf_facts(data, "synth", names)
    reference = read_elf_facts_pyelftools(io.BytesIO(data), "synth", names)
    assert fast is not None
    assert reference is not None
    assert differences(fast, reference) == {}
    assert (fast.elf_class, fast.little_endian) == (elf_class, little)
    assert fast.machine == {62: "x86_64", 21: "ppc64", 3: "i386", 20: "ppc"}[machine]
    assert fast.defined == {
        "foo@@LIBS_1.0", "foo@LIBS_2.0", "bar@@LIBS_2.0", "uniq", "prot@@LIBS_1.0",
        "copied@GLIBC_2.2", "caf\u00e9_\u7f16", "wdef",
    }  # fmt: skip
    assert fast.weak_defined == {"wdef"}
    assert fast.undefined == {"baz@GLIBC_2.2"}
    assert fast.weak_undefined == {"qux"}
    assert fast.unique == {"uniq"}
    assert fast.exported_count == 7
    assert fast.version_definitions == ("LIBS_1.0", "LIBS_2.0")
    assert fast.version_needs == (("libc.so.6", ("GLIBC_2.2",)),)
    assert (fast.soname, fast.needed, fast.runpath) == (
        "libsynth.so.1",
        ("libc.so.6",),
        ("$ORIGIN/../lib", ""),
    )
    assert fast.bind_now
    assert fast.file_type == "shared"
    assert fast.exec_stack
    assert fast.registration_strings == {"demo.synth_fn", "synth_fn"}  # tails of merged strings
    e_shoff = 40 if elf_class == 64 else 32
    headerless = bytearray(data)
    struct.pack_into(
        ("<" if little else ">") + ("Q" if elf_class == 64 else "I"), headerless, e_shoff, 0
    )
    bare = read_elf_facts(bytes(headerless), "bare")
    assert bare is not None
    assert (bare.defined, bare.undefined, bare.version_needs) == (
        fast.defined,
        fast.undefined,
        fast.version_needs,
    )


# --- malformed and non-ELF input ------------------------------------------------------------


@pytest.mark.parametrize(
    "data", [b"", b"\x7fEL", b"hello world\n", b"#!/bin/sh\necho\n", b"\0" * 64]
)
def test_not_elf_is_none(data: bytes) -> None:
    assert read_elf_facts(data, "x") is None
    assert read_elf_facts_pyelftools(io.BytesIO(data), "x") is None


def test_malformed_message_and_pickle() -> None:
    error = MalformedElf(
        "lib/libx.so", 0x1F40, "dynamic string table runs past the end of the file"
    )
    assert str(error) == (
        "lib/libx.so: malformed ELF at offset 0x1f40: "
        "dynamic string table runs past the end of the file"
    )
    assert isinstance(error, InputError)
    assert error.exit_code == 2
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.offset, copy.reason, str(copy)) == (
        error.path, error.offset, error.reason, str(error)
    )  # fmt: skip


def outcome(data: bytes) -> str:
    """Classify a read: none / facts / malformed; any other exception fails the test."""
    try:
        facts = read_elf_facts(data, "fuzzed.so", REGISTRATIONS)
    except MalformedElf as error:
        failure = error
    else:
        return "none" if facts is None else "facts"
    assert failure.path == "fuzzed.so"
    # sizes are validated before use: the last-resort handler must never be what caught it
    assert not failure.reason.startswith("cannot be decoded"), failure.reason
    return "malformed"


def _boundaries(data: bytes) -> set[int]:
    """Every header, table and section boundary of a file, per pyelftools."""
    elf = ELFFile(io.BytesIO(data))
    cuts = {0, 1, 4, 5, 6, 16, elf["e_ehsize"], elf["e_phoff"], elf["e_shoff"]}
    for seg in elf.iter_segments():
        cuts |= {seg["p_offset"], seg["p_offset"] + seg["p_filesz"]}
    for index, section in enumerate(elf.iter_sections()):
        cuts |= {section["sh_offset"], section["sh_offset"] + section["sh_size"]}
        cuts |= {elf["e_shoff"] + index * elf["e_shentsize"]}
    return {c for c in cuts if 0 <= c < len(data)}


def _truncation_points(data: bytes) -> list[int]:
    around = {c + d for c in _boundaries(data) for d in (-1, 0, 1)}
    return sorted({*range(0, len(data), 64), *around} & set(range(len(data))))


@pytest.mark.parametrize(
    "kind", ["synthetic", pytest.param("built", marks=pytest.mark.integration)]
)
def test_truncation_everywhere_is_malformed(kind: str, request: pytest.FixtureRequest) -> None:
    if kind == "built":
        require(shutil.which("gcc") is not None, "needs gcc")
        data = request.getfixturevalue("built")["greet"].read_bytes()
    else:
        data = SMALL
    for cut in _truncation_points(data):
        expected = "none" if cut < 4 else "malformed"  # section headers sit at the very end
        assert outcome(data[:cut]) == expected, cut


def _interesting_ranges(data: bytes) -> list[tuple[int, int]]:
    """Where flipped bits hit structure rather than code: headers, tables, strings."""
    elf = ELFFile(io.BytesIO(data))
    ranges = [(0, elf["e_ehsize"]), (elf["e_shoff"], len(data))]
    ranges += [(seg["p_offset"], seg["p_offset"] + seg["p_filesz"]) for seg in elf.iter_segments()
               if seg["p_type"] in ("PT_DYNAMIC", "PT_INTERP")]  # fmt: skip
    ranges += [
        (s["sh_offset"], s["sh_offset"] + s["sh_size"])
        for s in elf.iter_sections()
        if s["sh_type"] not in ("SHT_PROGBITS", "SHT_NOBITS", "SHT_NULL") and s["sh_size"]
    ]
    ranges.append((elf["e_phoff"], elf["e_phoff"] + elf["e_phnum"] * elf["e_phentsize"]))
    return [(a, b) for a, b in ranges if a < b <= len(data)]


SMALL_RANGES = _interesting_ranges(SMALL)


def _flip(data: bytes, flips: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for position, bit in flips:
        out[position % len(out)] ^= 1 << bit
    return bytes(out)


positions = st.sampled_from(SMALL_RANGES).flatmap(lambda r: st.integers(r[0], r[1] - 1))
flips = st.lists(st.tuples(positions, st.integers(0, 7)), min_size=1, max_size=6)


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(flips)
def test_bit_flips_never_escape(flips: list[tuple[int, int]]) -> None:
    assert outcome(_flip(SMALL, flips)) in ("none", "facts", "malformed")


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(st.integers(0, len(SMALL) - 1), st.binary(min_size=1, max_size=8))
def test_overwrites_never_escape(position: int, junk: bytes) -> None:
    data = bytearray(SMALL)
    data[position : position + len(junk)] = junk
    assert outcome(bytes(data[: len(SMALL)])) in ("none", "facts", "malformed")


def _patched(data: bytes, fmt: str, offset: int, *values: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def _section(data: bytes, name: str) -> tuple[int, int]:
    section = ELFFile(io.BytesIO(data)).get_section_by_name(name)
    assert section is not None
    return int(section["sh_offset"]), int(section["sh_size"])


def _dynamic_entry_offset(data: bytes, tag: int) -> int:
    dyn_at, dyn_size = _section(data, ".dynamic")
    for at in range(dyn_at, dyn_at + dyn_size, 16):
        if struct.unpack_from("<q", data, at)[0] == tag:
            return at
    raise AssertionError(tag)


CORRUPTIONS: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "e_shoff past the end": (
        lambda d: _patched(d, "<Q", 0x28, len(d) + 100), "section header table"),
    "e_shnum huge": (lambda d: _patched(d, "<H", 0x3C, 0xFFF0), "section header table"),
    "e_shentsize small": (lambda d: _patched(d, "<H", 0x3A, 8), "section header size 8"),
    "e_phnum huge": (lambda d: _patched(d, "<H", 0x38, 0xFFF0), "program header table"),
    "e_shstrndx out of range": (lambda d: _patched(d, "<H", 0x3E, 0xFF00), "out of range"),
    "DT_STRSZ huge": (
        lambda d: _patched(d, "<Q", _dynamic_entry_offset(d, 10) + 8, 1 << 40),
        "dynamic string table runs past the end of the file"),
    "DT_STRTAB unmapped": (
        lambda d: _patched(d, "<Q", _dynamic_entry_offset(d, 5) + 8, 1 << 40),
        "not inside any loadable segment"),
    "unterminated .dynstr": (
        lambda d: _fill(d, ".dynstr", b"A"), "is not terminated"),
    "unterminated .shstrtab": (
        lambda d: _fill(d, ".shstrtab", b"A"), "is not terminated"),
    "bad ELF class": (lambda d: _patched(d, "<B", 4, 9), "unsupported ELF class 9"),
    "bad data encoding": (lambda d: _patched(d, "<B", 5, 0), "unsupported ELF data encoding 0"),
}  # fmt: skip


def _fill(data: bytes, section: str, byte: bytes) -> bytes:
    at, size = _section(data, section)
    return data[:at] + byte * size + data[at + size :]


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_named_corruptions(corruption: str) -> None:
    corrupt, expected = CORRUPTIONS[corruption]
    with pytest.raises(
        MalformedElf, match=r"^lib/libx\.so: malformed ELF at offset 0x[0-9a-f]+: "
    ) as info:
        read_elf_facts(corrupt(SMALL), "lib/libx.so")
    assert expected in info.value.reason


def test_mmap_can_close_after_malformed(tmp_path: Path) -> None:
    path = tmp_path / "bad.so"
    path.write_bytes(CORRUPTIONS["DT_STRSZ huge"][0](SMALL))
    with path.open("rb") as stream:
        mm = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
        with pytest.raises(MalformedElf):
            read_elf_facts(mm, "bad.so")
        mm.close()  # BufferError if anything kept a view of the map


def test_linker_generated_names() -> None:
    assert {"_end", "_edata", "__bss_start", "_init", "_fini"} <= LINKER_GENERATED
