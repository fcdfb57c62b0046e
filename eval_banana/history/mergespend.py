"""What a merged pipeline's judging cost, kept over updates and merges (docs/history.md).

A merge's report sums what its shards' current results cost; the money spent stays spent all
the same. Two kinds of spend are not in it, and its record carries both from the history
folder when it is written:

- what `eb update` replaced in a shard run (its record's `replaced_cost_usd`, per check and
  for the run), which the shard's report, the merge's source, does not hold;
- the shard runs an earlier merge of the pipeline merged and this one does not (a shard job
  run again and merged with the others): `eb history` counts that earlier merge and its shards
  no more (merges.superseded), so their spend goes into this merge's `superseded_cost_usd`,
  with what that merge had carried so.

Only what the records in the folder say is carried: a shard run with no record there (history
off on its runner, not imported, pruned) adds nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from eval_banana.harness.usage import dollars_sum, reported_cost
from eval_banana.history.merges import SHARD_LOOKAHEAD, superseded
from eval_banana.history.read import BadRecord, read_bounded, read_record, record_paths
from eval_banana.history.record import HistoryRecord
from eval_banana.history.store import record_name, record_of

# A record no merge wrote holds this: it is skipped without being parsed.
_NO_SHARDS = b'"merged_from":[]'


def _total(amounts: Iterable[float | None]) -> float | None:
    """The amounts reported added up; None when none was."""
    found = [amount for amount in (reported_cost(one) for one in amounts) if amount is not None]
    return dollars_sum(found) if found else None


def _spent(record: HistoryRecord) -> float | None:
    """What judging the run `record` describes cost in all, as `eb history` shows it."""
    return _total([record.cost_usd, record.replaced_cost_usd, record.superseded_cost_usd])


def _earlier_merges(*, folder: Path, merge: HistoryRecord) -> Iterator[HistoryRecord]:
    """The merges recorded in `folder` other than `merge`, newest first, their own fields only.
    A merge of the same shards starts when its first shard did, near `merge`'s start: the
    reading stops SHARD_LOOKAHEAD records past it, as a shard's merge is looked for."""
    start = record_name(started_at=merge.started_at, run_id=merge.run_id)
    past = 0
    for path in reversed(record_paths(folder=folder)):
        if path.name < start:
            past += 1
            if past > SHARD_LOOKAHEAD:
                return
        try:
            data = read_bounded(path=path)
            if _NO_SHARDS in data:
                continue
            # Read again through the one reader of record files, its checks not parsed.
            found = read_record(path=path, only=frozenset())
        except (OSError, BadRecord):
            continue
        if found.merged_from and found.run_id != merge.run_id:
            yield found


def _superseded_spend(*, folder: Path, merge: HistoryRecord) -> float | None:
    """What the merges `merge` stands for now spent on shard runs it does not merge, with what
    they carried so: the merges no other recorded merge stands for already that share a shard
    run with it."""
    mine = set(merge.merged_from)
    claimed: dict[str, str] = {}
    amounts: list[float | None] = []
    for earlier in _earlier_merges(folder=folder, merge=merge):
        if superseded(run=earlier, claimed=claimed) or mine.isdisjoint(earlier.merged_from):
            continue
        amounts.append(earlier.superseded_cost_usd)
        for shard in earlier.merged_from:
            if shard not in mine:
                shard_record = record_of(folder=folder, run_id=shard)
                amounts.append(None if shard_record is None else _spent(shard_record))
    return _total(amounts)


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
    """`record`, a merge's, with what its shards' updates replaced and what the merges of its
    shards it stands for spent on shard runs it does not merge (docs/history.md)."""
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
            "superseded_cost_usd": _superseded_spend(folder=folder, merge=record),
        }
    )
