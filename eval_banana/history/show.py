"""The view `eb history` prints: the window of runs chosen, the checks filtered and listed.

Records are taken newest first and parsed only when needed: the window (`--last`, `--since`),
then, for the checks not passing since the window began, older records until each one's last
pass is found. Over a long history `eb history` reads a few dozen records, not all of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Literal, NamedTuple

from eval_banana.checks.idselectors import IdSelectors
from eval_banana.checks.keywords import Selector
from eval_banana.core.moments import parse_moment
from eval_banana.harness.usage import dollars_sum
from eval_banana.history.families import family_rows
from eval_banana.history.merges import SHARD_LOOKAHEAD, superseded
from eval_banana.history.read import Focus
from eval_banana.history.record import HistoryCheck, HistoryRecord
from eval_banana.history.summary import CheckFilter, check_rows, listed, run_row
from eval_banana.history.view import HistoryView

ListingName = Literal["all", "flaky", "slowest", "costliest"]


class Asked(NamedTuple):
    """What the command line asked for."""

    last: int | None  # None: every run since `since`
    since: datetime | None
    check_ids: Sequence[str]
    selector: Selector
    listing: ListingName
    min_flips: int


def _unmerged_shard(record: HistoryRecord, merged: set[str]) -> bool:
    return record.selection.shard is not None and record.run_id not in merged


def _take(
    *,
    record: HistoryRecord,
    merged: set[str],
    claimed: dict[str, str],
    taken_ids: dict[str, int],
) -> int:
    """Count `record` among the records taken (`taken_ids`: how many have each run id) and add
    the runs it merged to `merged` (the run ids left out), and `record` itself when a newer
    merge of its shards stands for it (`claimed`, as `superseded` keeps it); by how much the
    number of taken records no merge stands for changes. Kept as a running count: counting
    them afresh for each record made `eb history --last 20000` quadratic."""
    change = 0
    left_out = list(record.merged_from)
    if superseded(run=record, claimed=claimed):
        left_out.append(record.run_id)
    for run_id in left_out:
        if run_id not in merged:
            merged.add(run_id)
            change -= taken_ids.get(run_id, 0)  # taken already, now stood for by this merge
    taken_ids[record.run_id] = taken_ids.get(record.run_id, 0) + 1
    return change + (record.run_id not in merged)


def _past_the_cut_off(
    *,
    first: HistoryRecord,
    source: Iterator[HistoryRecord],
    taken: Sequence[HistoryRecord],
    merged: set[str],
) -> list[HistoryRecord]:
    """The records read past `--since`'s cut-off (newest first, from `first`), the merges they
    hold added to `merged`. A merged run starts when its first shard did, so its record can lie
    past the cut-off while a later shard of it is in the window: as past the `--last` edge, the
    records are read on while the one just read is a shard run no merge names yet (the merge
    sorts after its pipeline's other shards), so long as a shard run taken still waits for its
    merge. The pipeline is then out of the window, by its merged run's start, as any run is."""
    waiting = {record.run_id for record in taken if _unmerged_shard(record, merged)}
    past = [first]
    while True:
        newest = past[-1]
        merged.update(newest.merged_from)
        waiting.difference_update(newest.merged_from)
        if not waiting or not _unmerged_shard(newest, merged) or len(past) > SHARD_LOOKAHEAD:
            return past
        after = next(source, None)
        if after is None:
            return past
        past.append(after)


class Window(NamedTuple):
    """The runs shown (oldest first), and the older records, newest first, not yet read."""

    runs: list[HistoryRecord]
    older: Iterator[HistoryRecord]


def window_of(*, newest_first: Iterable[HistoryRecord], asked: Asked) -> Window:
    """The last `asked.last` runs (every one when None) started at or after `asked.since`,
    each check once: a shard run an `eb merge` merged is left out for the merged run, whether
    the merge is in the window or started before `asked.since` (a merged run starts when its
    first shard did), and so is a merge a newer merge of its shards stands for."""
    source = iter(newest_first)
    taken: list[HistoryRecord] = []
    merged: set[str] = set()
    claimed: dict[str, str] = {}
    pushed_back: list[HistoryRecord] = []
    taken_ids: dict[str, int] = {}
    unmerged = 0  # how many records taken no merge among them stands for
    extra = 0
    for record in source:
        if asked.since is not None and parse_moment(record.started_at) < asked.since:
            pushed_back = _past_the_cut_off(first=record, source=source, taken=taken, merged=merged)
            break
        taken.append(record)
        unmerged += _take(record=record, merged=merged, claimed=claimed, taken_ids=taken_ids)
        if asked.last is None or unmerged < asked.last:
            continue
        if not _unmerged_shard(taken[-1], merged) or extra >= SHARD_LOOKAHEAD:
            break
        extra += 1
    counted = [record for record in taken if record.run_id not in merged]
    runs = counted if asked.last is None else counted[: asked.last]
    # The runs read past the window's edge looking for a shard's merge are older than the
    # window, and the "since" notes read them as the older records they are; an older merge
    # of shards a merge in the window merged again is that pipeline, not a run before it.
    older = (
        record
        for record in itertools.chain(counted[len(runs) :], pushed_back, source)
        if record.run_id not in merged and not superseded(run=record, claimed=claimed)
    )
    return Window(runs=runs[::-1], older=older)


def check_filter(asked: Asked) -> CheckFilter | None:
    """The check filter of `--check-id`, `-k` and `--tag`; None when none was given."""
    patterns = list(asked.check_ids)
    if not patterns and asked.selector.keyword is None and not asked.selector.tags:
        return None
    chosen = IdSelectors(patterns) if patterns else None

    def keep(check: HistoryCheck) -> bool:
        if chosen is not None and not chosen.selects(check.id):
            return False
        return asked.selector.selects(check_id=check.id, tags=check.tags)

    return keep


def build_view(
    *,
    newest_first: Iterable[HistoryRecord],
    total: int,
    asked: Asked,
    folder: str,
    focus: Focus | None = None,
) -> HistoryView:
    """The whole view: the window's runs, and each kept check's row in the listing's order.
    `newest_first`: the records, newest first (read lazily); `total`: how many there are;
    `focus`: where the reader of `newest_first` learns which checks the older records need."""
    window = window_of(newest_first=newest_first, asked=asked)
    return view_of(window=window, total=total, asked=asked, folder=folder, focus=focus)


def view_of(
    *, window: Window, total: int, asked: Asked, folder: str, focus: Focus | None = None
) -> HistoryView:
    """The view of a window `window_of` chose (the text of `eb history`, the page's table)."""

    def narrow(ids: frozenset[str]) -> None:
        if focus is not None:
            focus.ids = ids

    keep = check_filter(asked)
    rows = check_rows(window=window.runs, older=window.older, keep=keep, on_pending=narrow)
    runs = [run_row(record=record) for record in window.runs]
    costs = [run.cost_usd for run in runs if run.cost_usd is not None]
    return HistoryView(
        folder=folder,
        records=total,
        listing=asked.listing,
        runs=runs,
        # What the window cost: the runs that reported no cost left out, and counted.
        cost_usd=dollars_sum(costs) if costs else None,
        runs_without_cost=len(runs) - len(costs),
        checks=listed(rows=rows, listing=asked.listing, min_flips=asked.min_flips),
        families=family_rows(runs=window.runs, keep=keep) if asked.listing == "all" else [],
    )
