"""Plugins: which input files are the recipe's plugins and which file is each one's host, and
BT128, a plugin its host cannot open. Pure.

A host opens a plugin with ``dlopen`` from one folder (the recipe's ``plugin-folder``), after
it has loaded its own closure: the plugin's NEEDED entries are matched against those objects'
names first (``loaders.closure``, ``loaded``), and symbols it leaves undefined bind against
them when the host is in the global scope (``Subject.scopes``). What the folder, the machine
and the class of the file decide is judged here; a dependency neither the host's closure nor
the plugin's RUNPATH finds is BT107/BT109/BT112 on the plugin, like any file's.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence

from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.common import base_name
from buildtool.linkage.checks.policy import LinkagePolicy, PluginRule
from buildtool.linkage.checks.subject import Plugin, Subject
from buildtool.linkage.inputs.collect import BinaryFile, InputSet


def _is_host(binary: BinaryFile, rule: PluginRule) -> bool:
    facts = binary.facts
    if facts is None or facts.file_type != "shared":
        return False
    return rule.is_host(binary.location.name) or rule.is_host(facts.soname or "")


def _host(sets: Sequence[InputSet], own: InputSet, rule: PluginRule) -> BinaryFile | None:
    """The host's file: in the plugin's own input first (a build tree, a prefix), else in any
    (the runtime wheel beside an add-on's)."""
    for entry in (own, *sets):
        found = next((b for b in entry.files if _is_host(b, rule)), None)
        if found is not None:
            return found
    return None


def find_plugins(sets: Sequence[InputSet], policy: LinkagePolicy) -> tuple[Plugin, ...]:
    """Every input file the recipe declares as a plugin, with its host."""
    if not policy.plugins:
        return ()
    found = []
    for entry in sets:
        for binary in entry.files:
            rule = policy.plugin_by_file(binary.location.name)
            if rule is not None and binary.facts is not None:
                found.append(Plugin(binary, rule, _host(sets, entry, rule)))
    return tuple(found)


def _folder(subject: Subject, binary: BinaryFile) -> str:
    """Where ``binary`` lies once installed, for comparing with another file of its input:
    its install folder (a build tree's install scripts), else its folder."""
    return subject.install_folder(binary) or str(binary.location.parent)


def _where(subject: Subject, plugin: Plugin, host: BinaryFile) -> str:
    """The plugin's folder relative to its host's, as installed when both are installed."""
    installed = subject.install_folder(plugin.binary), subject.install_folder(host)
    if all(installed):
        return posixpath.relpath(str(installed[0]), str(installed[1]))
    return posixpath.relpath(str(plugin.binary.location.parent), str(host.location.parent))


def _shown(relative: str) -> str:
    return "its host's own folder" if relative == "." else f"{relative}/ from its host's folder"


def _misplaced(subject: Subject, plugin: Plugin, host: BinaryFile) -> Finding | None:
    where = _where(subject, plugin, host)
    if where == plugin.rule.folder:
        return None
    return Finding(
        "BT128",
        plugin.binary.display,
        f"lies in {_shown(where)}, where {base_name(host)} does not look: it opens its plugins "
        f"from {_shown(plugin.rule.folder)} (the recipe's plugin-folder)",
        f"{base_name(host)} in {_folder(subject, host)}, {base_name(plugin.binary)} in "
        f"{_folder(subject, plugin.binary)}",
    )


def _foreign(subject: Subject, plugin: Plugin, host: BinaryFile) -> Finding | None:
    mine, theirs = subject.facts(plugin.binary), subject.facts(host)
    fields = ("format", "machine", "elf_class", "little_endian")
    if all(getattr(mine, name) == getattr(theirs, name) for name in fields):
        return None
    return Finding(
        "BT128",
        plugin.binary.display,
        f"is built for {mine.machine} ({mine.elf_class}-bit), its host {base_name(host)} for "
        f"{theirs.machine} ({theirs.elf_class}-bit): the host cannot open it",
        "ld.so skips a file of another machine or class: dlopen with its path fails ('cannot "
        "open shared object file')",
    )


def check_plugins(subject: Subject) -> Iterator[Finding]:
    """BT128 for each plugin whose host is among the inputs."""
    for plugin in subject.plugins:
        if plugin.host is None:
            continue
        foreign = _foreign(subject, plugin, plugin.host)
        if foreign is not None:
            yield foreign
            continue
        misplaced = _misplaced(subject, plugin, plugin.host)
        if misplaced is not None:
            yield misplaced
