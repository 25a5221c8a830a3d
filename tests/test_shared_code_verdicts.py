"""Shared code that loads and works is no BT103/BT122 error; each case is built here, loaded
for real (``ctypes.CDLL`` RTLD_GLOBAL, the way Python's loaders and ld.so do), and compared
with the error it stands beside (the same shape with a registry, which aborts).

- three libraries linked with a catch-all version script (``{ *; }``, PyQt6-Qt6's ``Qt_6``):
  they export the linker's ``_end``, ``_edata`` and ``__bss_start``, and nothing else alike;
- the toolchain runtime's own static initializer (devtoolset's ``system_error48.cc``) in two
  libraries (vtk's libvtkfmt and libviskores_filter_core);
- two stripped libraries exporting one C library's functions (tables' two LZ4 builds): each
  caller binds to the first copy, which works;
- a second copy of a C library without initializers (tables' two libblosc2);
- two extension modules of one name in two folders (scipy's ``_zeros``): not copies;
- one source whose static initializer only sets up the standard streams (``#include
  <iostream>``) in two libraries (tensorflow's _pywrap_parallel_device.so and
  libtensorflow_cc.so.2).
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from buildtool.linkage.binaries.code_walk import FirstReaching
from buildtool.linkage.inputs import decoding
from buildtool.linkage.inputs.decoding import Source
from buildtool.linkage.inputs.lookups import InitializerLookup
from tests.builders import check, gcc, ids, lib, write_wheel

CATCH_ALL = "Qt_6 { *; };\n"


def _load_all(*paths: Path) -> list[int]:
    """Load every file RTLD_GLOBAL in order and call its ``value`` function."""
    return [ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL).value() for path in paths]


def test_libraries_under_a_catch_all_version_script_are_clean_and_load(tmp_path: Path) -> None:
    script = tmp_path / "qt.map"
    script.write_text(CATCH_ALL)
    # gold exports the linker's symbols under a catch-all script, as the BFD linker of Qt's
    # build did (Debian 12's BFD linker no longer does)
    version = f"-Wl,--version-script={script} -fuse-ld=gold"
    core = lib(tmp_path, "core", "int core(void) { return 1; }\n",
               *version.split())  # fmt: skip
    gui = lib(
        tmp_path,
        "gui",
        "int core(void);\nint gui(void) { return core() + 1; }\n",
        "-lcore",
        *version.split(),
        "-Wl,-rpath,$ORIGIN",
    )
    body = "int core(void);\nint widgets(void) { return core() + 2; }\n"
    widgets = lib(tmp_path, "widgets", body, "-lcore", "-lgui", *version.split(),
                  "-Wl,-rpath,$ORIGIN")  # fmt: skip
    for library in (core, gui, widgets):
        subprocess.run(["strip", str(library)], check=True)
    exported = subprocess.run(["nm", "-D", "--defined-only", str(gui)], capture_output=True,
                              text=True, check=True).stdout  # fmt: skip
    assert "_end@@Qt_6" in exported
    loaded = [ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL) for path in (core, gui, widgets)]
    assert [loaded[0].core(), loaded[1].gui(), loaded[2].widgets()] == [1, 2, 3]
    assert ids(check(tmp_path)) == set()


TOOLCHAIN_TU = """
#include <string>
namespace { struct Category { std::string name = "generic"; } category; }
extern "C" const char* category_name() { return category.name.c_str(); }
"""


def test_the_toolchain_runtimes_initializer_in_two_libraries_is_clean(tmp_path: Path) -> None:
    """A source named like libstdc++_nonshared's ``system_error48.cc``, compiled into two
    libraries that one program loads: its initializer is the toolchain's, not shared code."""
    (tmp_path / "system_error48.cc").write_text(TOOLCHAIN_TU)
    made = []
    for name in ("fmt", "filter"):
        body = f'extern "C" int value() {{ return {len(name)}; }}\n'
        (tmp_path / f"{name}.cc").write_text(body)
        out = tmp_path / f"lib{name}.so"
        sources = [str(tmp_path / f"{name}.cc"), str(tmp_path / "system_error48.cc")]
        subprocess.run(["g++", "-shared", "-fPIC", "-O1", f"-Wl,-soname,lib{name}.so", "-o",
                        str(out), *sources], check=True)  # fmt: skip
        made.append(out)
    program = gcc(tmp_path, tmp_path / "bin" / "both", "int main(void) { return 0; }\n", "-exe",
                  "-Wl,--no-as-needed", "-lfmt", "-lfilter", "-Wl,-rpath,$ORIGIN/..")  # fmt: skip
    assert subprocess.run([str(program)], check=False).returncode == 0
    assert _load_all(*made) == [3, 6]
    assert ids(check(tmp_path)) == set()


LZ4 = "int lz4_compress(int n) {{ return n + {}; }}\n"


def test_two_stripped_libraries_exporting_one_c_library_are_a_warning(tmp_path: Path) -> None:
    """Two builds of one C library linked into two libraries that export it: the second's
    callers bind to the first copy (both work); no initializer reaches a registry."""
    first = lib(tmp_path, "blosc", LZ4.format(0) + "int value(void) { return lz4_compress(1); }\n")
    second = lib(tmp_path, "tablesext",
                 LZ4.format(10) + "int value(void) { return lz4_compress(2); }\n",
                 "-Wl,--no-as-needed", "-lblosc", "-Wl,-rpath,$ORIGIN")  # fmt: skip
    for library in (first, second):
        subprocess.run(["strip", str(library)], check=True)
    assert _load_all(first, second) == [1, 2]  # bound to the first copy: 2 + 0, not 2 + 10
    report = check(tmp_path)
    assert ids(report) == {("BT124", "libtablesext.so")}
    assert not report.failed


def test_a_second_copy_of_a_c_library_without_initializers_is_a_warning(tmp_path: Path) -> None:
    body = "static int state;\nint value(void) { return ++state; }\n"
    first = lib(tmp_path / "pkg", "blosc2", body, "-Wl,-soname,libblosc2.so.7")
    graft = tmp_path / "pkg.libs" / "libblosc2-a12ec544.so.7"
    gcc(tmp_path / "pkg.libs", graft, body, "-Wl,-soname,libblosc2-a12ec544.so.7")
    assert _load_all(first, graft) == [1, 1]  # each copy keeps its own state
    members = {"pkg/libblosc2.so": first.read_bytes(), f"pkg.libs/{graft.name}": graft.read_bytes()}
    report = check(write_wheel(tmp_path / "pkg-1.0-py3-none-linux_x86_64.whl", "pkg", members))
    assert ids(report) == {("BT124", graft.name)}


REGISTRY = """
#include <stdlib.h>
#include <string.h>
static const char* names[16];
static int count;
void reg(const char* name) {
    for (int i = 0; i < count; ++i) if (!strcmp(names[i], name)) abort();
    names[count++] = name;
}
"""


def test_a_second_copy_whose_initializer_registers_stays_an_error(tmp_path: Path) -> None:
    """The copies' constructor registers a name into a third library's registry, which aborts
    on a duplicate: loading both aborts (auditwheel's grafted second runtime)."""
    lib(tmp_path / "pkg", "registry", REGISTRY, "-Wl,-soname,libregistry.so")
    body = "void reg(const char*);\n"
    body += '__attribute__((constructor)) static void init(void) { reg("blosc2"); }\n'
    body += "int value(void) { return 1; }\n"
    link = ("-L" + str(tmp_path / "pkg"), "-lregistry", "-Wl,-rpath,$ORIGIN:$ORIGIN/../pkg")
    first = lib(tmp_path / "pkg", "blosc2", body, "-Wl,-soname,libblosc2.so.7", *link)
    graft = tmp_path / "pkg.libs" / "libblosc2-a12ec544.so.7"
    gcc(tmp_path / "pkg.libs", graft, body, "-Wl,-soname,libblosc2-a12ec544.so.7", *link)
    for library in (first, graft):
        subprocess.run(["strip", str(library)], check=True)
    code = "import ctypes, sys; [ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL) for p in sys.argv[1:]]"
    loads = [sys.executable, "-c", code, str(first)]
    assert subprocess.run(loads, check=False).returncode == 0
    assert subprocess.run([*loads, str(graft)], check=False).returncode != 0  # abort
    members = {f"pkg/{p.name}": p.read_bytes() for p in (tmp_path / "pkg").glob("*.so*")}
    members[f"pkg.libs/{graft.name}"] = graft.read_bytes()
    report = check(write_wheel(tmp_path / "pkg-1.0-py3-none-linux_x86_64.whl", "pkg", members))
    assert ids(report) == {("BT122", graft.name)}


def test_two_extension_modules_of_one_name_in_two_folders_are_no_copies(tmp_path: Path) -> None:
    """scipy's optimize/_zeros and optimize/cython_optimize/_zeros: Python loads each by path."""
    module = "int PyInit__zeros(void) {{ return {}; }}\n"
    first = gcc(tmp_path / "a", tmp_path / "a" / "_zeros.so", module.format(1),
                "-Wl,-soname,_zeros.so")  # fmt: skip
    second = gcc(tmp_path / "b", tmp_path / "b" / "_zeros.so", module.format(2),
                 "-Wl,-soname,_zeros.so")  # fmt: skip
    inits = [ctypes.CDLL(str(path)).PyInit__zeros() for path in (first, second)]
    assert inits == [1, 2]
    members = {"s/optimize/_zeros.so": first.read_bytes(),
               "s/optimize/cython_optimize/_zeros.so": second.read_bytes()}  # fmt: skip
    assert ids(check(write_wheel(tmp_path / "s-1.0-py3-none-linux_x86_64.whl", "s", members))) == (
        set()
    )


INLINE_VARIABLES = """
template <typename T> struct Meta { static constexpr bool is_const = false; };
extern "C" const void* NAME_flag(int index) {
  static const bool* const all[] = {&Meta<int>::is_const, &Meta<long>::is_const,
                                    &Meta<char>::is_const, &Meta<float>::is_const,
                                    &Meta<double>::is_const};
  return all[index];
}
"""
"""Template static members every Qt library carries (``QMetaTypeInterfaceWrapper<T>``):
exported ``STB_GNU_UNIQUE``, which the loader binds to one copy in a process, by design."""

OWN_BUILD = """extern "C" int variant() { return NUMBER; }
extern "C" int scale(int x) { return x * NUMBER; }
extern "C" int offset(int x) { return x + NUMBER; }
extern "C" int clamp(int x) { return x > NUMBER ? NUMBER : x; }
extern "C" int mix(int x, int y) { return x * NUMBER + y; }
extern "C" int NAME_value() { return variant(); }
"""
"""Two builds of one library (ggml's CPU variants): the same names, different code."""

LOAD_BOTH = """import ctypes, sys
one, two = (ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL) for path in sys.argv[1:])
one.one_flag.restype = two.two_flag.restype = ctypes.c_void_p
print(all(one.one_flag(i) == two.two_flag(i) for i in range(5)))
if hasattr(two, "two_value"):
    print(one.one_value(), two.two_value())
"""


def _inline_variables(folder: Path, *extra: str) -> list[str]:
    """libone.so and libtwo.so with ``INLINE_VARIABLES`` (and ``extra``: NAME and NUMBER
    replaced) and a program that loads both; what ``LOAD_BOTH`` prints."""
    for name, number in (("one", 1), ("two", 2)):
        source = "".join((INLINE_VARIABLES, *extra)).replace("NAME", name)
        source = source.replace("NUMBER", str(number))
        gcc(folder, folder / f"lib{name}.so", source, f"-Wl,-soname,lib{name}.so", cxx=True)
    program = gcc(folder, folder / "both", "int main(void) { return 0; }\n", "-exe",
                  "-Wl,--no-as-needed", "-lone", "-ltwo", "-Wl,-rpath,$ORIGIN")  # fmt: skip
    assert subprocess.run([program], check=False).returncode == 0
    libraries = [str(folder / f"lib{name}.so") for name in ("one", "two")]
    run = subprocess.run([sys.executable, "-c", LOAD_BOTH, *libraries], capture_output=True,
                         text=True, check=True)  # fmt: skip
    return run.stdout.split()


def test_inline_variables_in_every_library_are_no_second_build(tmp_path: Path) -> None:
    """PyQt6-Qt6's FFmpeg stubs: libraries exporting the same unique template members (57) and
    a function of their own each load together and work, both bound to one copy of each member
    (BT103 "two builds of one library" before). The same libraries also exporting five
    functions of one name are two builds: libtwo's call to its own ``variant`` runs libone's."""
    assert _inline_variables(tmp_path / "members") == ["True"]
    command = ["readelf", "-W", "--dyn-syms", str(tmp_path / "members" / "libone.so")]
    dynamic = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert dynamic.count(" UNIQUE ") == 5
    assert ids(check(tmp_path / "members")) == set()
    assert _inline_variables(tmp_path / "builds", OWN_BUILD) == ["True", "1", "1"]
    assert ("BT103", "libtwo.so") in ids(check(tmp_path / "builds"))


STREAMS_ONLY = """#include <iostream>
int shared_size() { return 42; }
int shared_twice() { return 2 * shared_size(); }
"""
"""A source whose static initializer only sets up the standard streams."""

EXPORTED_STRING = """#include <iostream>
#include <string>
std::string shared_name = "a name long enough to live on the heap, past the small buffer";
int shared_size() { return static_cast<int>(shared_name.size()); }
"""
"""The same, with an exported object its initializer constructs: the loader binds both
libraries' initializers to one copy, which each constructs and each frees at exit."""


def _one_source_twice(folder: Path, source: str) -> subprocess.CompletedProcess[str]:
    """libone.so and libtwo.so, each built from ``source`` and a file of its own, and a
    program linked to both; returns the program's run."""
    folder.mkdir()
    (folder / "shared.cc").write_text(source)
    for name in ("one", "two"):
        (folder / f"{name}.cc").write_text(
            f'int shared_size();\nextern "C" int {name}() {{ return shared_size() > 0; }}\n'
        )
        subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-o", f"lib{name}.so", f"{name}.cc",
                        "shared.cc"], cwd=folder, check=True)  # fmt: skip
    (folder / "main.cc").write_text(
        'extern "C" int one(); extern "C" int two();\n'
        "int main() { return one() + two() == 2 ? 0 : 1; }\n"
    )
    subprocess.run(["g++", "-o", "main", "main.cc", "-L.", "-lone", "-ltwo",
                    "-Wl,-rpath,$ORIGIN"], cwd=folder, check=True)  # fmt: skip
    return subprocess.run([folder / "main"], check=False, capture_output=True, text=True)


def test_one_source_setting_up_the_streams_in_two_libraries_is_a_warning(tmp_path: Path) -> None:
    """Its static initializer and functions are in both; the initializer only sets up the
    streams on an object of its own: the program runs and exits cleanly. BT124, not BT103."""
    run = _one_source_twice(tmp_path / "streams", STREAMS_ONLY)
    assert run.returncode == 0, run.stderr
    report = check(tmp_path / "streams")
    assert ids(report) == {("BT124", "libtwo.so")}, [f.evidence for f in report.findings]
    assert "_GLOBAL__sub_I_shared.cc" in report.findings[0].evidence


def test_one_source_constructing_an_exported_object_in_two_libraries_stays_bt103(
    tmp_path: Path,
) -> None:
    """Both initializers construct the one ``shared_name`` the loader binds them to: the
    program aborts at exit, freeing it twice."""
    run = _one_source_twice(tmp_path / "string", EXPORTED_STRING)
    assert run.returncode == -6, run  # SIGABRT
    assert "double free" in run.stderr
    report = check(tmp_path / "string")
    assert ("BT103", "libtwo.so") in ids(report)


EXPORTED_GUARD = """#include <iostream>
struct Guard {
  volatile bool armed;  // a store the compiler keeps in a destructor
  Guard() : armed(true) {}
  ~Guard() { if (!armed) __builtin_trap(); armed = false; }
};
Guard shared_guard;
int shared_size() { return shared_guard.armed ? 42 : 0; }
"""
"""An exported object whose construction calls nothing: its initializer calls only what the
streams' setup does (``__cxa_atexit``), yet on the library's export, which the loader binds to
one copy: destroyed twice at exit, the second time it traps."""


def test_one_source_constructing_an_exported_object_without_calls_stays_bt103(
    tmp_path: Path,
) -> None:
    run = _one_source_twice(tmp_path / "guard", EXPORTED_GUARD)
    assert run.returncode < 0, run  # the trap at exit
    report = check(tmp_path / "guard")
    assert ("BT103", "libtwo.so") in ids(report), [f.evidence for f in report.findings]


def _copies_with_constructors(tmp_path: Path, registering: bool) -> tuple[Path, Path]:
    """A library (unstripped, so its initializers are read late) and a grafted copy, from three
    sources linked in order, each with a constructor: the first registers ``blosc2`` into
    libregistry's registry when ``registering``, else counts calls of its own."""
    pkg = tmp_path / "pkg"
    lib(pkg, "registry", REGISTRY, "-Wl,-soname,libregistry.so")
    first = "void reg(const char*);\nstatic int calls;\n__attribute__((constructor)) "
    first += 'static void init(void) { reg("blosc2"); }\n' if registering else "static void "
    first += "" if registering else "init(void) { ++calls; }\n"
    sources = [first + "int value(void) { return 1; }\n"]
    sources += [
        f"static int n{i};\n__attribute__((constructor)) static void init{i}(void) "
        f"{{ n{i} += {i}; }}\nint get{i}(void) {{ return n{i}; }}\n"
        for i in (2, 3)
    ]
    paths = []
    for index, source in enumerate(sources):
        paths.append(tmp_path / f"part{index}.c")
        paths[-1].write_text(source)
    link = [f"-L{pkg}", "-lregistry", "-Wl,-rpath,$ORIGIN:$ORIGIN/../pkg"]
    made = []
    for out in (pkg / "libblosc2.so", tmp_path / "pkg.libs" / "libblosc2-a12ec544.so.7"):
        out.parent.mkdir(parents=True, exist_ok=True)
        soname = "libblosc2.so.7" if out.parent == pkg else out.name
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", f"-Wl,-soname,{soname}", "-o", str(out),
                        *map(str, paths), *link], check=True)  # fmt: skip
        made.append(out)
    return made[0], made[1]


def _asked_until(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(initializers read, initializers in the file) for each read that stops at the first
    reaching beyond some imports (``code_walk.FirstReaching``)."""
    asked: list[tuple[int, int]] = []
    ask = InitializerLookup.__call__

    def counted(self: InitializerLookup, source: Source, deep: Any = None) -> Any:
        found = ask(self, source, deep)
        if isinstance(deep, FirstReaching):
            asked.append((len(found), len(ask(self, source))))
        return found

    monkeypatch.setattr(InitializerLookup, "__call__", counted)
    return asked


@pytest.mark.parametrize("registering", [True, False])
def test_a_copys_initializers_read_late_are_read_as_far_as_the_verdict_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registering: bool
) -> None:
    """A copy whose initializers a read left unread (a big unstripped library: libtorch_cpu.so
    in two trees) is judged on its initializers up to the first that calls out of it: one
    that registers ends the read (BT122: loading both aborts); when none does, every one is
    read (BT124: both load). The verdict is the one a whole read gives."""
    first, graft = _copies_with_constructors(tmp_path, registering)
    code = "import ctypes, sys; [ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL) for p in sys.argv[1:]]"
    loads = subprocess.run([sys.executable, "-c", code, str(first), str(graft)], check=False)
    assert (loads.returncode != 0) is registering  # the registry aborts on the second name
    whole = check(tmp_path)
    monkeypatch.setattr(decoding, "LATE_WALK_MIN_BYTES", 0)  # every file's initializers late
    asked = _asked_until(monkeypatch)
    late = check(tmp_path)
    assert ids(late) == ids(whole) == {("BT122" if registering else "BT124", graft.name)}
    assert asked, "the copy's initializers were not read late"
    read, held = asked[0]
    assert held >= 4  # the C runtime's frame_dummy and the three constructors
    assert read == (2 if registering else held)
