"""The shared second tier of the verdict cache as one run uses it: fetching entries before
checks start, storing new verdicts once they end, and removing those a refresh dropped
(docs/shared-cache.md).

An entry travels as a remote document (cache/remotedoc.py). A fetched entry is checked as a
local one is (schema, key, check) plus its signature and every file's digest, and only then
kept in the local folder, signed with the local MAC; the lookups that follow read it there
(or, while another run's checks execute with that folder, from where it is held meanwhile). A
remote entry that fails any of these is a miss, with a warning and a counter saying why, never
an error or a verdict. A run never writes over, nor removes, an entry signed with a key it
cannot verify.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, TypeVar

from eval_banana.cache.blobs import EMPTY_SHA256
from eval_banana.cache.entry import entry_problem
from eval_banana.cache.places import SlotTaken, hex_of
from eval_banana.cache.remotedoc import INLINE_MAX, blobs, parsed, remote_text
from eval_banana.cache.remotefiles import keep_files, upload_blob
from eval_banana.cache.remoteheld import HeldFetches
from eval_banana.cache.remotenotes import (
    HINT_LOOKUPS,
    HINT_REMOVALS,
    HINT_UPLOADS,
    Asked,
    Rejection,
    Warn,
    say_errors,
    say_refusals,
)
from eval_banana.cache.store import CacheStore
from eval_banana.core.turns import alone
from eval_banana.core.words import plural
from eval_banana.remote.backend import RemoteError, SinkRefused
from eval_banana.remote.guarded import GuardedRemote, RemoteInterrupted, RemoteTally
from eval_banana.remote.signing import (
    SIGNING_KEY_VARIABLE,
    Opened,
    keyless_but_required,
    opened,
    sealed,
    signature_problem,
)

PushOutcome = Literal["stored", "present", "unusable", "failed", "guarded"]
RemoveOutcome = Literal["removed", "absent", "guarded", "failed"]

_Item = TypeVar("_Item")


class Pushed(NamedTuple):
    """What `eb cache push` did with each local entry."""

    stored: int
    present: int  # the remote held it already
    unusable: int  # its local MAC, schema or a file of it did not hold: not shared
    failed: int  # a request failed (counted in the tally)


class RemoteTier:
    """The remote as one run uses it: what it fetched, what it stores, and its counters."""

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

    def tally(self) -> RemoteTally:
        return self.remote.tally()

    # -- fetching ----------------------------------------------------------------------------

    def prefetch(self, *, wanted: Mapping[str, str], stop: threading.Event) -> None:
        """Fetch, check and keep locally the remote entries of `wanted` (key -> check id)
        that the local folder lacks, `remote_concurrency` at once, until `stop` is set (an
        interrupt): then no request more is sent, and downloads under way are cut off."""
        if keyless_but_required(require_signature=self._require_signature, key=self._signing_key):
            return  # said when the tier was opened
        missing = [
            (key, check_id)
            for key, check_id in sorted(wanted.items())
            if not self.store.mark_used(key=key, touch=False)
        ]
        if missing:
            # Kept in the local folder in the cache's turn, as every write there: while
            # another run's checks execute with it, held aside (cache/remoteheld.py).
            with alone(folder=self.store.folder) as ours:
                into = self.store if ours else self.held.store()
                with self.remote.reads_stopped_by(stop):
                    self.remote.each(
                        work=lambda item: self._fetch(key=item[0], check_id=item[1], into=into),
                        items=missing,
                    )
        say_refusals(refusals=self._refusals, url=self.remote.url, warn=self._warn)
        self._refusals = []
        say_errors(remote=self.remote, asked="lookups", warn=self._warn)

    def _fetch(self, *, key: str, check_id: str, into: CacheStore) -> None:
        name = hex_of(key)
        where = f"{self.remote.url} ac/{name}"
        try:
            data = self.remote.get(kind="ac", name=name)
        except RemoteError:
            return  # counted; the check runs as on a miss
        except SinkRefused as exc:
            self._examined_now(key=key, guarded=False)  # too large to be any runner's entry
            self._reject(
                reason="entry",
                message=f"Shared cache entry {where} for check '{check_id}' {exc}; "
                "it counts as a miss",
            )
            return
        self._examined_now(
            key=key,
            guarded=data is not None
            and self._sealed_by_another(data=data, key=key, check_id=check_id),
        )
        if data is None:
            return  # not stored remotely either: an ordinary miss
        found = self._entry(data=data, key=key, check_id=check_id, where=where)
        if found is None:
            return
        entry, inline = found
        try:
            problem = keep_files(store=into, remote=self.remote, entry=entry, inline=inline)
            if problem is None:
                into.write(key=key, document=entry)
        except RemoteInterrupted:
            return  # the run is stopping: the entry is not kept, and no check reuses it
        except SlotTaken as exc:
            # The local folder, not the remote, is damaged: the check runs as on a miss.
            self._warn(
                f"Shared cache entry {where} for check '{check_id}' cannot be kept: {exc}",
                str(exc.path),
                HINT_LOOKUPS,
            )
            return
        if problem is not None:
            self._reject(
                reason="blob",
                message=f"Shared cache entry {where} for check '{check_id}' {problem}; "
                "it counts as a miss",
            )
            return
        with self._lock:
            self.fetched.add(key)
            if into is not self.store:
                self.held.entries[key] = entry

    def _entry(
        self, *, data: bytes, key: str, check_id: str, where: str
    ) -> tuple[dict[str, Any], dict[str, bytes]] | None:
        """A fetched entry and its inline files, when all of it holds; else None (warned)."""
        found = opened(data)
        if self._signing_key is not None:
            problem = signature_problem(key=self._signing_key, found=found)
            if problem is not None:
                self._reject(
                    reason="signature",
                    message=f"Shared cache entry {where} for check '{check_id}' {problem}; "
                    "it counts as a miss",
                )
                return None
        problem, entry, inline = parsed(text=found.text, key=key, check_id=check_id)
        if problem is not None:
            self._reject(
                reason="entry",
                message=f"Shared cache entry {where} for check '{check_id}' {problem}; "
                "it counts as a miss",
            )
            return None
        return entry, inline

    def _examined_now(self, *, key: str, guarded: bool) -> None:
        with self._lock:
            self._examined.add(key)
            if guarded:
                self._guarded.add(key)

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

    def _reject(self, *, reason: Rejection, message: str) -> None:
        with self._lock:
            self.rejected[reason] += 1
            self._refusals.append((reason, message))

    # -- storing -----------------------------------------------------------------------------

    def queue(self, *, key: str, document: Mapping[str, Any]) -> None:
        """A verdict stored locally, to be stored remotely at `upload`."""
        if self.writes:
            with self._lock:
                self._queued.append((key, dict(document)))

    def upload(self, *, keep: Callable[[str], bool]) -> None:
        """Store the queued verdicts whose local entry is still this run's (`keep(key)`),
        `remote_concurrency` at once; a failure is counted, never raised."""
        with self._lock:
            queued, self._queued = self._queued, []
        chosen = [(key, document) for key, document in queued if keep(key)]
        guarded = self._each_guarded(
            work=lambda item: self._put_unless_guarded(key=item[0], document=item[1]),
            items=chosen,
            asked="uploads",
        )
        with self._lock:
            self.kept_local += guarded
        if guarded:
            self._warn(
                f"{plural(count=guarded, noun='verdict')} of this run "
                f"{'was' if guarded == 1 else 'were'} stored in the local cache only: the "
                f"shared cache {self.remote.url} holds an entry under each key signed with a "
                "key this run cannot verify (another "
                f"{SIGNING_KEY_VARIABLE}, or none set here), and a run never writes over one "
                "(the runners holding that key still reuse it; docs/shared-cache.md)",
                None,
                HINT_UPLOADS,
            )

    def _each_guarded(
        self, *, work: Callable[[_Item], str], items: Sequence[_Item], asked: Asked
    ) -> int:
        """Do `work` on each item, `remote_concurrency` at once, say the requests that failed
        (as `asked`), and return how many items an entry this run cannot verify guarded."""
        errors_before = self.remote.tally().errors
        outcomes = self.remote.each(work=work, items=items)
        say_errors(remote=self.remote, asked=asked, warn=self._warn, since=errors_before)
        return outcomes.count("guarded")

    def _put_unless_guarded(self, *, key: str, document: dict[str, Any]) -> PushOutcome:
        """Store one verdict of this run, unless the remote holds an entry under its key
        sealed with a signature this run cannot verify. An entry the lookups did not look at
        (`--cache refresh` looks nothing up) is fetched first."""
        if key not in self._examined:
            try:
                data = self.remote.get(kind="ac", name=hex_of(key))
            except RemoteError:
                return "failed"  # counted; nothing is written blind
            except SinkRefused:
                data = None  # larger than any entry: damaged, no runner's verdict
            self._examined_now(
                key=key,
                guarded=data is not None
                and self._sealed_by_another(data=data, key=key, check_id=document["check_id"]),
            )
        if key in self._guarded:
            return "guarded"
        return self._put(key=key, document=document)

    def _put(self, *, key: str, document: dict[str, Any]) -> PushOutcome:
        """Store one verdict remotely: "stored", "unusable" (a local file of it went), or
        "failed" (a request failed, counted)."""
        inline: dict[str, str] = {}
        try:
            for blob in blobs(entry=document):
                if blob.size == 0 and blob.sha256 == EMPTY_SHA256:
                    continue
                if blob.size <= INLINE_MAX:
                    data = self.store.read_blob(blob=blob)
                    if isinstance(data, str):
                        return "unusable"  # the local copy went meanwhile: nothing to share
                    inline[blob.sha256] = base64.b64encode(data).decode("ascii")
                elif not upload_blob(store=self.store, remote=self.remote, blob=blob):
                    return "unusable"
            text = remote_text(key=key, entry=document, inline=inline)
            self.remote.put(
                kind="ac", name=hex_of(key), data=sealed(key=self._signing_key, text=text)
            )
        except RemoteError:
            return "failed"  # counted
        with self._lock:
            self.writes_done += 1
        return "stored"

    # -- removing --------------------------------------------------------------------------

    def drop(self, *, key: str, check_id: str) -> None:
        """A verdict from before a refresh went locally: its remote entry goes at
        `remove_dropped`, or the next runner with an empty local cache would fetch it."""
        if self.writes:
            with self._lock:
                self._dropped[key] = check_id

    def remove_dropped(self) -> None:
        """Remove the remote entries `drop` named, except those this run stores anew,
        `remote_concurrency` at once; a failure is counted, never raised."""
        with self._lock:
            dropped, self._dropped = self._dropped, {}
            storing = {key for key, _ in self._queued}
        chosen = sorted(item for item in dropped.items() if item[0] not in storing)
        guarded = self._each_guarded(
            work=lambda item: self._remove_unless_guarded(key=item[0], check_id=item[1]),
            items=chosen,
            asked="removals",
        )
        if guarded:
            self._warn(
                f"{plural(count=guarded, noun='verdict')} from before this refresh "
                f"{'was' if guarded == 1 else 'were'} left in the shared cache "
                f"{self.remote.url}: it holds {'it' if guarded == 1 else 'each'} signed with a "
                f"key this run cannot verify (another {SIGNING_KEY_VARIABLE}, or none set "
                "here), and a run never removes one (docs/shared-cache.md)",
                None,
                HINT_REMOVALS,
            )

    def _remove_unless_guarded(self, *, key: str, check_id: str) -> RemoveOutcome:
        """Remove one remote entry, read first: one sealed with a signature this run cannot
        verify stays, as it would were this run writing over it."""
        name = hex_of(key)
        try:
            data = self.remote.get(kind="ac", name=name)
        except RemoteError:
            return "failed"  # counted; nothing is removed blind
        except SinkRefused:
            data = b""  # larger than any entry: damaged, no runner's verdict
        if data is None:
            return "absent"
        if self._sealed_by_another(data=data, key=key, check_id=check_id):
            return "guarded"
        try:
            self.remote.delete(kind="ac", name=name)
        except RemoteError:
            return "failed"  # counted
        return "removed"

    def push(self, *, keys: Sequence[str]) -> Pushed:
        """Store the local entries of `keys` the remote lacks (`eb cache push`), checked by
        HEAD first, `remote_concurrency` at once. Only entries whose local MAC holds travel,
        without that MAC (it is keyed by the local secret, which never leaves the machine)."""
        outcomes = self.remote.each(work=lambda key: self._push_one(key=key), items=keys)
        return Pushed(
            stored=outcomes.count("stored"),
            present=outcomes.count("present"),
            unusable=outcomes.count("unusable"),
            failed=outcomes.count("failed"),
        )

    def _push_one(self, *, key: str) -> PushOutcome:
        try:
            if self.remote.head(kind="ac", name=hex_of(key)) is not None:
                return "present"
        except RemoteError:
            return "failed"
        document = self.store.read(key=key).document
        if type(document) is not dict or entry_problem(document) is not None:
            return "unusable"  # a local entry that fails its MAC or its schema is never shared
        return self._put(key=key, document=document)
