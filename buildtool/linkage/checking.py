"""Checking what verify-linkage read: resolve every NEEDED closure, run the checks, make the
report (``verify_inputs``). The heavy half of the pipeline (``verify``): the checks, loaders
and reports it imports take about a third of a second, which ``verify`` spends while the
read's workers are busy."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import cast

from buildtool.errors import InputError
from buildtool.linkage.binaries import BinaryFacts, Decoder, InitializerReach
from buildtool.linkage.binaries.code_walk import FirstReaching
from buildtool.linkage.binaries.facts import FORMAT_NAMES, MalformedBinary
from buildtool.linkage.checks.catalogue import Finding, finding_order
from buildtool.linkage.checks.duplicates import initializers_to_read
from buildtool.linkage.checks.growth import (
    Baseline,
    BaselineSize,
    Growth,
    growth_findings,
    match_baseline,
    unmatched,
)
from buildtool.linkage.checks.plugins import find_plugins
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.checks.subject import (
    FunctionNames,
    HostLookup,
    Plugin,
    Subject,
    digests_as_names,
)
from buildtool.linkage.checks.suite import ASIDE, Found, findings_of, run_checks
from buildtool.linkage.inputs.collect import (
    BinaryFile,
    InputSet,
)
from buildtool.linkage.inputs.decoding import release_kept
from buildtool.linkage.inputs.forked import Forked, can_fork
from buildtool.linkage.inputs.lookups import FunctionNameLookup, ImportLookup, InitializerLookup
from buildtool.linkage.inputs.pool import available_cpus, wait_for_workers
from buildtool.linkage.loaders.closure import Environment, filesystem_lookup, resolve_closure
from buildtool.linkage.loaders.glibc import FactsLookup, LdSoCache, load_ld_so_cache
from buildtool.linkage.loaders.interpreter import interpreter_closure, is_extension_module
from buildtool.linkage.loaders.loaded import Closure
from buildtool.linkage.loaders.platform import (
    Platform,
    host,
    host_platform,
    load_policies,
    platform_for_binaries,
    platform_for_tags,
    wheel_platform_tags,
)
from buildtool.linkage.report.graph import LinkGraph, link_graph
from buildtool.linkage.report.model import Report, SizeEntry

SITE = PurePosixPath("/.site-packages")
"""Where wheel members lie for resolution: every wheel given is installed into one place."""


def _relocate(inputs: InputSet) -> InputSet:
    if not inputs.in_wheel:
        return inputs
    files = tuple(
        dataclasses.replace(b, location=SITE / b.location.relative_to("/")) for b in inputs.files
    )
    folders = tuple(SITE / folder.relative_to("/") for folder in inputs.dll_directories)
    return dataclasses.replace(inputs, files=files, dll_directories=folders, root=SITE)


def _read_once(inputs: Sequence[InputSet]) -> list[InputSet]:
    """The inputs without the files an earlier input on disk already holds (``build`` and
    ``build/plugins`` given together): one file read twice would be two copies of itself."""
    seen: set[PurePosixPath] = set()
    kept = []
    for entry in inputs:
        if entry.in_wheel:
            kept.append(entry)  # members lie in the wheel: two wheels' same name is a real clash
            continue
        files = tuple(binary for binary in entry.files if binary.location not in seen)
        seen.update(binary.location for binary in files)
        kept.append(dataclasses.replace(entry, files=files))
    return kept


def _malformed(binary: BinaryFile) -> Finding:
    assert binary.malformed is not None
    problem = binary.malformed
    reason = problem.reason
    if problem.format_name != "ELF":
        reason = f"{reason} (malformed {problem.format_name})"
    return Finding("BT100", binary.display, reason, f"offset {problem.offset:#x}")


def files_by_format(files: Sequence[BinaryFile]) -> dict[str, int]:
    """How many well-formed files of each format (``FORMAT_NAMES``), most first."""
    counts: dict[str, int] = {}
    for binary in files:
        if binary.facts is not None:
            name = FORMAT_NAMES.get(binary.facts.format, binary.facts.format)
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


class _InitializerReads:
    """Initializers as the facts hold them, read again when a sparse read left them unread,
    and with those of some shapes walked whole when the facts hold only their own code (each
    read once; none when the file cannot be read any more): the shell's ``Initializers``,
    ``InitializersUntil`` and ``DeepInitializers``."""

    def __init__(self, reader: InitializerLookup) -> None:
        self._reader = reader
        self._read: dict[str, tuple[InitializerReach, ...]] = {}
        self._whole: dict[str, dict[int, InitializerReach]] = {}
        self._answers: dict[tuple[str, frozenset[str]], tuple[InitializerReach, ...]] = {}

    def _again(
        self, binary: BinaryFile, deep: Sequence[int] | FirstReaching | None = None
    ) -> tuple[InitializerReach, ...]:
        try:
            return self._reader(binary.source, deep) if binary.source else ()
        except InputError:
            return ()

    def initializers(self, binary: BinaryFile) -> tuple[InitializerReach, ...]:
        held = binary.facts.initializers if binary.facts is not None else ()
        if held is None and binary.display not in self._read:
            self._read[binary.display] = self._again(binary)
        return self._read.get(binary.display, held or ())

    def until(self, binary: BinaryFile, known: frozenset[str]) -> tuple[InitializerReach, ...]:
        held = binary.facts.initializers if binary.facts is not None else ()
        if held is not None or binary.display in self._read:
            return self.initializers(binary)
        depth = FirstReaching(known)
        found = self._again(binary, depth)
        if not any(map(depth.met_by, found)):  # read to the end: what a whole read holds
            self._read[binary.display] = found
        return found

    def deep(
        self, binary: BinaryFile, shapes: frozenset[str], later: frozenset[str]
    ) -> tuple[InitializerReach, ...]:
        # one tuple per question, however often asked: the checks derive things from it once
        key = (binary.display, shapes)
        if key not in self._answers:
            self._answers[key] = self._walked_whole(binary, shapes, later)
        return self._answers[key]

    def _walked_whole(
        self, binary: BinaryFile, shapes: frozenset[str], later: frozenset[str]
    ) -> tuple[InitializerReach, ...]:
        held = self.initializers(binary)
        walked = self._whole.setdefault(binary.display, {})
        positions = _unwalked(held, shapes)
        if positions - walked.keys():  # read again once, for the shapes asked later too
            missing = sorted((positions | _unwalked(held, later)) - walked.keys())
            found = self._again(binary, missing)
            if len(found) != len(missing):  # the file changed since: as held
                found = tuple(held[position] for position in missing)
            walked.update(zip(missing, found, strict=True))
        return tuple(
            walked[position] if position in positions else init
            for position, init in enumerate(held)
        )


def _read_ahead(subject: Subject, reader: InitializerLookup, jobs: int | None) -> None:
    """Start reading the initializers that the duplicate-code check reads again in a child,
    while this process runs the other checks first (``suite.RUN_LAST``): reading those of
    tensorflow-cpu's libtensorflow_cc.so.2 again (751 MB inflated, 4,531 initializers walked)
    took 3.7 s of its checks, on one CPU."""
    sources = [b.source for b in initializers_to_read(subject) if b.source is not None]
    if sources:
        wait_for_workers()  # the read's workers exit on threads: none may run at a fork
        reader.read_ahead(sources, available_cpus() if jobs is None else jobs)


ASIDE_MIN_KEYS = 20_000
"""Undefined symbols (over every ELF file) from which the ``ASIDE`` checks run in a child of their
own. Measured in paired runs: torch's wheel (34k keys, 0.1 s of checks) 0.98x with the child;
its torch/lib (7.7k keys, 25 ms) 1.01x, the fork and its copied pages costing more."""


def _run_checks(subject: Subject, jobs: int | None) -> tuple[Finding, ...]:
    """``run_checks``, with the ``ASIDE`` checks in a child forked meanwhile where one may be
    and they cost enough (it shares the subject as it is; a child that fails leaves them to
    this process, which gets the same findings)."""
    child = None
    if _elf_undefined_keys(subject) >= ASIDE_MIN_KEYS:
        wait_for_workers()  # the read's workers exit on threads: none may run at a fork
        if can_fork(available_cpus() if jobs is None else jobs):
            child = Forked.start(lambda: findings_of(subject, ASIDE), dict)
    if child is None:
        return run_checks(subject)
    try:
        return run_checks(subject, lambda: cast("Found | None", child.result()))
    finally:
        child.end()


def _elf_undefined_keys(subject: Subject) -> int:
    """What the undefined-symbol check weighs: the ELF files' undefined keys (it binds a
    Mach-O or PE file's imports elsewhere)."""
    facts = (subject.facts(binary) for binary in subject.files)
    return sum(len(found.undefined) for found in facts if found.format == "elf")


def _unwalked(held: Sequence[InitializerReach], shapes: frozenset[str]) -> set[int]:
    """Positions of the initializers of ``shapes`` walked in their own code only."""
    return {p for p, init in enumerate(held) if init.shape in shapes and not init.complete}


def _function_names(reader: FunctionNameLookup) -> FunctionNames:
    """Names for duplicate-code findings, read again from the files; the digests themselves
    when a file cannot be read any more (changed or gone since)."""

    def names(binary: BinaryFile, digests: frozenset[int]) -> Mapping[int, str]:
        if binary.source is not None:
            try:
                return reader(binary.source, digests)
            except InputError:
                pass
        return digests_as_names(binary, digests)

    return names


def _facts_lookup(
    files: Sequence[BinaryFile],
    inputs: Sequence[InputSet],
    names: Sequence[str],
    decoder: Decoder = "fast",
) -> FactsLookup:
    known: dict[str, BinaryFacts | None] = {str(b.location): b.facts for b in files}
    for entry in inputs:
        for alias, target in entry.aliases.items():
            known[str(alias)] = known.get(str(target))
    disk = filesystem_lookup(names, decoder)

    def read(path: str) -> BinaryFacts | None:
        path = posixpath.normpath(path)
        if path in known:
            return known[path]
        if path.startswith(f"{SITE}/"):
            return None  # inside the wheels: only their own members exist there
        try:
            return disk(path)
        except MalformedBinary:
            return None  # a broken system file is not the input's fault

    return read


def _size_entries(subject: Subject) -> tuple[SizeEntry, ...]:
    files, policy, copies = subject.files, subject.policy, subject.identical_copies
    entries = []
    for binary in files:
        facts = binary.facts
        if facts is None or facts.file_type != "shared":
            continue
        rule = policy.library_by_file(binary.location.name)
        entries.append(
            SizeEntry(
                binary.display,
                facts.file_size,
                facts.code_size,
                facts.exported_count,
                rule.size_budget if rule else None,
                copies[binary.display].display if binary.display in copies else None,
            )
        )
    return tuple(entries)


def _closures(
    inputs: Sequence[InputSet], read: FactsLookup, envs: Mapping[str, Environment]
) -> dict[PurePosixPath, Closure]:
    closures = {}
    for entry in inputs:
        env = envs[entry.label]
        for binary in entry.files:
            if binary.facts is not None:
                location = str(binary.location)
                closures[binary.location] = resolve_closure(location, binary.facts, read, env)
    return closures


def _plugin_closures(
    plugins: Sequence[Plugin],
    closures: Mapping[PurePosixPath, Closure],
    read: FactsLookup,
    envs: Mapping[str, Environment],
    labels: Mapping[PurePosixPath, str],
) -> dict[PurePosixPath, Closure]:
    """Each plugin's closure as its host opens it: with the host's closure loaded already (a
    plugin built for another machine than its host is resolved alone: BT128 says why)."""
    found = {}
    for plugin in plugins:
        facts, host = plugin.binary.facts, plugin.host
        if facts is None or host is None or host.facts is None:
            continue
        if (facts.machine, facts.elf_class) != (host.facts.machine, host.facts.elf_class):
            continue
        location = plugin.binary.location
        env = envs[labels[location]]
        loaded = _as_loaded(closures[host.location], read)
        found[location] = resolve_closure(str(location), facts, read, env, loaded=loaded)
    return found


def _as_loaded(host: Closure, read: FactsLookup) -> Closure:
    """The host's closure as a process that runs the host has it: a NEEDED the host's own
    search does not find (its finding says so) was loaded all the same, or the host would not
    run; the file of that name beside the requester stands for it."""
    objects = dict(host.objects)
    order, names = list(host.load_order), dict(host.names)
    for edge in host.missing:
        path = posixpath.join(posixpath.dirname(edge.requester), edge.needed)
        facts = read(path) if edge.needed not in names else None
        if facts is not None:
            objects.setdefault(path, facts)
            order.append(path)
            names[edge.needed] = path
    if len(order) == len(host.load_order):
        return host
    return dataclasses.replace(host, load_order=tuple(order), objects=objects, names=names)


def _interpreters(
    inputs: Sequence[InputSet], read: FactsLookup, envs: Mapping[str, Environment]
) -> dict[str, Closure]:
    """Each extension module's path -> the interpreter's closure (one per input, class and
    machine)."""
    made: dict[tuple[str, int, str], Closure] = {}
    interpreters: dict[str, Closure] = {}
    for entry in inputs:
        for binary in entry.files:
            facts = binary.facts
            if facts is None or not is_extension_module(facts):
                continue
            key = (entry.label, facts.elf_class, facts.machine)
            if key not in made:
                made[key] = interpreter_closure(facts, read, envs[entry.label])
            interpreters[str(binary.location)] = made[key]
    return interpreters


def _platforms(inputs: Sequence[InputSet]) -> dict[str, Platform]:
    """Each input's platform: its wheel tag's; for an input without a tag, the one its ELF
    files were built for when that is not this machine (a cross-built tree), else this
    machine's."""
    data, here = load_policies(), host()
    mine = host_platform(data, here)
    found: dict[str, Platform] = {}
    for entry in inputs:
        tags = wheel_platform_tags(Path(entry.label).name) if entry.in_wheel else ()
        built_for = (b.facts for b in entry.files if b.facts is not None)
        target = (
            platform_for_tags(tags, data, here)
            or platform_for_binaries(built_for, data, here)
            or mine
        )
        if target is not None:
            found[entry.label] = target
    return found


def _environments(
    inputs: Sequence[InputSet],
    platforms: Mapping[str, Platform],
    ld_library_path: Sequence[str] | None,
) -> dict[str, Environment]:
    """What ld.so takes from the system, per input: this machine's cache and folders, except
    for a wheel whose tag names a policy (manylinux, musllinux) or another platform (an aarch64
    or musl wheel here), which gets its platform's libraries only: a wheel's verdict does not
    depend on what the checking machine happens to have installed."""
    cache = load_ld_so_cache()
    # PE roots search every input's os.add_dll_directory folders: the packages share a process
    dlls = tuple(str(folder) for entry in inputs for folder in entry.dll_directories)
    envs = {}
    for entry in inputs:
        target = platforms.get(entry.label)
        if target is not None and target.foreign:
            env = Environment(system_dirs=(), platform=target, dll_directories=dlls)
        elif target is not None and target.portable:
            # a manylinux/musllinux wheel gets the same verdict here as on a slim container
            env = Environment(cache, None, ld_library_path, target, dlls, policy_only=True)
        elif target is not None and target.tag != "host":
            env = Environment(cache, None, ld_library_path, target, dlls)
        else:
            env = Environment(cache=cache, ld_library_path=ld_library_path, dll_directories=dlls)
        envs[entry.label] = env
    return envs


def _on_this_machine(cache: LdSoCache) -> HostLookup:
    """Where this machine's ld.so.cache has a library of a file's class and machine."""

    def find(name: str, facts: BinaryFacts) -> str | None:
        found = cache.paths(name, facts.elf_class, facts.machine)
        return found[0] if found else None

    return find


def _compare(
    sizes: tuple[SizeEntry, ...], policy: LinkagePolicy, baseline: Baseline
) -> tuple[tuple[SizeEntry, ...], tuple[Finding, ...], tuple[BaselineSize, ...]]:
    """Sizes with their baseline entries, BT131 findings, and the libraries gone since."""
    matched = match_baseline([entry.path for entry in sizes], baseline)
    compared = tuple(dataclasses.replace(e, previous=matched.get(e.path)) for e in sizes)
    growths = [Growth(e.path, e.file_size, e.previous) for e in compared if e.previous]
    findings = tuple(growth_findings(growths, policy, baseline.source))
    return compared, findings, unmatched(baseline, matched)


def _sorted(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    return tuple(sorted(findings, key=finding_order))


def _distributions(subject: Subject) -> dict[PurePosixPath, str]:
    """Each file's distribution, where a wheel's or a RECORD's metadata names it."""
    names: dict[PurePosixPath, str] = {}
    for binary in subject.files:
        origin = subject.origin_of(binary)
        if origin is not None and origin.distribution is not None:
            names[binary.location] = origin.distribution.name
    return names


def verify_inputs(
    inputs: Sequence[InputSet],
    policy: LinkagePolicy,
    ld_library_path: Sequence[str] | None = None,
    *,
    decoder: Decoder = "fast",
    baseline: Baseline | None = None,
    with_graph: bool = False,
    jobs: int | None = None,
) -> Report:
    """Resolve and check already-read inputs (``with_graph``: the link graph the HTML page
    draws, built only for it); ``decoder`` decodes the files they need; with a
    baseline, compare the sizes with it. ``jobs``: processes that may read files meanwhile
    (default: every CPU available; 1 reads them in this process)."""
    relocated = [_relocate(entry) for entry in _read_once(inputs)]
    every = [binary for entry in relocated for binary in entry.files]
    good = [binary for binary in every if binary.facts is not None]
    malformed = [_malformed(b) for b in every if b.malformed is not None]
    platforms = _platforms(relocated)
    envs = _environments(relocated, platforms, ld_library_path)
    read = _facts_lookup(good, relocated, policy.registration_names, decoder)
    names = {b.location.name for b in good} | {a.name for e in relocated for a in e.aliases}
    closures = _closures(relocated, read, envs)
    plugins = find_plugins(relocated, policy)
    labels = {binary.location: entry.label for entry in relocated for binary in entry.files}
    closures.update(_plugin_closures(plugins, closures, read, envs, labels))
    reader = FunctionNameLookup()
    init_reader = InitializerLookup()
    import_reader = ImportLookup()
    reads = _InitializerReads(init_reader)
    try:
        subject = Subject(
            files=tuple(good),
            closures=closures,
            policy=policy,
            in_input=frozenset(names),
            function_names=_function_names(reader),
            sets=relocated,
            platforms=platforms,
            initializers=reads.initializers,
            initializers_until=reads.until,
            deep_initializers=reads.deep,
            interpreters=_interpreters(relocated, read, envs),
            on_this_machine=_on_this_machine(load_ld_so_cache()),
            plugins=plugins,
            imports_of=import_reader,
        )
        _read_ahead(subject, init_reader, jobs)
        checked = _run_checks(subject, jobs)
    finally:
        reader.close()
        init_reader.close()
        import_reader.close()
        release_kept()  # the wheel members a read kept for these readers
    sizes = _size_entries(subject)
    gone: tuple[BaselineSize, ...] = ()
    if baseline is not None:
        sizes, growth, gone = _compare(sizes, policy, baseline)
        checked = _sorted(checked + growth)
    aliases = {alias: target for entry in relocated for alias, target in entry.aliases.items()}
    graph = (
        link_graph(good, closures, aliases, policy, checked, distributions=_distributions(subject))
        if with_graph
        else LinkGraph()
    )
    return Report(
        inputs=tuple(entry.label for entry in inputs),
        recipe=policy.source,
        recipe_reason=policy.source_reason,
        files_checked=len(every),
        findings=tuple(malformed) + checked,
        sizes=sizes,
        hardening=policy.hardening,
        graph=graph,
        baseline=baseline.source if baseline else "",
        gone=gone,
        files_by_format=tuple(files_by_format(every).items()),
    )
