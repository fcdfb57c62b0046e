"""Each run counted once: a merged run stands for the shard runs it merged (docs/history.md).

A merge's record starts when its first shard did, so it sorts among its shards: newest first,
its later shards come before it and its first one after it. A reader of the records before a
window (where a check last passed, where its failing began) leaves every one of them out,
whether their merge is inside the window or older than it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from eval_banana.history.record import HistoryRecord

# How many records a shard run no merge has named yet waits for one (as `eb history`'s window
# reads past a shard run at its edge).
SHARD_LOOKAHEAD = 256


def _waits(record: HistoryRecord, merged: set[str]) -> bool:
    """Whether `record` is a shard run that a merge read later may still name."""
    return record.selection.shard is not None and record.run_id not in merged


def merges_once(*, newest_first: Iterable[HistoryRecord]) -> Iterator[HistoryRecord]:
    """`newest_first` without the shard runs a merge among them merged, in the same order.

    A shard run no merge has named yet is held back until one does or SHARD_LOOKAHEAD more
    records have been read; the records behind it wait with it, so the order stays."""
    merged: set[str] = set()
    held: deque[HistoryRecord] = deque()
    for record in newest_first:
        merged.update(record.merged_from)
        held.append(record)
        while held and (len(held) > SHARD_LOOKAHEAD or not _waits(held[0], merged)):
            first = held.popleft()
            if first.run_id not in merged:
                yield first
    yield from (record for record in held if record.run_id not in merged)
