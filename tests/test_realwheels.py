"""verify-linkage on popular third-party wheels, each verdict asserted (``nox -s realwheels``).

Every wheel here installs and imports in a fresh virtual environment (docs/realwheels.md says
how each verdict was checked against the loader). The wheels are pinned, downloaded once
(``pip download --no-deps``) into ``$BUILDTOOL_REALWHEELS_CACHE`` (default
``~/.cache/buildtool/realwheels``) and never extracted. Deselected unless ``--realwheels``.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.verify import verify_paths

pytestmark = pytest.mark.realwheels

PINS = {
    "apache-tvm": "0.27.0.post1",
    "apache-tvm-ffi": "0.1.15.post2",
    "torch": "2.13.0",
    "numpy": "2.4.6",
    "scipy": "1.17.1",
    "pyarrow": "26.0.1",
    "grpcio": "1.85.3",
    "opencv-python-headless": "5.1.0.95",
}


def cache() -> Path:
    default = Path.home() / ".cache" / "buildtool" / "realwheels"
    folder = Path(os.environ.get("BUILDTOOL_REALWHEELS_CACHE", default))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def wheel(dist: str) -> Path:
    """The pinned wheel of ``dist`` for this interpreter, downloaded when the cache lacks it."""
    stem = re.sub(r"[-_.]+", "_", dist)
    pattern = re.compile(rf"{stem}-{re.escape(PINS[dist])}(\+[^-]+)?-.*\.whl", re.IGNORECASE)
    folder = cache()
    found = [p for p in folder.glob("*.whl") if pattern.fullmatch(p.name)]
    if not found:
        pinned = f"{dist}=={PINS[dist]}"
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                   "--only-binary", ":all:", "-d", str(folder), pinned]  # fmt: skip
        subprocess.run(command, check=True)
        found = [p for p in folder.glob("*.whl") if pattern.fullmatch(p.name)]
    assert len(found) == 1, f"{dist}: expected one wheel in {folder}, found {found}"
    return found[0]


@dataclass(frozen=True)
class Verdict:
    """What verify-linkage --no-recipe must say about a set of wheels installed together."""

    dists: tuple[str, ...]
    errors: tuple[tuple[str, str], ...] = ()
    """(check id, wheel member) of every error, the true defects."""
    warnings: dict[str, int] = field(default_factory=dict)
    """Warning count per check id."""


VERDICTS = [
    Verdict(("apache-tvm",), warnings={"BT108": 5}),
    Verdict(("apache-tvm", "apache-tvm-ffi"), warnings={"BT114": 4, "BT108": 1}),
    Verdict(("apache-tvm-ffi",)),
    Verdict(
        ("torch",),
        errors=tuple(("BT107", "torch/bin/test_shim") for _ in range(3)),
        warnings={"BT113": 207},
    ),
    Verdict(("numpy",), warnings={"BT111": 5}),
    Verdict(("scipy",), warnings={"BT111": 23, "BT113": 1, "BT124": 2}),
    Verdict(("numpy", "scipy"), warnings={"BT111": 28, "BT113": 1, "BT124": 2}),
    Verdict(("pyarrow",), warnings={"BT124": 3}),
    Verdict(("grpcio",)),
    Verdict(("opencv-python-headless",), warnings={"BT111": 8}),
]


@pytest.mark.parametrize("verdict", VERDICTS, ids=["+".join(v.dists) for v in VERDICTS])
def test_verdict(verdict: Verdict) -> None:
    report = verify_paths([wheel(dist) for dist in verdict.dists], LinkagePolicy.empty())
    errors = sorted(
        (f.check_id, f.path.split("!/")[-1]) for f in report.findings if f.severity == "error"
    )
    warnings = collections.Counter(f.check_id for f in report.findings if f.severity == "warning")
    assert errors == sorted(verdict.errors)
    assert dict(warnings) == verdict.warnings


def test_adding_the_required_wheel_never_makes_tvm_worse() -> None:
    alone = verify_paths([wheel("apache-tvm")], LinkagePolicy.empty())
    both = verify_paths([wheel("apache-tvm"), wheel("apache-tvm-ffi")], LinkagePolicy.empty())
    assert both.count("error") <= alone.count("error") == 0
    assert {f.message for f in both.findings if f.check_id == "BT114"} == {
        "needs libtvm_ffi.so, found only when apache-tvm-ffi is imported first"
    }
