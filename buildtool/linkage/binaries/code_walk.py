"""What a library's initializers reach: the functions the code its loader runs at load time
calls by symbol (imports, and its own exports called through a slot the loader may bind to
another library's copy), found by following calls and tail jumps inside the library with a
disassembler (capstone), whatever the format (ELF's ``DT_INIT_ARRAY``, a PE file's static
initializers).

A duplicated static initializer collides only when both copies reach shared state: a function
of a third library (a registry), or one both export that the loader binds to one copy. The
linkage of the shared code cannot tell; the code can. The walk is bounded (``MAX_DEPTH`` calls
deep, ``MAX_INSTRUCTIONS`` per initializer) and knows x86-64 and aarch64; other machines read as
having no initializers. What an initializer's own code addresses (a string, or a structure whose
first pointers name one: protobuf's descriptor table and its ``.proto`` file) is part of its
shape: the name it registers tells its copies from other registrations of the same code. An
initializer that names nothing is told by what it hands on (``InitializerReach.content``): the
code of the functions it calls in the library and the read-only data it passes out of it. Qt's
resource initializers are one code in every library, each passing its own resource tables to
``qRegisterResourceData``. Where the file's symbol table names the functions it calls, so are
they (``InitializerReach.callees``): VTK's boilerplate calls each module's own registrar.

``CodeView`` is what the walk needs, decoded by each format's reader.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from buildtool.linkage.binaries import x86_text
from buildtool.linkage.binaries.facts import (
    MIN_SHAPE_INSTRUCTIONS,
    InitializerReach,
)

WALKED_MACHINES: Final = ("x86_64", "aarch64")
MAX_DEPTH: Final = 2
"""Calls followed from an initializer: the registration helper is one or two calls in."""
MAX_INSTRUCTIONS: Final = 800
"""Instructions walked per initializer, at most (each function is decoded once a library)."""
MAX_LIBRARY_INSTRUCTIONS: Final = 120_000
"""Instructions decoded per library, at most (about a second): LLVM's thousands of option
initializers reach a hundred thousand functions two calls deep. Past it, functions not yet
decoded read as calling nothing: an initializer walked after that has no shape at all, and no
copy of it is found. A walk of the initializers' own code has a budget that grows with their
count (``OWN_CODE_INSTRUCTIONS``)."""
MAX_FUNCTION_INSTRUCTIONS: Final = 300
"""Instructions of one function's sweep, at most."""
_CHUNK: Final = 512
_BATCH: Final = 24
"""Instructions decoded at a time: most sweeps end within a few dozen."""


def no_pointer(_address: int) -> int | None:
    """A ``CodeView.pointer`` for a format whose stored pointers the walk does not decode."""
    return None


def nowhere(_address: int) -> bool:
    """A ``CodeView.relocated`` for a format whose relocations the walk does not index."""
    return False


def no_bytes(_address: int, _size: int) -> bytes:
    """A ``CodeView.read_only`` for a format whose read-only data the walk does not tell."""
    return b""


def no_names(_addresses: frozenset[int]) -> Mapping[int, frozenset[str]]:
    """A ``CodeView.function_names`` for a format whose functions the walk does not name."""
    return {}


class CodeView(NamedTuple):
    """A library's code, its initializers and its import slots, as the walk sees them."""

    machine: str
    read: Callable[[int, int], bytes]
    """Bytes at a virtual address in executable segments (fewer, or none, past their end)."""
    initializers: tuple[int, ...]
    """Addresses of the functions the loader runs at load time, in its order (``DT_INIT_ARRAY``,
    ``__mod_init_func``, a PE file's static initializers)."""
    slot: Callable[[int], tuple[str, int] | None]
    """Address of an import's slot (a GOT entry, a PE import address table entry, a Mach-O
    stub or symbol pointer) -> (symbol name, its address here; 0 when imported), None for no
    symbol's slot."""
    constant: Callable[[int, int], bytes]
    """Bytes at a virtual address in any loaded segment: the read-only data the code points
    at (the string an initializer registers)."""
    pointer: Callable[[int], int | None] = no_pointer
    """The address the pointer stored at a virtual address points to (what the loader
    relocates it to, less the load address); None where no pointer is stored."""
    read_only: Callable[[int, int], bytes] = no_bytes
    """Bytes at a virtual address in a loaded segment neither writable nor executable (none
    elsewhere): data no relocation changes, the same in every library linking its object file,
    where code and writable data differ by where the link put things."""
    relocated: Callable[[int], bool] = nowhere
    """Whether a dynamic relocation row (not a PLT slot's) names the address: the loader
    stores a pointer there, whatever its bytes in the file read as."""
    function_names: Callable[[frozenset[int]], Mapping[int, frozenset[str]]] = no_names
    """The symbol table's names of the library's own functions at these addresses (those it
    names; aliases all), asked once per walk of a file's initializers."""


def load_disassembler() -> None:
    """Import the disassembler now: a process about to fork workers that walk initializers
    imports it once for all of them (each would take 50 ms: capstone loads every
    architecture's module)."""
    importlib.import_module("capstone")


def _capstone(machine: str) -> Any:
    import capstone

    if machine == "x86_64":
        return capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    return capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)


MAX_LITERAL: Final = 64
"""Bytes of a string literal the shape keeps (its start tells two registrations apart)."""
MAX_STRINGS: Final = 8
"""Strings an initializer's reach lists (``InitializerReach.strings``)."""
POINTER_WORDS: Final = 4
"""Pointers at the start of an addressed structure the shape looks through for a string."""
_ARM_STOP: Final = frozenset({"ret", "br", "b", "brk", "udf"})


class _Function(NamedTuple):
    """One function's linear sweep (to its first return or jump away)."""

    instructions: int
    end: int
    """The address past its last instruction swept."""
    shape: tuple[str, ...]
    calls: tuple[tuple[int, int], ...]
    """(address, 1 for a call, 0 for a branch within it) of its direct branch targets."""
    imports: tuple[str, ...]
    """Functions it calls or jumps to through a slot (a GOT entry, a stub): imports, and its
    own exported functions (which the loader may bind to another library's copy)."""
    flags: tuple[tuple[int, int], ...] = ()
    """(index in ``shape``, value) of each byte-wide immediate stored or or-ed into a stack slot
    (x86-64): the bit fields of a record built on the stack."""
    constants: tuple[tuple[int, int, bool], ...] = ()
    """(index in ``shape``, address, whether the address is that of a pointer loaded) of each
    instruction that addresses data (or loads a pointer to it: a GOT entry): what a string there
    says is added to the shape when the function is an initializer's own."""
    passes: tuple[tuple[int, tuple[int, ...]], ...] = ()
    """(the target, ``THROUGH_SLOT`` for a call through a slot; the data addresses its argument
    registers hold) of each call or tail jump made while an argument register held the
    address of data (``lea``; ``adrp`` and ``add``)."""


THROUGH_SLOT: Final = -1
"""``_Function.passes``' target of a call through a slot (a GOT entry): out of the library."""
_NOTHING: Final = _Function(0, 0, (), (), ())


class _Sweep:
    """Decodes one function at a time, for ``_Functions``."""

    def __init__(self, view: CodeView, limit: int = MAX_FUNCTION_INSTRUCTIONS) -> None:
        self.view = view
        self.limit = limit
        self.calls: list[tuple[int, int]] = []
        self.imports: list[str] = []
        self.shape: list[str] = []
        self.constants: list[tuple[int, int, bool]] = []
        self.flags: list[tuple[int, int]] = []
        self.held: dict[str, int] = {}
        """Registers holding the address of data, by their 64-bit names."""
        self.passes: list[tuple[int, tuple[int, ...]]] = []
        self.end = 0

    def slot(self, address: int) -> None:
        """A call through a GOT slot: an import, or an own exported function, which is also
        followed to its definition (the copy this library's loader binds it to when alone)."""
        entry = self.view.slot(address)
        if entry is None:
            return
        name, defined_at = entry
        self.imports.append(name)
        if defined_at:
            self.calls.append((defined_at, 1))

    def addresses(self, address: int, loaded: bool = False) -> None:
        """The instruction being decoded addresses data at ``address`` (``loaded``: loads the
        pointer stored there)."""
        self.constants.append((len(self.shape), address, loaded))

    def writes(self, register: str | None, address: int | None = None) -> None:
        """The instruction being decoded writes ``register``: it now holds the address of data
        (``address``) or something else."""
        if register is None:
            return
        if address is None:
            self.held.pop(register, None)
        else:
            self.held[register] = address

    def passing(self, target: int | None, arguments: Sequence[str]) -> None:
        """A call (or tail jump) to ``target`` (None: through a register): the data addresses
        its ``arguments`` registers hold are passed; the callee may change every register."""
        held = self.held
        if not held:
            return
        passed = tuple(held[name] for name in arguments if name in held)
        if passed and target is not None:
            self.passes.append((target, passed))
        held.clear()

    def result(self) -> _Function:
        shape, calls, imports = tuple(self.shape), tuple(self.calls), tuple(self.imports)
        flags, constants = tuple(self.flags), tuple(self.constants)
        passes = tuple(self.passes)
        return _Function(len(shape), self.end, shape, calls, imports, flags, constants, passes)


def _sweep_function(
    sweep: _Sweep,
    cs: Any,
    address: int,
    step: Callable[[int, str, str], str],
    stops: frozenset[str],
) -> None:
    """Decode from ``address`` to the first instruction whose shape starts with one of
    ``stops`` (or ``sweep.limit`` instructions); ``step(after, mnemonic, operands)`` follows
    each instruction and gives its shape. aarch64's sweep; x86-64's, the walk's bulk, is this
    loop with each step looked up (``_x86_function``)."""
    while len(sweep.shape) < sweep.limit:
        decoded = 0
        code = sweep.view.read(address, _CHUNK)
        for at, size, mnemonic, operands in cs.disasm_lite(code, address, _BATCH):
            decoded += size
            sweep.end = at + size
            shape = step(at + size, mnemonic, operands)
            sweep.shape.append(shape)
            if shape.partition(" ")[0] in stops or len(sweep.shape) >= sweep.limit:
                return
        if decoded == 0:
            return
        address += decoded


def _x86_function(sweep: _Sweep, cs: Any, address: int) -> None:
    """``_sweep_function`` for x86-64, each instruction's text worked out once
    (``x86_text.instruction``): the same texts recur all through a library's code."""
    shape, held, limit, read = sweep.shape, sweep.held, sweep.limit, sweep.view.read
    known_texts, work_out = x86_text.KNOWN, x86_text.instruction
    plain, copy = x86_text.PLAIN, x86_text.COPY
    while len(shape) < limit:
        decoded = 0
        for at, size, prefixed, operands in cs.disasm_lite(read(address, _CHUNK), address, _BATCH):
            decoded += size
            sweep.end = at + size
            known = known_texts.get((prefixed, operands)) or work_out(prefixed, operands)
            line, kind, stop, written, copied, number, _out = known
            if kind == plain:
                if number is not None:
                    sweep.flags.append((len(shape), number))
                if written:
                    held.pop(written, None)
            elif kind == copy:
                if (value := held.get(copied)) is None:
                    held.pop(written, None)
                else:
                    held[written] = value
            else:
                _x86_effect(sweep, at + size, known)
            shape.append(line)
            if stop or len(shape) >= limit:
                return
        if decoded == 0:
            return
        address += decoded


def _x86_effect(sweep: _Sweep, after: int, instruction: x86_text.X86Instruction) -> None:
    """Follow an instruction that addresses data or branches (``after``: the address past it).
    A ``jmp`` leaves the function (a tail call) unless it lands within what was swept."""
    kind, number = instruction.kind, instruction.number
    if kind in (x86_text.ADDRESSES, x86_text.LOADS):
        address = None if number is None else after + number
        if address is not None:
            sweep.addresses(address, loaded=kind == x86_text.LOADS)
        sweep.writes(instruction.written or None, address if kind == x86_text.ADDRESSES else None)
        return
    target = number
    if kind == x86_text.THROUGH_SLOT and number is not None:
        sweep.slot(after + number)
        target = THROUGH_SLOT
    elif number is not None:
        sweep.calls.append((number, int(instruction.out)))
    if instruction.out:
        sweep.passing(target, _X86_ARGUMENTS)


_X86_ARGUMENTS: Final = ("rdi", "rsi", "rdx", "rcx", "r8", "r9")
"""The System V x86-64 ABI's integer argument registers, in order."""


def _literal(data: bytes) -> str | None:
    """The printable string at the start of ``data`` (NUL-terminated, or ``MAX_LITERAL``
    bytes of a longer one), None for anything else: the same code registering another name
    is another registration, not a copy (addresses alone cannot tell them apart)."""
    end = data.find(b"\0")
    text = data[:end] if end >= 0 else data[:MAX_LITERAL]
    if not text or not all(0x20 <= byte < 0x7F for byte in text):
        return None
    return text.decode("ascii")


# capstone writes aarch64 immediates below ten in decimal (``#0``, ``[x16, #8]``)
_ADRP = re.compile(r"(x\d+), #(0x[0-9a-f]+|\d+)")
_ADD = re.compile(r"(x\d+), (x\d+), #(0x[0-9a-f]+|\d+)")
_LDR = re.compile(r"(x\d+), \[(x\d+)(?:, #(0x[0-9a-f]+|\d+))?\]")
"""A load from a page and an offset: ``ldr x17, [x16, #0x18]`` (ELF PLT); a Mach-O stub's
offset may be none: ``ldr x16, [x16]``."""


def _arm_function(sweep: _Sweep, cs: Any, address: int) -> None:
    pages: dict[str, int] = {}
    loaded: dict[str, int] = {}

    def step(_after: int, mnemonic: str, operands: str) -> str:
        return _arm_instruction(sweep, (mnemonic, operands), pages, loaded)

    _sweep_function(sweep, cs, address, step, _ARM_STOP)


_ARM_REGISTER = re.compile(r"[xw](\d+)")
_ARM_ARGUMENTS: Final = tuple(f"x{number}" for number in range(8))
"""The AArch64 procedure call standard's argument registers, in order."""
_ARM_NO_DESTINATION: Final = ("st", "cmp", "cmn", "tst", "ccm", "prfm")
"""Mnemonics (their starts) whose first operand is no destination: stores and comparisons."""


_ARM_X_NAMES: Final = {f"{width}{n}": f"x{n}" for width in "xw" for n in range(31)}
"""The general registers as capstone writes them -> their ``x`` names (what ``_ARM_REGISTER``
reads, without a match per instruction)."""


def _arm_written(mnemonic: str, operands: str) -> str | None:
    """The register (its ``x`` name) an instruction writes first, if any."""
    first = operands.partition(", ")[0]
    name = _ARM_X_NAMES.get(first)
    if name is None and (register := _ARM_REGISTER.fullmatch(first)):
        name = f"x{register.group(1)}"
    if name is None or mnemonic.startswith(_ARM_NO_DESTINATION):
        return None
    return name


def _arm_instruction(
    sweep: _Sweep, insn: tuple[str, str], pages: dict[str, int], loaded: dict[str, int]
) -> str:
    """Follow one instruction; its shape is its mnemonic (and the string it addresses)."""
    mnemonic, operands = insn
    written, address = _arm_written(mnemonic, operands), None
    if mnemonic == "adrp" and (page := _ADRP.fullmatch(operands)):
        pages[page.group(1)] = int(page.group(2), 0)
    elif mnemonic == "ldr" and (load := _LDR.fullmatch(operands)) and load.group(2) in pages:
        loaded[load.group(1)] = pages[load.group(2)] + int(load.group(3) or "0", 0)
        sweep.addresses(loaded[load.group(1)], loaded=True)
    elif mnemonic == "add" and (add := _ADD.fullmatch(operands)) and add.group(2) in pages:
        address = pages[add.group(2)] + int(add.group(3), 0)
        sweep.addresses(address)
    elif mnemonic == "mov" and (source := _arm_written("mov", operands.split(", ")[-1])):
        address = sweep.held.get(source)
    elif mnemonic in ("br", "blr", "bl", "b") or mnemonic.startswith(("b.", "cb", "tb")):
        _arm_branch(sweep, mnemonic, operands, loaded)
        return mnemonic
    sweep.writes(written, address)
    return mnemonic


def _arm_branch(sweep: _Sweep, mnemonic: str, operands: str, loaded: dict[str, int]) -> None:
    """Follow a branch: through a loaded slot (``br``/``blr``), or to an immediate."""
    target: int | None = None
    if mnemonic in ("br", "blr"):
        if operands in loaded:
            sweep.slot(loaded[operands])
            target = THROUGH_SLOT
    elif immediate := x86_text.IMMEDIATE.search(operands):
        target = int(immediate.group(1), 16)
        sweep.calls.append((target, int(mnemonic in ("bl", "b"))))
    if mnemonic in ("br", "blr", "bl", "b"):
        sweep.passing(target, _ARM_ARGUMENTS)


class _Functions:
    """Each function decoded once per library, however many initializers reach it."""

    def __init__(
        self,
        view: CodeView,
        limit: int = MAX_FUNCTION_INSTRUCTIONS,
        budget: int = MAX_LIBRARY_INSTRUCTIONS,
    ) -> None:
        self.view = view
        self.limit = limit
        """Instructions of one sweep, at most."""
        self.cs = _capstone(view.machine)
        self.sweep = _x86_function if view.machine == "x86_64" else _arm_function
        self.known: dict[int, _Function] = {}
        self.strings: dict[int, tuple[str, str] | None] = {}
        self.left = budget

    def at(self, address: int) -> _Function:
        found = self.known.get(address)
        if found is None:
            if self.left <= 0:
                return _NOTHING
            sweep = _Sweep(self.view, self.limit)
            self.sweep(sweep, self.cs, address)
            found = self.known[address] = sweep.result()
            self.left -= found.instructions
        return found

    def string(self, address: int) -> tuple[str, str] | None:
        """(what the shape keeps, the string) for data an instruction addresses: a string
        there, else the first string one of the structure's first pointers names; None for
        anything else."""
        if address not in self.strings:
            found = self._text(address)
            self.strings[address] = (repr(found), found) if found else self._pointed(address)
        return self.strings[address]

    def _text(self, address: int) -> str | None:
        """The string at ``address``; None where the loader stores a pointer, whatever its
        bytes read as (``__dso_handle`` holds its own address, which an initializer passes to
        ``__cxa_atexit``: read as text, it differed from library to library)."""
        if self.view.relocated(address):
            return None
        return _literal(self.view.constant(address, MAX_LITERAL))

    def _pointed(self, address: int) -> tuple[str, str] | None:
        """The first string a pointer among the ``POINTER_WORDS`` at ``address`` names: one
        ended within ``MAX_LITERAL`` bytes, of three characters or more, not starting with a
        space (other data seldom reads as one)."""
        if not self.view.constant(address, 8):
            return None  # no bytes in the file (.bss): nothing the loader relocates is there
        for index in range(POINTER_WORDS):
            target = self.view.pointer(address + 8 * index)
            if not target or self.view.relocated(target):
                continue
            data = self.view.constant(target, MAX_LITERAL)
            found = _literal(data)
            if (
                found
                and len(found) > 2
                and not found[0].isspace()
                and data.find(b"\0") == len(found)
            ):
                return f"*{found!r}", found
        return None

    def passed(
        self, functions: Sequence[_Function], walked: set[int]
    ) -> list[tuple[str, bool]] | None:
        """The read-only data ``functions`` pass out of the library (to a stub, or through a
        slot), each as (what ``InitializerReach.content`` keeps of it, whether a string); None
        when a call's target was not ``walked`` (the walk's budget ended first): no code is
        decoded for this beyond the walk, which a sparse read checked."""
        found: list[tuple[str, bool]] = []
        for target, addresses in (item for function in functions for item in function.passes):
            if target != THROUGH_SLOT and target not in walked:
                return None
            if target != THROUGH_SLOT and not _is_stub(self.at(target)):
                continue  # a call within the library: what it passes on is walked in turn
            for address in addresses:
                data = self.view.read_only(address, MAX_LITERAL)
                text = _literal(data) if data else None
                if text is not None:
                    found.append((repr(text), True))
                elif data:
                    found.append((data[:PASSED_BYTES].hex(), False))
        return found

    def own_shape(self, function: _Function) -> tuple[list[str], list[str]]:
        """An initializer's own instructions as its shape keeps them, and the strings they
        address."""
        shape = list(function.shape)
        strings: list[str] = []
        for index, address, loaded in function.constants:
            target = self.view.pointer(address) if loaded else address
            found = self.string(target) if target else None
            if found is not None:
                shape[index] = f"{shape[index]} {found[0]}"
                strings.append(found[1])
        return shape, strings

    def _stub(self, target: int) -> _Function | None:
        """The function at ``target`` when it is a stub (a PLT entry): a few instructions whose
        only effect is a jump through a slot."""
        function = self.at(target)
        return function if _is_stub(function) else None

    def reach(self, address: int, deep: bool = True) -> _Walk:
        """Breadth first from ``address``: ``MAX_DEPTH`` calls deep, ``MAX_INSTRUCTIONS`` in
        all; the shape is that of the initializer's own function and the branches within it.
        Not ``deep``: its own code only, and the stubs it calls; ``complete`` says whether that
        left any call unfollowed. An initializer too short to tell a copy by its shape that
        names nothing and leaves calls unfollowed is walked whole all the same: only what it
        hands on (``InitializerReach.content``) tells it."""
        walk = _Walk(address)
        while walk.queue and walk.budget > 0:
            current, depth = walk.queue.pop(0)
            function = self.at(current)
            walk.visit(current, depth, function)
            if depth == 0:
                own, found = self.own_shape(function)
                walk.shape.extend(own)
                walk.strings.extend(found)
            if not deep and len(walk.shape) >= SHAPE_PREFIX:
                walk.cut()
                break
            for target, is_call in function.calls:
                if current <= target < function.end or target in walk.seen:
                    continue  # a branch within what the sweep decoded already
                if deep or depth + is_call == 0:
                    walk.follow(target, depth + is_call)
                else:
                    walk.leave(target, self._stub(target))
        if not walk.complete and walk.untold():
            return self.reach(address)
        walk.settle(self)
        return walk


SHAPE_PREFIX: Final = 64
"""Instructions of an initializer's own code a read walks (its shape's digest): enough to tell
copies from other code, a fraction of what a big library's initializers hold (libtorch_cpu.so's
376: 95k instructions walked whole)."""
OWN_CODE_INSTRUCTIONS: Final = 2 * SHAPE_PREFIX
"""Instructions a walk of the initializers' own code (and of what they call, as far as telling
a stub) decodes per initializer, on average at most: its budget grows with their count, so each
initializer of a library with thousands has its shape. Measured: 16 an initializer in
libtensorflow_framework.so.2, 32 in libtensorflow_cc.so.2 (4,531: 146k instructions, past
``MAX_LIBRARY_INSTRUCTIONS``), 79 in libtorch_cpu.so, 103 in Debian's libLLVM-14.so.1."""
PASSED_BYTES: Final = 16
"""Bytes of a passed datum that is not a string that ``InitializerReach.content`` keeps: the
start of the object (a GUID's 16 bytes; Qt's resource tables differ within them). Further, a
read could cross into the next object, which differs between two links of one object file."""
STUB_INSTRUCTIONS: Final = 4
"""A PLT entry's instructions, at most (x86-64 ``.plt.sec``: ``endbr64; bnd jmp [rip+X]``;
aarch64: ``adrp; ldr; add; br``)."""


def _is_stub(function: _Function) -> bool:
    """Whether ``function`` is a stub (a PLT entry), whose form the link chose, not the code."""
    return bool(function.imports) and function.instructions <= STUB_INSTRUCTIONS


class _Walk:
    """One initializer's walk (``_Functions.reach``)."""

    def __init__(self, address: int) -> None:
        self.start = address
        self.queue: list[tuple[int, int]] = [(address, 0)]
        self.seen = {address}
        self.budget = MAX_INSTRUCTIONS
        self.reaches: set[str] = set()
        self.shape: list[str] = []
        self.strings: list[str] = []
        self.complete = True
        self.walked: set[int] = set()
        self.outgoing: list[_Function] = []
        """The functions whose calls hand data on: its own and those it calls."""
        self.called: list[tuple[int, tuple[str, ...]]] = []
        """The addresses and shapes of the library's functions it calls (stubs left out)."""
        self.dropped = False
        """Whether a call past ``MAX_DEPTH`` was left unfollowed."""
        self.whole = False
        """Whether every call was followed, once settled (``InitializerReach.whole``)."""
        self.loads: list[int] = []
        """The addresses of the slots whose pointers the code walked loads."""
        self.passed: list[tuple[str, bool]] | None = None
        """What it passes out of the library (``_Functions.passed``), once settled: None when
        untold."""

    def visit(self, address: int, depth: int, function: _Function) -> None:
        self.walked.add(address)
        self.loads.extend(slot for _index, slot, loaded in function.constants if loaded)
        self.budget -= function.instructions
        self.reaches.update(function.imports)
        if depth == 1 and not _is_stub(function):
            self.called.append((address, function.shape))
        if depth <= 1:
            self.outgoing.append(function)

    def follow(self, target: int, depth: int) -> None:
        if depth <= MAX_DEPTH:
            self.seen.add(target)
            self.queue.append((target, depth))
        else:
            self.dropped = True

    def leave(self, target: int, stub: _Function | None) -> None:
        """A call out of the initializer's own code, not followed: a stub's import counts (an
        own export's stub still leads to code not walked), as does what is passed to it."""
        self.seen.add(target)
        if stub is None or stub.calls:
            self.complete = False
        if stub is not None:
            self.reaches.update(stub.imports)
            self.visit(target, 1, stub)

    def cut(self) -> None:
        """A walk of its own code ends at ``SHAPE_PREFIX`` instructions: the shape is their
        digest, with the functions they call by symbol (two prefixes of the same setup code
        calling different registries are different code), and the rest is walked only when
        another file has the same shape."""
        del self.shape[SHAPE_PREFIX:]
        self.shape.extend(sorted(self.reaches))
        self.complete = False

    def untold(self) -> bool:
        """Whether its own code, walked whole, is too short to tell a copy and names nothing."""
        return len(self.shape) < MIN_SHAPE_INSTRUCTIONS and not self.strings

    def named(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.strings))[:MAX_STRINGS]

    def settle(self, functions: _Functions) -> None:
        """Work out what it passes on while the library's budget is as its walk left it: a
        walk the budget cut short may have missed what a copy's code hands on; one that left
        calls unfollowed has not seen what they hand on."""
        if not self.named() and functions.left > 0 and self.complete:
            self.passed = functions.passed(self.outgoing, self.walked)
        self.whole = self.complete and not self.dropped and not self.queue and functions.left > 0

    def told_callees(self) -> list[int]:
        """The addresses of the library's functions it calls, where what it hands on tells it."""
        return [address for address, _shape in self.called] if self.passed is not None else []

    def shares_data(self, view: CodeView) -> bool:
        """Whether a slot it loads points at something the library defines."""
        return any((entry := view.slot(slot)) is not None and entry[1] for slot in self.loads)

    def result(self, view: CodeView, names: Mapping[int, frozenset[str]]) -> InitializerReach:
        """Its reach, with ``names`` of the library's functions (``CodeView.function_names``)."""
        shape, passed = self.shape, self.passed
        digest = hashlib.blake2b("\n".join(shape).encode(), digest_size=8).hexdigest()
        guarded = self.complete and _guarded(shape)  # a guard says nothing of the code not walked
        callees = tuple(names.get(address, _UNNAMED) for address in self.told_callees())
        return InitializerReach(
            digest,
            min(len(shape), SHAPE_PREFIX) if not self.complete else len(shape),
            frozenset(self.reaches),
            guarded,
            self.named(),
            complete=self.complete,
            content=_content(self.called, passed) if passed is not None else "",
            passed=len(passed) if passed is not None else 0,
            address=self.start,
            shares_data=self.shares_data(view),
            whole=self.whole,
            callees=callees if any(callees) else (),
        )


_UNNAMED: Final[frozenset[str]] = frozenset()


def _content(
    called: Sequence[tuple[int, tuple[str, ...]]], passed: Sequence[tuple[str, bool]]
) -> str:
    """``InitializerReach.content``: the shapes of the library's functions an initializer calls
    (stubs left out: the link chose their form), and the data it passes: the strings when there
    are any (an empty string reads as the bytes after it, which are not the object's), else the
    start of each datum; "" for nothing."""
    strings = [key for key, is_string in passed if is_string]
    shapes = [line for _address, shape in called for line in shape]
    kept = [*shapes, "", *(strings or [key for key, _is_string in passed])]
    if len(kept) == 1:
        return ""
    return hashlib.blake2b("\n".join(kept).encode(), digest_size=8).hexdigest()


_GUARD_SET: Final = "mov byte ptr [rip], 1"
"""How GCC and Clang mark a vague-linkage variable initialized (x86-64), just before the call
that initializes it."""


def _guarded(shape: Sequence[str]) -> bool:
    """Whether each call of the initializer's own function follows a guard being set (since
    the call before it: the arguments are loaded in between)."""
    armed, calls = False, 0
    for instruction in shape:
        if instruction.startswith(_GUARD_SET):
            armed = True
        elif instruction == "call ":
            if not armed:
                return False
            armed, calls = False, calls + 1
    return calls > 0


@dataclass(frozen=True)
class FirstReaching:
    """A ``walk_initializers`` depth: each initializer as a read walks it (its own code), in
    order, up to the first that no guard marks whose walk reaches an import outside ``known``
    (all of them when none does). The walks before it are those of the whole read, so what
    they say is what the read's initializers say: a question that one such initializer
    answers (``initializers_build_state``) needs no more of libtorch_cpu.so's 376."""

    known: frozenset[str]

    def met(self, walk: _Walk) -> bool:
        guarded = walk.complete and _guarded(walk.shape)
        return not guarded and not walk.reaches <= self.known

    def met_by(self, reach: InitializerReach) -> bool:
        """``met`` by the walk whose reach this is."""
        return not reach.guarded and not reach.reaches <= self.known


@dataclass(frozen=True)
class OwnCodePart:
    """A ``walk_initializers`` depth: each initializer's own code, as ``False`` walks it, for
    every ``parts``th initializer from the ``part``th, on that share of the budget (the parts
    may be walked by several processes; ``joined_parts`` orders them). Together they are the
    whole walk: a function's walk is the same wherever it is decoded, and parts within their
    shares decode less than the budget together, so the whole walk would not run out of it
    either. A part that spends its share raises ``OverBudget``: take the whole walk then."""

    part: int
    parts: int


class OverBudget(Exception):
    """A part of a walk (``OwnCodePart``) spent its share of the budget."""


Depth = bool | Sequence[int] | FirstReaching | OwnCodePart
"""How far ``walk_initializers`` walks: every initializer whole (True), or its own code
(False), those at some positions whole, a prefix (``FirstReaching``), or its own code for a
part of the array (``OwnCodePart``)."""


def _own_code(view: CodeView, parts: int = 1) -> _Functions:
    """A walk of each initializer's own code, budgeted for every initializer of the library
    (``OWN_CODE_INSTRUCTIONS``), or a ``parts``th of that."""
    budget = max(MAX_LIBRARY_INSTRUCTIONS, OWN_CODE_INSTRUCTIONS * len(view.initializers))
    return _Functions(view, SHAPE_PREFIX, budget // parts)


def _own_code_part(view: CodeView, depth: OwnCodePart) -> tuple[InitializerReach, ...]:
    """The part's initializers, each walked in its own code (see ``OwnCodePart``)."""
    part, parts = depth.part, depth.parts
    functions = _own_code(view, parts)
    walks = [functions.reach(address, deep=False) for address in view.initializers[part::parts]]
    if functions.left <= 0:
        raise OverBudget(f"part {part} of {parts} of {len(view.initializers)} initializers")
    return _results(view, walks)


def joined_parts(parts: Sequence[tuple[InitializerReach, ...]]) -> tuple[InitializerReach, ...]:
    """The whole walk from its parts (``OwnCodePart``), each given in order."""
    joined: list[InitializerReach] = []
    for index in range(max(map(len, parts), default=0)):
        joined += (part[index] for part in parts if index < len(part))
    return tuple(joined)


def walk_initializers(view: CodeView, deep: Depth = True) -> tuple[InitializerReach, ...]:
    """Each initializer's reach, in the view's order (empty for other machines). Not ``deep``:
    each initializer's own code and the stubs it calls (what its shape and strings need; a
    fraction of the work), ``complete`` False where a call was left unfollowed. Positions in
    the initializer array: those initializers only, walked whole, in the order given (none
    when the array is shorter: the file is not the one read before)."""
    if view.machine not in WALKED_MACHINES or not view.initializers:
        return ()
    if isinstance(deep, FirstReaching):
        shallow, walks = _own_code(view), []
        for address in view.initializers:
            walks.append(shallow.reach(address, deep=False))
            if deep.met(walks[-1]):
                break
        return _results(view, walks)
    if isinstance(deep, OwnCodePart):
        return _own_code_part(view, deep)
    if not isinstance(deep, bool):
        if any(not 0 <= position < len(view.initializers) for position in deep):
            return ()
        whole = _Functions(view)
        return _results(view, [whole.reach(view.initializers[position]) for position in deep])
    functions = _Functions(view) if deep else _own_code(view)
    return _results(view, [functions.reach(address, deep) for address in view.initializers])


def _results(view: CodeView, walks: Sequence[_Walk]) -> tuple[InitializerReach, ...]:
    """The walks' reaches, naming the functions they call in one question to the file's
    symbol table (a big library's holds hundreds of thousands)."""
    wanted = frozenset(address for walk in walks for address in walk.told_callees())
    names = view.function_names(wanted) if wanted else {}
    return tuple(walk.result(view, names) for walk in walks)
