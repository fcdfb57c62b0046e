"""The execute stage's threads: a pool of workers over the checks, and the signals they share.

A few threads over a shared counter instead of concurrent.futures, which would also import
`logging` on every start-up.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from eval_banana.core.log import Logger
from eval_banana.models.result import CheckResult
from eval_banana.runners.results import StopSignal

logger = Logger("eval_banana.runners.pool")

WAIT_SLICE_S = 0.2  # the main thread wakes this often, so signal handlers run promptly


class MaxfailGate:
    """Counts failed and errored checks; once `maxfail` (> 0) is reached no check starts."""

    def __init__(self, *, maxfail: int) -> None:
        self.maxfail = maxfail
        self._failures = 0
        self._lock = threading.Lock()
        self.reached = False

    def count(self, *, result: CheckResult) -> None:
        if self.maxfail <= 0 or result.status == "passed":
            return
        with self._lock:
            self._failures += 1
            if self._failures >= self.maxfail:
                self.reached = True

    @staticmethod
    def held_back(*, results: list[CheckResult]) -> bool:
        """Whether any check was left unstarted because maxfail was reached."""
        return any(result.details.get("not_run_reason") == "maxfail" for result in results)


def notify(callback: Callable[..., None] | None, *args: object) -> None:
    """Progress callbacks are display only: a failing one is logged, never fatal to the run."""
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:  # noqa: BLE001
        logger.warning("Progress callback failed", exc_info=True)


def stop_signal(*, cancel: threading.Event) -> StopSignal:
    """The signal runners watch: `cancel` itself, or a StopSignal that follows a plain Event."""
    if isinstance(cancel, StopSignal):
        return cancel
    stop = StopSignal()
    follow(cancel=cancel, stop=stop)
    return stop


def follow(*, cancel: threading.Event, stop: StopSignal) -> None:
    # A plain Event (e.g. set by a signal handler) can only mean an interrupt.
    if cancel.is_set() and not stop.is_set():
        stop.stop(reason="interrupt")


def run_pool(
    *,
    count: int,
    workers: int,
    task: Callable[[int], None],
    cancel: threading.Event,
    stop: StopSignal,
) -> None:
    """Run task(0..count-1) on `workers` threads, started in order; return when all are done.

    A few threads over a shared counter instead of concurrent.futures, which would also import
    `logging` on every start-up. The main thread waits in short slices, so signal handlers run
    promptly, and a KeyboardInterrupt while waiting stops the run instead of escaping. The first
    exception a task raised (failing to write evidence) is re-raised once every thread is done.
    """
    positions = iter(range(count))
    take = threading.Lock()
    failures: list[BaseException] = []

    def work() -> None:
        while True:
            with take:
                position = next(positions, None)
            if position is None:
                return
            try:
                task(position)
            except BaseException as exc:  # noqa: BLE001 - surfaced by the main thread below
                failures.append(exc)

    threads = [threading.Thread(target=work, name=f"eb-check-{n}") for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            try:
                thread.join(WAIT_SLICE_S)
            except KeyboardInterrupt:
                stop.stop(reason="interrupt")
            follow(cancel=cancel, stop=stop)
    if failures:
        raise failures[0]


def unanswered(*, count: int, answered: Callable[[int], bool], stop: StopSignal) -> list[int]:
    """The positions 0..count-1 that `answered` did not answer, in order.

    An interrupt while answering stops the run as one while checks run does; the positions not
    yet tried are left for the pool, which records them as not run.
    """
    left: list[int] = []
    for index in range(count):
        try:
            if answered(index):
                continue
        except KeyboardInterrupt:
            stop.stop(reason="interrupt")
        left.append(index)
    return left
