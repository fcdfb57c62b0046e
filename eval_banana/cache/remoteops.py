"""`eb cache push`, `prune --remote` and `verify --remote`: the shared tier as an operator
tends it (docs/shared-cache.md, Operations).

Prune and verify list what the remote holds, which a folder and S3 can and a plain HTTP cache
cannot: there they stop with an error saying so (such a cache evicts by itself).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from eval_banana.cache.operations import DAY_SECONDS, Pruned, blob_damage
from eval_banana.cache.remotetier import Pushed, RemoteTier, _blobs
from eval_banana.cache.store import CacheStore
from eval_banana.core.errors import CacheOperationError
from eval_banana.core.files import sha256_bytes
from eval_banana.models.cacheops import DamagedBlob
from eval_banana.models.config import CacheSettings
from eval_banana.remote.backend import (
    Kind,
    ListingUnsupported,
    RemoteBackend,
    RemoteError,
    RemoteItem,
)
from eval_banana.remote.guarded import GuardedRemote
from eval_banana.remote.opening import open_backend
from eval_banana.remote.signing import SIGNING_KEY_VARIABLE, opened

# A blob no entry names yet may be one another runner is storing right now (blobs go up
# before their entry): prune leaves such young blobs alone.
YOUNG_ORPHAN_SECONDS = 3_600.0


def open_remote(
    *, settings: CacheSettings, environ: Mapping[str, str], source: str
) -> GuardedRemote:
    """The configured shared cache, for an operation; an error when none is set."""
    if not settings.remote:
        raise CacheOperationError(
            "No shared cache is set",
            file=source,
            field_path="cache.remote",
            hint="set [cache] remote in .eval-banana/config.toml, --cache-remote or "
            "EVAL_BANANA_CACHE_REMOTE",
        )
    backend = open_backend(
        url=settings.remote,
        endpoint=settings.remote_endpoint,
        timeout=float(settings.remote_timeout_seconds),
        environ=environ,
        source=source,
    )
    return GuardedRemote(backend=backend, concurrency=settings.remote_concurrency)


def push(
    *, settings: CacheSettings, store: CacheStore, environ: Mapping[str, str], source: str
) -> tuple[Pushed, GuardedRemote]:
    """Upload every local entry (and the files it names) the remote lacks."""
    if settings.remote and settings.remote_mode != "read-write":
        raise CacheOperationError(
            f"[cache] remote_mode is {settings.remote_mode}: eb cache push only writes to a "
            "read-write shared cache",
            file=source,
            field_path="cache.remote_mode",
            hint='set remote_mode = "read-write" (on trusted runners only)',
        )
    remote = open_remote(settings=settings, environ=environ, source=source)
    key_text = environ.get(SIGNING_KEY_VARIABLE, "")
    tier = RemoteTier(
        remote=remote,
        store=store,
        writes=True,
        signing_key=key_text.encode("utf-8") if key_text else None,
        require_signature=settings.require_signature,
        warn=lambda message, file: None,  # push reports its own counts and first error
    )
    keys = [f"sha256:{name}" for name in _local_names(store=store)]
    return tier.push(keys=keys), remote


def _local_names(*, store: CacheStore) -> list[str]:
    from eval_banana.cache.operations import stored_files

    names = []
    for item in stored_files(folder=store.folder, part="entries"):
        stem = item.path.name.removesuffix(".json")
        if item.path.name.endswith(".json") and len(stem) == 64:
            names.append(stem)
    return sorted(names)


def listing(*, remote: GuardedRemote, kind: Kind) -> list[RemoteItem]:
    """What the remote holds of a kind; an error naming why it cannot be listed."""
    try:
        return list(_items(backend=remote.backend, kind=kind))
    except ListingUnsupported as exc:
        raise CacheOperationError(
            f"The shared cache cannot list what it holds: {exc}",
            field_path="cache.remote",
            hint="--remote works with a folder or S3 remote; an HTTP cache (bazel-remote, "
            "nginx) evicts by itself and is pruned by its own settings",
        ) from None
    except RemoteError as exc:
        raise CacheOperationError(
            f"The shared cache {remote.url} cannot be listed: {exc}"
        ) from None


def require_listing(*, remote: GuardedRemote) -> None:
    """Stop (with the error `listing` gives) before anything is changed, when the remote
    cannot list what it holds."""
    try:
        next(iter(remote.backend.list(kind="ac")), None)
    except RemoteError:
        listing(remote=remote, kind="ac")  # raises the error that says why


def _items(*, backend: RemoteBackend, kind: Kind) -> Iterator[RemoteItem]:
    yield from backend.list(kind=kind)


class RemotePruned(NamedTuple):
    pruned: Pruned
    failed: int  # deletions that failed


def prune_remote(
    *, remote: GuardedRemote, older_than_days: float | None, max_bytes: int | None, now: float
) -> RemotePruned:
    """As `prune_local`, on the shared cache: entries unused for `older_than_days` (by when
    they were stored), then the oldest until it holds at most `max_bytes`; then the blobs no
    remaining entry names (except young ones, see YOUNG_ORPHAN_SECONDS)."""
    entries = listing(remote=remote, kind="ac")
    blobs = {item.name: item for item in listing(remote=remote, kind="cas")}
    names = dict(
        zip(
            [item.name for item in entries],
            remote.each(work=lambda item: _named(remote=remote, name=item.name), items=entries),
            strict=True,
        )
    )
    doomed: set[str] = set()
    if older_than_days is not None:
        cutoff = now - older_than_days * DAY_SECONDS
        doomed.update(item.name for item in entries if item.modified < cutoff)
    if max_bytes is not None:
        doomed.update(
            _over_size(entries=entries, blobs=blobs, names=names, doomed=doomed, limit=max_bytes)
        )
    kept = {blob for name, named in names.items() if name not in doomed for blob in named}
    orphans = [
        item
        for name, item in blobs.items()
        if name not in kept
        and (item.modified < now - YOUNG_ORPHAN_SECONDS or max_bytes is not None)
    ]
    work: list[tuple[Kind, RemoteItem]] = [
        *(("ac", item) for item in entries if item.name in doomed),
        *(("cas", item) for item in orphans),
    ]
    done = remote.each(
        work=lambda job: _delete(remote=remote, kind=job[0], name=job[1].name), items=work
    )
    gone = [job for job, ok in zip(work, done, strict=True) if ok]
    return RemotePruned(
        pruned=Pruned(
            entries=sum(1 for kind, _ in gone if kind == "ac"),
            blobs=sum(1 for kind, _ in gone if kind == "cas"),
            bytes_freed=sum(item.size for _, item in gone),
        ),
        failed=done.count(False),
    )


def _named(*, remote: GuardedRemote, name: str) -> list[str]:
    """The blob names (hex) a remote entry names; none when it cannot be read."""
    try:
        data = remote.get(kind="ac", name=name)
    except RemoteError:
        return []
    if data is None:
        return []
    try:
        document = json.loads(opened(data).text)
        entry = document["entry"]
        return [blob.sha256.split(":", 1)[1] for blob in _blobs(entry=entry)]
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        return []


def _over_size(
    *,
    entries: Sequence[RemoteItem],
    blobs: Mapping[str, RemoteItem],
    names: Mapping[str, list[str]],
    doomed: set[str],
    limit: int,
) -> set[str]:
    left = sorted((item for item in entries if item.name not in doomed), key=lambda i: i.modified)
    users: dict[str, int] = {}
    for item in left:
        for blob in names[item.name]:
            users[blob] = users.get(blob, 0) + 1
    total = sum(item.size for item in left) + sum(blobs[b].size for b in users if b in blobs)
    more: set[str] = set()
    for item in left:
        if total <= limit:
            break
        more.add(item.name)
        total -= item.size
        for blob in names[item.name]:
            users[blob] -= 1
            if users[blob] == 0 and blob in blobs:
                total -= blobs[blob].size
    return more


def _delete(*, remote: GuardedRemote, kind: Kind, name: str) -> bool:
    try:
        return remote.backend.delete(kind=kind, name=name)
    except RemoteError:
        return False


def verify_remote(*, remote: GuardedRemote) -> tuple[int, list[DamagedBlob]]:
    """Fetch and re-hash every remote blob: (how many, the damaged or unreadable ones)."""
    items = listing(remote=remote, kind="cas")
    found = remote.each(work=lambda item: _blob_problem(remote=remote, name=item.name), items=items)
    damaged = [
        DamagedBlob(tier="remote", name=item.name, problem=problem)
        for item, problem in zip(items, found, strict=True)
        if problem is not None
    ]
    return len(items), damaged


def _blob_problem(*, remote: GuardedRemote, name: str) -> str | None:
    try:
        data = remote.get(kind="cas", name=name)
    except RemoteError as exc:
        return f"could not be fetched ({exc})"
    if data is None:
        return None  # removed since it was listed
    return blob_damage(name=name, digest=sha256_bytes(data=data), problem=None)
