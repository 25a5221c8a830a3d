"""What a build folder was configured from: a stamp ``configure`` writes into the folder, so that
``build`` can tell when the recipe (or what its globs expand to, or buildtool's templates)
changed since, and configure it again from the same recipe and variant."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from buildtool.errors import InputError
from buildtool.fsutil import GENERATED_MARKER, write_atomic

STAMP = ".buildtool-configured.json"
"""The stamp's file name inside the build folder."""

PENDING = ""
"""``generated`` of a stamp written before CMake runs: matches no digest, so a configure that
failed or was interrupted is run again by the next build."""


@dataclasses.dataclass(frozen=True)
class ConfigureStamp:
    """What the last configure of a build folder used."""

    recipe: str
    """Absolute path of the recipe file."""
    variant: str
    """``full`` or ``runtime``."""
    generated: str
    """SHA-256 over the generated files (paths and texts) the folder was configured with;
    ``PENDING`` until CMake's configure succeeded."""
    artifacts: tuple[str, ...] = ()
    """Build-folder-relative paths of the libraries and executables that configure planned: a
    later configure removes those it no longer makes."""


def generated_digest(files: Mapping[str, str]) -> str:
    """One digest over every generated file's path and text (pure)."""
    digest = hashlib.sha256()
    for relative, text in sorted(files.items()):
        digest.update(f"{len(relative)}:{relative}{len(text)}:".encode())
        digest.update(text.encode("utf-8"))
    return digest.hexdigest()


def _decoded(data: object) -> ConfigureStamp | None:
    if not isinstance(data, dict) or data.get("generated-by") != GENERATED_MARKER:
        return None
    fields = (data.get("recipe"), data.get("variant"), data.get("generated"))
    artifacts = data.get("artifacts", [])
    if not all(isinstance(value, str) for value in fields) or not isinstance(artifacts, list):
        return None
    recipe, variant, generated = (str(value) for value in fields)
    return ConfigureStamp(recipe, variant, generated, tuple(str(item) for item in artifacts))


def read_stamp(build_dir: Path) -> ConfigureStamp | None:
    """The folder's stamp; None without one (never configured by buildtool, or by a version that
    wrote none) or when it is not buildtool's."""
    try:
        return _decoded(json.loads((build_dir / STAMP).read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def write_stamp(build_dir: Path, stamp: ConfigureStamp) -> None:
    """Write the stamp; a file of that name that buildtool did not write is never replaced."""
    path = build_dir / STAMP
    if path.exists() and read_stamp(build_dir) is None:
        raise InputError(
            f"{path}: exists and was not written by buildtool, which never replaces such a file; "
            "move it away, then run the command again"
        )
    document = {"generated-by": GENERATED_MARKER, **dataclasses.asdict(stamp)}
    document["artifacts"] = list(stamp.artifacts)
    write_atomic(path, json.dumps(document, indent=2) + "\n")
