"""Requests to the remote with counters, a bound on concurrency and a circuit breaker.

A remote that is down, slow or refusing must never fail or stall a run. Each request is
bounded by the backend's timeout; after `TRIP_AFTER` failures in a row the run stops asking
(every later request fails at once), so a run against a remote that times out every request
waits about one timeout per wave of concurrent requests, not one per check.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import BinaryIO, NamedTuple, TypeVar

from eval_banana.remote.backend import (
    EntryBuffer,
    Kind,
    RemoteBackend,
    RemoteError,
    Sink,
    SinkRefused,
)

TRIP_AFTER = 3
WAIT_SLICE_S = 0.1  # how often a caller waiting on requests looks whether the run is stopping
_Item = TypeVar("_Item")
_Out = TypeVar("_Out")


class RemoteInterrupted(RemoteError):
    """The run was interrupted while reading: the request was not sent, or its answer was cut
    off part-way. No failure of the remote: it is not counted, and trips nothing."""


class _Stopping:
    """A sink that refuses more once `stop` is set: a download ends at its next chunk."""

    def __init__(self, *, sink: Sink, stop: threading.Event) -> None:
        self._sink = sink
        self._stop = stop

    def write(self, data: bytes, /) -> int:
        if self._stop.is_set():
            raise SinkRefused("not read to the end: the run was interrupted")
        return self._sink.write(data)


class RemoteTally(NamedTuple):
    """What one run's requests came to."""

    requests: int  # every request sent, however many one call took
    errors: int
    bytes_down: int
    bytes_up: int
    first_error: str | None
    tripped: bool


class GuardedRemote:
    """A backend as one run uses it; thread-safe."""

    def __init__(self, *, backend: RemoteBackend, concurrency: int) -> None:
        self.backend = backend
        self.url = backend.url
        self.concurrency = max(1, concurrency)
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)  # a request ended
        self._in_flight = 0
        # What the backend had sent before this run used it: the rest are this run's.
        self._sent_before = backend.sent.count
        self._errors = 0
        self._in_a_row = 0
        self._down = 0
        self._up = 0
        self._first_error: str | None = None
        self._tripped = False
        self._stop: threading.Event | None = None  # set by `reads_stopped_by`

    @contextmanager
    def reads_stopped_by(self, stop: threading.Event) -> Iterator[None]:
        """Within: once `stop` is set (an interrupt), no request is sent and a download under
        way ends at its next chunk, each raising RemoteInterrupted; what a run fetches ahead
        is not worth waiting for once it is stopping. Outside, requests go on regardless (an
        interrupted refresh still removes the entries it dropped)."""
        self._stop = stop
        try:
            yield
        finally:
            self._stop = None

    @property
    def tripped(self) -> bool:
        return self._tripped

    def tally(self) -> RemoteTally:
        with self._lock:
            return RemoteTally(
                requests=self.backend.sent.count - self._sent_before,
                errors=self._errors,
                bytes_down=self._down,
                bytes_up=self._up,
                first_error=self._first_error,
                tripped=self._tripped,
            )

    def get(self, *, kind: Kind, name: str) -> bytes | None:
        """The whole object (an entry), or None when absent; `SinkRefused` past
        `ENTRY_MAX_BYTES`. Streamed like a blob, so an interrupt cuts it off too."""
        buffer = EntryBuffer()
        if self.get_into(kind=kind, name=name, sink=buffer) is None:
            return None
        return buffer.getvalue()

    def put(self, *, kind: Kind, name: str, data: bytes) -> None:
        self._call(lambda: self.backend.put(kind=kind, name=name, data=data))
        with self._lock:
            self._up += len(data)

    def get_into(self, *, kind: Kind, name: str, sink: Sink) -> int | None:
        """The object streamed into `sink` (see RemoteBackend.get_into); its bytes are
        counted once the request has answered."""
        stop = self._stop
        into = sink if stop is None else _Stopping(sink=sink, stop=stop)
        moved = self._call(lambda: self.backend.get_into(kind=kind, name=name, sink=into))
        if moved is not None:
            with self._lock:
                self._down += moved
        return moved

    def put_from(self, *, kind: Kind, name: str, source: BinaryIO, size: int) -> None:
        self._call(lambda: self.backend.put_from(kind=kind, name=name, source=source, size=size))
        with self._lock:
            self._up += size

    def head(self, *, kind: Kind, name: str) -> int | None:
        return self._call(lambda: self.backend.head(kind=kind, name=name))

    def delete(self, *, kind: Kind, name: str) -> bool:
        """Remove the object; whether it was there (see RemoteBackend.delete)."""
        return self._call(lambda: self.backend.delete(kind=kind, name=name))

    def delete_unfinished(self, *, kind: Kind, name: str) -> bool:
        """Remove the file of a write that never finished (see RemoteBackend.unfinished)."""
        return self._call(lambda: self.backend.delete_unfinished(kind=kind, name=name))

    def note_error(self, *, message: str) -> None:
        """Count a bad answer found above the transport (a blob of another digest, say)."""
        with self._lock:
            self._errors += 1
            if self._first_error is None:
                self._first_error = message

    def _call(self, work: Callable[[], _Out]) -> _Out:
        stop = self._stop
        if stop is not None and stop.is_set():
            raise RemoteInterrupted("not asked: the run was interrupted")
        with self._done:
            # While failing, a new request waits for those in flight: a wave of requests that
            # all time out together trips the breaker before any of them is sent again.
            while self._in_a_row and self._in_flight and not self._tripped:
                self._done.wait()
            if self._tripped:
                raise RemoteError("not asked: the remote failed too often in this run")
            self._in_flight += 1
        try:
            found = work()
        except SinkRefused:
            self._answered()  # the remote answered; what it sent was not wanted
            if stop is not None and stop.is_set():
                raise RemoteInterrupted("cut off: the run was interrupted") from None
            raise
        except RemoteError as exc:
            self._failed(message=f"{self.url}: {exc}")
            raise
        except Exception as exc:  # a backend's library failing in a way it did not wrap
            self._failed(message=f"{self.url}: {type(exc).__name__}: {exc}")
            raise RemoteError(str(exc)) from None
        self._answered()
        return found

    def _answered(self) -> None:
        with self._done:
            self._in_a_row = 0
            self._in_flight -= 1
            self._done.notify_all()

    def _failed(self, *, message: str) -> None:
        with self._done:
            self._errors += 1
            self._in_a_row += 1
            self._in_flight -= 1
            if self._first_error is None:
                self._first_error = message
            if self._in_a_row >= TRIP_AFTER:
                self._tripped = True
            self._done.notify_all()

    def each(self, *, work: Callable[[_Item], _Out], items: Iterable[_Item]) -> list[_Out]:
        """`work` of every item, at most `concurrency` at once, results in order."""
        listed = list(items)
        if not listed:
            return []
        if self.concurrency == 1 or len(listed) == 1:
            return [work(item) for item in listed]
        from concurrent.futures import ThreadPoolExecutor  # only a run with a remote needs it

        with ThreadPoolExecutor(
            max_workers=min(self.concurrency, len(listed)), thread_name_prefix="eb-remote"
        ) as pool:
            return list(pool.map(work, listed))

    def each_until(
        self, *, work: Callable[[_Item], _Out], items: Iterable[_Item], stop: threading.Event
    ) -> list[_Out | None]:
        """`work` of every item, at most `concurrency` at once, results in order, until `stop`
        is set (an interrupt): then no item more is begun and the caller stops waiting at once,
        None standing for each item not done by then. The work runs on daemon threads the
        caller waits for in short slices, so a signal handler runs and is heeded promptly; a
        request left under way ends with the process. Every write a backend makes is whole or
        absent (docs/shared-cache.md), so one left so is stored whole or not at all."""
        listed = list(items)
        results: list[_Out | None] = [None] * len(listed)
        waiting = deque(range(len(listed)))
        lock = threading.Lock()
        all_done = threading.Event()
        left = [len(listed)]
        failures: list[BaseException] = []

        def worker() -> None:
            while not stop.is_set():
                with lock:
                    if not waiting:
                        return
                    position = waiting.popleft()
                try:
                    results[position] = work(listed[position])
                except BaseException as exc:  # noqa: BLE001 - raised again on the caller's thread
                    failures.append(exc)
                with lock:
                    left[0] -= 1
                    if left[0] == 0:
                        all_done.set()

        if not listed:
            return results
        for number in range(min(self.concurrency, len(listed))):
            threading.Thread(target=worker, name=f"eb-remote-{number}", daemon=True).start()
        while not all_done.wait(WAIT_SLICE_S):
            if stop.is_set():
                return results
        if failures:
            raise failures[0]
        return results
