"""Each run counted once: a merged run stands for the shard runs it merged (docs/history.md).

A merge's record starts when its first shard did, so it sorts among its shards: newest first,
its later shards come before it and its first one after it. A reader of the records before a
window (where a check last passed, where its failing began) leaves every one of them out,
whether their merge is inside the window or older than it. The readers of recent timings (the
durations and costs `eb plan` expects, the order `eb run` starts its checks in) count each run
once the same way, read whole or lean (`each_run_once`).

The same shards can be merged again (a merge job re-run, a merge redone after an interrupt, a
shard re-run and merged with the others): each shard run stands in one merge, the newest that
merged it, and an older merge that shares a shard run with it is left out whole, as its shards
are (`superseded`). Two merges of the same shards start at the same moment; the newer is the
one made later, whose run id (its own time first, to the millisecond: settings/rundir) sorts
after.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol, TypeVar

from eval_banana.history.record import HistoryRecord

# How many records a shard run no merge has named yet waits for one (as `eb history`'s window
# reads past a shard run at its edge).
SHARD_LOOKAHEAD = 256


class RecordedRun(Protocol):
    """What telling a merge from its shards needs of a record, read whole or lean."""

    @property
    def run_id(self) -> str: ...

    @property
    def merged_from(self) -> Sequence[str]: ...


Run = TypeVar("Run", bound=RecordedRun)


def superseded(*, run: RecordedRun, claimed: dict[str, str]) -> bool:
    """Whether `run` is a merge a newer one stands for: a merge read before it (newest first)
    merged one of its shard runs. `claimed`: shard run id -> the merge that stands for it, kept
    across the calls of one reading; a merge that stands claims its shard runs. Asking again
    of the same record gives the same answer."""
    if not run.merged_from:
        return False
    if any(claimed.get(shard, run.run_id) != run.run_id for shard in run.merged_from):
        return True
    claimed.update(dict.fromkeys(run.merged_from, run.run_id))
    return False


def merges_once(*, newest_first: Iterable[HistoryRecord]) -> Iterator[HistoryRecord]:
    """`newest_first` without the shard runs a merge among them merged, in the same order."""
    return each_run_once(
        newest_first=newest_first, is_shard=lambda record: record.selection.shard is not None
    )


def each_run_once(
    *,
    newest_first: Iterable[Run],
    is_shard: Callable[[Run], bool],
    lookahead: int | Callable[[Run], int] = SHARD_LOOKAHEAD,
) -> Iterator[Run]:
    """`newest_first` without the shard runs (`is_shard`) a merge among them merged, in the
    same order, and without the merges a newer merge of their shards stands for (`superseded`).

    A shard run no merge has named yet is held back until one does or `lookahead` more
    records have been read (a number, or one per shard run); the records behind it wait with
    it, so the order stays."""
    merged: set[str] = set()  # the run ids left out: shard runs merged, merges superseded
    claimed: dict[str, str] = {}
    held: deque[Run] = deque()
    patience = (lambda _run: lookahead) if isinstance(lookahead, int) else lookahead

    def waits(run: Run) -> bool:
        return is_shard(run) and run.run_id not in merged

    for run in newest_first:
        merged.update(run.merged_from)
        if superseded(run=run, claimed=claimed):
            merged.add(run.run_id)
        held.append(run)
        while held and (not waits(held[0]) or len(held) > patience(held[0])):
            first = held.popleft()
            if first.run_id not in merged:
                yield first
    yield from (run for run in held if run.run_id not in merged)
