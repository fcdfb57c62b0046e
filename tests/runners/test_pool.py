"""The execute stage's pool: checks that run in this process go one at a time, on one thread,
while the checks that wait on a child process share every worker."""

from __future__ import annotations

import threading
import time

from eval_banana.runners.pool import run_pool
from eval_banana.runners.results import StopSignal


class _Tally:
    """Who ran each task, how many in-process tasks overlapped, and the start order."""

    def __init__(self, *, inline: set[int]) -> None:
        self.inline = inline
        self.lock = threading.Lock()
        self.running_inline = 0
        self.most_inline = 0
        self.threads: dict[int, str] = {}
        self.started: list[int] = []

    def task(self, position: int) -> None:
        with self.lock:
            self.started.append(position)
            self.threads[position] = threading.current_thread().name
            if position in self.inline:
                self.running_inline += 1
                self.most_inline = max(self.most_inline, self.running_inline)
        time.sleep(0.01)  # long enough for four threads to overlap if they may
        with self.lock:
            if position in self.inline:
                self.running_inline -= 1


def _run(*, count: int, workers: int, tally: _Tally) -> None:
    run_pool(
        count=count,
        workers=workers,
        task=tally.task,
        cancel=threading.Event(),
        stop=StopSignal(),
        inline=lambda position: position in tally.inline,
    )


def test_in_process_checks_run_one_at_a_time_on_the_first_thread() -> None:
    tally = _Tally(inline=set(range(40)))
    _run(count=40, workers=4, tally=tally)
    assert sorted(tally.started) == list(range(40))
    assert tally.started == list(range(40))  # in turn order
    assert tally.most_inline == 1
    assert set(tally.threads.values()) == {"eb-check-0"}


def test_checks_in_child_processes_still_share_every_worker() -> None:
    # Three checks that can only end together (a barrier of three) beside twenty in-process
    # ones: the other workers take the three while the first thread works through the twenty.
    inline = set(range(3, 23))
    barrier = threading.Barrier(3, timeout=10)
    tally = _Tally(inline=inline)

    def task(position: int) -> None:
        if position not in inline:
            barrier.wait()
        tally.task(position)

    run_pool(
        count=23,
        workers=4,
        task=task,
        cancel=threading.Event(),
        stop=StopSignal(),
        inline=lambda position: position in inline,
    )
    assert sorted(tally.started) == list(range(23))
    assert tally.most_inline == 1
    assert {tally.threads[position] for position in inline} == {"eb-check-0"}
    assert not barrier.broken


def test_one_worker_keeps_the_turn_order_across_both_kinds() -> None:
    tally = _Tally(inline={1, 2, 5})
    _run(count=7, workers=1, tally=tally)
    assert tally.started == list(range(7))
