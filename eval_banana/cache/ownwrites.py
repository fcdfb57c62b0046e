"""The run's own record of what it wrote to the cache, and what changed there without it.

A check or a judge runs as the user, and may read the cache's secret: a MAC it signs is as
good as eb's. So while checks run, eb remembers the digest of every entry it writes, and at the
end compares the cache with its state when the first check started: an entry or kept run that
changed and is not what eb wrote there is not eb's (docs/fail-closed.md#the-caches-mac). Another
eb run storing the same verdict at the same time is no reason to drop one: an entry this run
reused or stored that now says the same verdict, soundly, stays. Nor is another run reusing an
entry, which marks it as used (its times change, nothing else), when the kernel told every
write while the checks ran.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from eval_banana.cache.entry import entry_problem
from eval_banana.cache.store import CacheStore, FileState
from eval_banana.core.files import sha256_bytes

# What an entry decides (verdict_of): its key, check, expectation, status, score and observed.
Verdict = tuple[Any, ...]


class OwnWrites:
    """One run's record: entry path -> digest of what it wrote, and the verdicts it knows."""

    def __init__(self, *, store: CacheStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._written: dict[str, str] = {}
        self._verdicts: dict[str, Verdict] = {}
        self._before: dict[str, FileState] | None = None  # None: no check has started
        # Whether the kernel told every write into the cache while the checks ran: then a file
        # whose times alone changed (the same inode and size) was marked as used, not written.
        self._writes_told = False

    def remember_state(self, *, writes: bool) -> None:
        """Note every entry's and kept run's state now, as the first check starts, and the
        secret's: one replaced while checks run is known to whoever replaced it. A run that
        writes makes the secret first, so that no check can put one of its own in place; not
        in a cache folder it could not make (another eb process's checks watch for it to
        appear, core/turns.py `made_in_turn`), where a secret a check puts is seen appearing."""
        if writes and self.store.folder.is_dir():
            self.store.secret(create=True)
        self._before = self.store.states()

    def writes_told(self, *, told: bool) -> None:
        """Whether the watch on eb's files while the checks ran saw every write (inotify).
        Another eb run reusing a verdict of the cache meanwhile marks its entry as just used,
        which changes its times only; with the kernel's word on every write, that is no
        change. Without it, a time changed counts: a check writing in place and setting the
        time back changes the status-change time still."""
        self._writes_told = told

    def reused(self, *, path: str, document: Mapping[str, Any]) -> None:
        self._verdicts[path] = verdict_of(document)

    def known_verdicts(self) -> dict[str, Verdict]:
        """Entry path -> the verdict this run knows there (reused or stored)."""
        with self._lock:
            return dict(self._verdicts)

    def reused_elsewhere(self, *, verdicts: Mapping[str, Verdict]) -> None:
        """Entries a forked child of this run reused (its answers come back as data, and
        what it recorded stayed in its own memory)."""
        with self._lock:
            self._verdicts.update(verdicts)

    def wrote(self, *, path: str, digest: str, document: Mapping[str, Any]) -> None:
        with self._lock:
            self._written[path] = digest
            self._verdicts[path] = verdict_of(document)

    def still_written(self, *, path: str) -> bool:
        """Whether the file at `path` is, byte for byte, what this run wrote there."""
        with self._lock:
            written = self._written.get(path)
        return written is not None and _file_digest(path) == written

    def forget_written(self) -> list[str]:
        """What this run wrote, forgotten (it is to be dropped)."""
        with self._lock:
            written, self._written = list(self._written), {}
        return written

    def changed(self) -> list[str]:
        """Entries and kept runs that changed since `remember_state` and are neither, byte
        for byte, what this run wrote there nor a sound entry of the verdict it knows there."""
        before = self._before
        if before is None:
            return []
        changed = []
        for path, state in self.store.states().items():
            was = before.get(path)
            if was == state or (self._writes_told and _times_only(was=was, now=state)):
                continue
            written = self._written.get(path)
            if written is not None and _file_digest(path) == written:
                continue
            if path in self._verdicts and self._same_verdict(path=path):
                continue
            changed.append(path)
        return sorted(changed)

    def _same_verdict(self, *, path: str) -> bool:
        found = self.store.read_at(path=path)
        document = found.document
        return (
            found.problem is None
            and entry_problem(document) is None
            and verdict_of(document) == self._verdicts[path]
        )


def verdict_of(document: Mapping[str, Any]) -> Verdict:
    """What an entry decides: its key and check, its expectation and its verdict."""
    stored = document["result"]
    return (
        document["key"],
        document["check_id"],
        document["expect"],
        stored["status"],
        stored["score"],
        stored["observed_status"],
    )


def _times_only(*, was: FileState | None, now: FileState) -> bool:
    """Whether a stored file changed in its times alone: the same file, of the same size."""
    return was is not None and was.inode == now.inode and was.size == now.size


def _file_digest(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return sha256_bytes(data=handle.read())
    except OSError:
        return None
