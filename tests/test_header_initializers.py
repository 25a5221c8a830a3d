"""Initializers that one header puts into every file including it (VTK's wrapper sources, its
module counters, viskores' link factory): alike in code in two libraries, yet no copy of an
object file. Each library runs its own, and they collide only when they register one name.
Each verdict is checked by running the program that loads both libraries."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from buildtool.linkage.binaries.read import read_binary_file
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
