"""The view `eb history` prints: the window of runs chosen, the checks filtered and listed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, NamedTuple

from eval_banana.checks.selection import Selector, id_matches_pattern
from eval_banana.history.record import HistoryCheck, HistoryRecord
from eval_banana.history.since import parse_moment
from eval_banana.history.summary import CheckFilter, check_rows, listed, run_row
from eval_banana.history.view import HistoryView

ListingName = Literal["all", "flaky", "slowest", "costliest"]


class Asked(NamedTuple):
    """What the command line asked for."""

    last: int
    since: datetime | None
    check_ids: Sequence[str]
    selector: Selector
    listing: ListingName
    min_flips: int


def without_merged_shards(records: Sequence[HistoryRecord]) -> list[HistoryRecord]:
    """The records less the shard runs a recorded `eb merge` merged: each check once per
    pipeline, in the merged run."""
    merged = {run_id for record in records for run_id in record.merged_from}
    return [record for record in records if record.run_id not in merged]


def window_of(*, records: Sequence[HistoryRecord], asked: Asked) -> list[HistoryRecord]:
    """The last `asked.last` runs started at or after `asked.since` (oldest first)."""
    since = asked.since
    chosen = [r for r in records if since is None or parse_moment(r.started_at) >= since]
    return chosen[-asked.last :] if asked.last > 0 else chosen


def _keeps(asked: Asked) -> CheckFilter:
    patterns = list(asked.check_ids)

    def keep(check: HistoryCheck) -> bool:
        if patterns and not any(
            check.id == pattern or id_matches_pattern(check_id=check.id, pattern=pattern)
            for pattern in patterns
        ):
            return False
        return asked.selector.selects(check_id=check.id, tags=check.tags)

    return keep


def build_view(*, records: Sequence[HistoryRecord], asked: Asked, folder: str) -> HistoryView:
    """The whole view: the window's runs, and each kept check's row in the listing's order."""
    runs = without_merged_shards(records)
    window = window_of(records=runs, asked=asked)
    rows = check_rows(history=runs, window=window, keep=_keeps(asked))
    return HistoryView(
        folder=folder,
        records=len(records),
        listing=asked.listing,
        runs=[run_row(record=record) for record in window],
        checks=listed(rows=rows, listing=asked.listing, min_flips=asked.min_flips),
    )
