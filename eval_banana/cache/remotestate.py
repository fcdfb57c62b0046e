"""What one run's use of the shared tier holds (its settings, counters and queues, the entries
it looked at), and the rule its writes and removals keep: a remote entry sealed with a signature
this run cannot verify is never written over nor removed (docs/shared-cache.md)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from eval_banana.cache.remotedoc import parsed
from eval_banana.cache.remoteheld import HeldFetches
from eval_banana.cache.remotenotes import Asked, Rejection, Warn, say_errors
from eval_banana.cache.store import CacheStore
from eval_banana.remote.guarded import GuardedRemote, RemoteTally
from eval_banana.remote.signing import Opened, opened, signature_problem

_Item = TypeVar("_Item")


class TierState:
    """The shared tier's state for one run, which fetching, storing and removing share."""

    def __init__(
        self,
        *,
        remote: GuardedRemote,
        store: CacheStore,
        writes: bool,
        signing_key: bytes | None,
        require_signature: bool,
        warn: Warn,
    ) -> None:
        self.remote = remote
        self.store = store
        self.writes = writes
        self._signing_key = signing_key
        self._require_signature = require_signature
        self._warn = warn
        self._lock = threading.Lock()
        self.fetched: set[str] = set()  # keys whose entry came from the remote in this run
        # Those fetched while another run's checks executed with the local folder.
        self.held = HeldFetches()
        self.rejected: dict[Rejection, int] = {"signature": 0, "entry": 0, "blob": 0}
        self._refusals: list[tuple[Rejection, str]] = []  # told when the prefetch ends
        self.writes_done = 0
        # Verdicts stored locally only: the remote holds a sound entry under their key signed
        # with a signature this run cannot verify, which it never writes over.
        self.kept_local = 0
        self._queued: list[tuple[str, dict[str, Any]]] = []
        # Keys (-> check id) whose verdict from before a refresh went, to be removed remotely.
        self._dropped: dict[str, str] = {}
        # Keys whose remote entry this run has looked at, and those among them that hold a sound
        # entry sealed with a signature this run cannot verify (another signing key's, or any
        # signature when the run has no key): it never writes over those.
        self._examined: set[str] = set()
        self._guarded: set[str] = set()
        # Digests of the blobs the lookups found the remote holding with other content: an
        # upload of one sends it whatever size the remote's object has (HEAD tells only that).
        self._damaged_blobs: set[str] = set()
        self.blobs_replaced = 0  # remote objects of a blob's size and other content sent over
        self.oversized = 0  # verdicts whose entry would be larger than any runner reads

    def tally(self) -> RemoteTally:
        return self.remote.tally()

    def _examined_now(self, *, key: str, guarded: bool) -> None:
        with self._lock:
            self._examined.add(key)
            if guarded:
                self._guarded.add(key)

    def _found_damaged(self, sha256: str, /) -> None:
        with self._lock:
            self._damaged_blobs.add(sha256)

    def _sealed_by_another(self, *, data: bytes, key: str, check_id: str) -> bool:
        """Whether a remote entry carries a signature this run cannot verify over an entry that
        is otherwise sound: most likely the verdict of runners that hold another signing key,
        which they would miss were it written over. An unsigned entry, one whose signature
        holds, and one whose text is damaged beyond its signature (no runner could reuse it)
        may be replaced."""
        found: Opened = opened(data)
        if found.signature is None:
            return False
        if (
            self._signing_key is not None
            and signature_problem(key=self._signing_key, found=found) is None
        ):
            return False
        problem, _, _ = parsed(text=found.text, key=key, check_id=check_id)
        return problem is None

    def _each_guarded(
        self,
        *,
        work: Callable[[_Item], str],
        items: Sequence[_Item],
        asked: Asked,
        stop: threading.Event | None = None,
    ) -> int:
        """Do `work` on each item, `remote_concurrency` at once, say the requests that failed
        (as `asked`), and return how many items an entry this run cannot verify guarded.
        `stop` (an interrupt): once set, no item more is begun and none is waited for."""
        errors_before = self.remote.tally().errors
        outcomes = (
            self.remote.each(work=work, items=items)
            if stop is None
            else self.remote.each_until(work=work, items=items, stop=stop)
        )
        say_errors(remote=self.remote, asked=asked, warn=self._warn, since=errors_before)
        return outcomes.count("guarded")
