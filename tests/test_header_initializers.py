"""Initializers that one header puts into every file including it (VTK's wrapper sources, its
module counters, viskores' link factory): alike in code in two libraries, yet no copy of an
object file. Each library runs its own, and they collide only when they register one name.
Each verdict is checked by running the program that loads both libraries."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from buildtool.linkage.binaries.read import read_binary_file, read_initializers_again
from buildtool.linkage.checks.initializer_reach import _callees_alike
from tests.builders import check, cxx, ids

pytestmark = pytest.mark.integration

CORE = """#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
static std::set<std::string>& names() { static std::set<std::string> all; return all; }
extern "C" void registry_add(const char* name) {
  if (!names().insert(name).second) { std::fprintf(stderr, "duplicate %s\\n", name); std::abort(); }
}
static int users;
extern "C" void core_attach() { ++users; }
extern "C" void core_detach() { --users; }
extern "C" void leaks_attach() { ++users; }
extern "C" void leaks_detach() { --users; }
"""

COUNTERS = """extern "C" void core_attach(); extern "C" void core_detach();
extern "C" void leaks_attach(); extern "C" void leaks_detach();
namespace {
struct CoreUser { CoreUser() { core_attach(); } ~CoreUser() { core_detach(); } } core_user;
struct LeaksUser { LeaksUser() { leaks_attach(); } ~LeaksUser() { leaks_detach(); } } leaks_user;
}  // namespace
"""
"""Nifty counters, as VTK's headers give every source (``vtkDebugLeaksManager``): each file
tells the core library it is there; nothing is named."""

FACTORY = """#include <map>
#include <string>
template <class T> struct Factory {
  static std::map<std::string, int>& registry() {
    static std::map<std::string, int> all;
    return all;
  }
  struct Registrar { static bool registered; static bool add() { ADD; return true; } };
};
template <class T> bool Factory<T>::Registrar::registered = Factory<T>::Registrar::add();
struct Link { static std::string name() { return std::string("lin") + "k"; } };
template struct Factory<Link>;
static bool* used = &Factory<Link>::Registrar::registered;
"""
"""A header-only factory (viskores' ``Factory<Link>::Registrar``) filled through the standard
library's map: the guard and the map are template statics the loader unifies, so one library
registers."""

ASSIGN = "Factory::registry()[T::name()] = sizeof(T)"
REFUSE = "if (!Factory::registry().emplace(T::name(), sizeof(T)).second) __builtin_trap()"

NAMED = """extern "C" void registry_add(const char*);
namespace { struct Named { Named() { registry_add("gemm"); } } named; }
"""
"""A header's registration of one name: every file including it registers "gemm" again."""

MAIN = """extern "C" int one(); extern "C" int two();
int main() { return one() + two() == 2 ? 0 : 1; }
"""


def _two_libraries(folder: Path, header: str, *link: str) -> subprocess.CompletedProcess[str]:
    """libone.so and libtwo.so from sources of their own names (one_wrap.cc, two_wrap.cc)
    that include ``header``, both linked to libcore.so (with ``link`` too), and the program
    loading both; returns the program's run."""
    folder.mkdir()
    cxx(folder, "libcore.so", {"core.cc": CORE}, "-shared", "-fPIC")
    (folder / "header.h").write_text(header)
    for name in ("one", "two"):
        source = f'#include "header.h"\nextern "C" int {name}() {{ return *used ? 1 : 0; }}\n'
        cxx(folder, f"lib{name}.so", {f"{name}_wrap.cc": source}, "-shared", "-fPIC",
            "-fvisibility-inlines-hidden", "-lcore",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN", *link)  # fmt: skip
    cxx(folder, "main", {"main.cc": MAIN}, "-Wl,--no-as-needed", "-lone", "-ltwo", "-lcore",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    return subprocess.run([folder / "main"], check=False, capture_output=True, text=True)


@pytest.mark.parametrize("add", [ASSIGN, REFUSE], ids=["assigns", "refuses-a-second"])
def test_a_headers_counters_and_factory_in_two_libraries_load_and_are_no_error(
    tmp_path: Path, add: str
) -> None:
    run = _two_libraries(tmp_path / "boilerplate", COUNTERS + FACTORY.replace("ADD", add))
    assert run.returncode == 0, run.stderr
    report = check(tmp_path / "boilerplate")
    assert not report.failed, [f.evidence for f in report.findings]
    assert not ids(report) & {("BT103", "libtwo.so"), ("BT103", "libone.so")}


def test_a_headers_registration_of_one_name_in_two_libraries_is_bt103(tmp_path: Path) -> None:
    run = _two_libraries(tmp_path / "named", COUNTERS + FACTORY.replace("ADD", ASSIGN) + NAMED)
    assert run.returncode == -6, run  # SIGABRT: the second registration of "gemm"
    assert "duplicate gemm" in run.stderr
    report = check(tmp_path / "named")
    assert ids(report) == {("BT103", "libtwo.so")}
    assert "libcore.so:registry_add" in report.findings[0].evidence
    assert "'gemm'" in report.findings[0].evidence


THROUGH_HELPER = """extern "C" void registry_add(const char*);
extern "C" void core_attach(); extern "C" void leaks_attach();
namespace {
struct Users { Users() { for (int i = 0; i < 4; ++i) { core_attach(); leaks_attach(); } } } users;
__attribute__((noinline)) void add_gemm() { registry_add("gemm"); }
struct Named { Named() { add_gemm(); } } named;
const bool here = true;
}  // namespace
static const bool* used = &here;
"""
"""The same registration made by a function of the library the initializer calls, after counting
users as VTK's headers do (no destructor: nothing registered with ``__cxa_atexit``): its own code
addresses no data, what it hands on (``InitializerReach.content``) names the registration."""


def test_a_headers_registration_through_a_helper_in_two_libraries_is_bt103(
    tmp_path: Path,
) -> None:
    """A read walks each initializer in its own code only; the one here is long enough to tell
    a copy by its shape and leaves the helper's call unfollowed, so the pair is judged by the
    initializers walked whole, not by what the read saw (nothing handed on)."""
    run = _two_libraries(tmp_path / "helper", THROUGH_HELPER)
    assert run.returncode == -6, run  # SIGABRT: the second registration of "gemm"
    assert "duplicate gemm" in run.stderr
    for name in ("one", "two"):
        path = tmp_path / "helper" / f"lib{name}.so"
        facts = read_binary_file(path, path.name)
        assert facts is not None
        assert any(not init.complete for init in facts.initializers or ()), facts.initializers
    report = check(tmp_path / "helper")
    assert ids(report) == {("BT103", "libtwo.so")}
    assert "libcore.so:registry_add" in report.findings[0].evidence


NAMED_AND_DESTROYED = """#include <string>
extern "C" void registry_add(const char*);
namespace { struct Named { std::string name; Named() : name("gemm") { registry_add("gemm"); } }
named; }
static const bool* used = nullptr;
"""
"""A registration by an object with a destructor: the initializer hands ``__dso_handle``'s
address to ``__cxa_atexit`` beside the name it registers."""

PRINTABLE_DATA = "-Wl,--section-start=.data=0x7e7e40"
"""Puts ``__dso_handle`` (the first of ``.data``) where its address reads as text ("@~~")."""


def _atexit_strings(path: Path) -> set[str]:
    """The strings the library's initializers that register destructors address (at least one
    such initializer must be walked)."""
    facts = read_binary_file(path, path.name)
    assert facts is not None
    walked = [init for init in facts.initializers or () if "__cxa_atexit" in init.reaches]
    assert walked, facts.initializers
    return {text for init in walked for text in init.strings}


def test_the_address_of_dso_handle_is_no_string(tmp_path: Path) -> None:
    """What the loader stores a pointer in is no string, whatever its bytes read as: the
    registration is told by its name alone."""
    run = _two_libraries(tmp_path / "atexit", NAMED_AND_DESTROYED, PRINTABLE_DATA)
    assert run.returncode == -6, run  # SIGABRT: the second registration of "gemm"
    for name in ("one", "two"):
        assert _atexit_strings(tmp_path / "atexit" / f"lib{name}.so") == {"gemm"}
    report = check(tmp_path / "atexit")
    assert ids(report) == {("BT103", "libtwo.so")}
    assert "'gemm'" in report.findings[0].evidence
    assert "@~~" not in report.findings[0].evidence


def test_a_headers_boilerplate_with_dso_handle_printable_loads_and_is_no_error(
    tmp_path: Path,
) -> None:
    """The other way: the nifty counters' destructors hand ``__dso_handle`` to ``__cxa_atexit``
    too; with its address readable as text in both libraries, they still are no copy (they
    register nothing), and the program loads."""
    header = COUNTERS + FACTORY.replace("ADD", ASSIGN)
    run = _two_libraries(tmp_path / "counters", header, PRINTABLE_DATA)
    assert run.returncode == 0, run.stderr
    for name in ("one", "two"):
        assert _atexit_strings(tmp_path / "counters" / f"lib{name}.so") == set()
    report = check(tmp_path / "counters")
    assert not report.failed, [f.evidence for f in report.findings]
    assert not ids(report) & {("BT103", "libtwo.so"), ("BT103", "libone.so")}


REGISTERS_A_MODULE = """extern "C" void core_attach(); extern "C" void leaks_attach();
extern "C" void module_register();
namespace {
struct Boiler {
  Boiler() { for (int i = 0; i < 4; ++i) { core_attach(); leaks_attach(); } module_register(); }
} boiler;
}  // namespace
"""
"""A header registering the module that includes it (VTK's ``AddRegistrar_<module>`` call):
the function is the library's own where it defines one (a hidden one, called directly, as
Mach-O calls a library's own functions), else libcore's."""

OWN_REGISTRAR = """extern "C" void registry_add(const char*);
extern "C" __attribute__((visibility("hidden"))) void module_register() { registry_add("NAME"); }
"""

CORE_REGISTRAR = 'extern "C" void module_register() { registry_add("core"); }\n'


def _registering_pair(folder: Path, own: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """libone.so and libtwo.so whose sources (one_wrap.cc, two_wrap.cc) include
    ``REGISTERS_A_MODULE``; ``own``: the libraries that define their own registrar, and the
    name it registers. The program loading both is run."""
    folder.mkdir()
    cxx(folder, "libcore.so", {"core.cc": CORE + CORE_REGISTRAR}, "-shared", "-fPIC")
    (folder / "header.h").write_text(REGISTERS_A_MODULE)
    for name in ("one", "two"):
        source = f'#include "header.h"\nextern "C" int {name}() {{ return 1; }}\n'
        sources = {f"{name}_wrap.cc": source}
        if name in own:  # a source of its own: the initializer calls it, not a copy inlined
            sources[f"{name}_registrar.cc"] = OWN_REGISTRAR.replace("NAME", own[name])
        cxx(folder, f"lib{name}.so", sources, "-shared", "-fPIC",
            "-lcore", "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    cxx(folder, "main", {"main.cc": MAIN}, "-Wl,--no-as-needed", "-lone", "-ltwo", "-lcore",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    return subprocess.run([folder / "main"], check=False, capture_output=True, text=True)


def test_one_header_calling_its_own_registrar_in_one_library_only_is_no_error(
    tmp_path: Path,
) -> None:
    """libone's initializer hands on its own registrar's code, libtwo's (walked whole) hands on
    nothing and calls libcore's: alike in code, named after other sources, they register
    "one" and "core". Both load; no BT103."""
    run = _registering_pair(tmp_path / "apart", {"one": "one"})
    assert run.returncode == 0, run.stderr
    report = check(tmp_path / "apart")
    assert not ids(report) & {("BT103", "libtwo.so"), ("BT103", "libone.so")}, [
        f.evidence for f in report.findings
    ]


def test_one_header_calling_the_same_own_registrar_in_both_libraries_is_bt103(
    tmp_path: Path,
) -> None:
    run = _registering_pair(tmp_path / "both", {"one": "gemm", "two": "gemm"})
    assert run.returncode == -6, run  # SIGABRT: the second registration of "gemm"
    assert "duplicate gemm" in run.stderr
    report = check(tmp_path / "both")
    assert ("BT103", "libtwo.so") in ids(report)


TABLES = """#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
struct Entry { const char* name; int (*make)(); };
extern "C" void registry_add_table(const Entry* table) {
  static std::set<std::string> names;
  for (; table->name; ++table) {
    if (names.insert(table->name).second) continue;
    std::fprintf(stderr, "duplicate %s\\n", table->name);
    std::abort();
  }
}
static int users;
extern "C" void core_attach() { ++users; }
extern "C" void leaks_attach() { ++users; }
"""
"""A registry of tables of classes, keyed by their names: it refuses a name twice."""

REGISTERS_ITS_MODULE = """extern "C" void core_attach(); extern "C" void leaks_attach();
extern "C" void REGISTRAR();
namespace {
struct Boiler {
  Boiler() { for (int i = 0; i < 4; ++i) { core_attach(); leaks_attach(); } REGISTRAR(); }
} boiler;
}  // namespace
"""
"""VTK's boilerplate: a header calling the registrar of the module that includes it (the
compiler is told its name, ``AddRegistrar_<module>``)."""

MODULE_TABLE = """struct Entry { const char* name; int (*make)(); };
extern "C" void registry_add_table(const Entry*);
static int make() { return 1; }
static Entry table[] = {{"CLASS", &make}, {nullptr, nullptr}};
extern "C" __attribute__((visibility("hidden"))) void REGISTRAR() { registry_add_table(table); }
"""
"""A module's registrar, hidden (the boilerplate calls it directly): it hands on a writable
table of its classes, which no read-only data tells apart."""


def _tables_pair(folder: Path, registrars: dict[str, str], classes: dict[str, str]) -> Path:
    """libone.so and libtwo.so from a wrapper source including ``REGISTERS_ITS_MODULE`` and a
    registrar source named after ``registrars[library]`` registering ``classes[library]``."""
    folder.mkdir()
    cxx(folder, "libcore.so", {"core.cc": TABLES}, "-shared", "-fPIC")
    (folder / "header.h").write_text(REGISTERS_ITS_MODULE)
    for name in ("one", "two"):
        registrar = registrars[name]
        wrapper = f'#include "header.h"\nextern "C" int {name}() {{ return 1; }}\n'
        table = MODULE_TABLE.replace("CLASS", classes[name])
        sources = {f"{name}_wrap.cc": wrapper, f"{registrar}.cc": table}
        cxx(folder, f"lib{name}.so", sources, "-shared", "-fPIC", f"-DREGISTRAR={registrar}",
            "-lcore", "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    cxx(folder, "main", {"main.cc": MAIN}, "-Wl,--no-as-needed", "-lone", "-ltwo", "-lcore",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    return folder


def _runs(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([folder / "main"], check=False, capture_output=True, text=True)


def test_one_boilerplate_calling_each_modules_own_registrar_loads_and_is_no_error(
    tmp_path: Path,
) -> None:
    """The registrars' code is alike, and so are the initializers calling them; the symbol
    table names them ``AddRegistrar_one`` and ``AddRegistrar_two``, which a copy of one object
    file would not: other registrations. Both load."""
    registrars = {"one": "AddRegistrar_one", "two": "AddRegistrar_two"}
    folder = _tables_pair(tmp_path / "apart", registrars, {"one": "One", "two": "Two"})
    run = _runs(folder)
    assert run.returncode == 0, run.stderr
    report = check(folder)
    assert not ids(report) & {("BT103", "libtwo.so"), ("BT103", "libone.so")}, [
        f.evidence for f in report.findings
    ]


def test_one_registrar_source_linked_into_both_libraries_is_bt103(tmp_path: Path) -> None:
    """The same registrar in both (a source listed in two targets): its table's class is
    registered twice and the program aborts; the function is named alike in both."""
    registrars = {"one": "add_gemm", "two": "add_gemm"}
    folder = _tables_pair(tmp_path / "copies", registrars, {"one": "Gemm", "two": "Gemm"})
    run = _runs(folder)
    assert run.returncode == -6, run  # SIGABRT: the second registration of "Gemm"
    assert "duplicate Gemm" in run.stderr
    report = check(folder)
    assert ("BT103", "libtwo.so") in ids(report)
    assert "libcore.so:registry_add_table" in report.findings[0].evidence


def test_a_copy_in_a_library_stripped_of_its_symbol_table_is_still_bt103(tmp_path: Path) -> None:
    """One library stripped: its registrar goes unnamed, which tells nothing apart."""
    registrars = {"one": "add_gemm", "two": "add_gemm"}
    folder = _tables_pair(tmp_path / "stripped", registrars, {"one": "Gemm", "two": "Gemm"})
    subprocess.run(["strip", "--strip-all", folder / "libone.so"], check=True)
    assert _runs(folder).returncode == -6
    report = check(folder)
    assert {("BT103", "libtwo.so"), ("BT103", "libone.so")} & ids(report), [
        f.evidence for f in report.findings
    ]


def _callees(path: Path) -> set[tuple[frozenset[str], ...]]:
    data = path.read_bytes()
    return {init.callees for init in read_initializers_again(data, path.name)}


def _defined_functions(path: Path) -> dict[str, int]:
    """pyelftools' reading of ``.symtab``: each defined function's address, by name."""
    with path.open("rb") as stream:
        table = ELFFile(stream).get_section_by_name(".symtab")
        assert isinstance(table, SymbolTableSection)
        return {
            symbol.name: symbol["st_value"]
            for symbol in table.iter_symbols()
            if symbol["st_info"]["type"] == "STT_FUNC" and symbol["st_shndx"] != "SHN_UNDEF"
        }


def test_the_functions_an_initializer_calls_are_named_by_the_symbol_table(tmp_path: Path) -> None:
    """The walk names the registrar the boilerplate calls as pyelftools reads ``.symtab``; a
    stripped copy names none."""
    registrars = {"one": "AddRegistrar_one", "two": "AddRegistrar_two"}
    folder = _tables_pair(tmp_path / "named", registrars, {"one": "One", "two": "Two"})
    library = folder / "libone.so"
    assert "AddRegistrar_one" in _defined_functions(library)
    assert (frozenset({"AddRegistrar_one"}),) in _callees(library)
    stripped = folder / "stripped.so"
    subprocess.run(["strip", "--strip-all", "-o", stripped, library], check=True)
    assert _callees(stripped) == {()}


@pytest.mark.parametrize(
    ("first", "second", "alike"),
    [
        ((), (frozenset({"AddRegistrar_one"}),), True),  # a stripped file names none
        ((frozenset(),), (frozenset({"AddRegistrar_one"}),), True),  # nor this function
        ((frozenset({"add", "folded"}),), (frozenset({"add"}),), True),  # identical code folded
        ((frozenset({"AddRegistrar_one"}),), (frozenset({"AddRegistrar_two"}),), False),
        ((frozenset({"a"}), frozenset({"b"})), (frozenset({"a"}),), False),  # another code
    ],
)
def test_callees_are_alike_where_the_files_both_name_them_alike(
    first: tuple[frozenset[str], ...], second: tuple[frozenset[str], ...], alike: bool
) -> None:
    assert _callees_alike(first, second) is alike
    assert _callees_alike(second, first) is alike
