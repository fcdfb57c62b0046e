"""Storing verdicts in the shared tier: a run's new verdicts once its checks end, and the local
entries `eb cache push` sends; only an entry whose local MAC holds travels, without that MAC.

Signed with EVAL_BANANA_CACHE_SIGNING_KEY, an entry vouches for its verdict to every runner
holding the key, so only a verdict this machine judged, or fetched and verified under that same
key, is signed: one fetched unchecked (a keyless run reading an unsigned cache, whose writers
anyone may be) is not, nor one an older eb stored, which does not record where it came from."""

from __future__ import annotations

import base64
import hmac
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from eval_banana.cache.blobs import EMPTY_SHA256, Blob
from eval_banana.cache.entry import entry_problem
from eval_banana.cache.places import hex_of
from eval_banana.cache.remotedoc import blobs, carried_inline, remote_text
from eval_banana.cache.remotefiles import upload_blob
from eval_banana.cache.remotenotes import HINT_UPLOADS
from eval_banana.cache.remotestate import TierState
from eval_banana.core.words import plural
from eval_banana.remote.backend import ENTRY_MAX_BYTES, RemoteError, SinkRefused
from eval_banana.remote.signing import SIGNING_KEY_VARIABLE, sealed, verified_mark

PushOutcome = Literal[
    "stored", "present", "unusable", "unverified", "oversized", "failed", "guarded", "stopped"
]


class Pushed(NamedTuple):
    """What `eb cache push` did with each local entry."""

    stored: int
    present: int  # the remote held it already
    unusable: int  # its local MAC, schema or a file of it did not hold: not shared
    unverified: int  # fetched without a check under the signing key: not signed
    oversized: int  # its entry would be larger than a runner reads: not shared
    failed: int  # a request failed (counted in the tally)
    replaced: int  # blobs the remote held at their size with other content, sent again


class TierStoring(TierState):
    """The verdicts a run stores remotely, and the local entries `eb cache push` sends."""

    def queue(self, *, key: str, document: Mapping[str, Any]) -> None:
        """A verdict stored locally, to be stored remotely at `upload`."""
        if self.writes:
            with self._lock:
                self._queued.append((key, dict(document)))

    def upload(self, *, keep: Callable[[str], bool], stop: threading.Event) -> None:
        """Store the queued verdicts whose local entry is still this run's (`keep(key)`),
        `remote_concurrency` at once; a failure is counted, never raised. Once `stop` is set
        (an interrupt) no upload more begins, none is waited for, and one under way stores no
        entry: its files may be there, which no entry names."""
        with self._lock:
            queued, self._queued = self._queued, []
        chosen = [(key, document) for key, document in queued if keep(key)]
        oversized_before = self.oversized
        guarded = self._each_guarded(
            work=lambda item: self._put_unless_guarded(key=item[0], document=item[1], stop=stop),
            items=chosen,
            asked="uploads",
            stop=stop,
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
        self._say_oversized(count=self.oversized - oversized_before)

    def _say_oversized(self, *, count: int) -> None:
        if count:
            self._warn(
                f"{plural(count=count, noun='verdict')} of this run "
                f"{'was' if count == 1 else 'were'} stored in the local cache only: "
                f"{'its entry' if count == 1 else 'their entries'} in the shared cache "
                f"{self.remote.url} would be larger than the {ENTRY_MAX_BYTES:,} bytes a runner "
                "reads of one (a check that leaves tens of thousands of files, or a result "
                "of megabytes), and no runner could reuse "
                f"{'it' if count == 1 else 'them'} (docs/shared-cache.md)",
                None,
                HINT_UPLOADS,
            )

    def _put_unless_guarded(
        self, *, key: str, document: dict[str, Any], stop: threading.Event
    ) -> PushOutcome:
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
        return self._put(key=key, document=document, stop=stop)

    def _put(
        self,
        *,
        key: str,
        document: dict[str, Any],
        stop: threading.Event | None = None,
        read_back: bool = False,
    ) -> PushOutcome:
        """Store one verdict remotely: "stored", "unusable" (a local file of it went),
        "unverified" (this run signs and the verdict is not one it may vouch for), "oversized"
        (its entry would be larger than any runner reads), "failed" (a request failed, counted)
        or "stopped" (`stop` was set before its entry went: the files sent are named by no
        entry). `read_back`: a blob the remote holds at its size is
        fetched and hashed before it counts as there (push, which looked nothing up)."""
        if self._signing_key is not None and not vouched_for(
            document=document, key=key, signing_key=self._signing_key
        ):
            return "unverified"
        files = [
            blob
            for blob in blobs(entry=document)
            if not (blob.size == 0 and blob.sha256 == EMPTY_SHA256)
        ]
        carried = carried_inline(files=files)
        inline = self._inline_files(files=files, carried=carried)
        if inline is None:
            return "unusable"  # the local copy went meanwhile: nothing to share
        data = sealed(
            key=self._signing_key, text=remote_text(key=key, entry=document, inline=inline)
        )
        if len(data) > ENTRY_MAX_BYTES:
            # No runner would read it (it stops there): the verdict stays local.
            with self._lock:
                self.oversized += 1
            return "oversized"
        try:
            for blob in files:
                if blob.sha256 not in carried and not self._blob_sent(
                    blob=blob, read_back=read_back
                ):
                    return "unusable"
            if stop is not None and stop.is_set():
                return "stopped"
            self.remote.put(kind="ac", name=hex_of(key), data=data)
        except RemoteError:
            return "failed"  # counted
        with self._lock:
            self.writes_done += 1
        return "stored"

    def _inline_files(
        self, *, files: Sequence[Blob], carried: frozenset[str]
    ) -> dict[str, str] | None:
        """The local files an entry carries inline, base64, by digest; None when one of them
        is gone from the local folder."""
        inline: dict[str, str] = {}
        for blob in files:
            if blob.sha256 in carried and blob.sha256 not in inline:
                data = self.store.read_blob(blob=blob)
                if isinstance(data, str):
                    return None
                inline[blob.sha256] = base64.b64encode(data).decode("ascii")
        return inline

    def _blob_sent(self, *, blob: Blob, read_back: bool) -> bool:
        """A blob sent, or held by the remote already; False when its local copy does not
        hold. One the lookups found damaged there is sent whatever its size."""
        with self._lock:
            known_bad = blob.sha256 in self._damaged_blobs
        uploaded = upload_blob(
            store=self.store,
            remote=self.remote,
            blob=blob,
            known_bad=known_bad,
            read_back=read_back,
        )
        if uploaded == "replaced":
            with self._lock:
                self.blobs_replaced += 1
                self._damaged_blobs.discard(blob.sha256)
        return uploaded != "unusable"

    def push(self, *, keys: Sequence[str]) -> Pushed:
        """Store the local entries of `keys` the remote lacks (`eb cache push`), checked by
        HEAD first, `remote_concurrency` at once. Only entries whose local MAC holds travel,
        without that MAC (it is keyed by the local secret, which never leaves the machine).
        Push looked nothing up, so a blob the remote holds at its size is read back: one of
        other content (damaged there) is sent again."""
        outcomes = self.remote.each(work=lambda key: self._push_one(key=key), items=keys)
        return Pushed(
            stored=outcomes.count("stored"),
            present=outcomes.count("present"),
            unusable=outcomes.count("unusable"),
            unverified=outcomes.count("unverified"),
            oversized=outcomes.count("oversized"),
            failed=outcomes.count("failed"),
            replaced=self.blobs_replaced,
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
        return self._put(key=key, document=document, read_back=True)


def vouched_for(*, document: Mapping[str, Any], key: str, signing_key: bytes) -> bool:
    """Whether a local entry's verdict may be signed with `signing_key`: judged on this
    machine, or fetched and verified under that same key. An entry without an origin (stored
    by an older eb) may have been fetched unchecked: it is not (fail closed)."""
    origin = document.get("origin")
    if type(origin) is not dict:
        return False
    if origin.get("by") == "judged":
        return True
    mark = origin.get("verified_with")
    return (
        origin.get("by") == "fetched"
        and type(mark) is str
        and hmac.compare_digest(mark, verified_mark(key=signing_key, entry_key=key))
    )
