"""Link command fragments read the way the linker reads them. Pure.

The fragments are written for the generator's build files (``-Wl,-rpath,"\\$$ORIGIN"`` for
Ninja), so they are unquoted and unescaped first.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence

from buildtool.cmakecheck.codemodel import CmakeTarget, LinkFragment


def unescape(fragment: str) -> str:
    """``-Wl,-rpath,"\\$$ORIGIN"`` -> ``-Wl,-rpath,$ORIGIN``."""
    return fragment.replace('"', "").replace("\\", "").replace("$$", "$")


def linker_options(fragment: str) -> Iterator[str]:
    """The options a fragment hands the linker: ``-Wl,a,b`` gives ``a`` and ``b``;
    ``-Xlinker a`` gives ``a``."""
    words = unescape(fragment).split()
    for index, word in enumerate(words):
        if word.startswith("-Wl,"):
            yield from word[4:].split(",")
        elif word == "-Xlinker" and index + 1 < len(words):
            yield words[index + 1]


@dataclasses.dataclass(frozen=True)
class AsNeededState:
    """``--as-needed`` as the linker tracks it: a current value and a push/pop stack."""

    current: bool
    stack: tuple[bool, ...] = ()

    def after(self, option: str) -> AsNeededState:
        if option in ("--as-needed", "-as-needed"):
            return AsNeededState(True, self.stack)
        if option in ("--no-as-needed", "-no-as-needed"):
            return AsNeededState(False, self.stack)
        if option == "--push-state":
            return AsNeededState(self.current, (*self.stack, self.current))
        if option == "--pop-state" and self.stack:
            return AsNeededState(self.stack[-1], self.stack[:-1])
        return self


def as_needed_per_fragment(fragments: Sequence[LinkFragment], default: bool) -> tuple[bool, ...]:
    """Whether ``--as-needed`` is in effect at each fragment, starting from the toolchain's
    default (Debian's gcc passes ``--as-needed`` before the command's own options)."""
    state = AsNeededState(default)
    result = []
    for item in fragments:
        for option in linker_options(item.fragment):
            state = state.after(option)
        result.append(state.current)
    return tuple(result)


def library_paths(target: CmakeTarget, build_dir: str) -> Iterator[tuple[int, str]]:
    """(fragment index, absolute path) of each library file named on the link line."""
    for index, item in enumerate(target.link):
        text = unescape(item.fragment).strip()
        if item.role == "libraries" and text and not text.startswith("-"):
            yield index, posixpath.normpath(posixpath.join(build_dir, text))


_VERSION_TAIL = re.compile(r"(\.so)(\.[0-9]+)+$")


def unversioned(path: str) -> str:
    """``lib/libfoo.so.0.0.0`` -> ``lib/libfoo.so``: a library with ``VERSION``/``SOVERSION``
    is linked by its real file, while the code model's artifact (and a recipe) name it by its
    link name."""
    return _VERSION_TAIL.sub(r"\1", path)


def linked_file_names(target: CmakeTarget) -> Iterator[str]:
    """Link names of every library on the link line: paths (without a version tail) and
    ``-lname`` (as ``libname.so``)."""
    for item in target.link:
        if item.role != "libraries":
            continue
        for word in unescape(item.fragment).split():
            if word.startswith("-l") and len(word) > 2:
                yield f"lib{word[2:]}.so"
            elif not word.startswith("-"):
                yield unversioned(posixpath.basename(word))


def rpath_entries(target: CmakeTarget) -> tuple[str, ...]:
    """RUNPATH/RPATH entries the link line sets (``-Wl,-rpath,a:b``, ``-rpath=a``)."""
    entries: list[str] = []
    for item in target.link:
        options = list(linker_options(item.fragment))
        for index, option in enumerate(options):
            value = None
            if option in ("-rpath", "--rpath", "-R") and index + 1 < len(options):
                value = options[index + 1]
            elif option.startswith(("-rpath=", "--rpath=")):
                value = option.split("=", 1)[1]
            if value is not None:
                entries += value.split(":")
    return tuple(entries)


def artifact_index(targets: Sequence[CmakeTarget]) -> dict[str, str]:
    """Absolute artifact path -> target name."""
    return {path: target.name for target in targets for path in target.artifacts}


def linked_targets(target: CmakeTarget, build_dir: str, artifacts: Mapping[str, str]) -> list[str]:
    """Names of the build tree's targets on ``target``'s link line, in order."""
    paths = [path for _index, path in library_paths(target, build_dir)]
    found = [artifacts.get(path) or artifacts.get(unversioned(path)) for path in paths]
    # libraries from outside the build tree's targets (system, ExternalProject) are not targets
    return list(dict.fromkeys(name for name in found if name and name != target.name))


def static_archives(target: CmakeTarget, build_dir: str) -> Iterator[tuple[int, str]]:
    """(fragment index, absolute path) of each static archive (``.a``) on the link line."""
    for index, path in library_paths(target, build_dir):
        if path.endswith(".a"):
            yield index, path


def keeps_archives_private(target: CmakeTarget, archive: str) -> str | None:
    """The link option that keeps ``archive``'s code out of the library's exports or binds the
    library's own calls to it (``--exclude-libs`` naming it or ``ALL``, ``-Bsymbolic``, a
    version script, which decides the exports itself); None when its symbols are exported."""
    options = [option for item in target.link for option in linker_options(item.fragment)]
    for index, option in enumerate(options):
        name, _, value = option.partition("=")
        if name in ("--exclude-libs", "-exclude-libs"):
            value = value or (options[index + 1] if index + 1 < len(options) else "")
            names = set(value.replace(":", ",").split(","))  # ld takes both separators
            if "ALL" in names or posixpath.basename(archive) in names:
                return f"--exclude-libs,{value}"
        elif name in ("-Bsymbolic", "-Bsymbolic-functions", "--version-script"):
            return option
    return None
