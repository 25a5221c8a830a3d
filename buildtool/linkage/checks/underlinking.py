"""Underlinked libraries (BT117): undefined symbols that only a library loading them defines.

ld.so binds an undefined symbol against every object of the load's scope, not just the file's
own NEEDED closure, so a library that uses ``runtime_version`` without NEEDing the runtime loads
fine as a dependency of the runtime, and fails with "undefined symbol" when anything opens it on
its own (dlopen, ctypes, a program linking it). ELF only: a Mach-O library is linked two-level
(each import names its library; ld64 refuses an undefined symbol unless told
``-undefined dynamic_lookup``, whose flat lookups are the Python-extension idiom and not judged)
and a PE import always names its DLL, so neither can rely on its loader this way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import PurePosixPath

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import listed
from buildtool.linkage.checks.subject import Subject
from buildtool.linkage.checks.symbols import unresolved_in
from buildtool.linkage.inputs.collect import BinaryFile
from buildtool.linkage.loaders.loaded import Closure
from buildtool.linkage.loaders.symbols import is_satisfied

IN_EVERY_PROCESS = re.compile(r"(libc\.so|libc\.musl-|ld-linux|ld64\.so|ld-musl-|ld\.so)")
"""SONAMEs of the C library and the dynamic loader: every dynamically linked process has loaded
them before it opens anything, so relying on them cannot fail a load."""


def _counts(name: str, shared: bool) -> bool:
    """Whether relying on ``definer`` makes a library fail when opened alone."""
    if not shared:
        return False  # the executable's own symbols: plugins are written against them
    return not IN_EVERY_PROCESS.match(name)


def _definer(subject: Subject, key: str, context: Closure, own: Closure) -> str | None:
    """The name of the first object of ``context`` outside ``own`` that defines ``key`` and
    counts (``_counts``), in ld.so's scope order; None when none does, or the first definer
    is one that does not count."""
    for scope in (context, *subject.preloaded(context)):
        for path in scope.load_order:
            facts = scope.objects[path]
            if path in own.objects or facts.platform:
                continue
            if is_satisfied(key, subject.definitions(path, facts)):
                name = facts.soname or PurePosixPath(path).name
                return name if _counts(name, facts.file_type == "shared") else None
    return None


def _definers(
    subject: Subject, keys: Iterable[str], contexts: Sequence[Closure], own: Closure
) -> dict[str, list[str]]:
    """Library to link -> the keys it defines for the loaders' contexts (the first that has)."""
    by_library: dict[str, list[str]] = {}
    for key in sorted(keys):
        for context in contexts:
            library = _definer(subject, key, context, own)
            if library is not None:
                by_library.setdefault(library, []).append(key)
                break
    return by_library


def _loaders(subject: Subject, binary: BinaryFile, own: Closure) -> list[Closure]:
    return [c for c in subject.contexts(binary) if c.root != own.root]


def _underlinked(subject: Subject, binary: BinaryFile) -> Finding | None:
    own = subject.closures.get(binary.location)
    if own is None or own.missing:
        return None  # a NEEDED not found is its own finding; its symbols cannot be judged
    contexts = _loaders(subject, binary, own)
    alone = unresolved_in(subject, subject.facts(binary), own) if contexts else set()
    by_library = _definers(subject, alone, contexts, own) if alone else {}
    if not by_library:
        return None
    names = sorted(by_library)
    count = sum(len(keys) for keys in by_library.values())
    loader = PurePosixPath(contexts[0].root).name
    return Finding(
        "BT117",
        binary.display,
        f"uses {count} symbol{'s' if count > 1 else ''} that only {', '.join(names)} "
        "defines, which it does not NEED: opening it on its own fails",
        "; ".join(f"{listed(by_library[name])} from {name}" for name in names)
        + f" (found when {loader} loads it; link {', '.join(names)})",
    )


def check_underlinked_libraries(subject: Subject) -> Iterator[Finding]:
    """BT117 for every ELF library with a SONAME. Extension modules (no SONAME) are opened by
    the interpreter, whose symbols they may use; and what the interpreter defines (its
    executable's or libpython's exports, all ``symbols.PYTHON_API``) never counts."""
    for binary in subject.shared:
        facts = subject.facts(binary)
        if facts.format == "elf" and facts.soname is not None:
            finding = _underlinked(subject, binary)
            if finding:
                yield finding
