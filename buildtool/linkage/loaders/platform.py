"""The platform an ELF wheel targets, from its tag and the manylinux/musllinux policies.

A wheel tagged ``manylinux_2_17_aarch64`` runs on any aarch64 glibc 2.17+ system, whatever the
machine that checks it: what counts is what that platform provides (its policy's libraries, the
symbol versions it allows), never this machine's ld.so.cache. The policies are the data that
auditwheel ships (``auditwheel/policy/manylinux-policy.json`` and ``musllinux-policy.json``, PEP
600 and PEP 656); only the data is read, never auditwheel's code.

All functions are pure except ``load_policies`` (reads the data files) and ``host`` (asks the
running interpreter).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import platform as platform_module
import posixpath
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import Final, Literal

from buildtool.linkage.binaries import NO_NAMES, BinaryFacts

Libc = Literal["glibc", "musl"]

DRIVER_LIBRARIES: Final = (
    "libcuda.so.1",
    "libnvidia-ml.so.1",
    "libOpenCL.so.1",
    "libvulkan.so.1",
    "libEGL.so.1",
    "libGLX.so.0",
)
"""Libraries a GPU driver installs on the user's machine, which no wheel may bundle (they must
match the kernel driver): a NEEDED on one is a warning when it is absent, never an error."""

_MACHINES: Final = {
    "x86_64": "x86_64",
    "i686": "i386",
    "aarch64": "aarch64",
    "armv7l": "arm",
    "ppc64le": "ppc64",
    "ppc64": "ppc64",
    "s390x": "s390x",
    "riscv64": "riscv",
    "loongarch64": "loongarch",
}
"""Wheel tag architectures -> the ``BinaryFacts.machine`` of their binaries."""

_MUSL_LIBC: Final = {
    "x86_64": "libc.musl-x86_64.so.1",
    "i686": "libc.musl-x86.so.1",
    "aarch64": "libc.musl-aarch64.so.1",
    "armv7l": "libc.musl-armv7.so.1",
    "ppc64le": "libc.musl-ppc64le.so.1",
    "s390x": "libc.musl-s390x.so.1",
    "riscv64": "libc.musl-riscv64.so.1",
}
"""musl's ``libc.so`` in the policy is its dynamic loader, NEEDED by this name per architecture."""

_LOADER = re.compile(r"ld-linux[-.\w]*\.so\.\d+|ld64\.so\.[12]|ld\.so\.1")
"""glibc's dynamic loaders (``ld-linux-aarch64.so.1``, ``ld64.so.2`` on s390x/ppc64le): always
there, as every program's interpreter."""

_TAG = re.compile(
    r"(manylinux|musllinux)_(\d+)_(\d+)_(\w+)|(manylinux1|manylinux2010|manylinux2014|linux)_(\w+)"
)
_LEGACY: Final = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


@dataclasses.dataclass(frozen=True)
class Policy:
    """One manylinux/musllinux policy for one architecture (auditwheel's data)."""

    name: str
    """``manylinux_2_17``, ``musllinux_1_2``, or ``linux`` (no policy: a plain linux tag)."""
    libc: Libc
    version: tuple[int, int]
    """The libc version the policy guarantees (glibc 2.17, musl 1.2); (0, 0) for ``linux``."""
    libraries: frozenset[str]
    """NEEDED names the platform provides (``lib_whitelist``; musl's ``libc.so`` under its real
    name)."""
    symbol_versions: Mapping[str, frozenset[str]]
    """Version prefix (``GLIBC``, ``GLIBCXX``, ``CXXABI``, ``GCC``, ...) -> the versions after
    the ``_`` that the platform's libraries define (``2.17``); a prefix not listed is not judged."""


@dataclasses.dataclass(frozen=True)
class Platform:
    """What an input targets: the policy its tag names, and whether this machine is it."""

    tag: str
    """The platform tag judged (``manylinux_2_17_aarch64``), or ``host`` for an untagged input."""
    arch: str
    """The tag's architecture (``aarch64``, ``x86_64``, ``i686``, ...)."""
    machine: str
    """``BinaryFacts.machine`` of that architecture."""
    policy: Policy
    foreign: bool
    """Its architecture or libc is not this machine's: this machine's ld.so.cache and default
    directories say nothing about it, and its policy's libraries count as found."""

    @property
    def portable(self) -> bool:
        """A tag that names a policy (manylinux, musllinux): the wheel promises to load on any
        system of that policy, so what this machine has beyond it counts for nothing. A plain
        ``linux_*`` tag promises nothing beyond the machine it was built on."""
        return self.tag != "host" and self.policy.name != "linux"

    def provides(self, name: str) -> bool:
        """Whether the platform has a library found by this NEEDED name."""
        return name in self.policy.libraries or bool(_LOADER.fullmatch(name))


@dataclasses.dataclass(frozen=True)
class Host:
    """This machine, as a wheel tag would name it."""

    arch: str
    libc: Libc | None
    """None: neither glibc nor musl (macOS, Windows: every Linux wheel is foreign)."""


def host() -> Host:
    """The running machine's architecture and libc."""
    machine = platform_module.machine()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)
    if platform_module.system() != "Linux":
        return Host(arch, None)
    name, _version = platform_module.libc_ver()
    return Host(arch, "glibc" if name == "glibc" else "musl")


# --- policy data ----------------------------------------------------------------------------


def _policy_folder() -> Path | None:
    """auditwheel's ``policy/`` folder, found without importing auditwheel."""
    spec = find_spec("auditwheel")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "policy"


@functools.cache
def load_policies() -> Mapping[Libc, Sequence[Mapping[str, object]]]:
    """auditwheel's raw policy lists by libc; empty when auditwheel is not installed (then every
    input is judged as this machine, as without a tag). Read once a process: the files are
    package data of the auditwheel imported beside it (127 KB of JSON, about 1.3 ms a call).
    Read-only: every caller shares it."""
    folder = _policy_folder()
    found: dict[Libc, Sequence[Mapping[str, object]]] = {}
    files: tuple[tuple[Libc, str], ...] = (
        ("glibc", "manylinux-policy.json"),
        ("musl", "musllinux-policy.json"),
    )
    for libc, file in files:
        try:
            found[libc] = json.loads((folder / file).read_text(encoding="utf-8")) if folder else []
        except (OSError, ValueError):
            found[libc] = []
    return found


def _version(name: str) -> tuple[int, int]:
    parts = name.split("_")
    return (int(parts[1]), int(parts[2])) if len(parts) == 3 and name != "linux" else (0, 0)


def _policy(raw: Mapping[str, object], libc: Libc, arch: str) -> Policy | None:
    versions = raw.get("symbol_versions")
    name = str(raw.get("name", ""))
    if name != "linux" and (not isinstance(versions, dict) or arch not in versions):
        return None
    own = versions.get(arch, {}) if isinstance(versions, dict) and name != "linux" else {}
    libraries = {str(lib) for lib in raw.get("lib_whitelist", ()) or ()}  # type: ignore[attr-defined]
    if libc == "musl" and "libc.so" in libraries and arch in _MUSL_LIBC:
        libraries = (libraries - {"libc.so"}) | {_MUSL_LIBC[arch]}
    return Policy(
        name,
        libc,
        _version(name),
        frozenset(libraries),
        {str(k): frozenset(str(v) for v in vs) for k, vs in own.items()},
    )


def policies_for(
    data: Mapping[Libc, Sequence[Mapping[str, object]]], libc: Libc, arch: str
) -> tuple[Policy, ...]:
    """The policies of one libc and architecture, oldest libc first, ``linux`` left out."""
    every = (_policy(raw, libc, arch) for raw in data.get(libc, ()))
    return tuple(sorted((p for p in every if p and p.name != "linux"), key=lambda p: p.version))


# --- tags -----------------------------------------------------------------------------------


def wheel_platform_tags(file_name: str) -> tuple[str, ...]:
    """The platform tags of a wheel file name (``name-1.0-cp311-cp311-manylinux_2_17_x86_64.
    manylinux2014_x86_64.whl``), or () when it is not named as a wheel."""
    if not file_name.endswith(".whl"):
        return ()
    parts = file_name[: -len(".whl")].split("-")
    return tuple(parts[-1].split(".")) if len(parts) >= 5 else ()


def _parse(tag: str) -> tuple[Libc, tuple[int, int] | None, str] | None:
    """(libc, libc version or None for ``linux``, arch) of one Linux platform tag."""
    match = _TAG.fullmatch(tag)
    if match is None:
        return None
    if match.group(1):
        libc: Libc = "glibc" if match.group(1) == "manylinux" else "musl"
        return (libc, (int(match.group(2)), int(match.group(3))), match.group(4))
    legacy = match.group(5)
    return ("glibc", _LEGACY.get(legacy), match.group(6))


def linux_tag_machine(tag: str) -> str | None:
    """``BinaryFacts.machine`` of the binaries a Linux platform tag installs on
    (``manylinux_2_17_aarch64`` -> ``aarch64``); None for another tag."""
    parsed = _parse(tag)
    return _MACHINES.get(parsed[2]) if parsed else None


def _best_policy(candidates: Sequence[Policy], version: tuple[int, int] | None) -> Policy:
    """The newest policy at or below ``version`` (a tag names the libc it needs at least);
    without a version (``linux_x86_64``) the newest, with no symbol versions judged."""
    if version is None:
        newest = candidates[-1]
        return dataclasses.replace(newest, name="linux", version=(0, 0), symbol_versions={})
    fitting = [p for p in candidates if p.version <= version]
    return fitting[-1] if fitting else candidates[0]


def platform_for_tags(
    tags: Iterable[str], data: Mapping[Libc, Sequence[Mapping[str, object]]], here: Host
) -> Platform | None:
    """The platform a wheel's tags promise: of several (a compressed tag set), the one with the
    oldest libc, since pip installs the wheel wherever any of them fits. None without a Linux
    tag whose architecture and policy data are known."""
    chosen: Platform | None = None
    for tag in tags:
        parsed = _parse(tag)
        if parsed is None or parsed[2] not in _MACHINES:
            continue
        libc, version, arch = parsed
        candidates = policies_for(data, libc, arch)
        if not candidates:
            continue
        policy = _best_policy(candidates, version)
        foreign = here.arch != arch or here.libc != libc
        found = Platform(tag, arch, _MACHINES[arch], policy, foreign)
        if chosen is None or (policy.version, policy.name != "linux") < (
            chosen.policy.version,
            chosen.policy.name != "linux",
        ):
            chosen = found
    return chosen


def host_platform(
    data: Mapping[Libc, Sequence[Mapping[str, object]]], here: Host
) -> Platform | None:
    """This machine as a platform (for inputs without a tag): its newest policy's libraries,
    which a system of that kind has or may lack; no symbol versions judged."""
    if here.libc is None or here.arch not in _MACHINES:
        return None
    candidates = policies_for(data, here.libc, here.arch)
    if not candidates:
        return None
    policy = _best_policy(candidates, None)
    return Platform("host", here.arch, _MACHINES[here.arch], policy, foreign=False)


_ARCHES: Final = {machine: arch for arch, machine in reversed(_MACHINES.items())}
"""``BinaryFacts.machine`` -> the wheel tag architecture of its binaries (the first listed of
several: ppc64le)."""


def binary_libc(facts: BinaryFacts) -> Libc | None:
    """The C library an ELF file was linked for, as its interpreter or NEEDED entries name it
    (musl-gcc's binaries need plain ``libc.so``, with musl's loader as interpreter); None when
    they say nothing (a library without a C library NEEDED)."""
    interpreter = posixpath.basename(facts.interpreter or "")
    names = (interpreter, *facts.needed)
    if any(name.startswith(("ld-musl-", "libc.musl-")) for name in names):
        return "musl"
    if any(name == "libc.so.6" or _LOADER.fullmatch(name) for name in names):
        return "glibc"
    return None


def platform_for_binaries(
    binaries: Iterable[BinaryFacts],
    data: Mapping[Libc, Sequence[Mapping[str, object]]],
    here: Host,
) -> Platform | None:
    """The platform an untagged input was built for when it is not this machine (a tree
    cross-built for aarch64, a musl-gcc build on a glibc machine): the plain ``linux`` platform of
    its ELF files' machine and C library, as most of them name it, with the newest policy's
    libraries and no symbol versions judged (nothing names a minimum). None when the files are
    this machine's, say nothing, or name a platform without policy data."""
    kinds = Counter(
        (facts.machine, binary_libc(facts) or here.libc)
        for facts in binaries
        if facts.format == "elf"
    )
    if not kinds:
        return None
    (machine, libc), _count = kinds.most_common(1)[0]
    arch = _ARCHES.get(machine)
    if arch is None or libc is None or (arch, libc) == (here.arch, here.libc):
        return None
    candidates = policies_for(data, libc, arch)
    if not candidates:
        return None
    tag = f"linux_{arch}" if libc == "glibc" else f"linux_{arch} (musl)"
    return Platform(tag, arch, machine, _best_policy(candidates, None), foreign=True)


# --- libraries the platform provides ---------------------------------------------------------

PLATFORM_ROOT: Final = "/.platform"
"""Where the libraries a platform provides lie for resolution: no input or system file is
there, so each one stands for the platform's library of its name."""


def platform_library(name: str, platform: Platform, like: BinaryFacts) -> BinaryFacts:
    """Facts that stand for the platform's ``name`` in a closure of ``like``'s class and machine:
    no symbols of its own (``BinaryFacts.platform`` tells the symbol checks so), and every
    version the policy allows."""
    versions = tuple(
        f"{prefix}_{version}"
        for prefix, allowed in sorted(platform.policy.symbol_versions.items())
        for version in sorted(allowed)
    )
    return BinaryFacts(
        path=f"{PLATFORM_ROOT}/{platform.tag}/{name}", elf_class=like.elf_class,
        little_endian=like.little_endian, machine=like.machine, file_type="shared",
        interpreter=None, soname=name, needed=(), rpath=None, runpath=None, defined=frozenset(),
        versioned_definitions=False, undefined=frozenset(), weak_undefined=frozenset(),
        unique=frozenset(), weak_defined=frozenset(), exported_count=0,
        version_definitions=versions, version_needs=(), init_array_size=0, has_symtab=False,
        static_initializers=(), symtab_functions=NO_NAMES,
        registration_strings=frozenset(), file_size=0, code_size=0, sections=(),
        bind_now=False, relro=False, exec_stack=False, textrel=False, nodeflib=False,
        platform=platform.tag,
    )  # fmt: skip


# --- symbol versions against the tag ----------------------------------------------------------


def versions_beyond(
    facts: BinaryFacts, platform: Platform
) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """``(file, version, symbols)`` that ``facts`` needs from a platform library in a version
    its policy does not allow (``GLIBC_2.34`` under ``manylinux_2_17``): pip installs the wheel
    where that version is missing and ld.so refuses to load it. ``symbols`` are those bound to
    that version (strong and weak references). A need marked weak that only weak references
    use is none: ld.so loads the file without the version, and the references read as absent
    (mediapipe's ``_dl_get_tls_static_info@GLIBC_PRIVATE``)."""
    allowed = platform.policy.symbol_versions
    beyond: list[tuple[str, str, tuple[str, ...]]] = []
    for file, versions in facts.version_needs:
        if not platform.provides(file):
            continue
        for version in versions:
            prefix, _, number = version.partition("_")
            if prefix in allowed and number not in allowed[prefix]:
                suffix = f"@{version}"
                strong = any(key.endswith(suffix) for key in facts.undefined)
                if not strong and (file, version) in facts.weak_version_needs:
                    continue  # ld.so loads it, and the weak references read as absent
                keys = facts.undefined | facts.weak_undefined
                symbols = tuple(sorted(k[: -len(suffix)] for k in keys if k.endswith(suffix)))
                beyond.append((file, version, symbols))
    return tuple(beyond)


def newest_allowed(platform: Platform, prefix: str) -> str:
    """The newest version of ``prefix`` the policy allows, for messages (``2.17``)."""
    allowed = platform.policy.symbol_versions.get(prefix, frozenset())
    numeric = [v for v in allowed if re.fullmatch(r"[\d.]+", v)]
    return max(numeric, key=lambda v: tuple(int(p) for p in v.split(".")), default="none")
