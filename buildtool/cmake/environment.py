"""The build environment a build tree was configured in (compilers, their flags, ``CMAKE_ARGS``).

CMake reads the compilers and their flags only when a build folder is first configured, and
keeps what ``CMAKE_ARGS`` once set in its cache: a configure in the same folder after one of them
changed would silently keep the old ones. The folder records the environment of its configure;
when it changed, CMake's cache is cleared first, so the next configure starts from it afresh
(and ninja compiles again what the new commands compile differently).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

from buildtool import process
from buildtool.fsutil import write_atomic

log = logging.getLogger("buildtool")

ENVIRONMENT_STAMP = ".buildtool-environment.json"
"""Inside a build folder: the build environment it was last configured in."""


def current_environment() -> dict[str, str]:
    """The variables of ``process.BUILD_ENVIRONMENT`` as set now (unset ones as empty)."""
    return {name: os.environ.get(name, "") for name in process.BUILD_ENVIRONMENT}


def recorded_environment(folder: Path) -> dict[str, str] | None:
    """The environment ``folder`` was configured in; None when it records none."""
    try:
        data = json.loads((folder / ENVIRONMENT_STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {str(name): str(value) for name, value in data.items()}


def changed_variables(folder: Path) -> list[str]:
    """The build variables that changed since ``folder`` was configured (none when it records
    no environment: a folder buildtool never configured)."""
    previous = recorded_environment(folder)
    if previous is None:
        return []
    current = current_environment()
    return sorted(name for name in current if previous.get(name, "") != current[name])


def start_afresh_if_environment_changed(folder: Path) -> None:
    """Clear CMake's cache in ``folder`` when the build environment changed since its configure."""
    changed = changed_variables(folder)
    if changed:
        log.info("%s changed: configuring %s from scratch", ", ".join(changed), folder)
        (folder / "CMakeCache.txt").unlink(missing_ok=True)
        shutil.rmtree(folder / "CMakeFiles", ignore_errors=True)


def record_environment(folder: Path) -> None:
    """Record the environment of the configure that just succeeded in ``folder``."""
    text = json.dumps(current_environment(), indent=2, sort_keys=True) + "\n"
    write_atomic(folder / ENVIRONMENT_STAMP, text)


def start_afresh_if_source_moved(folder: Path, source_dir: Path) -> None:
    """Clear CMake's cache in ``folder`` when it was configured for another source folder
    (CMake refuses to configure it otherwise): a build folder reused for another project, or a
    project moved."""
    try:
        lines = (folder / "CMakeCache.txt").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return
    home = next((line.split("=", 1)[1] for line in lines if line.startswith(HOME_KEY)), None)
    if home is not None and Path(home).resolve() != source_dir.resolve():
        log.info("%s was configured for %s: configuring it from scratch", folder, home)
        (folder / "CMakeCache.txt").unlink(missing_ok=True)
        shutil.rmtree(folder / "CMakeFiles", ignore_errors=True)


HOME_KEY = "CMAKE_HOME_DIRECTORY:INTERNAL="
"""The cache entry naming the source folder a build folder was configured for."""
