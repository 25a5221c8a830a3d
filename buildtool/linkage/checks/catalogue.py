"""The catalogue of checks (rules as data) and the findings they produce."""

from __future__ import annotations

import dataclasses
from typing import Literal

Severity = Literal["error", "warning", "info"]


@dataclasses.dataclass(frozen=True)
class Check:
    """One check: a stable id and name, what it catches, and how to fix it."""

    id: str
    name: str
    severity: Severity
    summary: str
    hint: str
    needs_recipe: bool = False
    hardening: bool = False
    """Runs only when the recipe turns hardening on (``[verify] hardening = true``)."""
    needs_baseline: bool = False
    """Runs only against an earlier report (``verify-linkage --baseline previous.json``)."""
    per_cause: bool = False
    """Its findings name their cause apart from the file (a library missing, whoever needs
    it): the files one cause hits are one finding (``Finding.also``)."""


CHECKS: tuple[Check, ...] = (
    Check(
        "BT100",
        "malformed-elf",
        "error",
        "A file starting with the ELF, Mach-O or PE magic (or named like a shared library) is "
        "truncated or corrupt.",
        "Rebuild or re-download the file; the offset names the broken structure.",
    ),
    Check(
        "BT101",
        "required-needed-missing",
        "error",
        "A library or executable lacks a DT_NEEDED entry the recipe requires (its links, "
        "its no-as-needed libraries): the registrations it relies on never run.",
        "Link it with -Wl,--push-state,--no-as-needed <lib> -Wl,--pop-state "
        "(recipe: no-as-needed), or reference a symbol of the library.",
        needs_recipe=True,
    ),
    Check(
        "BT102",
        "forbidden-needed",
        "error",
        "A DT_NEEDED entry the policy forbids: a required library needing an optional one "
        "(runtime -> compiler), a recipe pattern (libLLVM* in the runtime), or a project "
        "library outside an executable's allow-list.",
        "Move the code that needs it into the optional library, or drop the link.",
        needs_recipe=True,
    ),
    Check(
        "BT103",
        "duplicate-object-code",
        "error",
        "The same object code is linked into two shared objects that one process loads and the "
        "copies can collide: its static initializers run twice against shared state (duplicate "
        "registration abort), or its exported definitions interpose. Unstripped, code whose "
        "functions have internal linkage only, or are mostly exported by both, collides; code "
        "whose external-linkage functions are bound inside each library is BT124. Stripped, "
        "exports in common count when an initializer of both reaches one registry; without "
        "that they are BT124. Two builds of one library (at least half of the functions the "
        "two export are the same names: a program linking two of ggml's CPU variants) "
        "interpose, stripped or not: each library's calls to its own exports run the copy "
        "loaded first. The linker's own symbols (_end, even versioned by a catch-all "
        "script) and the toolchain runtime's (devtoolset's libstdc++_nonshared) are no "
        "evidence, and neither is a registry that takes the same entry twice: Qt's "
        "qRegisterResourceData lists one resource collection linked into two libraries twice "
        "(PySide6's libQt6Designer and libQt6DesignerComponents), and both load; TSL's "
        "RegisterProfilerFactory lists a profiler factory twice (tensorflow-cpu's "
        "lib_pywrap_tensorflow_common.so and libtensorflow_cc.so.2).",
        "Link the object library into one library only; the others get it through a PUBLIC link.",
    ),
    Check(
        "BT104",
        "duplicate-registration",
        "error",
        "A declared registration name is present in more than one library that one process loads.",
        "Register the name in exactly one library (the one the recipe names).",
        needs_recipe=True,
    ),
    Check(
        "BT105",
        "registration-missing",
        "warning",
        "A declared registration name is not in the library the recipe says holds it: no such "
        "string, and none of its sources' static initializers in its .symtab.",
        "Compile the registering source into that library, or correct the recipe.",
        needs_recipe=True,
    ),
    Check(
        "BT106",
        "undefined-symbol",
        "error",
        "An undefined symbol that nothing in the file's NEEDED closure defines (for a Python "
        "extension module: nor what the interpreter has loaded, libm and libc; nor a library "
        "of a required distribution, BT114, with what it loads), or a version "
        "need the loaded file does not define (a file that defines no versions satisfies it "
        "only when it has a version table; without one ld.so aborts): loading it fails, or a "
        "lazy call aborts later.",
        "Link the library that defines it, or ship the right version of it.",
    ),
    Check(
        "BT107",
        "needed-not-found",
        "error",
        "A DT_NEEDED entry that the dynamic loader would not find from where the file lies.",
        "Ship the library next to it and set RUNPATH to $ORIGIN (or $ORIGIN/../lib).",
    ),
    Check(
        "BT108",
        "system-needed-not-found",
        "warning",
        "A DT_NEEDED entry that no input ships and that is absent here, but that the machine "
        "the binary runs on provides: a library of the wheel tag's platform (its manylinux or "
        "musllinux policy's list, e.g. libGL.so.1; this machine's kind for an input without a "
        "tag), a GPU driver's library (libcuda.so.1, libnvidia-ml.so.1, libOpenCL.so.1, "
        "libvulkan.so.1, libEGL.so.1, libGLX.so.0), or one the recipe lists in [verify] "
        "host-provided.",
        "Nothing to do where the binary runs with that platform or driver; to check it here, "
        "install the library.",
        per_cause=True,
    ),
    Check(
        "BT109",
        "needed-not-shipped",
        "error",
        "A DT_NEEDED entry found nowhere: no input ships it, its platform does not provide it, "
        "and it is no driver library or host-provided library. A manylinux or musllinux wheel "
        "is judged by its tag on every host: a library outside the tag's policy is this error "
        "even where the checking machine has it (lightgbm's libgomp.so.1: it loads there, and "
        "fails on a compliant system without it, such as a slim container); the evidence says "
        "where this machine has it. An input without a policy tag (a build tree, a linux_* "
        "wheel) is judged by the machine it was built for. Loading the file fails where the "
        "library is absent (a bundled library deleted from the wheel, a library the build "
        "linked but nothing ships).",
        "Bundle the library (auditwheel repair grafts it into <pkg>.libs/), ship the "
        "distribution that has it and require it, or, if the target machines provide it, list "
        "it in [verify] host-provided.",
        per_cause=True,
    ),
    Check(
        "BT110",
        "runpath-not-origin",
        "error",
        "A RUNPATH/RPATH entry the binary depends on that is not $ORIGIN-relative: an absolute "
        "or build-tree folder that resolves a NEEDED entry (or would, on a machine that has the "
        "folder), an entry relative to the current directory ('', '.', 'lib') or in a "
        "world-writable folder. With a recipe, any non-$ORIGIN entry of the project's own "
        "libraries and executables. In a CMake build tree, a file that cmake --install installs "
        "is judged by the RPATH its cmake_install.cmake writes, not by CMake's build RPATH "
        "(absolute, with an empty entry), which the install replaces.",
        "Use $ORIGIN-relative entries only (CMake: BUILD_WITH_INSTALL_RPATH, INSTALL_RPATH "
        "$ORIGIN).",
    ),
    Check(
        "BT111",
        "rpath-not-runpath",
        "warning",
        "DT_RPATH instead of DT_RUNPATH: it overrides LD_LIBRARY_PATH and leaks to every "
        "library loaded below it.",
        "Link with -Wl,--enable-new-dtags.",
    ),
    Check(
        "BT112",
        "runpath-missing",
        "error",
        "The file needs a project library that lies beside it (or in ../lib) but has no "
        "RUNPATH to find it.",
        "Set RUNPATH to $ORIGIN for libraries and $ORIGIN/../lib for executables in bin/.",
    ),
    Check(
        "BT113",
        "unused-absolute-search-entry",
        "warning",
        "An absolute RUNPATH/RPATH entry from which no NEEDED entry resolves (a folder of the "
        "build machine, or one this machine lacks): ld.so tries it and moves on, but a machine "
        "that has the folder would load whatever lies there first.",
        "Drop the entry (patchelf --set-rpath, or CMake INSTALL_RPATH without it).",
    ),
    Check(
        "BT114",
        "needed-from-another-distribution",
        "warning",
        "A DT_NEEDED entry found only in another input wheel, which this wheel's Requires-Dist "
        "names: ld.so finds it only when that distribution's library is already loaded (its "
        "Python package imported first), as it matches NEEDED names against loaded SONAMEs.",
        "Import the other package before loading this library (or point RUNPATH at its folder, "
        "e.g. $ORIGIN/../../<other>/lib).",
        per_cause=True,
    ),
    Check(
        "BT115",
        "registration-not-found-as-string",
        "info",
        "A declared registration name is not a string constant in its library, but the code "
        "that would register it may be there (its sources' static initializers are, or the file "
        "is stripped): compilers store short names in instructions, so absence is not proven.",
        "Nothing to do if the name registers at run time; a longer name is stored as a string.",
        needs_recipe=True,
    ),
    Check(
        "BT116",
        "needed-from-unchecked-requirement",
        "warning",
        "A DT_NEEDED entry that no input ships, while the file's distribution requires "
        "distributions that are not among the inputs: one of them may ship it (apache-tvm's "
        "libtvm_ffi.so, from apache-tvm-ffi). With them among the inputs, the verdict is BT114 "
        "or BT109.",
        "Check the wheel together with the wheels it requires.",
        per_cause=True,
    ),
    Check(
        "BT117",
        "underlinked-library",
        "warning",
        "An ELF library uses symbols that only a library loading it defines, one outside its own "
        "NEEDED closure (the compiler using runtime_version while only the runtime NEEDs the "
        "compiler): it loads as that library's dependency, but opening it on its own (dlopen, "
        'ctypes, a program linking it) fails with "undefined symbol". Symbols of the '
        "executable, of the Python interpreter (libpython, the Py* C API), of libc and ld.so, "
        "and weak references are not counted.",
        "Link the library that defines them (a DT_NEEDED entry), or move the code that uses "
        "them into that library.",
    ),
    Check(
        "BT118",
        "optional-module-unloadable",
        "warning",
        "A Python extension module needs a library found nowhere (as for BT109), but its "
        "package imports it only inside try/except ImportError (a handler for ImportError, "
        "Exception or BaseException that raises nothing; or contextlib.suppress of one), "
        "outside its tests: the import fails there and the package goes on without the module "
        "(numba's OpenMP and TBB threading layers without libgomp or libtbb: `import numba` "
        "works, on its workqueue layer). What the module provides is missing where the "
        "library is absent. An import site outside such a handler, a Python file that names "
        "the module and cannot be read, or no import found at all keeps it BT109.",
        "Nothing to do if the feature is optional by design; to have it everywhere, bundle the "
        "library or require the distribution that ships it.",
        per_cause=True,
    ),
    Check(
        "BT119",
        "needed-is-path",
        "error",
        "A DT_NEEDED entry that is a path, not a name (it holds a '/' and does not start at "
        "$ORIGIN): ld.so opens exactly that path and never searches for it. Absolute, it loads "
        "only where that file exists (a build folder: on the machine that built it); relative, "
        "only when the process runs in a folder it resolves from. The link writes a path when "
        "it is given a library without SONAME by its path (gcc main.o lib/libfoo.so, or a CMake "
        "imported library without SONAME), whatever RUNPATH says.",
        "Give the library a SONAME (-Wl,-soname,libfoo.so) and link again, or link it by name "
        "(-L<dir> -lfoo; CMake: IMPORTED_NO_SONAME on the imported target).",
    ),
    Check(
        "BT120",
        "libraries-not-together",
        "error",
        "The project's libraries are not all in one lib/ folder (the loader looks in one). In "
        "a CMake build tree, a file counts in the folder cmake --install puts it in.",
        "Install every project library to <package>/lib/ (build trees: <build>/lib/).",
    ),
    Check(
        "BT121",
        "removed-library-present",
        "error",
        "A legacy library the recipe lists as removed is still there (a stale monolith).",
        "Delete it from the build or wheel; nothing may load it any more.",
        needs_recipe=True,
    ),
    Check(
        "BT122",
        "duplicate-library-copy",
        "error",
        "A second copy of a library (the same SONAME in two files) whose initializers build "
        "state (they call imported functions: a registry, C++ objects allocated and "
        "registered), e.g. grafted by auditwheel repair into <pkg>.libs/: loading both runs "
        "the registrations twice or splits them between two registries. Copies whose "
        "initializers call nothing imported, or that have none, are BT124.",
        "Repair with --exclude for the project's own libraries and give them RUNPATH $ORIGIN.",
    ),
    Check(
        "BT124",
        "private-static-copy",
        "warning",
        "Two libraries one process loads each hold a private copy of the same object code: a "
        "statically linked library whose functions each library binds to its own copy (hidden, "
        "localized by a version script, or any Mach-O file's, which calls its own functions "
        "directly) and whose static initializers reach no function of a shared registry "
        "library in common (each registers into its own copy of its registry, like pyarrow's "
        "protobuf copies; a lock they both take is no registry); code that two libraries "
        "export both (stripped, so each binds to the copy loaded first) with no initializer "
        "reaching a registry (tables' two LZ4 builds), or unstripped with static initializers "
        "that only set up the standard streams or take locks, on objects of their own "
        "(tensorflow's _pywrap_parallel_device.so); or a second copy of a library (one SONAME) "
        "that runs no initializers. Both work; the copy costs space. Initializers of both "
        "copies reaching one registry, or constructing an object both export, are BT103.",
        "Link the shared code into one library that both need, if the space matters.",
    ),
    Check(
        "BT125",
        "stale-monolith",
        "error",
        "A library that nothing in the inputs loads holds the static initializers of several "
        "libraries beside it: the monolith the split replaced, still shipped (loaded by an old "
        "path, it registers everything a second time).",
        "Delete it from the build or wheel (with a recipe, list it in verify.removed).",
    ),
    Check(
        "BT126",
        "recipe-library-missing",
        "warning",
        "A library the recipe requires (not optional) matches no file of the inputs, by its file "
        "name, its SONAME or a versioned file (libggml.so, libggml.so.0, libggml.so.0.21.0 are "
        "one library): none of the recipe's rules for it was checked. Not judged when wheels "
        "are checked (each wheel of a split holds part of the libraries).",
        "Give the input that holds it (the build tree's lib/, every wheel of the split), or "
        "correct the recipe's file name.",
        needs_recipe=True,
    ),
    Check(
        "BT127",
        "duplicate-binding-type",
        "error",
        "Two Python extension modules of one package register the same C++ type with one "
        "binding registry when they are imported (pybind11's, shared by every module built "
        "with the same internals key): the interpreter imports both, and the second import "
        "fails ('generic_type: type \"X\" is already registered!'). Recognised on x86-64 by "
        "the type record each module's init code fills: the type's std::type_info, and the "
        "record's flags byte without pybind11 2.x's module_local bit (bit 4).",
        "Bind the type in one module and import that module from the others, or bind it with "
        "py::module_local() in each.",
    ),
    Check(
        "BT128",
        "plugin-unopenable",
        "error",
        "A plugin the recipe declares ([plugins]) that its host cannot open: it lies outside "
        "the folder its host opens plugins from (the host's plugin-folder; in a CMake build "
        "tree, where cmake --install puts the two files), or it is built for another machine "
        "or ELF class than its host. A library it needs that neither its host's closure "
        "(loaded before the host opens it: ld.so matches NEEDED names against loaded objects "
        "first) nor its own RUNPATH finds is BT107, BT109 or BT112 on the plugin, as for any "
        "file; its undefined symbols bind against its own closure and, when the host is in "
        "the global scope (the recipe's loader opens it RTLD_GLOBAL, or a program links it), "
        "the host's closure (BT106).",
        "Install the plugin into its host's plugin folder (or correct plugin-folder), built "
        "with the host's toolchain.",
        needs_recipe=True,
    ),
    Check(
        "BT130",
        "size-budget-exceeded",
        "error",
        "A library is larger than the budget the recipe sets for it.",
        "Move heavy code to the optional library, or raise the budget knowingly.",
        needs_recipe=True,
    ),
    Check(
        "BT131",
        "size-growth-exceeded",
        "error",
        "A library grew, against the baseline report (--baseline), by more percent of its file "
        "size than the recipe allows ([verify] max-growth-percent).",
        "Find what the change added to the library (its new sources, inlined templates, static "
        "data); move it to the optional library, or raise the allowance knowingly.",
        needs_recipe=True,
        needs_baseline=True,
    ),
    Check(
        "BT140",
        "relro-not-full",
        "error",
        "Hardening ([verify] hardening = true): no full RELRO. Without PT_GNU_RELRO, or with it "
        "but lazy binding (no BIND_NOW), the GOT stays writable: a memory bug can redirect calls.",
        "Link with -Wl,-z,relro,-z,now (buildtool's CMake helpers do on Linux).",
        needs_recipe=True,
        hardening=True,
    ),
    Check(
        "BT141",
        "executable-stack",
        "error",
        "Hardening: the stack is executable (PT_GNU_STACK missing or with PF_X), so code "
        "written to it can run.",
        "Link with -Wl,-z,noexecstack, and give hand-written assembly a .note.GNU-stack section.",
        needs_recipe=True,
        hardening=True,
    ),
    Check(
        "BT142",
        "rpath-present",
        "error",
        "Hardening: DT_RPATH is present. It overrides LD_LIBRARY_PATH and is inherited by every "
        "library loaded below, so it reaches further than the file that sets it.",
        "Link with -Wl,--enable-new-dtags so the linker writes DT_RUNPATH instead.",
        needs_recipe=True,
        hardening=True,
    ),
    Check(
        "BT143",
        "unsafe-search-path",
        "error",
        "Hardening: a RUNPATH/RPATH entry relative to the current directory ('', '.', 'lib') or "
        "in a world-writable folder (/tmp, /var/tmp, /dev/shm): whoever writes there chooses "
        "what is loaded.",
        "Use $ORIGIN-relative entries (or system folders only root can write to).",
        needs_recipe=True,
        hardening=True,
    ),
    Check(
        "BT144",
        "text-relocations",
        "error",
        "Hardening: text relocations (DT_TEXTREL): the loader writes into the code, which must "
        "then be writable, and every process gets a private copy of it.",
        "Compile every object with -fPIC (CMake: POSITION_INDEPENDENT_CODE ON); fix hand-written "
        "assembly that uses absolute addresses.",
        needs_recipe=True,
        hardening=True,
    ),
    Check(
        "BT145",
        "not-pie",
        "error",
        "Hardening: an executable that is not position independent (ET_EXEC) loads at a fixed "
        "address, so address-space layout randomization cannot move it.",
        "Compile with -fPIE and link with -pie (CMake: POSITION_INDEPENDENT_CODE ON, "
        "check_pie_supported(), policy CMP0083 NEW).",
        needs_recipe=True,
        hardening=True,
    ),
    Check(
        "BT150",
        "symbol-version-beyond-tag",
        "error",
        "A wheel's binary needs a symbol version (GLIBC_2.34, GLIBCXX_3.4.30, CXXABI_1.3.13, "
        "...) from a library of its platform that the wheel tag's policy does not allow "
        "(manylinux_2_17: GLIBC up to 2.17): pip installs it on systems where ld.so refuses to "
        'load it ("version `GLIBC_2.34\' not found"). A need the link marked weak (VER_FLG_WEAK) '
        "that only weak references use is not one: ld.so loads the file without it.",
        "Build in the tag's manylinux/musllinux image (or with an older toolchain), or tag the "
        "wheel for the newer platform (auditwheel repair --plat picks the right one).",
    ),
    Check(
        "BT151",
        "macos-deployment-target-above-tag",
        "error",
        "A Mach-O file needs a newer macOS (its LC_BUILD_VERSION / LC_VERSION_MIN_MACOSX minos) "
        "than the wheel's macosx_X_Y tag promises: pip installs the wheel on releases where dyld "
        "refuses to load the file. An arm64 file (a fat file's facts are its arm64 slice's) is "
        "promised macOS 11.0 at least: no arm64 Mac runs an older one, so a "
        "macosx_10_9_universal2 wheel's arm64 slice may need 11.0 (lxml's, pyzmq's).",
        "Build with MACOSX_DEPLOYMENT_TARGET (CMAKE_OSX_DEPLOYMENT_TARGET) at most the tag's "
        "release, or tag the wheel with the newest minos of its files (delocate-wheel does).",
    ),
    Check(
        "BT152",
        "architecture-not-tagged",
        "error",
        "A binary Python loads from a wheel (an extension module, or a library one loads) lacks "
        "an architecture one of the wheel's platform tags names: an x86_64-only file in a "
        "macosx arm64 or universal2 wheel, an aarch64 module in an x86_64 wheel, a 32-bit DLL in "
        "a win_amd64 wheel. pip installs the wheel there and the import fails (dyld: "
        '"incompatible architecture").',
        "Build for the tag's architectures (macOS: CMAKE_OSX_ARCHITECTURES, which "
        "scikit-build-core sets from ARCHFLAGS; universal2: both slices, or lipo -create), or "
        "tag the wheel for what its files are built for.",
    ),
    Check(
        "BT153",
        "python-symbol-not-exported",
        "error",
        "A Python extension module (or a library one loads from its wheel) needs a C-API name "
        "(Py*, _Py*) that the CPython it is built for does not export: the release its file "
        "name (.cpython-311-...) or its wheel's tag (cp311) names, or, for abi3, a release from "
        "the tag's (cp39-abi3: 3.9) on. pip installs it there and the import fails with "
        '"undefined symbol". Judged against the export lists of CPython 3.6 to 3.13 '
        "(loaders/cpython_exports.py) and the stable ABI (abi3info's data), never against the "
        "interpreter that runs the check; a release without a list, a free-threaded or debug "
        "build is not judged.",
        "Build the module with the CPython its name and tag say (a cibuildwheel build per "
        "release), or, for abi3, define Py_LIMITED_API to the tag's release.",
    ),
    Check(
        "BT154",
        "python-symbol-outside-stable-abi",
        "warning",
        "An abi3 extension module needs a C-API name outside the stable ABI: every CPython "
        "release with an export list has it, so it imports today, but no later release promises "
        "to keep it.",
        "Compile with Py_LIMITED_API set to the tag's release, which hides what the stable ABI "
        "does not hold, or tag the wheel for one CPython release.",
    ),
)

CMAKE_CHECKS: tuple[Check, ...] = (
    Check(
        "BT201",
        "cmake-object-library-twice",
        "error",
        "check-cmake: the object files of one OBJECT library are linked into two targets that "
        "one process loads (linked to each other, linked by one target, or both loaded by the "
        "recipe's loader): their static initializers run twice (duplicate registration abort).",
        "Link the object library into one library only (the recipe's owner); the others get "
        "its code through a PUBLIC link to that library.",
    ),
    Check(
        "BT202",
        "cmake-source-compiled-twice",
        "warning",
        "check-cmake: one source file is compiled into two targets that one process loads: a "
        "static initializer in it runs twice, and its symbols exist twice.",
        "Compile it into one library and link that library from the other.",
    ),
    Check(
        "BT211",
        "cmake-duplicate-code",
        "error",
        "check-cmake: sources compiled into two targets one of which links the other (a trainer "
        "library that compiles the runtime's sources and links the runtime): the same code and "
        "static initializers exist twice in one link chain, so registrations run twice and "
        "which copy of a symbol wins depends on the load order.",
        "Compile the sources into one library only and link it from the other.",
    ),
    Check(
        "BT212",
        "cmake-static-library-twice",
        "error",
        "check-cmake: two shared libraries that one process loads both link the same static "
        "library (built here or imported, like LLVM's archives) and export its symbols: each "
        "holds a copy, and the library loaded second binds its calls into that code to the "
        "first one's copy, so its registrations go to the first copy's registry and collide "
        "(LLVM: 'CommandLine Error: Option ... registered more than once!'). Hidden "
        "visibility where the archive is built, or a link that keeps its symbols private "
        "(-Wl,--exclude-libs,ALL; -Bsymbolic and a version script are taken as doing so), "
        "makes each copy private; a library that links the other one before the archive "
        "takes no copy.",
        "Link the static library into one shared library that the other links, or keep it "
        "private in each: -Wl,--exclude-libs,ALL (imported archives) or "
        "CXX_VISIBILITY_PRESET hidden (archives built here).",
    ),
    Check(
        "BT203",
        "cmake-forbidden-link",
        "error",
        "check-cmake: a link the policy forbids: a required library linking an optional one "
        "(runtime -> compiler), or a library matching a recipe pattern (libLLVM* in the runtime).",
        "Move the code that needs it into the optional library, or drop the link.",
        needs_recipe=True,
    ),
    Check(
        "BT204",
        "cmake-as-needed-drops-link",
        "error",
        "check-cmake: an executable links a library the recipe says it must keep in DT_NEEDED "
        "(no-as-needed: it needs only its registrations) without --no-as-needed, and the "
        "toolchain links with --as-needed: the linker drops it.",
        "Link it as -Wl,--push-state,--no-as-needed <lib> -Wl,--pop-state (CMake: "
        "$<LINK_LIBRARY:...> with a no-as-needed feature).",
        needs_recipe=True,
    ),
    Check(
        "BT205",
        "cmake-object-owner-differs",
        "error",
        "check-cmake: an object library of the recipe is linked into a target other than the one "
        "library the recipe names as its owner.",
        "Link its objects into the owner only, or correct the recipe's objects list.",
        needs_recipe=True,
    ),
    Check(
        "BT206",
        "cmake-libraries-not-together",
        "error",
        "check-cmake: the shared libraries are not all built into one folder (the loader and "
        "RUNPATH $ORIGIN look in one).",
        "Set CMAKE_LIBRARY_OUTPUT_DIRECTORY (or LIBRARY_OUTPUT_DIRECTORY) to one folder.",
    ),
    Check(
        "BT207",
        "cmake-runpath-not-origin",
        "error",
        "check-cmake: a library or executable of the split is linked with a RUNPATH entry that is "
        "not $ORIGIN-relative (CMake's default build RPATH is the absolute build folder), or with "
        "none although it links a library of the split.",
        "Set BUILD_WITH_INSTALL_RPATH ON and INSTALL_RPATH $ORIGIN (executables in bin/: "
        "$ORIGIN/../lib).",
        needs_recipe=True,
    ),
    Check(
        "BT208",
        "cmake-removed-target",
        "error",
        "check-cmake: a target still builds a legacy file the recipe lists as removed.",
        "Delete the target (or stop building it by default).",
        needs_recipe=True,
    ),
    Check(
        "BT209",
        "cmake-required-link-missing",
        "error",
        "check-cmake: a library or executable does not link a library the recipe says it links.",
        "Add it to target_link_libraries, or correct the recipe.",
        needs_recipe=True,
    ),
    Check(
        "BT210",
        "cmake-target-missing",
        "warning",
        "check-cmake: no target of the build tree builds a library or executable the recipe "
        "names (it is off in this configuration, or renamed).",
        "Turn its option on, or correct the recipe's file name.",
        needs_recipe=True,
    ),
)
"""check-cmake's checks: the same mistakes, read from CMake's code model before anything is
built (``buildtool/cmakecheck/rules.py``)."""

CHECKS_BY_ID = {check.id: check for check in (*CHECKS, *CMAKE_CHECKS)}


@dataclasses.dataclass(frozen=True)
class Finding:
    """One problem in one file, with the facts that show it."""

    check_id: str
    path: str
    message: str
    evidence: str = ""
    needed: str = ""
    """The DT_NEEDED entry the finding is about, when it is about one (a missing, forbidden or
    unresolved dependency): the report's link graph marks that edge."""
    also: tuple[str, ...] = ()
    """The other files its cause hits, in report order (a check with ``Check.per_cause``: one
    library missing for 17 files is one finding about ``path`` and these 16)."""

    @property
    def paths(self) -> tuple[str, ...]:
        """Every file the finding is about: ``path``, then ``also``."""
        return (self.path, *self.also)

    @property
    def check(self) -> Check:
        return CHECKS_BY_ID[self.check_id]

    @property
    def severity(self) -> Severity:
        return self.check.severity


PLATFORM_DECISION = """## Which machine a verdict is about

A verdict does not depend on the machine that checks. Each input is judged for the platform it
targets:

- **A manylinux or musllinux wheel** (its platform tag names a policy): what the tag provides is
  its policy's list of libraries (auditwheel's policy data: libc, libm, libstdc++, libgcc_s,
  libGL, libX11, ...), the symbol versions the policy allows (BT150) and what the interpreter
  has loaded (libm and libc); nothing the checking machine has beyond that counts. A library the
  wheel needs, does not bundle and its policy does not provide is BT109 on every host, with the
  evidence saying where this machine has it when it does (lightgbm's libgomp.so.1: it loads on
  a CI runner with gcc installed and fails in a slim container). Another architecture's or
  libc's wheel (an aarch64 or musl wheel checked on x86_64 glibc) is judged the same way.
- **What a host may add**: GPU drivers' libraries (libcuda.so.1, libnvidia-ml.so.1,
  libOpenCL.so.1, libvulkan.so.1, libEGL.so.1, libGLX.so.0) and whatever the recipe lists in
  `[verify] host-provided`: not found, they are BT108 warnings, never errors. Nothing else.
- **An extension module's interpreter**: the CPython its file name or wheel tag names (BT153,
  BT154), never the interpreter that runs the check.
- **An input without a policy tag** (a build tree, a folder, a `linux_*` wheel, which promises
  nothing beyond the machine it was built on): the machine its ELF files were built for, with
  that machine's ld.so.cache and default folders when it is this machine's kind; a
  cross-built tree gets its platform's policy libraries only.
- **macOS and Windows wheels**: dyld's and the Windows loader's rules (the system libraries and
  DLLs those platforms have), whatever this machine is.

"""


def render_checks_doc() -> str:
    """docs/checks.md: the reference of every check, generated from ``CHECKS``."""
    lines = [
        "# verify-linkage checks",
        "",
        "Generated from `buildtool/linkage/checks/catalogue.py`; a test fails when this file is",
        "stale.",
        "Checks marked *recipe* run only with a recipe (its linkage policy); those marked",
        "*hardening* only when the recipe says `[verify] hardening = true`; those marked",
        "*baseline* only with `--baseline` (the JSON report of an earlier run). A check marked",
        "*per cause* reports one finding per cause, listing the files it hits (one library",
        "missing for 17 files is one finding; the JSON report's `files` lists them).",
        "",
        *PLATFORM_DECISION.splitlines(),
    ]
    for check in (*CHECKS, *CMAKE_CHECKS):
        if check is CMAKE_CHECKS[0]:
            lines += [
                "# check-cmake checks",
                "",
                "`buildtool check-cmake BUILD_DIR` reads CMake's code model right after configure.",
                "",
            ]
        recipe = " · *recipe*" if check.needs_recipe else ""
        recipe += " · *hardening*" if check.hardening else ""
        recipe += " · *baseline*" if check.needs_baseline else ""
        recipe += " · *per cause*" if check.per_cause else ""
        lines += [
            f"## {check.id} `{check.name}` ({check.severity}{recipe})",
            "",
            check.summary,
            "",
            f"**Fix:** {check.hint}",
            "",
        ]
    return "\n".join(lines)


def finding_order(finding: Finding) -> tuple[str, str, str]:
    """How every report lists findings: catalogue order, then by path and message."""
    return (finding.check_id, finding.path, finding.message)
