"""An extension module's interpreter symbols against the CPython it is built for.

A module built for CPython 3.12 and shipped as 3.11's (a wrong file in a wheel, a stale build
folder) imports on 3.12 and fails on 3.11 with "undefined symbol:
PyUnstable_Code_NewWithPosOnlyArgs". ``checks.symbols`` takes every ``Py*`` name on trust (the
interpreter provides them); this check judges them against the release the file's name or its
wheel's tags name (``loaders.cpython_abi``). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import listed
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.inputs.collect import BinaryFile, InputSet
from buildtool.linkage.loaders.cpython_abi import (
    KNOWN,
    CPythonTarget,
    release_read,
    releases_exporting,
    releases_lacking,
    shown_versions,
    stable_abi,
    target_of,
    wheel_interpreter_tags,
)
from buildtool.linkage.loaders.interpreter import is_extension_module

_C_API = re.compile(r"_?Py[A-Z_a-z]")


def _judged(subject: Subject, entry: InputSet) -> list[BinaryFile]:
    """The input's extension modules and, in a wheel, the libraries they load (a
    ``libtorch_python.so`` binds ``Py*`` names against the same interpreter)."""
    modules = [b for b in entry.files if b.facts is not None and is_extension_module(b.facts)]
    if not entry.in_wheel:
        return modules
    loaded: set[str] = set()
    for module in modules:
        closure = subject.closures.get(module.location)
        loaded |= set(closure.objects) if closure else set()
    return [b for b in entry.files if b in modules or str(b.location) in loaded]


def _c_api_needed(subject: Subject, binary: BinaryFile) -> set[str]:
    """The C-API names ``binary`` needs (strong references) that nothing it loads defines."""
    facts = subject.facts(binary)
    names = {key.partition("@")[0] for key in facts.undefined if _C_API.match(key)}
    closure = subject.closures.get(binary.location)
    if closure is None:
        return names
    for path in closure.load_order[1:]:
        if not names:
            break
        names -= subject.defined_among(names, closure.objects[path])
    return names


def _exported_by(names: set[str]) -> str:
    first = sorted(names)[0]
    where = releases_exporting(first)
    return f"{first} is exported by CPython {shown_versions(where)}" if where else (
        f"no CPython {shown_versions(sorted(KNOWN))} exports {first}"
    )  # fmt: skip


def _version_finding(binary: BinaryFile, target: CPythonTarget, names: set[str]) -> Finding | None:
    exported = KNOWN.get(target.version)
    missing = names - exported if exported is not None else set()
    if not missing:
        return None
    release = release_read(target.version)
    return Finding(
        "BT153",
        binary.display,
        f"needs {listed(missing)}, which {target.shown} does not export: importing it fails",
        f"{target.said_by} names {target.shown}; libpython {release} exports "
        f"{len(exported or ())} C-API names, not {'these' if len(missing) > 1 else 'this one'}; "
        f"{_exported_by(missing)} (built for another CPython?)",
    )


def _abi3_lacking(target: CPythonTarget, names: set[str]) -> dict[str, str]:
    """Names some release from the tag's on lacks -> those releases, shown: a release with a
    list by its list; a release after the newest list by the stable ABI (a member counts from
    the release that added it). Releases before the oldest list are not judged."""
    stable = stable_abi() or {}
    newest = max(KNOWN)
    lacking: dict[str, str] = {}
    for name in sorted(names):
        releases = releases_lacking(name, target.version)
        added = stable.get(name)
        if releases:
            lacking[name] = shown_versions(releases)
        elif added is not None and added > target.version > newest:
            lacking[name] = f"{shown_versions([target.version])} (added in {added[0]}.{added[1]})"
    return lacking


def _abi3_findings(binary: BinaryFile, target: CPythonTarget, names: set[str]) -> Iterator[Finding]:
    lacking = _abi3_lacking(target, names)
    if lacking:
        where = "; ".join(f"{name}: {releases}" for name, releases in lacking.items())
        yield Finding(
            "BT153",
            binary.display,
            f"needs {listed(lacking)}, which not every release {target.shown} covers exports: "
            "importing it fails there",
            f"{target.said_by} promises {target.shown}; releases lacking them: {where}",
        )
    stable = stable_abi()
    outside = sorted(n for n in names - set(lacking) if stable is not None and n not in stable)
    if outside:
        yield Finding(
            "BT154",
            binary.display,
            f"needs {listed(outside)}, outside the stable ABI its abi3 tag promises",
            f"{target.said_by}; CPython {shown_versions(sorted(KNOWN))} export "
            f"{'them' if len(outside) > 1 else 'it'}, but no later release has to",
        )


def check_python_abi(subject: Subject) -> Iterator[Finding]:
    for entry in subject.sets:
        tags = wheel_interpreter_tags(PurePosixPath(entry.label).name) if entry.in_wheel else ()
        for binary in _judged(subject, entry):
            if subject.facts(binary).format != "elf":
                continue
            target = target_of(binary.location.name, tags)
            names = _c_api_needed(subject, binary) if target else set()
            if target is None or not names:
                continue
            if target.abi3:
                yield from _abi3_findings(binary, target, names)
            else:
                finding = _version_finding(binary, target, names)
                if finding is not None:
                    yield finding
