"""The execute stage's threads: a pool of workers over the checks, and the signals they share.

A few threads over shared queues instead of concurrent.futures, which would also import
`logging` on every start-up.
"""

from __future__ import annotations

import threading
from collections import deque
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
    inline: Callable[[int], bool] | None = None,
) -> None:
    """Run task(0..count-1) on `workers` threads, started in order; return when all are done.

    A few threads over shared queues instead of concurrent.futures, which would also import
    `logging` on every start-up. The main thread waits in short slices, so signal handlers run
    promptly, and a KeyboardInterrupt while waiting stops the run instead of escaping. The first
    exception a task raised (failing to write evidence) is re-raised once every thread is done.

    Positions for which `inline` is true (checks that run in this process, not in a child) are
    taken by the first thread alone, one at a time: Python runs one thread at a time, so more
    threads on them would only contend for the interpreter lock (10,000 assertions cases took
    1.8 times as long on four threads as on one). The first thread takes whichever of the two
    kinds comes next in order; the others take only the checks that run in a child process.
    """
    in_process: deque[int] = deque()
    others: deque[int] = deque()
    for position in range(count):
        (in_process if inline is not None and inline(position) else others).append(position)
    queues = _Queues(inline=in_process, other=others)
    failures: list[BaseException] = []

    def work(*, first: bool) -> None:
        while True:
            position = queues.take(first=first)
            if position is None:
                return
            try:
                task(position)
            except BaseException as exc:  # noqa: BLE001 - surfaced by the main thread below
                failures.append(exc)

    threads = [
        threading.Thread(target=work, kwargs={"first": n == 0}, name=f"eb-check-{n}")
        for n in range(workers)
    ]
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


class _Queues:
    """The pool's two queues of positions, each in order: checks run in this process (the
    first thread's alone) and the others (any thread's)."""

    def __init__(self, *, inline: deque[int], other: deque[int]) -> None:
        self._lock = threading.Lock()
        self._inline = inline
        self._other = other

    def take(self, *, first: bool) -> int | None:
        """The next position for a thread, or None when none is left for it."""
        with self._lock:
            inline, other = self._inline, self._other
            if first and inline and (not other or inline[0] < other[0]):
                return inline.popleft()
            return other.popleft() if other else None


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
