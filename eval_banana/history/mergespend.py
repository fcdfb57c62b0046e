"""What a merged pipeline's judging cost, kept over updates (docs/history.md).

A merge's report sums what its shards' current results cost; the money spent stays spent all
the same. What `eb update` replaced in a shard run (its record's `replaced_cost_usd`, per check
and for the run) is not in the shard's report, the merge's source: the merge's record carries
it from the shard records in the history folder when it is written. A shard run with no record
there (history off on its runner, not imported, pruned) adds nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from eval_banana.harness.usage import dollars_sum, reported_cost
from eval_banana.history.record import HistoryRecord
from eval_banana.history.store import record_of


def _total(amounts: Iterable[float | None]) -> float | None:
    """The amounts reported added up; None when none was."""
    found = [amount for amount in (reported_cost(one) for one in amounts) if amount is not None]
    return dollars_sum(found) if found else None


def _shards_replaced(
    *, shards: Iterable[HistoryRecord]
) -> tuple[float | None, Mapping[str, float]]:
    """What the updates of `shards` replaced: in all, and per check id."""
    per_check: dict[str, list[float | None]] = {}
    for shard in shards:
        for check in shard.checks:
            per_check.setdefault(check.id, []).append(check.replaced_cost_usd)
    by_check = {check_id: _total(amounts) for check_id, amounts in per_check.items()}
    return (
        _total([shard.replaced_cost_usd for shard in shards]),
        {check_id: amount for check_id, amount in by_check.items() if amount is not None},
    )


def merge_spend(*, folder: Path, record: HistoryRecord) -> HistoryRecord:
    """`record`, a merge's, with what its shards' updates replaced (docs/history.md)."""
    shards = [
        found
        for found in (record_of(folder=folder, run_id=shard) for shard in record.merged_from)
        if found is not None
    ]
    replaced, by_check = _shards_replaced(shards=shards)
    checks = [
        check.model_copy(
            update={"replaced_cost_usd": _total([check.replaced_cost_usd, by_check.get(check.id)])}
        )
        if check.id in by_check
        else check
        for check in record.checks
    ]
    return record.model_copy(
        update={
            "checks": checks,
            "replaced_cost_usd": _total([record.replaced_cost_usd, replaced]),
        }
    )
