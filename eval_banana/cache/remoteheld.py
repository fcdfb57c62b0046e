"""Entries fetched from the shared cache while another run's checks execute with the local folder.

That run's watch takes any write into the folder for one of its checks' (docs/fail-closed.md),
so what this run fetches then is held in a private temporary folder instead: its lookups reuse
it from there, and it is kept in the local folder once this run has the folder's turn (when it
stores its own verdicts), or dropped when it never gets one (a later run fetches it again).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from eval_banana.cache.blobs import EMPTY_SHA256
from eval_banana.cache.places import has_size
from eval_banana.cache.remotedoc import blobs
from eval_banana.cache.store import CacheStore

# Called for each entry kept in the local folder: its path, the digest written, the entry.
Kept = Callable[[str, str, Mapping[str, Any]], None]


class HeldFetches:
    """The fetched entries held outside the local folder, and the private store holding their
    files (made on the first one, signed with a secret of its own)."""

    def __init__(self) -> None:
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._store: CacheStore | None = None
        # The entries as fetched and checked, by key: what is kept later is this, never
        # what the private folder holds by then (a check of this run could have written it).
        self.entries: dict[str, dict[str, Any]] = {}

    def store(self) -> CacheStore:
        """The private store fetched entries go to (made when first asked for)."""
        if self._store is None:
            self._folder = tempfile.TemporaryDirectory(
                prefix="eb-fetched-", ignore_cleanup_errors=True
            )
            self._store = CacheStore(folder=Path(self._folder.name), max_bytes=0)
        return self._store

    def store_of(self, *, key: str) -> CacheStore | None:
        """The private store when it holds the entry of `key`, else None."""
        return self._store if key in self.entries else None

    def keep(self, *, into: CacheStore, kept: Kept) -> int:
        """Keep every held entry in the local folder `into`, signed with its MAC; the caller
        holds the folder's turn. An entry whose file no longer has its digest is left out. The
        private folder goes; the number of entries kept."""
        count = 0
        try:
            held = self._store
            for key, entry in sorted(self.entries.items()):
                if held is not None and _files_kept(entry=entry, held=held, into=into):
                    digest = into.write(key=key, document=entry)
                    kept(into.entry_file(key=key), digest, entry)
                    count += 1
        finally:
            self.release()
        return count

    def release(self) -> None:
        """Forget the held entries and remove the private folder."""
        self.entries = {}
        self._store = None
        if self._folder is not None:
            folder, self._folder = self._folder, None
            folder.cleanup()


def _files_kept(*, entry: Mapping[str, Any], held: CacheStore, into: CacheStore) -> bool:
    """Every file of `entry` put in `into` from `held`, each checked against its digest first;
    False when one is missing or changed."""
    for blob in blobs(entry=entry):
        if blob.size == 0 and blob.sha256 == EMPTY_SHA256:
            continue
        if has_size(into.blob_path(sha256=blob.sha256), blob.size):
            continue
        try:
            # Hashed as it is put: a file of another digest lands under its own name (nothing
            # names it; eviction takes it) and the entry is left out.
            if into.put(source=held.blob_path(sha256=blob.sha256)) != blob:
                return False
        except FileNotFoundError:
            return False
    return True
