"""What the pictures draw: each check's outcome per run of a window, and its recent story.

`timelines` feeds the history page's heat strips (one column per run, a mark where the check's
definition changed); `recent` feeds report.html's sparklines and badges (a check's last
outcomes before the run being reported, and whether it flipped on one definition).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from eval_banana.history.merges import SHARD_LOOKAHEAD, each_run_once
from eval_banana.history.read import (
    BadRecord,
    Focus,
    Warn,
    newest_parsed,
    record_json,
    record_paths,
)
from eval_banana.history.record import HistoryRecord
from eval_banana.history.show import Asked, view_of, window_of
from eval_banana.history.view import HistoryView

# One letter per run in a strip: passed, failed, error, not in that run, or not run in it
# (the run stopped before the check had an outcome: painted as not in it, told apart on hover).
LETTERS = {"passed": "p", "failed": "f", "error": "e"}
ABSENT = "-"
NOT_RUN = "n"


class Timeline(NamedTuple):
    """One check over a window: a letter per run (oldest first) and the runs (by index in
    the window) where its definition digest differs from its run before."""

    strip: str
    changes: list[int]


def timelines(*, window: Sequence[HistoryRecord]) -> dict[str, Timeline]:
    """Check id -> its timeline over `window` (oldest first), for every check in it."""
    letters: dict[str, list[str]] = {}
    changes: dict[str, list[int]] = {}
    digests: dict[str, str] = {}
    size = len(window)
    for index, record in enumerate(window):
        for check in record.checks:
            row = letters.get(check.id)
            if row is None:
                row = letters[check.id] = [ABSENT] * size
                changes[check.id] = []
            # A check the run stopped before it had an outcome was not run in it.
            row[index] = NOT_RUN if check.not_run else LETTERS[check.status]
            before = digests.get(check.id)
            if before is not None and before != check.digest:
                changes[check.id].append(index)
            digests[check.id] = check.digest
    return {
        check_id: Timeline(strip="".join(row), changes=changes[check_id])
        for check_id, row in letters.items()
    }


class Recent(NamedTuple):
    """One check's last recorded outcomes before a run (oldest first), and how often it
    flipped between passing and not on one definition over them."""

    statuses: list[str]
    digests: list[str]
    early: list[bool]

    def previous(self) -> str | None:
        """Its latest recorded outcome that says something of the check (no early error)."""
        for status, early in zip(reversed(self.statuses), reversed(self.early), strict=True):
            if not early:
                return status
        return None

    def with_this_run(self, *, keep: int, status: str | None, digest: str | None) -> Recent:
        """The outcomes a run's sparkline draws: the last `keep` recorded, then the run's own
        (`status`; None: it had no outcome, and adds none) on its definition `digest` (None:
        unknown, taken as the latest recorded one). Its flips count the run's own outcome too."""
        statuses, digests = self.statuses[-keep:], self.digests[-keep:]
        early = self.early[-keep:]
        if status is None:
            return Recent(statuses=statuses, digests=digests, early=early)
        own = digest if digest is not None else (digests[-1] if digests else "")
        return Recent(statuses=[*statuses, status], digests=[*digests, own], early=[*early, False])

    def most_flips(self, *, digest: str | None = None) -> int:
        """The most flips on one definition (only on `digest` when given): changes between
        passing and not from one run to the next, both on that definition (as `eb history`
        counts them; early errors skipped)."""
        if len(set(self.statuses)) < 2:
            return 0  # one outcome throughout (most checks): nothing to flip between
        flips: dict[str, int] = {}
        before: tuple[str, bool] | None = None
        for status, seen, early in zip(self.statuses, self.digests, self.early, strict=True):
            if early:
                continue
            passed = status == "passed"
            if before == (seen, not passed) and (digest is None or seen == digest):
                flips[seen] = flips.get(seen, 0) + 1
            before = (seen, passed)
        return max(flips.values(), default=0)


class _Run(NamedTuple):
    """What a sparkline needs of one record: its id, the shards it merged, how many shards its
    pipeline had (0: it ran no shard), and its checks as columns (id, status, digest, early
    error), each check the run had an outcome of at the same place in every column."""

    run_id: str
    merged_from: list[str]
    ids: list[str]
    statuses: list[str]
    digests: list[str]
    early: list[bool]
    shards: int = 0


_STATUSES = frozenset({"passed", "failed", "error"})
_ONLY_STR = frozenset({str})
_ONLY_BOOL = frozenset({bool})


def _lean_record(*, data: bytes) -> _Run:
    """A record's run fields (checked against the schema) and the four fields of each check
    a sparkline reads, type-checked (BadRecord else), for the checks the run had an outcome
    of (a check it did not run is left out). report.html reads twenty records of every check
    on each run: building every entry whole doubled that time, and checking each entry's
    fields one by one was as long again as parsing them; each field is now taken as a column
    and its types checked column by column."""
    from eval_banana.history.check import record_problem

    document = record_json(data)
    if type(document) is not dict:
        raise BadRecord("it is not an eb run record")
    problem = record_problem({key: value for key, value in document.items() if key != "checks"})
    items = document.get("checks", [])
    if problem is not None or type(items) is not list:
        raise BadRecord(f"it is not an eb run record: {problem or 'checks is no list'}")
    if not set(map(type, items)) <= {dict}:
        raise BadRecord(f"it is not an eb run record: {_first_fault(items=items)}")
    ids = [raw.get("id") for raw in items]
    statuses = [raw.get("status") for raw in items]
    digests = [raw.get("digest") for raw in items]
    early = [raw.get("early_error", False) for raw in items]
    not_run = [raw.get("not_run", False) for raw in items]
    if not (
        set(map(type, ids)) <= _ONLY_STR
        and set(map(type, statuses)) <= _ONLY_STR
        and set(statuses) <= _STATUSES
        and set(map(type, digests)) <= _ONLY_STR
        and set(map(type, early)) <= _ONLY_BOOL
        and set(map(type, not_run)) <= _ONLY_BOOL
    ):
        raise BadRecord(f"it is not an eb run record: {_first_fault(items=items)}")
    if True in not_run:
        # The run stopped before these checks had an outcome: they say nothing of the check,
        # which was no more run in it than in a run it was not in (`eb history`'s `·`).
        had = [not stopped for stopped in not_run]
        ids, statuses, digests, early = (
            list(itertools.compress(column, had)) for column in (ids, statuses, digests, early)
        )
    shard = (document.get("selection") or {}).get("shard")  # the schema's: null or a shard
    return _Run(
        run_id=document["run_id"],
        merged_from=list(document.get("merged_from", [])),
        ids=ids,
        statuses=statuses,
        digests=digests,
        early=early,
        shards=0 if shard is None else shard["total"],
    )


def _first_fault(*, items: list[object]) -> str:
    """What is wrong with the first check of `items` a sparkline cannot read."""
    for raw in items:
        if type(raw) is not dict:
            return "a check is no object"
        check_id, status, digest = raw.get("id"), raw.get("status"), raw.get("digest")
        early, not_run = raw.get("early_error", False), raw.get("not_run", False)
        if (
            type(check_id) is not str
            or type(status) is not str
            or status not in _STATUSES
            or type(digest) is not str
            or type(early) is not bool
            or type(not_run) is not bool
        ):
            return f"check {check_id!r} is malformed"
    return "a check is malformed"


def _runs(
    *, records: Iterable[_Run], skip_run_id: str | None, last: int, own_shards: Collection[str]
) -> list[_Run]:
    """The newest `last` records that count as runs (not `skip_run_id`, not one of
    `own_shards` nor a merge of one, not a shard run a merge among them merged, not a merge a
    newer merge of its shards stands for), oldest first; `records` (newest
    first) are read only as far as that takes.

    A merge starts when its first shard did, so its later shards sort before it: counted as
    they came, eight-shard pipelines filled twenty runs with their shards. A shard run waits
    for its merge through its pipeline's other shards and the runs recorded among them: at
    most its shard count (SHARD_LOOKAHEAD at most) and `last` more records, so a history of
    shard runs no merge names (each CI job keeping its own) reads a bounded few more, and one
    without shards none."""
    # A merge of the shards this run merged (the same merge done before) is this pipeline.
    own = frozenset(own_shards)
    others = (
        record
        for record in records
        if record.run_id not in own and own.isdisjoint(record.merged_from)
    )
    once = each_run_once(
        newest_first=others,
        is_shard=lambda record: record.shards > 0,
        lookahead=lambda record: min(record.shards, SHARD_LOOKAHEAD) + last,
    )
    taken = list(
        itertools.islice((record for record in once if record.run_id != skip_run_id), last)
    )
    taken.reverse()
    return taken


def recent(
    *,
    folder: Path,
    skip_run_id: str | None,
    last: int,
    warn: Warn | None = None,
    before: str | None = None,
    own_shards: Collection[str] = (),
) -> dict[str, Recent]:
    """Check id -> its outcomes over the newest `last` runs recorded in `folder` (the run
    `skip_run_id` left out: the run being reported, when its record is written already;
    `before`: only records whose file name sorts before it, the runs started earlier;
    `own_shards`: the shard runs the run being reported merged, which are that run, not
    earlier ones: a merge starts when its first shard did, so that shard sorts before it)."""
    paths = record_paths(folder=folder)
    if before is not None:
        paths = [path for path in paths if path.name < before]
    if not paths:
        return {}
    stream = newest_parsed(paths=paths, parse=lambda data: _lean_record(data=data), warn=warn)
    window = _runs(records=stream, skip_run_id=skip_run_id, last=last, own_shards=own_shards)
    # Each record parses its own copy of every status and digest; a check's twenty runs keep
    # one of each (at 10,000 checks the copies were 30 MB, held all run).
    if _same_checks(window=window):
        return _recent_by_columns(window=window)
    found: dict[str, Recent] = {}
    for record in window:
        for check_id, status, digest, early in zip(
            record.ids, record.statuses, record.digests, record.early, strict=True
        ):
            one = found.get(check_id)
            if one is None:
                one = found[check_id] = Recent(statuses=[], digests=[], early=[])
            one.statuses.append(sys.intern(status))
            one.digests.append(sys.intern(digest))
            one.early.append(early)
    return found


def _same_checks(*, window: Sequence[_Run]) -> bool:
    """Whether every run of `window` had an outcome of the same checks, in the same order,
    each once (most histories: the same suite run again and again)."""
    if not window:
        return False
    ids = window[0].ids
    return all(record.ids == ids for record in window) and len(set(ids)) == len(ids)


def _recent_by_columns(*, window: Sequence[_Run]) -> dict[str, Recent]:
    """`recent`'s answer for a window of runs of the same checks (`_same_checks`): each
    check's outcomes are its row of the runs' columns, read across them in one pass."""
    statuses = zip(*(list(map(sys.intern, record.statuses)) for record in window), strict=True)
    digests = zip(*(list(map(sys.intern, record.digests)) for record in window), strict=True)
    early = zip(*(record.early for record in window), strict=True)
    return {
        check_id: Recent(statuses=list(status), digests=list(digest), early=list(flags))
        for check_id, status, digest, flags in zip(
            window[0].ids, statuses, digests, early, strict=True
        )
    }


def recent_bytes(*, folder: Path, last: int) -> int:
    """The size of the newest `last` record files in `folder`: what `recent` will read."""
    total = 0
    for path in record_paths(folder=folder)[-last:]:
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total


class Picture(NamedTuple):
    """What the history page draws: the view `eb history` prints, and each check's timeline."""

    view: HistoryView
    timelines: dict[str, Timeline]


def build_picture(
    *,
    newest_first: Iterable[HistoryRecord],
    total: int,
    asked: Asked,
    folder: str,
    focus: Focus | None = None,
) -> Picture:
    """The view over the window `asked` chooses (as `eb history`), and the timelines of its
    checks over the same runs; `focus`: as `build_view`'s."""
    window = window_of(newest_first=newest_first, asked=asked)
    view = view_of(window=window, total=total, asked=asked, folder=folder, focus=focus)
    return Picture(view=view, timelines=timelines(window=window.runs))
