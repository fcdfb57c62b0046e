"""The start order planned from expected durations: the workers end together, the run still
starts with its longest checks, and the plan stays a plain order the pool takes in turn."""

from __future__ import annotations

import heapq
import json
import random
from collections.abc import Sequence
from pathlib import Path

from eval_banana.history.lanes import planned_order
from eval_banana.history.recent import start_order
from tests.history.synth import check, digest, record, write


def list_schedule_end(*, order: Sequence[int], durations: Sequence[float], workers: int) -> float:
    """When a pool of `workers` that takes `order` in turn ends: what eb's execute stage does."""
    free_at = [0.0] * workers
    for position in order:
        heapq.heappush(free_at, heapq.heappop(free_at) + durations[position])
    return max(free_at)


def test_the_plan_ends_where_longest_first_cannot() -> None:
    durations = [7.0, 5.0, 5.0, 4.0, 3.0]  # longest first: 7+3+... against 5+5+4
    longest_first = list_schedule_end(order=range(5), durations=durations, workers=2)
    order = planned_order(durations=durations, workers=2)
    assert sorted(order) == [0, 1, 2, 3, 4]
    assert longest_first == 13.0
    # 7+5 and 5+4+3: the bound max(longest, sum / 2) itself.
    assert list_schedule_end(order=order, durations=durations, workers=2) == 12.0


def test_log_normal_judges_end_within_a_hair_of_the_bound() -> None:
    # W15's shape: 64 judges of log-normal length on 8 workers.
    draw = random.Random(15)
    durations = sorted((draw.lognormvariate(-0.7, 0.8) for _ in range(64)), reverse=True)
    bound = max(durations[0], sum(durations) / 8)
    order = planned_order(durations=durations, workers=8)
    planned = list_schedule_end(order=order, durations=durations, workers=8)
    longest_first = list_schedule_end(order=range(64), durations=durations, workers=8)
    assert planned <= longest_first
    assert planned <= bound + 0.005
    # The first wave is still the eight longest checks.
    assert sorted(order[:8]) == list(range(8))


def test_nothing_to_plan_keeps_the_order_given() -> None:
    durations = [3.0, 2.0, 1.0]
    assert planned_order(durations=durations, workers=1) == [0, 1, 2]
    assert planned_order(durations=durations, workers=3) == [0, 1, 2]
    assert planned_order(durations=[], workers=4) == []
    # Past the planning limit the longest-first order is already close to the bound.
    many = [1.0] * 5_000
    assert planned_order(durations=many, workers=4) == list(range(5_000))


def test_the_same_durations_plan_the_same_order() -> None:
    durations = sorted((random.Random(seed).uniform(0.1, 4) for seed in range(40)), reverse=True)
    orders = {json.dumps(planned_order(durations=durations, workers=6)) for _ in range(3)}
    assert len(orders) == 1


def test_start_order_balances_the_workers_it_is_given(tmp_path: Path) -> None:
    folder = tmp_path / "history"
    seconds = {"a": 7, "b": 5, "c": 5, "d": 4, "e": 3}
    write(
        folder=folder,
        records=[
            record(
                index=index,
                checks=[check(check_id=name, duration_ms=1000 * s) for name, s in seconds.items()],
            )
            for index in range(3)
        ],
    )
    ids = ["e", "d", "c", "b", "a"]  # plan order (by path) is not the length order
    digests = {name: digest("v1") for name in ids}
    durations = [float(seconds[name]) for name in ids]
    one = start_order(folder=folder, ids=ids, digests=digests)
    two = start_order(folder=folder, ids=ids, digests=digests, workers=2)
    # Equal lengths keep plan order: c before b.
    assert [ids[position] for position in one] == ["a", "c", "b", "d", "e"]
    assert list_schedule_end(order=one, durations=durations, workers=2) == 13.0
    assert list_schedule_end(order=two, durations=durations, workers=2) == 12.0
    assert {ids[position] for position in two[:2]} == {"a", "c"}
