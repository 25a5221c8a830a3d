"""verify-linkage end to end: read the inputs, then check them (``checking``).

The read goes first, and ``checking`` (the checks, loaders and reports: about a third of a
second of imports) is imported while the read's workers are busy, where this process would
otherwise wait for them: before the read, it held back forking them (and a wheel's head start)
by as much.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from buildtool.linkage.binaries import Decoder
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs.collect import binary_free_wheel, read_input
from buildtool.linkage.inputs.decoding import release_kept
from buildtool.linkage.inputs.pool import wait_for_workers

if TYPE_CHECKING:
    from buildtool.linkage.checks.growth import Baseline
    from buildtool.linkage.report.model import Report

_CHECKING = "buildtool.linkage.checking"


def verify_paths(
    paths: Sequence[Path],
    policy: LinkagePolicy,
    ld_library_path: Sequence[str] | None = None,
    jobs: int | None = None,
    *,
    decoder: Decoder = "fast",
    baseline: Baseline | None = None,
    with_graph: bool = False,
) -> Report:
    """verify-linkage on build trees, folders, installed packages, ELF files and wheels.

    ``jobs``: processes that read ELF files (default: every CPU available; 1 reads them in
    this process). The report is the same for any number; every one of them has exited when
    this returns. ``decoder``: what decodes the files (``pyelftools``: a slower cross-check of
    the fast decoder). ``baseline``: an earlier run's sizes to compare with (BT131 and the deltas).
    """
    try:
        with _no_collections():  # the inputs and their facts are gone when it resumes
            return _read_and_verify(
                paths,
                policy,
                ld_library_path,
                jobs,
                decoder=decoder,
                baseline=baseline,
                with_graph=with_graph,
            )
    finally:
        release_kept()
        wait_for_workers()  # they exit while the checks run: none outlives the call


def _read_and_verify(
    paths: Sequence[Path],
    policy: LinkagePolicy,
    ld_library_path: Sequence[str] | None,
    jobs: int | None,
    *,
    decoder: Decoder,
    baseline: Baseline | None,
    with_graph: bool,
) -> Report:
    names = policy.registration_names
    inputs = [read_input(path, names, jobs, decoder, meanwhile=_import_checking) for path in paths]
    if inputs and not any(entry.files for entry in inputs):
        raise binary_free_wheel(inputs[0])
    from buildtool.linkage.checking import verify_inputs

    return verify_inputs(
        inputs,
        policy,
        ld_library_path,
        decoder=decoder,
        baseline=baseline,
        with_graph=with_graph,
        jobs=jobs,
    )


def _import_checking() -> None:
    """What checks the read, imported while its workers are busy (``read_input``'s
    ``meanwhile``); a second input's read finds it imported already."""
    importlib.import_module(_CHECKING)


@contextlib.contextmanager
def _no_collections() -> Iterator[None]:
    """The cycle collector paused (in the workers forked meanwhile too): a read makes tens of
    thousands of objects (a wheel's members, their facts) and no cycles among them, so its
    collections only traverse them, over and over (about 30 ms of the macOS torch wheel's run,
    in the part no worker shares). The few cycles a run leaves are collected once it is back;
    what is still alive then is traversed by its first collection, so the read's objects
    should be gone by then."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
