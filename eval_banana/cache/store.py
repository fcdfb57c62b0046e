"""The cache folder on disk: entries and kept runs, each signed with the cache's MAC.

    <dir>/entries/<2 hex>/<64 hex>.json   one verdict, named by its key
    <dir>/blobs/<2 hex>/<64 hex>          stored output files, by their SHA-256 (cache/blobs.py)
    <dir>/runs/<2 hex>/<64 hex>.json      a fully cached run, replayed whole (cache/replay.py)
    <dir>/secret.key                      the key of the MAC entries and runs carry (core/mac.py)
    <dir>/size.json                       the folder's size as last known (cache/ledger.py)
    <dir>/.eval-banana-folder             eb's mark: the folder is eb's wherever it lies

Every file is written through a temporary sibling and a rename (cache/places.py), so a reader
never sees half a file and two runs storing the same entry at once leave one valid entry. A hit
touches its entry's modification time; when the folder grows past its limit, the least recently
used entries go first (cache/eviction.py). An entry or kept run is read only with a valid MAC:
anything else is a miss, with the reason.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.cache.blobs import BlobStore
from eval_banana.cache.ledger import LEDGER_NAME
from eval_banana.cache.places import hex_of, write_into
from eval_banana.core.files import OWNER_ONLY_FOLDER, read_bytes, sha256_bytes
from eval_banana.core.mac import (
    SECRET_NAME,
    SecretUnusable,
    load_secret,
    mac_problem,
    secret_path,
    signed_text,
)
from eval_banana.core.ownmark import mark_folder
from eval_banana.core.readback import TooDeep, loads_json
from eval_banana.core.turns import LOCK_NAME


class EntryRead(NamedTuple):
    """An entry as read: its document, or why it could not be used (None, None: absent).
    `unverifiable`: the problem is the cache's secret, the same for every entry."""

    document: Any
    problem: str | None
    unverifiable: bool = False


class FileState(NamedTuple):
    """What tells a stored file changed: another file in its place, its size, its change time
    (which no one can set back)."""

    inode: int
    size: int
    ctime_ns: int


class CacheStore(BlobStore):
    """One cache folder: its entries and kept runs here, its blobs as BlobStore keeps them."""

    def __init__(self, *, folder: Path, max_bytes: int) -> None:
        super().__init__(folder=folder)
        self.max_bytes = max_bytes
        self._secret: bytes | str | None = None  # loaded once, when first needed
        # The kept runs by the verdict keys they stand on, read at the first verdict stored.
        self._kept_runs_naming: dict[str, list[str]] | None = None

    def secret(self, *, create: bool) -> bytes | str:
        """The key of the MACs, or why there is none; `create`: make it when absent."""
        if isinstance(self._secret, bytes):
            return self._secret
        if self._secret is None or (create and self._secret == "is missing"):
            if create:
                # Marked before its first entry: a cache folder a changed `[cache] dir` left
                # inside the project is still eb's, never project files or dataset rows.
                mark_folder(
                    folder=self.folder,
                    kind="cache",
                    ours=_is_cache_name,
                    folder_mode=OWNER_ONLY_FOLDER,
                )
            self._secret = load_secret(folder=self.folder, create=create)
        return self._secret

    def _key(self) -> bytes:
        """The key to sign with, made on the first write to this cache."""
        found = self.secret(create=True)
        if isinstance(found, str):
            raise SecretUnusable(f"its secret {secret_path(folder=self.folder)} {found}")
        return found

    def entry_path(self, *, key: str) -> Path:
        return Path(self.entry_file(key=key))

    # Plain strings on the hot path: a cached run of 1,000 checks built 20,000 Path objects.
    def entry_file(self, *, key: str) -> str:
        """`entry_path` as a string (cheaper on the path every lookup takes)."""
        hex_key = hex_of(key)
        return f"{self.folder}/entries/{hex_key[:2]}/{hex_key}.json"

    def replay_path(self, *, key: str) -> Path:
        hex_key = hex_of(key)
        return self.folder / "runs" / hex_key[:2] / f"{hex_key}.json"

    # -- entries ---------------------------------------------------------------------------

    def read(self, *, key: str) -> EntryRead:
        return self._read_signed(path=self.entry_file(key=key))

    def read_replay(self, *, key: str) -> EntryRead:
        return self._read_signed(path=str(self.replay_path(key=key)))

    def write(self, *, key: str, document: dict[str, Any]) -> str:
        """Store a verdict entry with its MAC; the digest of the bytes written. Every kept run
        naming the key goes first: its slot may have been emptied since (a prune, an eviction,
        a user's delete) and this verdict be another than the one the kept run reused."""
        self._drop_kept_runs_naming(key=key)
        data = (
            json.dumps(document, indent=1, ensure_ascii=False, allow_nan=False).encode("utf-8")
            + b"\n"
        )
        return self._write_signed(path=self.entry_path(key=key), text=data)

    def _drop_kept_runs_naming(self, *, key: str) -> None:
        """Remove the kept runs that reused the verdict stored under `key`. Read once per
        store: a run is kept only in the cache's turn and never while this run's checks
        execute, so none appears between this run's verdicts."""
        if self._kept_runs_naming is None:
            self._kept_runs_naming = self._kept_runs_by_verdict()
        for path in self._kept_runs_naming.pop(key, []):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def _kept_runs_by_verdict(self) -> dict[str, list[str]]:
        """Each verdict key a kept run names, with the kept runs naming it. One that cannot be
        read is left: a replay refuses it anyway."""
        naming: dict[str, list[str]] = {}
        for path, _ in _stats(self.folder / "runs"):
            if not path.endswith(".json"):
                continue  # a kept run being written (a hidden sibling)
            document = self._read_signed(path=path).document
            keys = document.get("verdict_keys") if isinstance(document, dict) else None
            for verdict in keys if isinstance(keys, list) else []:
                if isinstance(verdict, str):
                    naming.setdefault(verdict, []).append(path)
        return naming

    def write_replay(self, *, key: str, document: dict[str, Any]) -> str:
        """Store a kept run with its MAC; the digest of the bytes written."""
        data = json.dumps(document, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n"
        return self._write_signed(path=self.replay_path(key=key), text=data)

    def _write_signed(self, *, path: Path, text: bytes) -> str:
        data = signed_text(key=self._key(), text=text)
        write_into(path=path, data=data)
        self._grew(size=len(data))
        return sha256_bytes(data=data)

    def read_at(self, *, path: str) -> EntryRead:
        """The entry or kept run stored at `path` (as `read` checks it)."""
        return self._read_signed(path=path)

    def _read_signed(self, *, path: str) -> EntryRead:
        """A stored document whose MAC holds, or why it cannot be used (None, None: absent)."""
        try:
            data = read_bytes(path=path)
        except FileNotFoundError:
            return EntryRead(document=None, problem=None)
        except OSError as exc:
            return EntryRead(document=None, problem=f"cannot be read ({exc.strerror or exc})")
        key = self.secret(create=False)
        if isinstance(key, str):
            problem = (
                f"cannot be checked: the cache's secret {secret_path(folder=self.folder)} {key}"
            )
            return EntryRead(document=None, problem=problem, unverifiable=True)
        forged = mac_problem(key=key, data=data)
        if forged is not None:
            return EntryRead(document=None, problem=forged)
        try:
            return EntryRead(document=loads_json(data), problem=None)
        except TooDeep as exc:
            return EntryRead(document=None, problem=f"is {exc}")
        except ValueError:
            return EntryRead(document=None, problem="is not valid JSON (truncated or foreign)")

    def drop(self, *, path: Path) -> bool:
        """Delete a stored entry or kept run (it is not to be trusted); whether it was there."""
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    def states(self) -> dict[str, FileState]:
        """Every stored entry and kept run now, and the secret, by path: what `states` later
        is compared to."""
        found: dict[str, FileState] = {}
        secret = str(secret_path(folder=self.folder))
        with contextlib.suppress(OSError):
            found[secret] = _state(os.stat(secret, follow_symlinks=False))
        for part in ("entries", "runs"):
            for path, info in _stats(self.folder / part):
                found[path] = _state(info)
        return found

    def touch(self, *, key: str) -> None:
        """Mark an entry as just used (least-recently-used eviction reads this)."""
        self.mark_used(key=key, touch=True)

    def mark_used(self, *, key: str, touch: bool) -> bool:
        """Whether an entry is stored; `touch`: also mark it as just used."""
        path = self.entry_file(key=key)
        try:
            if touch:
                os.utime(path)
            else:
                os.stat(path)
        except OSError:
            return False
        return True

    # -- eviction --------------------------------------------------------------------------

    def evict(self) -> int:
        """Delete least recently used entries until the folder fits; return bytes freed.
        Far below the limit (by the size ledger) nothing is walked."""
        # Imported here: a run that stores nothing (a fully cached one) never evicts.
        from eval_banana.cache.eviction import evict_to_fit

        return evict_to_fit(folder=self.folder, max_bytes=self.max_bytes, added=self._take_added())


# What eb keeps at the top of a cache folder; a hidden name is a write in progress.
_CACHE_NAMES = frozenset({"entries", "blobs", "runs", SECRET_NAME, LEDGER_NAME, LOCK_NAME})


def _is_cache_name(name: str) -> bool:
    return name in _CACHE_NAMES or name.startswith(".")


def _state(info: os.stat_result) -> FileState:
    return FileState(inode=info.st_ino, size=info.st_size, ctime_ns=info.st_ctime_ns)


def _stats(folder: Path) -> Iterator[tuple[str, os.stat_result]]:
    """The regular files below `folder` (two levels: <2 hex>/<name>) and their stat."""
    try:
        with os.scandir(folder) as found:
            groups = [entry.path for entry in found if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for group in groups:
        try:
            with os.scandir(group) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        info = entry.stat(follow_symlinks=False)
                        yield entry.path, info
        except OSError:
            continue


def drop_kept_runs(*, folder: Path) -> None:
    """Remove every kept run (`<cache>/runs/<2 hex>/<key>.json`); their blobs go with eviction.
    What cannot be removed raises: the verdict is then not stored over the other (a warning)."""
    for shard in _listing(folder=str(folder)):
        if shard.is_dir(follow_symlinks=False):
            for entry in _listing(folder=shard.path):
                if entry.name.endswith(".json"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)


def _listing(*, folder: str) -> list[os.DirEntry[str]]:
    """A folder's entries; none when it is gone (another run removed it meanwhile)."""
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except FileNotFoundError:
        return []
