"""`eb cache stats`, `prune` and `verify` on the local tier (docs/shared-cache.md, Operations).

Prune deletes while holding the cache's lock exclusively (the caller takes it): no run is
executing checks or storing meanwhile, so an entry and the blobs it names go together and no
run reads half of them. The secret and the lock are never candidates.

A write killed part-way (SIGKILL, the OOM killer) leaves its temporary file, which nothing
names and no run reuses: stats count these unfinished writes, and prune removes those not
written to for long (`stale_before`), on either tier.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal, NamedTuple

from eval_banana.cache.entry import entry_problem
from eval_banana.cache.eviction import blobs_named, least_recently_used_over, own_files
from eval_banana.cache.places import hex_of
from eval_banana.cache.replay_entry import replay_problem
from eval_banana.cache.store import CacheStore, _stats
from eval_banana.core.files import is_temp_file, sha256_and_size
from eval_banana.core.mac import SECRET_NAME
from eval_banana.core.readback import file_kind
from eval_banana.core.turns import LOCK_NAME
from eval_banana.models.cacheops import DamagedBlob, HitRate, LocalTierStats

DAY_SECONDS = 86_400.0
# A write under way writes its file every moment (a chunk at a time), and a download into one
# is bounded by the shared cache's timeout: a temporary file not written to for an hour, and
# for twice that timeout when it is longer, belongs to a writer that was killed.
STALE_WRITE_SECONDS = 3_600.0
_PARTS = ("entries", "blobs", "runs")


class StoredFile(NamedTuple):
    path: Path
    size: int
    modified: float


class Pruned(NamedTuple):
    """What a prune removed (a remote holds no kept runs)."""

    entries: int
    blobs: int
    bytes_freed: int
    kept_runs: int = 0
    unfinished: int = 0  # temporary files of writes killed part-way


def stale_before(*, now: float, remote_timeout_seconds: float) -> float:
    """The moment before which an unfinished write's file was last written to only if its
    writer is gone (STALE_WRITE_SECONDS)."""
    return now - max(STALE_WRITE_SECONDS, 2 * remote_timeout_seconds)


def stored_files(*, folder: Path, part: str) -> list[StoredFile]:
    """The finished files of one part of the cache folder (a write under way is hidden), never
    followed through a link: a symbolic link (or anything else) in a file's place is no entry
    or blob, and counts for nothing of the folder's size."""
    return [
        StoredFile(path=Path(path), size=info.st_size, modified=info.st_mtime)
        for path, info in _stats(folder / part)
        if not os.path.basename(path).startswith(".") and stat.S_ISREG(info.st_mode)
    ]


def unfinished_files(*, folder: Path) -> list[StoredFile]:
    """The temporary files of writes in every part of the cache folder: under way, or left by
    a writer killed part-way."""
    return [
        StoredFile(path=Path(path), size=info.st_size, modified=info.st_mtime)
        for part in _PARTS
        for path, info in _stats(folder / part)
        if is_temp_file(os.path.basename(path))
    ]


def local_stats(*, folder: Path) -> LocalTierStats:
    """What the cache folder holds now."""
    found = {part: stored_files(folder=folder, part=part) for part in _PARTS}
    sizes = {part: sum(item.size for item in items) for part, items in found.items()}
    unfinished = unfinished_files(folder=folder)
    unfinished_bytes = sum(item.size for item in unfinished)
    return LocalTierStats(
        folder=str(folder),
        entries=len(found["entries"]),
        entry_bytes=sizes["entries"],
        blobs=len(found["blobs"]),
        blob_bytes=sizes["blobs"],
        kept_runs=len(found["runs"]),
        kept_run_bytes=sizes["runs"],
        unfinished=len(unfinished),
        unfinished_bytes=unfinished_bytes,
        total_bytes=sum(sizes.values()) + unfinished_bytes,
    )


def hit_rate(*, totals: Iterable[tuple[int, int]]) -> HitRate:
    """The hit rate of runs given as (checks, cached) pairs."""
    listed = list(totals)
    checks = sum(item[0] for item in listed)
    cached = sum(item[1] for item in listed)
    return HitRate(
        runs=len(listed),
        checks=checks,
        cached=cached,
        rate=round(cached / checks, 4) if checks else None,
    )


def prune_local(
    *,
    store: CacheStore,
    older_than_days: float | None,
    max_bytes: int | None,
    now: float,
    stale_before: float,
) -> Pruned:
    """Remove entries and kept runs unused for `older_than_days`, then the least recently used
    until the folder holds at most `max_bytes`; blobs go once nothing left names them, and the
    files of unfinished writes last written to before `stale_before`. The caller holds the
    cache lock exclusively."""
    # Only what eb named by its layout: a file of another name below the folder is not eb's.
    own = own_files(folder=store.folder)
    documents = [
        StoredFile(path=Path(item.path), size=item.size, modified=item.modified)
        for item in own.documents
    ]
    entries_folder = f"{store.folder}/entries/"
    is_entry = {str(item.path) for item in documents if str(item.path).startswith(entries_folder)}
    blobs = {
        path: StoredFile(path=Path(path), size=size, modified=0.0)
        for path, size in own.blobs.items()
    }
    names = {
        str(item.path): blobs_named(folder=store.folder, entry=item.path) for item in documents
    }
    doomed: set[str] = set()
    if older_than_days is not None:
        cutoff = now - older_than_days * DAY_SECONDS
        doomed.update(str(item.path) for item in documents if item.modified < cutoff)
    if max_bytes is not None:
        doomed.update(
            least_recently_used_over(
                documents=(
                    (str(item.path), item.size, item.modified)
                    for item in documents
                    if str(item.path) not in doomed
                ),
                blob_sizes={name: item.size for name, item in blobs.items()},
                names=names,
                max_bytes=max_bytes,
            )
        )
    kept_names = {blob for path, named in names.items() if path not in doomed for blob in named}
    freed = entries = kept_runs = removed_blobs = 0
    for item in documents:
        if str(item.path) in doomed and _unlink(item.path):
            if str(item.path) in is_entry:
                entries += 1
            else:
                kept_runs += 1
            freed += item.size
    for path, item in blobs.items():
        if path not in kept_names and _unlink(item.path):
            removed_blobs += 1
            freed += item.size
    unfinished = 0
    for item in unfinished_files(folder=store.folder):
        if item.modified < stale_before and _unlink(item.path):
            unfinished += 1
            freed += item.size
    return Pruned(
        entries=entries,
        blobs=removed_blobs,
        bytes_freed=freed,
        kept_runs=kept_runs,
        unfinished=unfinished,
    )


def _unlink(path: Path) -> bool:
    if path.name in (SECRET_NAME, LOCK_NAME):  # never, whatever a caller passes
        return False
    try:
        path.unlink()
    except OSError:
        return False
    return True


def blob_damage(*, name: str, digest: str | None, problem: str | None) -> str | None:
    """Why a blob named `name` is damaged, given its content's digest (or why it could not
    be read); None when it holds."""
    if problem is not None:
        return problem
    if digest != f"sha256:{name}":
        return f"its content has another digest ({digest})"
    return None


class VerifiedLocal(NamedTuple):
    """What `eb cache verify` checked in the local folder, and what it found damaged."""

    blobs: int
    entries: int
    kept_runs: int
    damaged: list[DamagedBlob]


def verify_local(*, folder: Path) -> VerifiedLocal:
    """Re-hash every local blob and read every entry and kept run as a run reads them; what
    is in their places and is no regular file (a symbolic link) is damaged too."""
    damaged = [
        DamagedBlob(tier="local", kind=_KINDS[part], name=os.path.basename(path), problem=why)
        for part in _PARTS
        for path, info in _stats(folder / part)
        if not is_temp_file(os.path.basename(path))
        and (why := _not_a_file(mode=info.st_mode)) is not None
    ]
    blobs = 0
    for item in _blob_files(folder=folder):
        blobs += 1
        digest: str | None = None
        problem: str | None = None
        try:
            digest, _ = sha256_and_size(path=str(item.path))
        except OSError as exc:
            problem = f"cannot be read ({exc.strerror or exc})"
        why = blob_damage(name=item.path.name, digest=digest, problem=problem)
        if why is not None:
            damaged.append(DamagedBlob(tier="local", name=item.path.name, problem=why))
    store = CacheStore(folder=folder, max_bytes=0)
    counts = {}
    for part in ("entries", "runs"):
        documents = sorted(stored_files(folder=folder, part=part))
        counts[part] = len(documents)
        for item in documents:
            why = _document_damage(store=store, path=item.path, kept_run=part == "runs")
            if why is not None:
                damaged.append(
                    DamagedBlob(tier="local", kind=_KINDS[part], name=item.path.name, problem=why)
                )
    return VerifiedLocal(
        blobs=blobs, entries=counts["entries"], kept_runs=counts["runs"], damaged=damaged
    )


_KINDS: dict[str, Literal["blob", "entry", "kept_run"]] = {
    "entries": "entry",
    "blobs": "blob",
    "runs": "kept_run",
}


def _not_a_file(*, mode: int) -> str | None:
    """Why what stands in a stored file's place is none (a run never reads it), or None."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None  # a folder there is told when something is stored in its place
    if stat.S_ISLNK(mode):
        return "is a symbolic link, not a file of the cache"
    return f"is {file_kind(mode)}, not a file of the cache"


def _document_damage(*, store: CacheStore, path: Path, kept_run: bool) -> str | None:
    """Why a stored entry or kept run would not be used by a run (its MAC, its JSON, its
    schema, the key its name says), or None."""
    found = store.read_at(path=str(path))
    if found.problem is not None:
        return found.problem
    document = found.document
    problem = replay_problem(document) if kept_run else entry_problem(document)
    if problem is not None:
        return problem
    if hex_of(document["key"]) != path.stem:
        return "belongs to another key (a foreign entry)"
    return None


def _blob_files(*, folder: Path) -> Iterator[StoredFile]:
    yield from sorted(stored_files(folder=folder, part="blobs"))


def now() -> float:
    return time.time()
