"""Whether two copies of one initializer share state: both reach one function of a third,
non-system library loaded with them (a registry), or one that both export and the loader binds
to one copy, so the second copy's registration collides with the first.

The facts come from the code (``BinaryFacts.initializers``): which functions each initializer can
call by symbol, and its shape, which two copies of one object file's initializer share.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator
from typing import Final, NamedTuple

from buildtool.linkage.binaries import (
    MIN_SHAPE_INSTRUCTIONS,
    BinaryFacts,
    InitializerReach,
    is_toolchain_function,
)
from buildtool.linkage.checks.common import GRAFT_SUFFIX, base_name, binds_own_calls
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile

Pair = tuple[BinaryFile, BinaryFile]

SYSTEM_LIBRARY: Final = re.compile(
    r"^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libatomic|libgomp|ld-linux.*)"
    r"(\.so|-)"
    r"|^(kernel32|msvcrt|ucrtbase|vcruntime\d+(_\d+)?|msvcp\d+(_\w+)?|api-ms-win-[\w-]+"
    r"|libstdc\+\+-6|libgcc_s_[\w-]+|libwinpthread-1)\.dll$",
    re.IGNORECASE,
)
"""Libraries of the toolchain and the C runtime (ELF's, and Windows' DLLs of them): their
functions (``__cxa_atexit``, ``operator new``, ``atexit``) are what every initializer calls, no
registry of a project's."""

STARTUP_CALLEES: Final = frozenset(
    {
        "__register_frame_info",
        "__register_frame_info_bases",
        "__deregister_frame_info",
        "__deregister_frame_info_bases",
        "_ITM_registerTMCloneTable",
        "_ITM_deregisterTMCloneTable",
        "__cxa_finalize",
        "_Jv_RegisterClasses",
    }
)
"""What the toolchain's startup code in every library calls (crtstuff's ``frame_dummy`` and
``register_tm_clones``, which the initializer array lists first): each library registers its own
unwind tables there, never a name another library also registers."""

ACCEPTING_REGISTRIES: Final = frozenset(
    {
        "_Z21qRegisterResourceDataiPKhS0_S0_",
        "_ZN3tsl8profiler23RegisterProfilerFactoryESt8functionIFSt10unique_ptrINS0_17Profiler"
        "InterfaceESt14default_deleteIS3_EERKN10tensorflow14ProfileOptionsEEE",
    }
)
"""Registries that take the same entry twice without complaint. Qt's ``qRegisterResourceData``
adds a library's resource tables to the list every lookup searches (it skips only tables listed
already at the same address): one resource collection linked into two libraries (PySide6's
libQt6Designer and libQt6DesignerComponents) is listed twice, and its files are found. TSL's
``tsl::profiler::RegisterProfilerFactory`` appends a factory to the list a profiling session
calls: tensorflow-cpu's lib_pywrap_tensorflow_common.so and libtensorflow_cc.so.2 both register
one, and ``import tensorflow`` and a profiling session work."""

SHOWN_STRINGS: Final = 4
"""Strings of the duplicated initializers the evidence shows."""


def _strongly_defined(
    subject: Subject, names: frozenset[str], facts: BinaryFacts
) -> frozenset[str]:
    """The names among ``names`` with a strong dynamic definition (a version suffix dropped);
    a DLL's every export (its facts call them weak only so that names are no duplicate-code
    evidence)."""
    if facts.format == "pe":
        return names & facts.defined
    return subject.defined_among(names, facts, strong=True)


def _is_system(path: str, facts: BinaryFacts) -> bool:
    names = (
        GRAFT_SUFFIX.sub("", facts.soname or ""),
        GRAFT_SUFFIX.sub("", posixpath.basename(path)),
    )
    return any(SYSTEM_LIBRARY.match(name) for name in names if name)


class _Shape(NamedTuple):
    """A file's registering initializers of one shape and content (one copy)."""

    reaches: frozenset[str]
    """What they reach, joined."""
    strings: tuple[str, ...]
    complete: bool = True
    """Every one of them walked whole: a ``content`` of "" then says they hand nothing on."""


_Key = tuple[str, str, tuple[frozenset[str], ...]]
"""An initializer's shape, ``InitializerReach.content`` ("" for untold) and ``callees``."""


def _shapes(subject: Subject, inits: tuple[InitializerReach, ...]) -> dict[_Key, _Shape]:
    """The registering initializers by shape and content, worked out once per tuple of
    initializers (each pair a file is in asks again: tensorflow's 994 pairs)."""
    return subject.per_object("initializer shapes", inits, _by_shape)


def _by_shape(inits: tuple[InitializerReach, ...]) -> dict[_Key, _Shape]:
    """The registering initializers by shape and content."""
    found: dict[_Key, _Shape] = {}
    for init in _registering(inits):
        key = (init.shape, init.content, init.callees)
        known = found.get(key)
        found[key] = (
            _Shape(init.reaches, init.strings, init.complete)
            if known is None
            else known._replace(
                reaches=known.reaches | init.reaches, complete=known.complete and init.complete
            )
        )
    return found


def _copies(mine: dict[_Key, _Shape], theirs: dict[_Key, _Shape]) -> list[tuple[_Key, _Key]]:
    """The initializers of both files that may be copies: one shape handing on the same, or
    one of them handing on what is not told (""), and calling functions of the same names
    (``_callees_alike``). One code handing on different functions or data registers something
    else in each (Qt's resource initializers, each with its own resources)."""
    by_shape: dict[str, list[_Key]] = {}
    for other in theirs:
        by_shape.setdefault(other[0], []).append(other)
    return sorted(
        (key, other)
        for key in mine
        for other in by_shape.get(key[0], ())
        if (key[1] == other[1] or "" in (key[1], other[1])) and _callees_alike(key[2], other[2])
    )


def _callees_alike(first: tuple[frozenset[str], ...], second: tuple[frozenset[str], ...]) -> bool:
    """Whether two initializers may call the same functions of their libraries: the files
    give each a name in common where both name it (a file stripped of its local symbols names
    fewer, or none; the functions a copy of one object file calls keep their names, and a
    linker folding identical code may add aliases)."""
    if not first or not second:
        return True
    pairs = zip(first, second, strict=False)
    return len(first) == len(second) and all(not a or not b or a & b for a, b in pairs)


def told_apart(subject: Subject, pair: Pair) -> bool:
    """Whether the pair's registering initializers of one shape all hand on different content:
    one boilerplate registering something else in each (two libraries' ``qrc_resources.cpp``,
    whose initializers and helpers rcc names alike), not copies, whatever their names say."""
    mine, theirs = (_shapes(subject, _walked(subject, pair, binary)) for binary in pair)
    shared = {key[0] for key in mine} & {key[0] for key in theirs}
    return bool(shared) and not _copies(mine, theirs)


def _shared_reach(subject: Subject, pair: Pair) -> frozenset[str]:
    """Functions that the pair's initializers of one shape reach in both files: each shape on
    its own (two files' unrelated initializers of another shape prove nothing), and only shapes
    that tell a copy (``_registering``, ``_copies``); none that is no registry's."""
    first, second = (_walked(subject, pair, binary) for binary in pair)
    spelled = _elf_spelling(subject, pair)
    return frozenset(
        name
        for name in _reached_alike(subject, first, second)
        if not is_toolchain_function(spelled(name))
        and spelled(name) not in STARTUP_CALLEES
        and spelled(name) not in ACCEPTING_REGISTRIES
        and not spelled(name).startswith(NO_REGISTRY)
        and not LOCKS.match(spelled(name))
    )


def _elf_spelling(subject: Subject, pair: Pair) -> Callable[[str], str]:
    """How the pair's names are spelled as ELF spells them, as the lists here are: Mach-O
    puts an underscore before every C and C++ name (``__Z21qRegisterResourceDataiPKhS0_S0_``,
    ``___cxa_finalize``)."""
    if any(subject.facts(binary).format == "macho" for binary in pair):
        return lambda name: name[1:] if name.startswith("_") else name
    return lambda name: name


def _reached_alike(
    subject: Subject, first: tuple[InitializerReach, ...], second: tuple[InitializerReach, ...]
) -> frozenset[str]:
    """Every function that initializers of one shape reach in both files (``_shared_reach``)."""
    mine, theirs = _shapes(subject, first), _shapes(subject, second)
    return frozenset().union(
        *(mine[key].reaches & theirs[other].reaches for key, other in _copies(mine, theirs))
    )


def accepting_callees(subject: Subject, pair: Pair) -> list[str]:
    """The registries that take a second registration alike (``ACCEPTING_REGISTRIES``) which
    the pair's initializers of one shape both reach (sorted)."""
    first, second = (_walked(subject, pair, binary) for binary in pair)
    spelled = _elf_spelling(subject, pair)
    reached = _reached_alike(subject, first, second)
    return sorted(name for name in reached if spelled(name) in ACCEPTING_REGISTRIES)


NO_REGISTRY: Final = ("_ZNK", "_ZNSt", "_ZSt")
"""How Itanium-mangled names start that are no registry's insertion: a const member function
reads its object (Qt's ``QMetaObject::indexOfMethod``, which a copied initializer calls to look
up a signal); the standard library's own functions (a container's ``operator[]``, a template
instance every library exports) are what a registry is built from. A registry that can refuse
a second name does so in a function of its own, which the walk reaches (viskores' header-only
link factory assigns through ``std::unordered_map::operator[]`` in every library that includes
it, and VTK loads)."""


LOCKS: Final = re.compile(r"_ZN4absl(?:\d+lts_\d+)?(?:5Mutex|13base_internal8SpinLock)\d")
"""abseil's ``Mutex`` and ``SpinLock`` members, in any release's inline namespace
(``_ZN4absl12lts_202601075Mutex4lockEv``): a lock serializes registrations and keeps none. Two
copies of a registry, each in its own library, taking one lock of a third library register into
their own tables (pyarrow's macOS dylibs: protobuf's copies adding their descriptors under
libarrow's ``absl::Mutex``); a registry of the third library is reached too, and is named."""


def registered_strings(subject: Subject, pair: Pair) -> tuple[str, ...]:
    """The strings the initializers both files have in common address (what they register)."""
    mine, theirs = (_shapes(subject, _walked(subject, pair, binary)) for binary in pair)
    copies = _copies(mine, theirs)
    return tuple(dict.fromkeys(text for key, _other in copies for text in mine[key].strings))


def name_nothing(subject: Subject, pair: Pair) -> bool:
    """Whether the pair's initializers alike in code address no string and hand no data on:
    whatever they call cannot register one name twice (VTK's ``vtkDebugLeaksManager``
    counters, which every file including the header runs for itself). Walked whole where a
    read walked them in their own code only: what they hand on is ``content``."""
    mine, theirs = (_shapes(subject, _walked(subject, pair, binary)) for binary in pair)
    return not any(
        mine[key].strings or _hand_on_alike(key, mine[key], other, theirs[other])
        for key, other in _copies(mine, theirs)
    )


def _hand_on_alike(key: _Key, shape: _Shape, other: _Key, other_shape: _Shape) -> bool:
    """Whether two copies of one initializer code may hand the same on: the same ``content``
    (the code of the library's functions they call, the data they pass out), or one's not told
    (a walk cut short). One that hands on something and one walked whole that hands on nothing
    (it calls only other libraries' functions: VTK's header boilerplate calling
    ``AddRegistrar_vtkCommonCore`` from libvtkCommonCore in one library, and its own
    ``AddRegistrar_vtkCommonMath`` in libvtkCommonMath, which Mach-O calls directly) register
    something else each."""
    if not key[1] and not other[1]:
        return False
    if key[1] == other[1]:
        return True
    silent = other_shape if not other[1] else shape
    return not silent.complete


def _loaded_with(subject: Subject, pair: Pair) -> dict[str, BinaryFacts]:
    """The objects a process that loads both files also has, by path: those of a root's closure
    that loads both, and those each file's own closure loads (inputs, or system libraries
    found as ld.so finds them), less the pair."""
    paths = [str(binary.location) for binary in pair]
    found: dict[str, BinaryFacts] = {}
    for closure in subject.contexts(pair[0]):
        if all(path in closure.objects for path in paths):
            found.update(closure.objects)
    own = [subject.closures.get(binary.location) for binary in pair]
    if own[0] is not None and own[1] is not None:
        found.update({p: f for p, f in own[0].objects.items() if p in own[1].objects})
    return {path: facts for path, facts in found.items() if path not in paths}


def keeping_nothing(subject: Subject, pair: Pair, names: frozenset[str]) -> list[str] | None:
    """What the static initializers of ``names`` call in both files, when that keeps no
    registration: each found by its address (``BinaryFacts.static_initializer_addresses``),
    walked to the end of every call (``InitializerReach.whole``), calling nothing but the
    standard streams' setup (``STREAM_SETUP``), locks (``LOCKS``) and the toolchain's startup
    code, and loading no address of an object the library exports (two libraries constructing
    one exported ``std::string`` free it twice at exit). None otherwise, or when an
    initializer is not found or a call was left unfollowed. tensorflow's
    _pywrap_parallel_device.so and libtensorflow_cc.so.2 hold a source whose initializer sets
    up the streams; protobuf's copies register into their own pools under a lock."""
    spelled = _elf_spelling(subject, pair)
    called: set[str] = set()
    for binary in pair:
        walks = _named_walks(subject, binary, names)
        if walks is None or not all(init.whole and not init.shares_data for init in walks):
            return None
        called.update(spelled(name).split("@", 1)[0] for init in walks for name in init.reaches)
    return sorted(called) if all(map(_keeps_nothing, called)) else None


def _keeps_nothing(name: str) -> bool:
    return (
        name in STREAM_SETUP
        or name in STARTUP_CALLEES
        or is_toolchain_function(name)
        or LOCKS.match(name) is not None
    )


def _named_walks(
    subject: Subject, binary: BinaryFile, names: frozenset[str]
) -> list[InitializerReach] | None:
    """The initializers of ``names`` in ``binary``, walked whole; None when one of the names
    has no address, or no initializer starts there."""
    listed = [(n, a) for n, a in subject.facts(binary).static_initializer_addresses if n in names]
    starts = {address for _name, address in listed}
    held = [init for init in subject.initializers(binary) if init.address in starts]
    if {name for name, _address in listed} != names or {i.address for i in held} != starts:
        return None
    unwalked = frozenset(init.shape for init in held if not init.complete)
    if unwalked:
        deep = subject.deep_initializers(binary, unwalked, unwalked)
        held = [init for init in deep if init.address in starts]
    return held


def _walked(subject: Subject, pair: Pair, binary: BinaryFile) -> tuple[InitializerReach, ...]:
    """``binary``'s initializers, walked whole when one of a shape the pair has in common was
    walked in its own code only."""
    held = subject.initializers(binary)
    mine, theirs = ({key[0] for key in _shapes(subject, subject.initializers(b))} for b in pair)
    shared = frozenset(mine & theirs)
    if all(init.complete for init in held if init.shape in shared):
        return held
    later = _grouped_shapes(subject).get(binary.display, shared)
    return subject.deep_initializers(binary, shared, later)


def registry_callees(subject: Subject, pair: Pair) -> list[str]:
    """``library:function`` for each function the pair's duplicated initializers both reach that
    binds to one copy in a process loading both: one of a third, non-system library loaded with
    them, or, when one load context holds both, one both export (unless both bind their own
    calls first: ``-Bsymbolic``, Mach-O), which the second one loaded binds to the first one's copy
    (sorted). Modules the interpreter imports each ``RTLD_LOCAL`` bind their own."""
    reached = _shared_reach(subject, pair)
    if not reached:
        return []
    found: set[str] = set()
    facts = [subject.facts(binary) for binary in pair]
    if not all(binds_own_calls(f) for f in facts) and subject.co_loaded(*pair):
        exported = _strongly_defined(
            subject, _strongly_defined(subject, reached, facts[0]), facts[1]
        )
        found.update(f"{base_name(pair[0])}:{name} (exported by both)" for name in exported)
    for path, other in sorted(_loaded_with(subject, pair).items()):
        if not _is_system(path, other):
            name = posixpath.basename(path)
            # weak definitions too (gflags' ``FlagRegisterer`` constructor is a weak template
            # instance of libgflags): an import binds to one all the same
            defined = subject.defined_among(reached, other)
            found.update(f"{name}:{callee}" for callee in defined)
    return sorted(found)


def through(callees: list[str], strings: tuple[str, ...] = ()) -> str:
    """The evidence: which registry both copies register through, and the strings their code
    addresses (the name registered)."""
    shown = ", ".join(callees[:4]) + (f" and {len(callees) - 4} more" if len(callees) > 4 else "")
    named = ", ".join(repr(text) for text in strings[:SHOWN_STRINGS])
    return f"both register through {shown}" + (f" (their code addresses {named})" if named else "")


def _registering(inits: tuple[InitializerReach, ...]) -> Iterator[InitializerReach]:
    """Initializers whose shape tells a copy: long enough, or naming what they register (a
    string, or data they pass to another library)."""
    for init in inits:
        telling = init.instructions >= MIN_SHAPE_INSTRUCTIONS or init.strings or init.passed
        calls = init.reaches or not init.complete
        if calls and telling and not init.guarded:
            yield init


def shape_groups(subject: Subject) -> list[list[BinaryFile]]:
    """Shared libraries grouped by an initializer shape they have in common (initializers that
    call nothing by symbol left out): copies of one object file, whatever the files' names for
    it. An unstripped file whose initializers a sparse read left unread is not read again for
    this: its pairs with others are found by their static initializers' names."""
    return [group for group in _groups_by_shape(subject).values() if len(group) > 1]


def _groups_by_shape(subject: Subject) -> dict[str, list[BinaryFile]]:
    """Shared libraries by the shapes of their registering initializers (``shape_groups``),
    worked out once for the check and for the shapes each file's pairs may ask."""
    return subject.per_object("shape groups", subject.files, lambda _files: _grouped(subject))


def _grouped(subject: Subject) -> dict[str, list[BinaryFile]]:
    by_shape: dict[str, list[BinaryFile]] = {}
    for binary in subject.shared:
        facts = subject.facts(binary)
        if facts.has_symtab and facts.initializers is None:
            continue
        for shape in {init.shape for init in _registering(subject.initializers(binary))}:
            by_shape.setdefault(shape, []).append(binary)
    return by_shape


def _grouped_shapes(subject: Subject) -> dict[str, frozenset[str]]:
    """Each grouped file's shapes that another file has too, by display path: what the pairs
    it is in may ask to have walked whole."""

    def shapes(_files: object) -> dict[str, frozenset[str]]:
        found: dict[str, set[str]] = {}
        for shape, group in _groups_by_shape(subject).items():
            for binary in group if len(group) > 1 else ():
                found.setdefault(binary.display, set()).add(shape)
        return {display: frozenset(held) for display, held in found.items()}

    return subject.per_object("shapes in groups", subject.files, shapes)


STREAM_SETUP: Final = frozenset(
    {"_ZNSt8ios_base4InitC1Ev", "_ZNSt8ios_base4InitD1Ev", "_ZSt21ios_base_library_initv",
     "__cxa_atexit"}
)  # fmt: skip
"""What including <iostream> makes every C++ file's initializer call: no state of its own (the
streams' setup, and its undoing registered for exit, on an object of the file's own,
``std::__ioinit``; libstdc++ counts the setups, so a second library holding the file sets the
streams up once more, harmlessly)."""


def initializers_build_state(subject: Subject, binary: BinaryFile) -> bool | None:
    """Whether ``binary``'s initializers build state a second copy of it would split or
    duplicate: they call some imported function (a registry in another library, libtvm_ffi's
    own C++ objects allocated and registered, a function it exports, which the copy loaded
    second binds to the first's), beyond <iostream>'s setup. False when they call nothing
    imported (blosc2's constructor filling its own CPU dispatch tables); None when nothing was
    read."""
    inits = subject.initializers_until(binary, STREAM_SETUP)  # the rest, when one reaches out
    if not inits:
        return None
    reached = frozenset().union(*(i.reaches for i in inits if not i.guarded))
    unwalked = frozenset(i.shape for i in inits if not i.guarded and not i.complete)
    if reached - STREAM_SETUP or not unwalked:
        return bool(reached - STREAM_SETUP)
    # walked whole: the calls their own code leaves to other functions
    inits = subject.deep_initializers(binary, unwalked, unwalked)
    reached = frozenset().union(*(i.reaches for i in inits if not i.guarded))
    return bool(reached - STREAM_SETUP)
