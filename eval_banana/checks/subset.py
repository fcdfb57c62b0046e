"""`--subset N` / `--subset P%`: run the same part of each dataset family, not all of it.

A family of 1,000 judge cases costs 1,000 agent runs; trying a prompt edit on 20 of them should
cost 20. The subset is not the first rows (datasets are often sorted by topic) but the cases
whose id ranks lowest under a seeded hash: spread over the whole dataset, the same cases every
run (so their verdicts come from the cache when nothing changed), and nested, so `--subset 50`
after `--subset 20` keeps those 20 and adds 30. `--subset-seed` draws another subset.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import NamedTuple

from eval_banana.core.digits import ascii_whole
from eval_banana.core.errors import UsageError
from eval_banana.core.words import given_value
from eval_banana.models.config import MAX_SUBSET_CASES, CaseSubset

_RANK_PREFIX = "eval-banana subset v1\n"
_SUBSET_HINT = (
    "Write --subset N with a whole number N >= 1 (the most cases of each family to run), or "
    "--subset P% with 0 < P <= 100 (that share of each family, rounded up), e.g. --subset 20."
)
_SEED_HINT = "Write --subset-seed S with a whole number S >= 0 (another seed, another subset)."


class Member(NamedTuple):
    """One check of a selection as the subset sees it: its family (None for a check that is
    no case) and whether the case is skipped (a skipped case runs nothing, so it takes no
    place in the subset)."""

    family: str | None
    check_id: str
    skipped: bool = False


def parse_subset(*, text: str | None, seed_text: str | None) -> CaseSubset:
    """`N` or `P%`, with an optional seed; anything else is a usage error."""
    seed = _seed(seed_text=seed_text)
    if text is None:
        raise UsageError(
            "--subset-seed draws a subset, and no --subset was given",
            hint="Add --subset N (or P%), or leave out --subset-seed.",
        )
    given = text.strip()
    if given.endswith("%"):
        number = given[:-1].strip()
        try:
            percent = float(number)
        except ValueError:
            percent = math.nan
        if not math.isfinite(percent) or not 0 < percent <= 100:
            raise UsageError(
                f"--subset {given_value(text)}: the share must lie above 0% and at most 100%",
                hint=_SUBSET_HINT,
            )
        return CaseSubset(percent=percent, seed=seed)
    count = ascii_whole(given)
    if count is None or not 1 <= count <= MAX_SUBSET_CASES:
        raise UsageError(
            f"--subset {given_value(text)} is neither a number of cases from 1 to "
            f"{MAX_SUBSET_CASES:,} nor a percentage",
            hint=_SUBSET_HINT,
        )
    return CaseSubset(count=count, seed=seed)


def _seed(*, seed_text: str | None) -> int:
    if seed_text is None:
        return 0
    seed = ascii_whole(seed_text.strip())
    if seed is None:
        raise UsageError(
            f"--subset-seed {given_value(seed_text)} is not a whole number", hint=_SEED_HINT
        )
    return seed


def subset_flag(subset: CaseSubset) -> str:
    """The command line that asked for `subset` (`--subset 20`, `--subset 10% --subset-seed 3`)."""
    size = f"{subset.count}" if subset.count is not None else f"{subset.percent:g}%"
    seed = f" --subset-seed {subset.seed}" if subset.seed else ""
    return f"--subset {size}{seed}"


def subset_size(*, subset: CaseSubset, cases: int) -> int:
    """How many of a family's `cases` the subset keeps."""
    if subset.count is not None:
        return min(subset.count, cases)
    assert subset.percent is not None
    # Rounded to nine places first, so 10% of 30 is 3 cases, not 4 by a float's last bit.
    return min(cases, max(1, math.ceil(round(cases * subset.percent / 100, 9))))


def _rank(*, check_id: str, seed: int) -> bytes:
    return hashlib.sha256(f"{_RANK_PREFIX}{seed}\n{check_id}".encode()).digest()


def subset_positions(*, members: Sequence[Member], subset: CaseSubset) -> list[int]:
    """The positions of `members` the subset keeps, in their order: every check that is no
    case, and of each family the `subset_size` running cases whose id ranks lowest."""
    by_family: dict[str, list[int]] = {}
    for position, member in enumerate(members):
        if member.family is not None and not member.skipped:
            by_family.setdefault(member.family, []).append(position)
    kept = set()
    for positions in by_family.values():
        size = subset_size(subset=subset, cases=len(positions))
        ranked = sorted(
            positions, key=lambda at: _rank(check_id=members[at].check_id, seed=subset.seed)
        )
        kept.update(ranked[:size])
    return [
        position
        for position, member in enumerate(members)
        if member.family is None or position in kept
    ]
