"""What a check is expected to take and to cost, from the runs it has in the history.

The median over the runs on the check's current definition: a new definition is a new check
as far as its time goes, and a median is not moved by one stalled run. Early errors (not run,
a missing agent, a setup failure) are left out: they say how fast the check failed to start,
not how long it takes. A reused verdict counts with the duration and the cost of the run that
made it (the history keeps that cost beside the verdict), so a judge the cache answered thirty
times still has an expected cost. Each run counts once: a merged run stands for the shard runs
it merged (`merges`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from eval_banana.history.merges import merges_once
from eval_banana.history.recent import (
    RunTimings,
    expected_cost,
    expected_seconds,
    timings_of_record,
)
from eval_banana.history.record import HistoryRecord


def _runs(*, records: Sequence[HistoryRecord]) -> list[RunTimings]:
    """The timings of `records` (oldest first), without the shard runs a merge among them
    merged."""
    return [timings_of_record(r) for r in merges_once(newest_first=reversed(records))]


def expected_durations(
    *, records: Sequence[HistoryRecord], digests: Mapping[str, str]
) -> dict[str, float]:
    """Check id -> median recorded duration in seconds on its definition digest in `digests`
    (checks with no such run are absent)."""
    return expected_seconds(runs=_runs(records=records), digests=digests)


def expected_costs(
    *, records: Sequence[HistoryRecord], digests: Mapping[str, str]
) -> dict[str, float]:
    """Check id -> median recorded cost in dollars on its definition digest in `digests`, over
    the runs that reported a cost for it: what it cost where it ran, or, for a reused verdict,
    in the run that made it."""
    return expected_cost(runs=_runs(records=records), digests=digests)
