"""What a check is expected to take and to cost, from the runs it has in the history.

The median over the runs on the check's current definition: a new definition is a new check
as far as its time goes, and a median is not moved by one stalled run. Early errors (not run,
a missing agent, a setup failure) are left out: they say how fast the check failed to start,
not how long it takes. A reused verdict counts with the duration of the run that made it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence

from eval_banana.history.record import HistoryCheck, HistoryRecord


def _medians(
    *,
    records: Sequence[HistoryRecord],
    digests: Mapping[str, str],
    value: Callable[[HistoryCheck], float | None],
) -> dict[str, float]:
    found: dict[str, list[float]] = {}
    for record in records:
        for check in record.checks:
            if check.early_error or digests.get(check.id) != check.digest:
                continue
            number = value(check)
            if number is not None:
                found.setdefault(check.id, []).append(number)
    return {check_id: statistics.median(values) for check_id, values in found.items()}


def expected_durations(
    *, records: Sequence[HistoryRecord], digests: Mapping[str, str]
) -> dict[str, float]:
    """Check id -> median recorded duration in seconds on its definition digest in `digests`
    (checks with no such run are absent)."""
    return _medians(
        records=records, digests=digests, value=lambda check: check.duration_ms / 1000.0
    )


def expected_costs(
    *, records: Sequence[HistoryRecord], digests: Mapping[str, str]
) -> dict[str, float]:
    """Check id -> median recorded cost in dollars on its definition digest in `digests`, over
    the runs that reported a cost and actually ran it (a reused verdict cost nothing)."""
    return _medians(
        records=records,
        digests=digests,
        value=lambda check: None if check.cached else check.cost_usd,
    )
