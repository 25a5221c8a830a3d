"""The long ELF fuzz run: ``python -m tests.fuzz.run_elf_fuzz --cases 100000`` (``nox -s fuzz``).

Case ``i`` of seed ``S`` draws from ``random.Random(f"{S}-{i}")``: any case is reproduced from its
number alone (``--first i --cases 1``). Failing mutants are saved for a regression test, and the
summary (cases, time, outcomes, BT100 reasons, findings on mutants, exceptions) is written as
Markdown for the repository.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import platform
import random
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tests.fuzz.elf_mutations import RandomChooser, SeedMap, mutate, read_seed
from tests.fuzz.harness import ContractBroken, prepare_case_folder, run_case
from tests.fuzz.seeds import build_good, build_seeds

SHOWN_REASONS = 30


@dataclasses.dataclass
class Tally:
    """What the run saw (mutable: filled case by case)."""

    cases: int = 0
    outcomes: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    reasons: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    findings: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    failures: list[tuple[int, str, str]] = dataclasses.field(default_factory=list)
    """(case, kind, detail) of every exception or broken contract."""


@dataclasses.dataclass(frozen=True)
class Campaign:
    """What every case of one run shares."""

    seed: str
    seeds: Sequence[SeedMap]
    folder: Path
    """Where each mutant is verified beside the good file."""
    keep: Path
    """Where failing mutants are saved."""


def _one_case(index: int, campaign: Campaign, tally: Tally) -> None:
    rng = random.Random(f"{campaign.seed}-{index}")
    chooser = RandomChooser(rng)
    mutant = mutate(chooser.choice(campaign.seeds), chooser)
    folder, keep = campaign.folder, campaign.keep
    tally.cases += 1
    try:
        outcome = run_case(folder, mutant)
    except ContractBroken as broken:
        kind, detail = "contract broken", str(broken)
    except Exception as error:  # the point of the run: count anything that escapes
        kind, detail = f"exception {type(error).__name__}", str(error)
    else:
        tally.outcomes[outcome.kind] += 1
        tally.reasons.update([outcome.reason] if outcome.reason else [])
        tally.findings.update(outcome.mutant_findings)
        return
    tally.outcomes[kind] += 1
    tally.failures.append((index, kind, f"{' / '.join(mutant.steps)}: {detail}"[:400]))
    keep.mkdir(parents=True, exist_ok=True)
    (keep / f"case-{index}.elf").write_bytes(mutant.data)


def _table(rows: Sequence[tuple[str, int]], heading: tuple[str, str]) -> list[str]:
    lines = [f"| {heading[0]} | {heading[1]} |", "|---|---:|"]
    return lines + [f"| {name.replace('|', '/')} | {count} |" for name, count in rows]


def render_summary(
    tally: Tally, seconds: float, seeds: Sequence[SeedMap], args: argparse.Namespace
) -> str:
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    reasons = tally.reasons.most_common(SHOWN_REASONS)
    lines = [
        "# ELF fuzz run",
        "",
        "Written by `nox -s fuzz` (`python -m tests.fuzz.run_elf_fuzz`); see tests/fuzz/ for the",
        "seeds, the mutations and the per-case contract.",
        "",
        f"- cases: {tally.cases} (seed {args.seed!r}, first case {args.first})",
        f"- time: {seconds:.0f} s ({tally.cases / max(seconds, 1e-9):.0f} cases/s)",
        f"- exceptions or broken contracts: {len(tally.failures)}",
        f"- peak resident memory of the whole run: {peak_mb:.0f} MB",
        f"- Python {platform.python_version()} on {platform.machine()} {platform.system()}",
        "- seeds: " + ", ".join(f"{s.name} ({len(s.data)} bytes)" for s in seeds),
        "",
        "## Outcomes",
        "",
        *_table(sorted(tally.outcomes.items()), ("outcome", "cases")),
        "",
        "## Findings on the mutants, by check",
        "",
        *_table(sorted(tally.findings.items()), ("check", "findings")),
        "",
        f"## BT100 reasons (the {len(reasons)} most common of {len(tally.reasons)}; N = a number)",
        "",
        *_table(reasons, ("reason", "cases")),
        "",
        "## Exceptions and broken contracts",
        "",
    ]
    lines += [f"- case {i}: {kind}: {detail}" for i, kind, detail in tally.failures] or ["none"]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--first", type=int, default=0, help="number of the first case")
    parser.add_argument("--seed", default="buildtool-elf-fuzz")
    parser.add_argument("--summary", type=Path, help="write the Markdown summary here")
    parser.add_argument("--keep", type=Path, default=Path("build/fuzz-failures"),
                        help="where failing mutants are saved")  # fmt: skip
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="buildtool-fuzz-") as scratch:
        root = Path(scratch)
        seeds = tuple(read_seed(n, data) for n, data in build_seeds(root / "seeds").items())
        prepare_case_folder(root / "case", build_good(root / "good"))
        campaign = Campaign(args.seed, seeds, root / "case", args.keep)
        tally, started = Tally(), time.monotonic()
        for index in range(args.first, args.first + args.cases):
            _one_case(index, campaign, tally)
            if (index + 1 - args.first) % 10_000 == 0:
                print(f"{index + 1 - args.first} cases, {len(tally.failures)} failures",
                      file=sys.stderr)  # fmt: skip
        summary = render_summary(tally, time.monotonic() - started, seeds, args)
    if args.summary:
        args.summary.write_text(summary, encoding="utf-8")
    sys.stdout.write(summary)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
