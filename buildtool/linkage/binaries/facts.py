"""Format-neutral facts about one binary, and the toolchain's names that are no project's code.
No decoding here: each format's reader (``elf/``, ``macho/``, ``pe/``) produces ``BinaryFacts``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import repeat
from typing import Final, Literal

from buildtool.errors import InputError

Decoder = Literal["fast", "pyelftools"]
"""Which reader decodes the files: ``fast`` (the struct decoder, the default) or ``pyelftools``
(slower, independent of it: a cross-check)."""
DECODERS: Final[tuple[Decoder, ...]] = ("fast", "pyelftools")


LINKER_GENERATED: Final = frozenset(
    {
        "_end",
        "_edata",
        "__bss_start",
        "_init",
        "_fini",
        "__end__",
        "_etext",
        "etext",
        "edata",
        "end",
        "_DYNAMIC",
        "_GLOBAL_OFFSET_TABLE_",
        "__bss_start__",
        "__bss_end__",
        "_bss_end__",
    }
)
"""Symbols the linker (or crti/crtn) puts in every object (the ``__bss_*__`` ones on aarch64):
never evidence of duplicated code."""

TOOLCHAIN_FUNCTIONS: Final = frozenset(
    {
        "_ZSt21ios_base_library_initv",
        "_ZSt28__throw_bad_array_new_lengthv",
        "__cxa_call_terminate",
    }
)
"""libstdc++ helpers that a devtoolset (manylinux) compiler links statically into every C++
library it builds, newer than the system's libstdc++: no project's code."""

TOOLCHAIN_PREFIXES: Final = ("_ZGTt",)
"""Name prefixes of such helpers: ``_ZGTt`` are the transactional-memory clones of libstdc++'s
exception constructors."""


TOOLCHAIN_INITIALIZERS: Final = re.compile(r"_GLOBAL__sub_I_(?:\w+48|eh_\w+)\.cc")
"""Static initializers of libstdc++'s and libsupc++'s own sources that a devtoolset compiler
links into every C++ library from ``libstdc++_nonshared``: ``system_error48.cc`` (its GCC 4.8
compatibility units), ``eh_terminate.cc``. Two libraries holding them share the toolchain's
runtime, not a project's code (vtk's libvtkfmt and libviskores_filter_core)."""


_TOOLCHAIN_STARTS: Final = frozenset(
    name[:4] for name in (*TOOLCHAIN_FUNCTIONS, *TOOLCHAIN_PREFIXES, "_GLOBAL__sub_I_")
)
"""The first four characters of every name ``is_toolchain_function`` can accept: most names
(a library's tens of thousands of exports) are turned away by them alone."""


def is_toolchain_function(name: str) -> bool:
    """Whether ``name`` (a symbol key, a version suffix allowed) is a toolchain helper, or one
    of the toolchain runtime's static initializers."""
    if name[:4] not in _TOOLCHAIN_STARTS:
        return False
    bare = name.split("@", 1)[0]
    return (
        bare in TOOLCHAIN_FUNCTIONS
        or bare.startswith(TOOLCHAIN_PREFIXES)
        or TOOLCHAIN_INITIALIZERS.fullmatch(bare.removesuffix(".cold")) is not None
    )


MODULE_INIT_PREFIXES: Final = ("PyInit_", "_PyInit_")
"""How a Python extension module's init function is named, in any format (Mach-O names carry a
leading underscore)."""


EXTENSION_FILE_NAME: Final = re.compile(r"\.(cpython-[^./]+|abi3|pypy[^./]*)\.so\Z")
"""The file name of a CPython extension module: ``_C.cpython-312-x86_64-linux-gnu.so``,
``x.abi3.so``."""


LIBRARY_NAME: Final = re.compile(r"(\.so(\.[0-9]+)*|\.dylib|\.dll|\.pyd)\Z", re.IGNORECASE)
"""``libx.so``, ``libx.so.1.2``, ``mod.cpython-311-x86_64-linux-gnu.so``, ``libx.dylib``,
``x.dll``, ``mod.cp311-win_amd64.pyd``: what loaders open."""


def named_as_library(file_name: str) -> bool:
    """Whether ``file_name`` is named like a shared library or an extension module."""
    return LIBRARY_NAME.search(file_name) is not None


def named_as_extension_module(file_name: str) -> bool:
    """Whether ``file_name`` has an extension module's suffix (what the interpreter imports)."""
    return EXTENSION_FILE_NAME.search(file_name) is not None


def defines_module_init(facts: BinaryFacts) -> bool:
    """Whether the file defines a ``PyInit_<name>`` (a scan of libtorch_cpu.so's 116k names in
    C, not a Python loop)."""
    return any(map(str.startswith, facts.defined, repeat(MODULE_INIT_PREFIXES)))


CRT_FUNCTIONS: Final = frozenset(
    {
        "_init",
        "_fini",
        "_start",
        "deregister_tm_clones",
        "register_tm_clones",
        "__do_global_dtors_aux",
        "frame_dummy",
        "__libc_csu_init",
        "__libc_csu_fini",
        "_dl_relocate_static_pie",
        "__static_initialization_and_destruction_0",
        "_Z41__static_initialization_and_destruction_0v",
        "__tls_init",
        "__x86.get_pc_thunk.bx",
        "__x86.get_pc_thunk.ax",
        "__x86.get_pc_thunk.cx",
        "__x86.get_pc_thunk.dx",
    }
)
"""``.symtab`` functions that toolchain startup files or every C++ TU contribute."""

STATIC_INIT_PREFIX: Final = "_GLOBAL__sub_I_"


def name_digest(name: str) -> int:
    """The digest ``NameDigests`` keeps for a name: Python's 64-bit hash of its UTF-8 bytes.

    The hash is salted per interpreter (``PYTHONHASHSEED``), so digests agree only within one
    process and the workers it forks, which read every file of a run, and are never stored. It
    costs a third of a cryptographic digest, which counts at half a million names a file.
    """
    return hash(name.encode("utf-8"))


@dataclass(frozen=True, eq=False)
class NameDigests:
    """A set of names kept as 64-bit digests (``name_digest``): 8 bytes a name.

    libtorch_cpu.so defines 350k functions whose names take 58 MB; their digests take 3 MB and
    compare without one Python object per name. Two names share a digest with odds of 2**-64.
    The names themselves are read again from the file when a finding has to show them.

    The set is the digests in ``packed`` less those in ``excluded``: several processes read the
    parts of a big symbol table, and putting the parts together is then a concatenation.
    """

    packed: bytes
    """Digests in native byte order, 8 bytes each, in no particular order; one may repeat."""
    excluded: frozenset[int] = frozenset()
    """Digests that are not in the set even where ``packed`` holds them."""

    @property
    def stored(self) -> int:
        """How many digests ``packed`` holds: what comparing the set costs."""
        return len(self.packed) // 8

    def _values(self) -> memoryview:
        return memoryview(self.packed).cast("q")

    def _distinct(self) -> set[int]:
        return set(self._values()) - self.excluded

    def __len__(self) -> int:
        return len(self._distinct())

    def __iter__(self) -> Iterator[int]:
        return iter(self._distinct())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        digest = name_digest(name)
        return digest not in self.excluded and digest in self._values()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NameDigests):
            return NotImplemented
        return self._distinct() == other._distinct()

    def __hash__(self) -> int:
        return hash(frozenset(self._distinct()))

    def __repr__(self) -> str:
        return f"NameDigests(<{self.stored} digests>)"

    def common(self, other: NameDigests) -> frozenset[int]:
        """Digests of the names both sets hold."""
        small, large = (self, other) if self.stored <= other.stored else (other, self)
        both = set(small._values()).intersection(large._values())
        return frozenset(both - self.excluded - other.excluded)


NO_NAMES: Final = NameDigests(b"")


MIN_SHAPE_INSTRUCTIONS: Final = 8
"""Copies are matched by shape alone: a shorter initializer proves a common origin only by what
it registers (``InitializerReach.strings``, or the data it passes: ``passed``)."""


@dataclass(frozen=True)
class InitializerReach:
    """What one static initializer (an entry of the initializer array) can call."""

    shape: str
    """A digest of the instructions walked from it, addresses left out: two copies of one object
    file's initializer have the same shape in any library."""
    instructions: int
    """How many instructions the walk decoded (within its budget)."""
    reaches: frozenset[str]
    """Names of the functions it can call by symbol (directly or through the calls it makes):
    its imports, and its own exported functions called through a slot (an ELF PLT or GOT
    entry), which the loader binds to another library's copy when that one was loaded first."""
    guarded: bool = False
    """Every call it makes is behind a guard byte it then sets: the initialization of C++
    inline variables and template static members, which every library using them carries and
    runs once for its own copy (a type index got or allocated), not a registration."""
    strings: tuple[str, ...] = ()
    """The strings its own code addresses, directly or through the first pointers of a
    structure it addresses, in order (at most a few): what it registers (a gflags flag's name,
    a ``.proto`` file's). Part of ``shape`` too."""
    complete: bool = True
    """Whether ``reaches`` is what the whole walk finds. False when only the initializer's own
    code (and the PLT stubs it calls) was walked and it calls other code: the checks walk it
    again, deep, when its shape is one another file has."""
    content: str = ""
    """For an initializer that names nothing (no ``strings``): a digest of what its code hands
    on, which its own code's shape leaves out: the code of the library's functions it calls,
    and the read-only data it (or they) pass to another library's function (the start of each
    object, or the strings among them). Qt's resource initializers are one code in every
    library, each passing its own resource tables to ``qRegisterResourceData``; a copy hands
    on the same. "" when it hands on nothing, or when the walk was cut short: nothing told."""
    passed: int = 0
    """How many read-only data it passes out of the library (``content`` holds them): what it
    registers, which tells its copies as a string does, however short its own code."""
    address: int = 0
    """Where its code starts (the initializer array's entry): what ``BinaryFacts.
    static_initializer_addresses`` names."""
    shares_data: bool = False
    """Whether the code walked loads the address of something the library defines through a
    slot (a GOT entry): an object of the library's exports, which the loader binds to one copy
    in a process. Two libraries' initializers of one exported ``std::string`` construct it
    twice and free it twice at exit."""
    whole: bool = False
    """Whether the walk followed every call to its end: none left past ``MAX_DEPTH``, nor by
    a budget (``complete`` says only that a read's walk of its own code left none). Only then
    does ``reaches`` hold everything it can call."""
    callees: tuple[frozenset[str], ...] = ()
    """Where ``content`` is told: the symbol names of the library's functions it calls, in the
    walk's order (each function's aliases; none for one the file leaves unnamed); () when the
    file names none of them.
    One header's boilerplate calling the registrar of the library it is built into (VTK's
    ``AddRegistrar_vtkCommonMath``, called directly on Mach-O) is alike in code in every
    library, yet calls another function in each; a copy of one object file calls the same."""


@dataclass(frozen=True)
class TypeRecord:
    """A record of a C++ type that a Python binding library registers (pybind11's
    ``type_record``), as a module's init code fills it."""

    type_name: str
    """The type's name as its ``std::type_info`` keeps it (``5Point``, ``N3geo5PointE``)."""
    flags: int
    """The byte of flags stored into the record (pybind11 2.x: bit 3 the default holder,
    bit 4 ``py::module_local()``)."""


@dataclass(frozen=True)
class ModuleInit:
    """What a Python extension module's init function (``PyInit_<name>``) does when the
    interpreter imports it."""

    strings: tuple[str, ...]
    """The ``__name__``-like strings its code addresses, in order met (pybind11's registry key
    ``__pybind11_internals_v4_..._`` among them)."""
    records: tuple[TypeRecord, ...]
    """The type records it fills, in order met (x86-64)."""


@dataclass(frozen=True)
class BinaryFacts:
    """What verify-linkage knows about one binary, whatever its format: the loader's inputs
    (dependencies, search paths, exports and imports), initializers and sizes. The ELF reader
    fills every field today (symbol keys: ``binaries.elf``'s package doc)."""

    path: str
    """The display path given by the caller (a tree-relative path or a wheel member)."""
    elf_class: int
    """32 or 64."""
    little_endian: bool
    machine: str
    """``x86_64``, ``aarch64``, ... or ``unknown(<e_machine>)``."""
    file_type: str
    """shared, pie, executable, relocatable, core or other."""
    interpreter: str | None
    """``PT_INTERP`` (the program interpreter), None when absent."""
    soname: str | None
    needed: tuple[str, ...]
    """``DT_NEEDED`` entries in file order."""
    rpath: tuple[str, ...] | None
    """``DT_RPATH`` split on ``:`` (empty entries kept as ""); None when absent."""
    runpath: tuple[str, ...] | None
    """``DT_RUNPATH`` split on ``:`` (empty entries kept as ""); None when absent."""
    defined: frozenset[str]
    """Keys of defined, non-local dynamic symbols."""
    versioned_definitions: bool
    """Whether a key of ``defined`` carries a version (an ``@``): without one, resolving against
    this file needs no version matching."""
    undefined: frozenset[str]
    """Keys of undefined dynamic symbols that are not weak."""
    weak_undefined: frozenset[str]
    unique: frozenset[str]
    """Keys of ``STB_GNU_UNIQUE`` definitions (a subset of ``defined``)."""
    weak_defined: frozenset[str]
    """Keys of weak definitions (a subset of ``defined``): inline functions and template
    instantiations that every library using them may carry, so never evidence of duplication."""
    exported_count: int
    """Defined, non-local, default-visibility dynamic symbol entries."""
    version_definitions: tuple[str, ...]
    """Version nodes this file defines (``.gnu.version_d`` minus the base entry), in order."""
    version_needs: tuple[tuple[str, tuple[str, ...]], ...]
    """``(file, versions)`` this file requires (``.gnu.version_r``), in order."""
    init_array_size: int
    """Bytes of ``DT_INIT_ARRAYSZ`` (or of ``SHT_INIT_ARRAY`` sections without dynamic info)."""
    has_symtab: bool
    """True when a ``.symtab`` is present (the file is not stripped)."""
    static_initializers: tuple[str, ...]
    """``.symtab`` names starting ``_GLOBAL__sub_I_`` (one per C++ TU with static init), sorted."""
    symtab_functions: NameDigests = field(hash=False)
    """The code this file defines, by name: ``.symtab`` defined FUNC/IFUNC names of default
    visibility, less the weak ones (COMDAT code: inline functions, template instances; hidden
    ones the linker made local are left out too), GCC's ``.cold`` split parts, toolchain startup
    code (``CRT_FUNCTIONS``) and static initializers; empty when stripped."""
    registration_strings: frozenset[str]
    """Which of the requested names occur NUL-terminated in allocated non-code data."""
    file_size: int
    code_size: int
    """Sum of ``SHF_EXECINSTR`` section sizes (executable ``PT_LOAD`` bytes without sections)."""
    sections: tuple[tuple[str, int], ...]
    """``(name, size)`` of every section but the null one, in header order."""
    bind_now: bool
    """``DT_BIND_NOW``, ``DF_BIND_NOW`` or ``DF_1_NOW``."""
    relro: bool
    """A ``PT_GNU_RELRO`` segment is present."""
    exec_stack: bool
    """``PT_GNU_STACK`` is missing or executable."""
    textrel: bool
    """``DT_TEXTREL`` or ``DF_TEXTREL``."""
    nodeflib: bool
    """``DF_1_NODEFLIB``: ld.so skips its cache and default directories for this object's needs."""
    symbolic: bool = False
    """``DT_SYMBOLIC`` or ``DF_SYMBOLIC`` (``-Bsymbolic``): the loader binds the library's own
    references to its own definitions before any other object's, so no other library's copy of
    an exported function interposes on its callers."""
    format: str = "elf"
    """The file format: ``elf``, ``macho`` or ``pe`` (reports name them by ``FORMAT_NAMES``)."""
    platform: str = ""
    """Set on facts that stand for a library the target platform provides but no input holds
    (a manylinux policy's ``libc.so.6`` for an aarch64 wheel): that platform's tag. Such facts
    list no symbols; the symbol checks take what the platform may define as defined."""
    initializers: tuple[InitializerReach, ...] | None = ()
    """Each static initializer's reach, in the order the loader runs them (x86-64 and aarch64;
    empty for other machines and formats); None when a read that left the code out (a big
    wheel member) could not walk them: the checks then read them again when they need them."""
    bound_imports: tuple[tuple[str, str], ...] = ()
    """``(library, symbol)`` for each import bound to one library: Mach-O's two-level namespace
    (the library an undefined symbol's ordinal names; "" for a flat or dynamic lookup, which the
    executable or anything loaded may satisfy) and PE's per-DLL import tables (``#<n>`` for an
    import by ordinal). Empty for ELF, whose undefined symbols bind to the first definition."""
    weak_needed: frozenset[str] = frozenset()
    """Entries of ``needed`` whose absence does not fail the load: Mach-O ``LC_LOAD_WEAK_DYLIB``,
    PE delay-load imports (loaded at the first call, and a failure raises only then)."""
    reexported: tuple[str, ...] = ()
    """Entries of ``needed`` whose exports count as this file's (Mach-O ``LC_REEXPORT_DYLIB``)."""
    minos: str | None = None
    """The oldest macOS release a Mach-O file loads on (``LC_BUILD_VERSION`` or
    ``LC_VERSION_MIN_MACOSX``, as ``major.minor``); None for other formats or platforms."""
    module_init: ModuleInit | None = None
    """A Python extension module's init function, walked (ELF x86-64 and aarch64); None for
    anything else."""
    architectures: tuple[str, ...] = ()
    """A fat (universal) Mach-O file's slices by machine, in file order; the facts are those of
    the slice ``machine`` names (see ``binaries.macho``). Empty for a thin file."""
    weak_version_needs: tuple[tuple[str, str], ...] = ()
    """``(file, version)`` of the entries of ``version_needs`` marked ``VER_FLG_WEAK``: ld.so
    loads the file where the version is missing (GNU ld marks a need so when only weak
    references use it). Empty for other formats."""
    static_initializer_addresses: tuple[tuple[str, int], ...] = ()
    """``(name, address)`` of each of ``static_initializers`` (sorted): which entry of
    ``initializers`` each one is (``InitializerReach.address``). Empty for PE files."""
    default_versions: tuple[str, ...] | None = None
    """The versions of ``defined``'s default keys (``name@@V``), sorted, when every key reads
    as a name and a version without doubt (no name nor version holds an "@"): the symbol
    checks then look keys up rather than split each one (``loaders.symbols.KeyedDefinitions``).
    None when not known (an "@" in a name, or not ELF)."""

    @property
    def initializer_reaches(self) -> frozenset[str]:
        """Imported functions any initializer can call (none known when not read)."""
        return frozenset().union(*(init.reaches for init in self.initializers or ()))


FORMAT_NAMES: Final = {"elf": "ELF", "macho": "Mach-O", "pe": "PE"}
"""How reports name each ``BinaryFacts.format``."""


class MalformedBinary(InputError):
    """A binary is truncated or corrupt; names the file, its format, the byte offset and the
    problem. Each format's reader raises its own subclass."""

    format_name = "binary"
    """How the message names the format."""

    def __init__(self, path: str, offset: int, reason: str) -> None:
        self.path = path
        self.offset = offset
        self.reason = reason
        super().__init__(f"{path}: malformed {self.format_name} at offset {offset:#x}: {reason}")

    def __reduce__(self) -> tuple[type[MalformedBinary], tuple[str, int, str]]:
        # worker processes send these back to the parent: pickle the constructor arguments
        return (type(self), (self.path, self.offset, self.reason))
