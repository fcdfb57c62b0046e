"""What every remote tier speaks.

A remote holds two kinds of objects, both named by 64 hex digits:

    ac/<key hex>       a verdict entry, named by its cache key
    cas/<sha256 hex>   a stored file (blob), named by the SHA-256 of its content

A backend moves bytes and nothing else: it never reads an entry, and it checks no digest
(the cache does both). Every request either answers or raises `RemoteError`.

Blobs stream: a cached judge's raw output can be tens of megabytes, so `get_into` writes an
object into a sink and `put_from` reads one from a file, `CHUNK` bytes at a time, and neither
holds a whole blob in memory. `get` and `put` are for entries, small documents read whole, up
to `ENTRY_MAX_BYTES`: a remote that sends more is refused there, not read into memory.
"""

from __future__ import annotations

import contextlib
import io
import re
import threading
from collections.abc import Callable, Iterator
from typing import BinaryIO, Literal, NamedTuple, Protocol

Kind = Literal["ac", "cas"]
KINDS: tuple[Kind, ...] = ("ac", "cas")
NAME_RE = re.compile(r"[0-9a-f]{64}")
# What one read or write of a streamed object moves at most.
CHUNK = 1 << 20
# No entry eb writes passes it: inline files stop at 1 MiB in all, and an entry that would
# still be larger is not sent (cache/remotestore.py).
ENTRY_MAX_BYTES = 4 << 20


class Watchdog:
    """Calls `stop` once `seconds` have passed, unless cancelled first: what bounds a request
    as a whole. Each socket read has a timeout of its own, which a server sending a byte at a
    time never reaches; `stop` cuts the connection, so a read blocked on it returns at once."""

    def __init__(self, *, seconds: float, stop: Callable[[], None]) -> None:
        self.fired = False
        self._stop = stop
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        with contextlib.suppress(Exception):  # a connection already closed, say
            self._stop()

    def cancel(self) -> None:
        self._timer.cancel()


class Meter:
    """How many requests a backend has sent, retries, redirects and a write's folders included
    (what report.json counts as `remote_requests`); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def add(self) -> None:
        with self._lock:
            self._count += 1

    @property
    def count(self) -> int:
        with self._lock:
            return self._count


# What a refused write (HTTP 403 on PUT, S3's AccessDenied) most likely means, and its fix.
WRITE_REFUSED = (
    "forbidden: the store refuses writes with these credentials; a runner that should only "
    'read sets [cache] remote_mode = "read-only" (EVAL_BANANA_CACHE_REMOTE_MODE)'
)


class RemoteError(Exception):
    """A request to the remote failed: unreachable, timed out, refused, or a bad answer."""


class ListingUnsupported(RemoteError):
    """The remote cannot list what it holds (a plain HTTP cache)."""


class Sink(Protocol):
    """Where `get_into` writes an object's bytes, chunk by chunk. A sink may refuse more
    (raising `SinkRefused`), which ends the request."""

    def write(self, data: bytes, /) -> int: ...


class SinkRefused(Exception):  # noqa: N818 (what happened, as RemoteError says)
    """A sink took no more: the object is larger than the one asked for, or the sink cannot
    keep it. A backend lets it through unchanged; it is no failure of the remote."""


class RemoteItem(NamedTuple):
    """One stored object as a listing shows it."""

    name: str
    size: int
    modified: float  # seconds since the epoch


class RemoteBackend(Protocol):
    """Storage of entries (`ac`) and blobs (`cas`) by name; `url` is safe to show; `sent`
    counts every request it makes."""

    url: str
    sent: Meter

    def get(self, *, kind: Kind, name: str) -> bytes | None:
        """The object's bytes, or None when it is absent."""
        ...

    def put(self, *, kind: Kind, name: str, data: bytes) -> None:
        """Store the object (replacing one of the same name)."""
        ...

    def get_into(self, *, kind: Kind, name: str, sink: Sink) -> int | None:
        """Write the object's bytes into `sink` in chunks; how many, or None when it is
        absent. After a `RemoteError` the sink may hold part of the object."""
        ...

    def put_from(self, *, kind: Kind, name: str, source: BinaryIO, size: int) -> None:
        """Store the `size` bytes of `source` (a file at its start, read in chunks; it may be
        rewound to send it again) as the object."""
        ...

    def head(self, *, kind: Kind, name: str) -> int | None:
        """The object's size, or None when it is absent."""
        ...

    def list(self, *, kind: Kind) -> Iterator[RemoteItem]:
        """Every object of a kind; raises ListingUnsupported where the remote cannot."""
        ...

    def delete(self, *, kind: Kind, name: str) -> bool:
        """Remove the object; whether it was there (True where the remote does not say)."""
        ...

    def unfinished(self, *, kind: Kind) -> Iterator[RemoteItem]:
        """The files of writes that never finished (a writer killed part-way), each named by
        its own file name, where the remote keeps them beside its objects; nothing where a
        write is whole or absent (S3, HTTP)."""
        ...

    def delete_unfinished(self, *, kind: Kind, name: str) -> bool:
        """Remove the file of an unfinished write `unfinished` listed; whether it was there."""
        ...


class WholeWrites:
    """`unfinished` and `delete_unfinished` of a remote whose writes are whole or absent."""

    def unfinished(self, *, kind: Kind) -> Iterator[RemoteItem]:
        return iter(())

    def delete_unfinished(self, *, kind: Kind, name: str) -> bool:
        return False


class WholeObjects:
    """`get` and `put` of small objects (entries) through a backend's own streaming methods,
    so each backend has one way to move bytes."""

    def get_into(self, *, kind: Kind, name: str, sink: Sink) -> int | None:
        raise NotImplementedError

    def put_from(self, *, kind: Kind, name: str, source: BinaryIO, size: int) -> None:
        raise NotImplementedError

    def get(self, *, kind: Kind, name: str) -> bytes | None:
        """The whole object, or None when absent; `SinkRefused` past `ENTRY_MAX_BYTES`."""
        sink = EntryBuffer()
        if self.get_into(kind=kind, name=name, sink=sink) is None:
            return None
        return sink.getvalue()

    def put(self, *, kind: Kind, name: str, data: bytes) -> None:
        self.put_from(kind=kind, name=name, source=io.BytesIO(data), size=len(data))


class EntryBuffer(io.BytesIO):
    """A memory sink for an entry, refusing to grow past `limit` bytes."""

    def __init__(self, *, limit: int = ENTRY_MAX_BYTES) -> None:
        super().__init__()
        self.limit = limit

    def write(self, data: bytes, /) -> int:  # type: ignore[override]
        if self.tell() + len(data) > self.limit:
            raise SinkRefused(f"is larger than {self.limit:,} bytes, more than any entry eb writes")
        return super().write(data)


def checked_name(name: str) -> str:
    """`name` if it is 64 lowercase hex digits (nothing else ever names an object)."""
    if not NAME_RE.fullmatch(name):
        raise ValueError(f"not an object name: {name!r}")
    return name
