"""One fuzz case at the ``verify_paths`` level: a mutant beside a good file in one folder.

The contract checked for every case:

* ``verify_paths`` returns a report (any exception escapes to the caller: a bug);
* a mutant the ELF reader rejects is one BT100 finding naming the mutant's path, the reason and
  the offset, and the reader never needed its last-resort handler (every size is checked first);
* the good neighbour is still read and checked: its two sentinel findings are there.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from buildtool.linkage.binaries.elf import MalformedElf, read_elf_facts
from buildtool.linkage.checks.catalogue import Finding
from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs.collect import NOT_LOADABLE
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths
from tests.fuzz.elf_mutations import Mutant
from tests.fuzz.seeds import GOOD_NAME

MUTANT_PREFIX = "fuzzed-"
LAST_RESORT = "cannot be decoded"
"""How the reader's belt-and-braces handler words its reason: the harness treats it as a bug."""


class ContractBroken(AssertionError):
    """A case that ``verify_paths`` survived, but whose report breaks the contract."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    kind: str
    """``not-elf`` (no ELF magic: skipped), ``not-loaded`` (an object file or core dump:
    skipped), ``read`` (facts) or ``malformed`` (BT100)."""
    reason: str
    """The malformed reason with its numbers replaced by N (groups alike cases)."""
    mutant_findings: tuple[str, ...]
    """Check ids of the mutant's findings, in report order."""


def normalized(reason: str) -> str:
    return re.sub(r"0x[0-9a-f]+|\d+", "N", reason)


def _expected(mutant: Mutant, display: str) -> MalformedElf | str:
    try:
        facts = read_elf_facts(mutant.data, display)
    except MalformedElf as error:
        return error
    if facts is None:
        return "not-elf"
    # a mutated e_type can make it an object file or a core dump: no loader opens those
    return "not-loaded" if facts.file_type in NOT_LOADABLE else "read"


def _check_malformed(report: Report, error: MalformedElf, display: str) -> None:
    wanted = Finding("BT100", display, error.reason, f"offset {error.offset:#x}")
    if wanted not in report.findings:
        raise ContractBroken(f"no BT100 finding {wanted} in {report.findings}")
    if error.reason.startswith(LAST_RESORT):
        raise ContractBroken(f"the reader's last-resort handler caught it: {error.reason}")


def _check_neighbour(report: Report, good: str, expected_files: int) -> None:
    ids = {f.check_id for f in report.findings if f.path == good}
    if not {"BT113", "BT111"} <= ids or "BT100" in ids:
        raise ContractBroken(f"the good file was not checked as before: {sorted(ids)}")
    if report.files_checked != expected_files:
        raise ContractBroken(f"{report.files_checked} files checked, expected {expected_files}")


def prepare_case_folder(folder: Path, good: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / GOOD_NAME).write_bytes(good)


def run_case(folder: Path, mutant: Mutant) -> Outcome:
    """Write the mutant beside the good file, verify the folder, check the contract."""
    for old in folder.glob(f"{MUTANT_PREFIX}*"):
        old.unlink()
    path = folder / f"{MUTANT_PREFIX}{mutant.steps[0]}"
    path.write_bytes(mutant.data)
    display = str(path)
    expected = _expected(mutant, display)
    report = verify_paths([folder], LinkagePolicy.empty())
    skipped = expected in ("not-elf", "not-loaded")
    _check_neighbour(report, str(folder / GOOD_NAME), 1 if skipped else 2)
    mine = tuple(f.check_id for f in report.findings if f.path == display)
    if isinstance(expected, MalformedElf):
        _check_malformed(report, expected, display)
        return Outcome("malformed", normalized(expected.reason), mine)
    return Outcome(expected, "", mine)
