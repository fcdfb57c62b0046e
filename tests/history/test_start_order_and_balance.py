"""The start order and the shard split the history gives: longest expected first, and a
longest-processing-time split that every job computes alike."""

from __future__ import annotations

import random
from pathlib import Path

from eval_banana.checks.shard import shard_of
from eval_banana.history.balance import balance_shards, durations_digest
from eval_banana.history.recent import (
    RunTimings,
    Timing,
    expected_seconds,
    latest_seconds,
    longest_first,
    recent_timings,
    start_order,
)
from eval_banana.history.record import HistoryRecord
from tests.history.synth import check, digest, record, write


def test_unknown_checks_first_then_longest_then_plan_order() -> None:
    ids = ["a", "b", "c", "d", "e"]
    expected = {"a": 1.0, "b": 3.0, "d": 3.0, "e": 0.5}
    # c has no duration: it goes first; b and d tie, plan order keeps b before d.
    assert longest_first(ids=ids, expected=expected) == [2, 1, 3, 0, 4]


def test_start_order_reads_durations_on_the_current_definition_only(tmp_path: Path) -> None:
    folder = tmp_path / "history"
    runs = [
        record(
            index=index,
            checks=[
                check(check_id="short", duration_ms=100),
                check(check_id="long", duration_ms=9000),
                # Quick on its old definition; its current one has no run yet.
                check(check_id="edited", definition="old", duration_ms=10),
            ],
        )
        for index in range(3)
    ]
    write(folder=folder, records=runs)
    ids = ["short", "long", "edited"]
    digests = {"edited": digest("new"), "long": digest("v1"), "short": digest("v1")}
    # edited is unknown on its new definition: first, then the longest.
    assert start_order(folder=folder, ids=ids, digests=digests) == [2, 1, 0]
    digests["edited"] = digest("old")
    assert start_order(folder=folder, ids=ids, digests=digests) == [1, 0, 2]
    # No history at all: plan order.
    assert start_order(folder=tmp_path / "none", ids=ids, digests=digests) == [0, 1, 2]


def test_recent_timings_are_the_newest_oldest_first(tmp_path: Path) -> None:
    folder = tmp_path / "history"
    runs = [record(index=i, checks=[check(check_id="x", duration_ms=1000 * i)]) for i in range(9)]
    write(folder=folder, records=runs)
    found = recent_timings(folder=folder, runs=4)
    assert [run.timings[0].seconds for run in found] == [5.0, 6.0, 7.0, 8.0]
    # A shard's record is passed over when only unsharded runs are asked for.
    shard = {"index": 1, "total": 2}
    sharded = runs[8].model_copy(
        update={"selection": runs[8].selection.model_copy(update={"shard": shard})}
    )
    (folder / "x").mkdir()
    write(folder=folder / "x", records=[*runs[:8], sharded])
    found = recent_timings(folder=folder / "x", runs=2, unsharded=True)
    assert [run.timings[0].seconds for run in found] == [6.0, 7.0]


def test_recent_timings_hold_one_copy_of_each_id_and_digest(tmp_path: Path) -> None:
    # Every run reads thirty records before its first check starts: at 10,000 checks, each
    # record's own copies of the same ids and digests were 50 MB.
    folder = tmp_path / "history"
    runs = [record(index=i, checks=[check(check_id="x", duration_ms=10 * i)]) for i in range(5)]
    write(folder=folder, records=runs)
    found = recent_timings(folder=folder)
    timings = [run.timings[0] for run in found]
    assert len(timings) == 5
    assert all(timing.check_id is timings[0].check_id for timing in timings)
    assert all(timing.digest is timings[0].digest for timing in timings)


def test_a_file_that_is_no_record_is_skipped_with_a_warning(tmp_path: Path) -> None:
    folder = tmp_path / "history"
    write(folder=folder, records=[record(index=1, checks=[check(check_id="x")])])
    (folder / "20990101-broken.json").write_text('{"checks": [{"id": 3}]}')
    said: list[str] = []
    found = recent_timings(folder=folder, warn=said.append)
    assert len(found) == 1 and "20990101-broken.json" in said[0]


def test_balance_is_longest_processing_time_ties_by_id() -> None:
    expected = {"e": 3.0, "a": 5.0, "b": 4.0, "c": 3.0, "d": 3.0}
    # 5 -> 1; 4 -> 2; c (3) -> 2 (4 < 5); d (3) -> 1 (5 < 7); e (3) -> 2 (7 < 8).
    assert balance_shards(ids=list("abcde"), expected=expected, total=2) == {
        "a": 1,
        "b": 2,
        "c": 2,
        "d": 1,
        "e": 2,
    }


def test_balance_does_not_depend_on_the_order_of_the_ids() -> None:
    rng = random.Random(7)
    ids = [f"judge_{index:03d}" for index in range(200)]
    expected = {check_id: rng.lognormvariate(0, 1) for check_id in ids[:150]}
    first = balance_shards(ids=ids, expected=expected, total=8)
    shuffled = list(ids)
    rng.shuffle(shuffled)
    assert balance_shards(ids=shuffled, expected=dict(reversed(expected.items())), total=8) == (
        first
    )
    # The checks with no duration are where the hash puts them.
    for check_id in ids[150:]:
        assert first[check_id] == shard_of(check_id=check_id, total=8)


def test_balance_evens_the_shards_where_the_hash_does_not() -> None:
    rng = random.Random(15)
    ids = [f"judge_{index:04d}" for index in range(1000)]
    expected = {check_id: rng.lognormvariate(-0.69, 0.9) for check_id in ids}

    def ratio(split: dict[str, int]) -> float:
        loads = [0.0] * 8
        for check_id, shard in split.items():
            loads[shard - 1] += expected[check_id]
        return max(loads) / (sum(loads) / 8)

    by_hash = {check_id: shard_of(check_id=check_id, total=8) for check_id in ids}
    balanced = balance_shards(ids=ids, expected=expected, total=8)
    assert ratio(balanced) <= 1.01
    assert ratio(by_hash) > ratio(balanced)


def test_latest_seconds_use_the_last_definition_and_skip_early_errors(tmp_path: Path) -> None:
    runs = [
        record(index=0, checks=[check(check_id="x", definition="old", duration_ms=50_000)]),
        record(index=1, checks=[check(check_id="x", duration_ms=2000)]),
        record(index=2, checks=[check(check_id="x", duration_ms=4000)]),
        record(index=3, checks=[check(check_id="x", outcome="E", early_error=True)]),
    ]
    write(folder=tmp_path, records=runs)
    assert latest_seconds(runs=recent_timings(folder=tmp_path)) == {"x": 3.0}
    by_hand = [RunTimings(sharded=False, timings=[Timing("y", "d1", 1.0), Timing("y", "d2", 5.0)])]
    assert latest_seconds(runs=by_hand) == {"y": 5.0}


def test_latest_seconds_count_every_sample_a_check_took_last() -> None:
    # Four samples side by side took 1.2 s of wall time, 0.5 s each: 2 s of a shard's work.
    # An earlier run took one sample of 0.7 s; the median sample (0.6 s) times the four.
    runs = [
        RunTimings(sharded=False, timings=[Timing("s", "d1", 0.7)]),
        RunTimings(sharded=False, timings=[Timing("s", "d1", 1.2, samples=4, sample_seconds=0.5)]),
    ]
    assert latest_seconds(runs=runs) == {"s": 2.4}
    assert latest_seconds(runs=runs[1:]) == {"s": 2.0}


def test_equal_tables_give_equal_digests() -> None:
    one = durations_digest(durations={"a": 1.5, "b": 2.0})
    assert one == durations_digest(durations={"b": 2.0, "a": 1.5})
    assert one != durations_digest(durations={"a": 1.5, "b": 2.5})


def test_the_lean_reader_and_a_record_read_whole_give_the_same_timings(tmp_path: Path) -> None:
    """`eb plan` and the start order read the lean timings; `durations` reads whole records:
    both must see the same durations and costs (cached and early errors included)."""
    from eval_banana.history.durations import expected_costs, expected_durations
    from eval_banana.history.read import load_records
    from eval_banana.history.recent import expected_cost, timings_of_record

    runs = [
        record(
            index=i,
            checks=[
                check(check_id="j", duration_ms=100 * (i + 1), cost_usd=0.1 * (i + 1)),
                check(check_id="c", duration_ms=50, cost_usd=0.5, cached=i % 2 == 0),
                check(check_id="e", outcome="E", duration_ms=1, early_error=i == 1),
            ],
        )
        for i in range(4)
    ]
    folder = tmp_path / "history"
    write(folder=folder, records=runs)
    lean = recent_timings(folder=folder)
    whole = [timings_of_record(one) for one in load_records(folder=folder)]
    assert lean == whole
    digests = {name: digest("v1") for name in ("j", "c", "e")}
    assert expected_seconds(runs=lean, digests=digests) == expected_durations(
        records=runs, digests=digests
    )
    assert expected_cost(runs=lean, digests=digests) == expected_costs(
        records=runs, digests=digests
    )
    assert expected_cost(runs=lean, digests=digests)["c"] == 0.5  # only the runs that ran it
    assert "e" in expected_seconds(runs=lean, digests=digests)  # three of four runs count


def _shard(one: HistoryRecord, *, index: int) -> HistoryRecord:
    selection = one.selection.model_copy(update={"shard": {"index": index, "total": 2}})
    return one.model_copy(update={"selection": selection})


def test_a_merged_run_counts_once_not_again_in_its_shards(tmp_path: Path) -> None:
    """A merge and the shard runs it merged were both read: each check's sharded time counted
    twice, outweighing the slow run before them (9 s, then 1 s: expected 1 s, not 5 s)."""
    from eval_banana.history.durations import expected_durations

    slow = record(index=0, checks=[check(check_id="x", duration_ms=9000)])
    first = _shard(record(index=1, checks=[check(check_id="x", duration_ms=1000)]), index=1)
    second = _shard(record(index=2, checks=[check(check_id="y", duration_ms=1000)]), index=2)
    # A merge's record starts when its first shard did: it sorts between its shards.
    merge = record(
        index=1,
        checks=[check(check_id="x", duration_ms=1000), check(check_id="y", duration_ms=1000)],
    ).model_copy(
        update={"run_id": "20260101_000001_merged", "merged_from": [first.run_id, second.run_id]}
    )
    digests = {"x": digest("v1"), "y": digest("v1")}
    unmerged, merged = tmp_path / "unmerged", tmp_path / "merged"
    write(folder=unmerged, records=[slow, first, second])
    write(folder=merged, records=[slow, first, second, merge])
    assert expected_seconds(runs=recent_timings(folder=merged), digests=digests) == {
        "x": 5.0,
        "y": 1.0,
    }
    assert [run.run_id for run in recent_timings(folder=merged)] == [slow.run_id, merge.run_id]
    assert expected_durations(records=[slow, first, merge, second], digests=digests) == {
        "x": 5.0,
        "y": 1.0,
    }
    # The run starts x (5 s) first either way, where a 1 s tie with y kept plan order.
    ids = ["y", "x"]
    assert start_order(folder=merged, ids=ids, digests=digests) == start_order(
        folder=unmerged, ids=ids, digests=digests
    )
