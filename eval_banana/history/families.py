"""Each dataset family over the window of `eb history`: its pass rate run by run.

A family of 500 cases is 500 rows of the check table; how the family as a whole moved is one
row here. A run that ran only part of it (`--last-failed`, `-k`, one shard) says little of the
family, so its mark tells it apart instead of showing a dip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from eval_banana.history.record import HistoryCheck, HistoryRecord
from eval_banana.history.view import FamilyRow, FamilyRun

# A run's pass rate in eight heights, highest first: the lowest pass rate each stands for. An
# evaluation's rates live near the top, so the top heights are 10 points apart and only a
# run of every case passing is full. A run of part of the family, and one it was not in, have
# marks of their own.
LEVELS = (
    (1.0, "█"),
    (0.9, "▇"),
    (0.8, "▆"),
    (0.7, "▅"),
    (0.6, "▄"),
    (0.5, "▃"),
    (0.25, "▂"),
    (0.0, "▁"),
)
PART = "◦"
ABSENT = "·"


def _mark(*, run: FamilyRun | None, part: bool) -> str:
    if run is None:
        return ABSENT
    if part:
        return PART
    rate = run.passed / run.cases
    return next(mark for lowest, mark in LEVELS if rate >= lowest)


class _InRun(NamedTuple):
    """The families of one run: each one's cases that ran there and how many passed (None:
    the run stopped before any had an outcome), and those with a case it did not run."""

    counts: dict[str, FamilyRun | None]
    cut_short: set[str]


def _counts(*, record: HistoryRecord, keep: Callable[[HistoryCheck], bool] | None) -> _InRun:
    counted: dict[str, list[int]] = {}
    cut_short: set[str] = set()
    for check in record.checks:
        if check.family is None or (keep is not None and not keep(check)):
            continue
        found = counted.setdefault(check.family, [0, 0])
        if check.not_run:
            # The run stopped before this case had an outcome (never started, or ended).
            cut_short.add(check.family)
            continue
        found[0] += 1
        found[1] += check.status == "passed"
    counts = {
        family: FamilyRun(cases=c, passed=p) if c else None for family, (c, p) in counted.items()
    }
    return _InRun(counts=counts, cut_short=cut_short)


def _parts(*, family: str, runs: Sequence[HistoryRecord], per_run: Sequence[_InRun]) -> list[bool]:
    """Per run: whether it ran only part of the family: its selection took part (a record says
    so itself, `partial_families`, whatever the view keeps: a run whole at fewer cases than
    before, rows removed or skipped, is whole), or it stopped before some case had an outcome.
    A record written before eb kept this is judged by the most cases a run in the window held."""
    seen = [one.counts.get(family) for one in per_run]
    most = max((run.cases for run in seen if run is not None), default=0)
    return [
        run is not None
        and (
            family in one.cut_short
            or (
                run.cases < most
                if record.partial_families is None
                else family in record.partial_families
            )
        )
        for record, run, one in zip(runs, seen, per_run, strict=True)
    ]


def _size(
    *,
    family: str,
    runs: Sequence[HistoryRecord],
    seen: Sequence[FamilyRun | None],
    parts: Sequence[bool],
) -> int:
    """The family's size: the cases of its latest run of all of them; with none in the window,
    what the latest record of a partial run says it has (a window of `--subset 20` runs is not
    a family of 20), else the most cases a run held."""
    whole = [run.cases for run, part in zip(seen, parts, strict=True) if run and not part]
    if whole:
        return whole[-1]
    told = [
        record.partial_families[family]
        for record in runs
        if record.partial_families is not None and family in record.partial_families
    ]
    if told:
        return told[-1]
    return max((run.cases for run in seen if run is not None), default=1)


def family_rows(
    *, runs: Sequence[HistoryRecord], keep: Callable[[HistoryCheck], bool] | None
) -> list[FamilyRow]:
    """A row per family with a case in the window (`runs`, oldest first), by id; `keep`: the
    checks the view keeps (a family is counted over its kept cases; which runs took part of
    it is read from the records all the same)."""
    per_run = [_counts(record=record, keep=keep) for record in runs]
    families = sorted({family for one in per_run for family in one.counts})
    rows = []
    for family in families:
        seen = [one.counts.get(family) for one in per_run]
        parts = _parts(family=family, runs=runs, per_run=per_run)
        whole = [
            run.passed / run.cases
            for run, part in zip(seen, parts, strict=True)
            if run is not None and not part
        ]
        rows.append(
            FamilyRow(
                id=family,
                cases=_size(family=family, runs=runs, seen=seen, parts=parts),
                strip="".join(
                    _mark(run=run, part=part) for run, part in zip(seen, parts, strict=True)
                ),
                runs=seen,
                latest_rate=whole[-1] if whole else None,
                lowest_rate=min(whole) if whole else None,
            )
        )
    return rows
