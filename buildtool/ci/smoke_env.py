"""The smoke test's virtual environment: made with ``uv`` where it is installed (a fraction of a
second), else with ``venv`` and pip; reused as it is when it holds exactly the wheels it would
get again (same bytes, same interpreter), so a run with nothing changed installs nothing."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from buildtool import process
from buildtool.fsutil import write_atomic

log = logging.getLogger("buildtool")

STAMP = ".buildtool-installed.json"
"""Inside the environment: what it was made from."""


@dataclasses.dataclass(frozen=True)
class SmokeEnvironment:
    """A ready environment."""

    python: Path
    """Its interpreter."""
    how: str
    """``reused``, ``uv`` or ``pip``: how it came to be."""


def venv_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def find_uv() -> Path | None:
    """uv from its PyPI package (importable here) or on the tools' PATH; None without it."""
    try:
        import uv  # type: ignore[import-not-found,unused-ignore]

        found = Path(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        located = shutil.which("uv", path=process.tool_environment(wheel_build=True).get("PATH"))
        return Path(located) if located else None
    return found


def wanted_contents(wheels: Sequence[Path]) -> dict[str, object]:
    """What the environment would be made from: this interpreter and the wheels' bytes."""
    digests = {}
    for wheel in sorted(wheels, key=lambda path: path.name):
        digests[wheel.name] = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return {"interpreter": sys.executable, "version": sys.version, "wheels": digests}


def _reusable(folder: Path, wanted: dict[str, object]) -> bool:
    try:
        made = json.loads((folder / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(made == wanted and venv_python(folder).is_file())


def prepare(folder: Path, wheels: Sequence[Path], find_links: Path) -> SmokeEnvironment:
    """An environment in ``folder`` with ``wheels`` installed (their dependencies from
    ``find_links`` only, never an index)."""
    wanted = wanted_contents(wheels)
    python = venv_python(folder)
    if _reusable(folder, wanted):
        log.info("%s holds these wheels already: reused", folder)
        return SmokeEnvironment(python, "reused")
    (folder / STAMP).unlink(missing_ok=True)
    uv = find_uv()
    links = ["--no-index", "--find-links", str(find_links)]
    if uv is not None:
        shutil.rmtree(folder, ignore_errors=True)  # fresh: nothing of an earlier install is left
        env = process.tool_environment({"UV_NO_PROGRESS": "1"})
        process.run([uv, "venv", "--quiet", "--python", sys.executable, folder], env=env)
        process.run([uv, "pip", "install", "--python", python, *links, *wheels], env=env)
        how = "uv"
    else:
        process.run([sys.executable, "-m", "venv", "--clear", folder])
        pip: list[str | Path] = [python, "-m", "pip", "--disable-pip-version-check", "install"]
        process.run([*pip, *links, *wheels])
        how = "pip"
    write_atomic(folder / STAMP, json.dumps(wanted, indent=2, sort_keys=True) + "\n")
    return SmokeEnvironment(python, how)
