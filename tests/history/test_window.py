"""The window of runs `eb history` shows: chosen as counting its runs afresh for every record
read did, in work that grows with the records read, not with their square."""

from __future__ import annotations

import itertools
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_banana.checks.keywords import compile_selector
from eval_banana.core.moments import parse_moment
from eval_banana.history import show
from eval_banana.history.record import HistoryRecord
from eval_banana.models.config import Selection, Shard
from tests.history.synth import check, record


def _asked(*, last: int, since: datetime | None = None) -> show.Asked:
    return show.Asked(
        last=last,
        since=since,
        check_ids=[],
        selector=compile_selector(keyword=None, tags=[]),
        listing="all",
        min_flips=2,
    )


def _counted_afresh(
    *, newest_first: list[HistoryRecord], asked: show.Asked, lookahead: int
) -> tuple[list[HistoryRecord], list[HistoryRecord]]:
    """The window as it was chosen before: the runs no merge stands for counted again after
    each record read, a merge that shares a shard run with a newer merge standing left out.
    (runs oldest first, the older records not read)"""
    source = iter(newest_first)
    taken: list[HistoryRecord] = []
    merged: set[str] = set()
    standing: list[HistoryRecord] = []

    def superseded(one: HistoryRecord) -> bool:
        if not one.merged_from:
            return False
        newer = [m for m in standing if m.run_id != one.run_id]
        if any(set(one.merged_from) & set(m.merged_from) for m in newer):
            return True
        standing.append(one)
        return False

    pushed_back: list[HistoryRecord] = []
    extra = 0
    for one in source:
        if asked.since is not None and parse_moment(one.started_at) < asked.since:
            pushed_back.append(one)
            # Read on past the cut-off for the merge of a shard run in the window.
            while True:
                merged.update(pushed_back[-1].merged_from)
                waits = any(r.selection.shard is not None for r in taken if r.run_id not in merged)
                at_edge = pushed_back[-1]
                if (
                    not waits
                    or at_edge.selection.shard is None
                    or at_edge.run_id in merged
                    or len(pushed_back) > lookahead
                ):
                    break
                after = next(source, None)
                if after is None:
                    break
                pushed_back.append(after)
            break
        taken.append(one)
        merged.update(one.merged_from)
        if superseded(one):
            merged.add(one.run_id)
        if sum(run.run_id not in merged for run in taken) < asked.last:
            continue
        newest = taken[-1]
        if newest.selection.shard is None or newest.run_id in merged or extra >= lookahead:
            break
        extra += 1
    counted = [one for one in taken if one.run_id not in merged]
    runs = counted[: asked.last]
    # The runs read past the edge are older records, never lost.
    older = [
        one
        for one in itertools.chain(counted[asked.last :], pushed_back, source)
        if one.run_id not in merged and not superseded(one)
    ]
    return runs[::-1], older


_RUN_IDS = ("a", "b", "c", "d", "e")
_BASE = record(index=1, checks=[check(check_id="x")])


def _run(*, index: int, run_id: str, shard: bool, merged_from: list[str]) -> HistoryRecord:
    """Run `run_id` started at second `index`: a shard of 2, or a merge of `merged_from`."""
    selection = Selection(shard=Shard(index=1, total=2) if shard else None)
    return _BASE.model_copy(
        update={
            "run_id": run_id,
            "kind": "merge" if merged_from else "run",
            "merged_from": merged_from,
            "selection": selection,
            "started_at": f"2026-01-01T00:00:{index:02d}.000000+00:00",
        }
    )


# A few run ids, so runs repeat an id and merges name runs read before them, after them or never.
_RUNS = st.lists(
    st.tuples(
        st.sampled_from(_RUN_IDS),
        st.booleans(),
        st.lists(st.sampled_from(_RUN_IDS), max_size=3),
    ),
    max_size=12,
)


@settings(max_examples=400, deadline=None)
@given(
    runs=_RUNS,
    last=st.integers(min_value=1, max_value=6),
    since=st.none() | st.integers(min_value=0, max_value=12),
    lookahead=st.integers(min_value=0, max_value=3),
)
def test_the_window_is_the_one_counting_afresh_chose(
    runs: list[tuple[str, bool, list[str]]], last: int, since: int | None, lookahead: int
) -> None:
    # Newest first: the first run read started last.
    newest_first = [
        _run(index=len(runs) - position, run_id=run_id, shard=shard, merged_from=merged_from)
        for position, (run_id, shard, merged_from) in enumerate(runs)
    ]
    moment = None if since is None else parse_moment(f"2026-01-01T00:00:{since:02d}+00:00")
    asked = _asked(last=last, since=moment)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(show, "SHARD_LOOKAHEAD", lookahead)
        window = show.window_of(newest_first=newest_first, asked=asked)
        expected = _counted_afresh(newest_first=newest_first, asked=asked, lookahead=lookahead)
    assert ([id(one) for one in window.runs], [id(one) for one in window.older]) == (
        [id(one) for one in expected[0]],
        [id(one) for one in expected[1]],
    )


class _CountedId(str):
    """A run id that counts how often it is looked up in a set."""

    lookups = 0

    def __hash__(self) -> int:
        _CountedId.lookups += 1
        return str.__hash__(self)


def test_a_long_window_looks_each_run_up_a_few_times_not_once_per_run_read() -> None:
    # `eb history --last 20000` counted the runs no merge stands for again after each record:
    # 20,000 records cost 200 million lookups (14 seconds).
    runs = 400
    newest_first = [
        _BASE.model_copy(update={"run_id": _CountedId(f"r{n:04d}")}) for n in range(runs)
    ]
    _CountedId.lookups = 0
    window = show.window_of(newest_first=newest_first, asked=_asked(last=runs))
    assert len(window.runs) == runs and list(window.older) == []
    assert _CountedId.lookups <= 4 * runs
