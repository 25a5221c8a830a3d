"""Duplicate code as verify-linkage judges it against the loader: code two co-loaded libraries
share collides only when both copies register into one registry (BT103); a private static copy
in each is a warning (BT124); header-guarded initializers and libstdc++'s helpers are neither.
Each verdict is checked by running the program that loads both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.checks import duplicates
from tests.builders import check, cxx, ids

pytestmark = pytest.mark.integration


# --- 4. duplicate code that can collide ----------------------------------------------------------

REGISTRY = """#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
static std::set<std::string>& names() { static std::set<std::string> all; return all; }
extern "C" void registry_add(const char* name) {
  if (!names().insert(name).second) { std::fprintf(stderr, "duplicate %s\\n", name); std::abort(); }
}
"""

SHARED_REGISTRATION = """extern "C" void registry_add(const char*);
namespace {
__attribute__((noipa)) int kernel(int x) { return x * 2 + 1; }
struct Registerer { Registerer() { if (kernel(1) == 3) registry_add("gemm"); } } registerer;
}  // namespace
"""

PRIVATE_LIBRARY = """#include <cstdlib>
#include <set>
#include <string>
namespace proto {
std::set<std::string>& registry() { static std::set<std::string> all; return all; }
void add(const char* name) { if (!registry().insert(name).second) std::abort(); }
__attribute__((noipa)) int encode(int x) { return x * 3; }
__attribute__((noipa)) int decode(int x) { return x / 3; }
}  // namespace proto
namespace {
struct Registerer {
  Registerer() { if (proto::decode(proto::encode(3)) == 3) proto::add("message"); }
};
Registerer registerer;
}  // namespace
"""

MAIN = """extern "C" int one(); extern "C" int two();
int main() { return one() + two() == 2 ? 0 : 1; }
"""


def two_libraries(
    folder: Path, shared_source: str, *flags: str
) -> subprocess.CompletedProcess[str]:
    """libone.so and libtwo.so both linked with ``shared.cc``, and an executable that loads
    both; returns the executable's run."""
    folder.mkdir(parents=True)
    cxx(folder, "libcore.so", {"registry.cc": REGISTRY}, "-shared", "-fPIC")
    for name in ("one", "two"):
        api = {
            f"{name}.cc": f'extern "C" int {name}() {{ return 1; }}\n',
            "shared.cc": shared_source,
        }
        cxx(folder, f"lib{name}.so", api, "-shared", "-fPIC", "-lcore", *flags,
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    cxx(folder, "main", {"main.cc": MAIN}, "-Wl,--no-as-needed", "-lone", "-ltwo", "-lcore",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    return subprocess.run([folder / "main"], check=False, capture_output=True, text=True)


def test_a_shared_registration_in_two_libraries_stays_bt103(tmp_path: Path) -> None:
    run = two_libraries(tmp_path / "seed", SHARED_REGISTRATION)
    assert run.returncode != 0  # the real abort
    assert "duplicate gemm" in run.stderr
    report = check(tmp_path / "seed")
    assert ids(report) == {("BT103", "libtwo.so")}
    assert "_GLOBAL__sub_I_shared.cc" in report.findings[0].evidence


def test_each_librarys_exports_are_split_once_for_every_pair_and_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exports of a library are worked out once, however many pairs and checks ask
    (tensorflow's libtensorflow_cc.so.2 splits 436k keys): the finding stays the same."""
    two_libraries(tmp_path / "seed", SHARED_REGISTRATION)
    asked: list[int] = []
    unmemoized = duplicates._exported_names

    def counted(facts: BinaryFacts) -> frozenset[str]:
        asked.append(id(facts))
        return unmemoized(facts)

    monkeypatch.setattr(duplicates, "_exported_names", counted)
    report = check(tmp_path / "seed")
    assert ids(report) == {("BT103", "libtwo.so")}
    assert len(asked) >= 3  # the alike-builds scan asks for each library, the finding again
    assert len(asked) == len(set(asked))


@pytest.mark.parametrize(
    "flags",
    [("-Wl,--version-script=api.map",), ("-fvisibility=hidden",)],
    ids=["version-script", "hidden-visibility"],
)
def test_a_private_static_copy_in_each_library_is_a_warning(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    folder = tmp_path / "private"
    folder.mkdir()
    (folder / "api.map").write_text("{ global: one; two; local: *; };\n")
    run = _private_build(folder, PRIVATE_LIBRARY, flags)
    assert run.returncode == 0, run.stderr  # each library registers into its own registry
    report = check(folder)
    assert ids(report) == {("BT124", "libtwo.so")}
    assert not report.failed
    assert "_ZN5proto" in report.findings[0].evidence
    assert "MB of code twice" in report.findings[0].message


def _private_build(
    folder: Path, source: str, flags: tuple[str, ...]
) -> subprocess.CompletedProcess[str]:
    cxx(folder, "libcore.so", {"registry.cc": REGISTRY}, "-shared", "-fPIC")
    for name in ("one", "two"):
        api = {f"{name}.cc": f'extern "C" __attribute__((visibility("default"))) int {name}() '
               "{ return 1; }\n", "shared.cc": source}  # fmt: skip
        cxx(folder, f"lib{name}.so", api, "-shared", "-fPIC", *flags,
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    cxx(folder, "main", {"main.cc": MAIN}, "-Wl,--no-as-needed", "-lone", "-ltwo",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    return subprocess.run([folder / "main"], check=False, capture_output=True, text=True)


REGISTRY_BOUND = """extern "C" void registry_add(const char*);
namespace gemm {
__attribute__((noipa)) int encode(int x) { return x * 3; }
__attribute__((noipa)) int decode(int x) { return x / 3; }
__attribute__((noipa)) void add(const char* name) { registry_add(name); }
}  // namespace gemm
namespace {
struct Registerer { Registerer() { if (gemm::decode(gemm::encode(3)) == 3) gemm::add("gemm"); } };
Registerer registerer;
}  // namespace
"""
"""The seed's defect with hidden visibility: every function of the copy is bound inside each
library, but its initializer registers into the registry library both load."""

LOAD_BOTH = """import ctypes, sys
for name in sys.argv[1:]:
    ctypes.CDLL(name)
"""


def _hidden_pair(
    folder: Path, source: str, strip: bool, registry: str = REGISTRY, *flags: str
) -> subprocess.CompletedProcess[str]:
    """libone.so and libtwo.so, each with ``source`` (``NAME`` replaced by its name) built
    -fvisibility=hidden (and with ``flags``) and linked to libcore.so (the registry), loaded
    together by ctypes in a child process."""
    folder.mkdir()
    cxx(folder, "libcore.so", {"registry.cc": registry}, "-shared", "-fPIC")
    for name in ("one", "two"):
        api = {f"{name}.cc": f'extern "C" __attribute__((visibility("default"))) int {name}() '
               "{ return 1; }\n", "shared.cc": source.replace("NAME", name)}  # fmt: skip
        cxx(folder, f"lib{name}.so", api, "-shared", "-fPIC", "-fvisibility=hidden", "-lcore",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN", *flags)  # fmt: skip
    cxx(folder, "main", {"main.cc": MAIN}, "-Wl,--no-as-needed", "-lone", "-ltwo",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    if strip:
        subprocess.run(["strip", *(folder / n for n in ("libone.so", "libtwo.so", "main"))],
                       check=True)  # fmt: skip
    libraries = [str(folder / "libone.so"), str(folder / "libtwo.so")]
    command = [sys.executable, "-c", LOAD_BOTH, *libraries]
    return subprocess.run(command, check=False, capture_output=True, text=True)


@pytest.mark.parametrize("strip", [False, True], ids=["unstripped", "stripped"])
def test_a_hidden_copy_that_registers_into_a_shared_registry_is_bt103(
    tmp_path: Path, strip: bool
) -> None:
    run = _hidden_pair(tmp_path / "bound", REGISTRY_BOUND, strip)
    assert run.returncode == -6, run  # SIGABRT: the second registration of "gemm"
    assert "duplicate gemm" in run.stderr
    report = check(tmp_path / "bound")
    assert ids(report) == {("BT103", "libtwo.so")}
    assert "both register through libcore.so:registry_add" in report.findings[0].evidence


TAIL_CALL = """extern "C" void registry_add(const char*);
namespace {
struct Registerer { Registerer() { registry_add("gemm"); } } registerer;
}  // namespace
"""
"""The seed's registration as -O2 compiles it: the initializer is two instructions, the name's
address loaded and a jump (no call) to the registry's PLT entry."""


@pytest.mark.parametrize("strip", [False, True], ids=["unstripped", "stripped"])
def test_a_two_instruction_initializer_that_tail_calls_the_registry_is_bt103(
    tmp_path: Path, strip: bool
) -> None:
    run = _hidden_pair(tmp_path / "tail", TAIL_CALL, strip)
    assert run.returncode == -6, run  # SIGABRT: the second registration of "gemm"
    assert "duplicate gemm" in run.stderr
    disassembly = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", tmp_path / "tail" / "libone.so"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    tail_calls = [line for line in disassembly.splitlines() if "jmp" in line]
    assert any("<registry_add@plt>" in line for line in tail_calls)
    report = check(tmp_path / "tail")
    assert ids(report) == {("BT103", "libtwo.so")}
    assert "both register through libcore.so:registry_add" in report.findings[0].evidence
    assert "'gemm'" in report.findings[0].evidence


LATE_REGISTRATION = (
    'extern "C" void registry_add(const char*);\n'
    "namespace {\n"
    + "".join(f"volatile int setting{n};\n" for n in range(80))
    + "struct Registerer { Registerer() {\n"
    + "".join(f"  setting{n} = {n + 1};\n" for n in range(80))
    + '  registry_add("gemm");\n} } registerer;\n}  // namespace\n'
)
"""A registration after 80 stores: past the instructions a read walks of an initializer's own
code (its shape's prefix), so the checks walk the rest when both files have the prefix."""


@pytest.mark.parametrize("strip", [False, True], ids=["unstripped", "stripped"])
def test_a_registration_past_the_walked_prefix_is_found_when_both_have_it(
    tmp_path: Path, strip: bool
) -> None:
    run = _hidden_pair(tmp_path / "late", LATE_REGISTRATION, strip)
    assert run.returncode == -6, run  # SIGABRT: the second registration of "gemm"
    report = check(tmp_path / "late")
    assert ids(report) == {("BT103", "libtwo.so")}
    assert "both register through libcore.so:registry_add" in report.findings[0].evidence


@pytest.mark.parametrize("strip", [False, True], ids=["unstripped", "stripped"])
def test_a_hidden_copy_with_its_own_registry_loads_and_is_no_error(
    tmp_path: Path, strip: bool
) -> None:
    run = _hidden_pair(tmp_path / "own", PRIVATE_LIBRARY, strip)
    assert run.returncode == 0, run.stderr  # each copy registers into its own registry
    report = check(tmp_path / "own")
    assert not report.failed
    # unstripped, the shared functions show the private copy; stripped, nothing tells it
    assert ids(report) == ({("BT124", "libtwo.so")} if not strip else set())


@pytest.mark.parametrize("strip", [False, True], ids=["unstripped", "stripped"])
def test_the_same_code_registering_another_name_in_each_library_is_no_error(
    tmp_path: Path, strip: bool
) -> None:
    """apache-tvm's runtime and compiler: initializers of one shape (one registration macro)
    that register different names into the shared registry; both load together."""
    source = REGISTRY_BOUND.replace('"gemm"', '"gemm.NAME"')
    run = _hidden_pair(tmp_path / "names", source, strip)
    assert run.returncode == 0, run.stderr
    assert not check(tmp_path / "names").failed


TYPE_INDEX = """extern "C" int registry_type_index(const char*);
namespace ffi {
template <typename T> struct TypeIndex { static int value; };
template <typename T> int TypeIndex<T>::value = registry_type_index(T::key);
struct Object { static constexpr const char* key = "ffi.Object"; };
struct Array { static constexpr const char* key = "ffi.Array"; };
}  // namespace ffi
extern "C" __attribute__((visibility("default"))) int NAME_types() {
  return ffi::TypeIndex<ffi::Object>::value + ffi::TypeIndex<ffi::Array>::value;
}
"""
"""A header's template static members (tvm-ffi's type indexes): every library that uses them
carries a guarded initializer of the same code that asks the shared registry for the index."""

TYPE_REGISTRY = (
    REGISTRY
    + """#include <map>
extern "C" int registry_type_index(const char* name) {
  static std::map<std::string, int> indexes;
  return indexes.emplace(name, int(indexes.size())).first->second;  // got or allocated
}
"""
)


@pytest.mark.parametrize("strip", [False, True], ids=["unstripped", "stripped"])
def test_a_headers_guarded_initializers_in_each_library_are_no_error(
    tmp_path: Path, strip: bool
) -> None:
    run = _hidden_pair(tmp_path / "types", TYPE_INDEX, strip, TYPE_REGISTRY)
    assert run.returncode == 0, run.stderr
    report = check(tmp_path / "types")
    assert not report.failed, report.findings
    # the same libraries with an unguarded registration of one name still abort and are caught
    bound = _hidden_pair(tmp_path / "bound", TYPE_INDEX + REGISTRY_BOUND, strip, TYPE_REGISTRY)
    assert bound.returncode == -6, bound
    assert ("BT103", "libtwo.so") in ids(check(tmp_path / "bound"))


TOOLCHAIN_HELPERS = """#include <new>
#include <stdexcept>
namespace std {
__attribute__((visibility("default"))) void __throw_bad_array_new_length() { throw bad_alloc(); }
}
extern "C" __attribute__((visibility("default"))) void __bss_start__() {}
extern "C" __attribute__((visibility("default"))) int NAME() { return 1; }
"""
"""What a devtoolset g++ links into every library (libstdc++_nonshared.a's helpers, exported),
and an aarch64 linker symbol, beside each library's own function."""


def test_libstdcxx_helpers_in_two_libraries_are_no_duplicate_code(tmp_path: Path) -> None:
    folder = tmp_path / "helpers"
    folder.mkdir()
    for name in ("one", "two"):
        cxx(folder, f"lib{name}.so", {f"{name}.cc": TOOLCHAIN_HELPERS.replace("NAME", name)},
            "-shared", "-fPIC", "-s")  # fmt: skip
    cxx(folder, "main", {"main.cc": MAIN}, "-Wl,--no-as-needed", "-lone", "-ltwo",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN")  # fmt: skip
    assert subprocess.run([folder / "main"], check=False).returncode == 0
    assert check(folder).findings == ()
    # the same two libraries exporting a function of the project's own are still reported:
    # stripped, with no initializer reaching a registry, as the copy it is (each caller binds
    # to the first one loaded, which works), not as an error
    for name in ("one", "two"):
        source = TOOLCHAIN_HELPERS.replace("NAME", name) + 'extern "C" int shared() { return 2; }\n'
        cxx(folder, f"lib{name}.so", {f"{name}.cc": source}, "-shared", "-fPIC", "-s")
    assert subprocess.run([folder / "main"], check=False).returncode == 0
    assert ids(check(folder)) == {("BT124", "libtwo.so")}


RESOURCES = """// what Qt's rcc writes for a resource collection: the tables, and an initializer
// that registers them with the resource registry of another library
#define FILE_NAME "@PATH@"
#define CONTENT "the content of @PATH@"
static const unsigned char resource_tree[] = {
  0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
static const struct { unsigned char length; char name[sizeof(FILE_NAME)]; } resource_names = {
  sizeof(FILE_NAME) - 1, FILE_NAME};
static const struct { unsigned char size[4]; char content[sizeof(CONTENT)]; } resource_data = {
  {0, 0, 0, sizeof(CONTENT) - 1}, CONTENT};
extern "C" int register_resource(int, const void*, const void*, const void*);
extern "C" int unregister_resource(int, const void*, const void*, const void*);
int init_resources_NAME() {
  register_resource(3, resource_tree, &resource_names, &resource_data);
  return 1;
}
int cleanup_resources_NAME() {
  unregister_resource(3, resource_tree, &resource_names, &resource_data);
  return 1;
}
namespace {
struct initializer {
  initializer() { init_resources_NAME(); }
  ~initializer() { cleanup_resources_NAME(); }
} dummy;
}  // namespace
"""
"""What Qt's rcc writes for a resource collection: one code in
every library, registering its own tables (``@PATH@``: its one file)."""

RESOURCE_REGISTRY = """#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
static std::set<std::string>& names() { static std::set<std::string> all; return all; }
static std::string first_name(const void* names) {
  auto bytes = static_cast<const unsigned char*>(names);
  return std::string(reinterpret_cast<const char*>(bytes) + 1, bytes[0]);
}
extern "C" int register_resource(int, const void*, const void* names, const void*) {
  if (!::names().insert(first_name(names)).second) {
    std::fprintf(stderr, "resource %s registered twice\\n", first_name(names).c_str());
    std::abort();
  }
  return 1;
}
extern "C" int unregister_resource(int, const void*, const void* names, const void*) {
  return int(::names().erase(first_name(names)));
}
"""
"""A resource registry that refuses a resource name registered twice (Qt's keeps a list)."""


@pytest.mark.parametrize("strip", [False, True], ids=["unstripped", "stripped"])
@pytest.mark.parametrize("endbr", [True, False], ids=["cf-protection", "plain"])
def test_resource_initializers_registering_their_own_data_are_no_error(
    tmp_path: Path, strip: bool, endbr: bool
) -> None:
    """Qt's libraries: each has initializers of one code (rcc's, from a file of one name)
    registering its own resource tables into libQt6Core; all load together (BT103 before,
    unstripped by the initializers' names; stripped by their shape when built as Qt is, with
    -fcf-protection). The same resource object linked into both registers one resource twice:
    the registry aborts, and it is BT103 (stripped without -fcf-protection, whose initializer
    is 7 instructions naming no string, a miss before)."""
    flags = ("-fcf-protection=full",) if endbr else ("-fcf-protection=none",)
    own = RESOURCES.replace("@PATH@", "NAME-icons/app.png")
    run = _hidden_pair(tmp_path / "own", own, strip, RESOURCE_REGISTRY, *flags)
    assert run.returncode == 0, run.stderr
    assert not check(tmp_path / "own").failed
    shared = RESOURCES.replace("@PATH@", "icons/app.png").replace("NAME", "shared")
    run = _hidden_pair(tmp_path / "shared", shared, strip, RESOURCE_REGISTRY, *flags)
    assert run.returncode == -6, run  # SIGABRT
    assert "resource icons/app.png registered twice" in run.stderr
    report = check(tmp_path / "shared")
    assert ids(report) == {("BT103", "libtwo.so")}
    assert "both register through libcore.so:register_resource" in report.findings[0].evidence


QT_RESOURCES = """// what Qt's rcc writes for a resource collection, registering with Qt's functions
static const unsigned char qt_resource_struct[] = {
  0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
static const unsigned char qt_resource_name[] = {13, 'i', 'c', 'o', 'n', 's', '/', 'a', 'p', 'p',
  '.', 'p', 'n', 'g'};
static const unsigned char qt_resource_data[] = {0, 0, 0, 3, 'p', 'n', 'g'};
bool qRegisterResourceData(int, const unsigned char*, const unsigned char*, const unsigned char*);
bool qUnregisterResourceData(int, const unsigned char*, const unsigned char*,
                             const unsigned char*);
int qInitResources_NAME() {
  qRegisterResourceData(3, qt_resource_struct, qt_resource_name, qt_resource_data);
  return 1;
}
int qCleanupResources_NAME() {
  qUnregisterResourceData(3, qt_resource_struct, qt_resource_name, qt_resource_data);
  return 1;
}
namespace {
struct initializer {
  initializer() { qInitResources_NAME(); }
  ~initializer() { qCleanupResources_NAME(); }
} dummy;
}  // namespace
"""
"""One resource collection as rcc writes it (``NAME``: the file it is compiled from)."""

QT_RESOURCE_REGISTRY = """#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
struct Root { const unsigned char *tree, *names, *data; };
static std::vector<Root>& roots() { static std::vector<Root> all; return all; }
static std::string first_name(const unsigned char* names) {
  return std::string(reinterpret_cast<const char*>(names) + 1, names[0]);
}
bool qRegisterResourceData(int, const unsigned char* tree, const unsigned char* names,
                           const unsigned char* data) {
#ifdef REFUSE_A_SECOND
  for (const Root& root : roots()) {
    if (first_name(root.names) == first_name(names)) {
      std::fprintf(stderr, "resource %s registered twice\\n", first_name(names).c_str());
      std::abort();
    }
  }
#endif
  roots().push_back({tree, names, data});  // as Qt's, which skips only tables listed already
  return true;
}
bool qUnregisterResourceData(int, const unsigned char* tree, const unsigned char*,
                             const unsigned char*) {
  for (auto it = roots().begin(); it != roots().end(); ++it) {
    if (it->tree == tree) { roots().erase(it); return true; }
  }
  return false;
}
"""
"""Qt's resource registry: a list that takes the same resource twice (``REFUSE_A_SECOND``
defined: one that aborts instead)."""


PROFILER_API = """#include <functional>
#include <memory>
namespace tensorflow { class ProfileOptions; }
namespace tsl { namespace profiler {
class ProfilerInterface { public: virtual ~ProfilerInterface() = default; };
using ProfilerFactory =
    std::function<std::unique_ptr<ProfilerInterface>(const tensorflow::ProfileOptions&)>;
void RegisterProfilerFactory(ProfilerFactory factory);
} }
"""
"""TSL's profiler factory registration, declared as tensorflow's libraries see it."""

PROFILER_FACTORY = (
    PROFILER_API
    + """namespace {
std::unique_ptr<tsl::profiler::ProfilerInterface> create(const tensorflow::ProfileOptions&) {
  return nullptr;
}
int registered = (tsl::profiler::RegisterProfilerFactory(&create), 0);
}  // namespace
"""
)
"""A tracer's registration, as an object file TensorFlow links into several libraries has it."""

PROFILER_REGISTRY = (
    PROFILER_API
    + """#include <cstdio>
#include <cstdlib>
#include <vector>
namespace tsl { namespace profiler {
static std::vector<ProfilerFactory>& factories() {
  static std::vector<ProfilerFactory> all;
  return all;
}
void RegisterProfilerFactory(ProfilerFactory factory) {
#ifdef REFUSE_A_SECOND
  if (!factories().empty()) { std::fprintf(stderr, "factory registered twice\\n"); std::abort(); }
#endif
  factories().push_back(std::move(factory));  // TSL's: appended, whatever is listed already
}
} }
"""
)
"""TSL's profiler factory list (``REFUSE_A_SECOND`` defined: one that aborts instead)."""

ACCEPTING = {
    "qt": (QT_RESOURCES, QT_RESOURCE_REGISTRY, "qRegister", "resource icons/app.png"),
    "tsl": (PROFILER_FACTORY, PROFILER_REGISTRY, "RegisterProfilerFactory", "factory"),
}
"""(the copied object, its registry, the registration's name, what the refusing one names)."""


@pytest.mark.parametrize("strip", [False, True], ids=["unstripped", "stripped"])
@pytest.mark.parametrize("registry", sorted(ACCEPTING))
def test_copies_registering_with_a_registry_that_takes_them_twice_are_no_error(
    tmp_path: Path, registry: str, strip: bool
) -> None:
    """PySide6's libQt6Designer and libQt6DesignerComponents both hold one resource collection
    and register it with libQt6Core's qRegisterResourceData, which lists it twice;
    tensorflow-cpu's lib_pywrap_tensorflow_common.so and libtensorflow_cc.so.2 both register one
    profiler factory with TSL's RegisterProfilerFactory, which lists it twice. Both load (BT103
    before). Registered with any other registry, one that refuses the second registration, the
    same copies abort, and stay BT103: the name of the registration is what tells it."""
    copied, registry_source, name, named = ACCEPTING[registry]
    source = copied.replace("NAME", "shared")
    flags = ("-fcf-protection=full",)
    run = _hidden_pair(tmp_path / "takes", source, strip, registry_source, *flags)
    assert run.returncode == 0, run.stderr
    assert not check(tmp_path / "takes").failed
    checked = name.replace("Register", "RegisterChecked")
    refusing = ("#define REFUSE_A_SECOND\n" + registry_source).replace(name, checked)
    run = _hidden_pair(tmp_path / "refusing", source.replace(name, checked), strip, refusing,
                       *flags)  # fmt: skip
    assert run.returncode == -6, run  # SIGABRT
    assert f"{named} registered twice" in run.stderr
    assert ("BT103", "libtwo.so") in ids(check(tmp_path / "refusing"))


META_OBJECT = """#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
namespace core {
struct Meta {
  int index_of(const char* name) const;
  void add(const char* name);
  std::set<std::string> names;
};
Meta meta_object;
int Meta::index_of(const char* name) const { return int(names.count(name)); }
void Meta::add(const char* name) {
  if (!names.insert(name).second) { std::fprintf(stderr, "duplicate %s\\n", name); std::abort(); }
}
}  // namespace core
"""
"""A library's object with a lookup (a const member function) and a registration (Qt's
``QObject::staticMetaObject`` and its ``indexOfMethod``)."""

LOOKUP = """namespace core {
struct Meta { int index_of(const char*) const; void add(const char*); };
extern Meta meta_object;
}  // namespace core
namespace { INITIALIZED }
"""


@pytest.mark.parametrize("strip", [False, True], ids=["unstripped", "stripped"])
def test_the_same_lookup_in_two_libraries_is_no_registration(tmp_path: Path, strip: bool) -> None:
    """libQt6WebChannel and libQt6WebChannelQuick: one initializer in both looks a signal up
    through a const member function of libQt6Core; both load (BT103 before). The same
    initializer calling the object's registration instead aborts, and is BT103."""
    lookup = 'int destroyed = core::meta_object.index_of("destroyed(QObject*)");'
    run = _hidden_pair(tmp_path / "lookup", LOOKUP.replace("INITIALIZED", lookup), strip,
                       META_OBJECT)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert not check(tmp_path / "lookup").failed
    added = 'bool added = (core::meta_object.add("destroyed(QObject*)"), true);'
    run = _hidden_pair(tmp_path / "add", LOOKUP.replace("INITIALIZED", added), strip, META_OBJECT)
    assert run.returncode == -6, run  # SIGABRT
    assert "duplicate destroyed(QObject*)" in run.stderr
    assert ("BT103", "libtwo.so") in ids(check(tmp_path / "add"))
