"""What a Python extension module's init function (``PyInit_<name>``) does when the interpreter
imports it: the Python names and keys its code addresses (pybind11's registry key) and the C++
type records it fills, found by the same decoding as the initializer walk (``code_walk``)."""

from __future__ import annotations

import re
from typing import Final

from buildtool.linkage.binaries.code_walk import WALKED_MACHINES, CodeView, _Function, _Functions
from buildtool.linkage.binaries.facts import ModuleInit, TypeRecord

ENTRY_DEPTH: Final = 3
"""Calls followed from a module's init function: the binding code is a few calls in
(``PyInit_x`` -> ``pybind11_init_x`` -> the project's ``bind_*`` -> ``class_``'s constructor)."""
ENTRY_INSTRUCTIONS: Final = 40_000
"""Instructions decoded from a module's init function, at most."""
_DUNDER = re.compile(r"__\w+__")
"""The strings a module's init walk keeps: Python names and keys (``__init__``, pybind11's
``__pybind11_internals_v4_..._``), not every message its code can print."""
_TYPE_NAME = re.compile(r"(?:N|St|\d)[\w]*")
"""A type's name as its ``std::type_info`` keeps it (Itanium: ``5Point``, ``N3geo5PointE``)."""


def _registrations(
    functions: _Functions, function: _Function
) -> tuple[list[str], list[TypeRecord]]:
    """The strings a function's code addresses, and each type record it fills: a type's
    ``std::type_info`` addressed, then a byte of flags stored or or-ed into the record on the
    stack (before the next type's)."""
    events: list[tuple[int, int, str | int]] = []
    strings: list[str] = []
    for index, address, loaded in function.constants:
        target = functions.view.pointer(address) if loaded else address
        found = functions.string(target) if target else None
        if found is not None:
            strings.append(found[1])
            if found[0].startswith("*") and _TYPE_NAME.fullmatch(found[1]):
                events.append((index, 0, found[1]))
    events += [(index, 1, value) for index, value in function.flags]
    records: list[TypeRecord] = []
    pending: str | None = None
    for _index, kind, value in sorted(events, key=lambda event: (event[0], event[1])):
        if kind == 0:
            pending = str(value)
        elif pending is not None:
            records.append(TypeRecord(pending, int(value)))
            pending = None
    return strings, records


def walk_entry(view: CodeView, address: int) -> ModuleInit:
    """What a Python extension module's init function (``PyInit_<name>``) does, breadth first
    ``ENTRY_DEPTH`` calls deep: the dunder strings its code addresses (pybind11's registry key
    among them) and the type records it fills (x86-64's stack stores; none on aarch64)."""
    if view.machine not in WALKED_MACHINES:
        return ModuleInit((), ())
    functions = _Functions(view)
    functions.left = ENTRY_INSTRUCTIONS
    queue, seen = [(address, 0)], {address}
    strings: list[str] = []
    records: list[TypeRecord] = []
    while queue:
        current, depth = queue.pop(0)
        function = functions.at(current)
        found, filled = _registrations(functions, function)
        strings += found
        records += filled
        for target, is_call in function.calls:
            inside = current <= target < function.end
            if not inside and target not in seen and depth + is_call <= ENTRY_DEPTH:
                seen.add(target)
                queue.append((target, depth + is_call))
    keys = (text for text in strings if _DUNDER.fullmatch(text))
    return ModuleInit(tuple(dict.fromkeys(keys)), tuple(dict.fromkeys(records)))
