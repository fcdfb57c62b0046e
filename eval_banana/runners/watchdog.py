"""Ending checks' process groups on time: one watchdog thread for every running child, which
ends the group of a child past its deadline or cancelled (SIGTERM, a grace, then SIGKILL)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time

from eval_banana.core import forked

GRACE_SECONDS = 2.0


_POLL_SECONDS = 0.05


def _end_group(*, pgid: int, proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the group, give it a short grace, then SIGKILL whatever is left."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=GRACE_SECONDS)
    kill_group(pgid=pgid)


def kill_group(*, pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class Watch:
    """One running child as the watchdog sees it."""

    def __init__(
        self,
        *,
        proc: subprocess.Popen[bytes],
        deadline: float | None,
        cancel: threading.Event,
    ) -> None:
        self.proc = proc
        self.deadline = deadline
        self.cancel = cancel
        self.timed_out = False
        self.cancelled = False
        self.ender: threading.Thread | None = None


class _Watchdog:
    """One thread that ends the groups of children past their deadline or cancelled.

    Shared by every check of the process: a watcher thread per child cost more to start and
    stop than a trivial check costs to run. Ending a group (grace, then SIGKILL) happens on its
    own thread, so one slow group never delays the others' deadlines. The thread waits while
    nothing is watched, and ends when eb is about to fork (`end_if_idle`): eb forks only
    while it has no other thread, and an idle watchdog kept a run that started a check from
    drawing its report.html in a forked child.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._watches: set[Watch] = set()
        self._thread: threading.Thread | None = None
        self._ending = False

    def add(self, watch: Watch) -> None:
        with self._lock:
            idle = not self._watches
            self._watches.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="eb-watchdog", daemon=True)
                self._thread.start()
            elif idle:
                # Only an idle thread (or a fork waiting for it to end) waits to be woken; a busy
                # one sees the new child at its next poll.
                self._lock.notify_all()

    def remove(self, watch: Watch) -> None:
        with self._lock:
            self._watches.discard(watch)

    def end_if_idle(self) -> None:
        """End the thread when nothing is watched, and return once it has ended; a child
        started meanwhile keeps it (the caller then sees a second thread alive)."""
        with self._lock:
            thread = self._thread
            if thread is None or self._watches:
                return
            self._ending = True
            self._lock.notify_all()
            while self._thread is thread and not self._watches:
                self._lock.wait()
            self._ending = False
        if self._thread is not thread:
            thread.join()  # it has let go of the lock: only its last lines are left

    def _run(self) -> None:
        with self._lock:
            while True:
                if not self._watches:
                    if self._ending:
                        self._thread = None
                        self._lock.notify_all()
                        return
                    self._lock.wait()
                    continue
                for watch in [watch for watch in self._watches if self._is_due(watch)]:
                    self._watches.discard(watch)
                    watch.ender = threading.Thread(
                        target=_end_group,
                        kwargs={"pgid": watch.proc.pid, "proc": watch.proc},
                        name=f"end-{watch.proc.pid}",
                        daemon=True,
                    )
                    watch.ender.start()
                # Polls the deadlines.
                self._lock.wait(timeout=_POLL_SECONDS)

    @staticmethod
    def _is_due(watch: Watch) -> bool:
        if watch.cancel.is_set():
            watch.cancelled = True
        elif watch.deadline is not None and time.monotonic() >= watch.deadline:
            watch.timed_out = True
        return watch.cancelled or watch.timed_out


WATCHDOG = _Watchdog()


forked.end_when_idle(WATCHDOG.end_if_idle)
