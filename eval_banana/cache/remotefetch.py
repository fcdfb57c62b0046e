"""Fetching from the shared tier before checks start: each remote entry the local folder lacks
is checked (signature, schema, key, check, every file's digest) and only then kept locally, and
one that fails is a miss with a warning saying why."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from eval_banana.cache.places import SlotTaken, hex_of
from eval_banana.cache.remotedoc import parsed
from eval_banana.cache.remotefiles import keep_files
from eval_banana.cache.remotenotes import HINT_LOOKUPS, Rejection, say_errors, say_refusals
from eval_banana.cache.remotestate import TierState
from eval_banana.cache.store import CacheStore
from eval_banana.core.turns import alone
from eval_banana.remote.backend import RemoteError, SinkRefused
from eval_banana.remote.guarded import RemoteInterrupted
from eval_banana.remote.signing import (
    keyless_but_required,
    opened,
    signature_problem,
    verified_mark,
)


class TierFetching(TierState):
    """The remote entries a run's checks may reuse, fetched and kept in the local folder."""

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
        entry = {**entry, "origin": self._fetched_origin(key=key)}
        try:
            problem = keep_files(
                store=into,
                remote=self.remote,
                entry=entry,
                inline=inline,
                damaged=self._found_damaged,
            )
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

    def _fetched_origin(self, *, key: str) -> dict[str, str]:
        """What the local entry records of where its verdict came from: a run with a key
        checked its signature under that key (`_entry`); one without checked none, and a push
        never signs what it kept (cache/remotestore.py)."""
        if self._signing_key is None:
            return {"by": "fetched"}
        return {
            "by": "fetched",
            "verified_with": verified_mark(key=self._signing_key, entry_key=key),
        }

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

    def _reject(self, *, reason: Rejection, message: str) -> None:
        with self._lock:
            self.rejected[reason] += 1
            self._refusals.append((reason, message))
