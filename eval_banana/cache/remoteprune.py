"""`eb cache prune --remote`: the shared cache's entries unused for long, or beyond a size, and
then the stored files no entry left names (docs/shared-cache.md, Operations).

Which files an entry names takes reading it, so every listed entry is read before anything is
deleted; the deletions go through the circuit breaker every request to the remote goes through.
The files of writes killed part-way (a folder's) go too, once no longer written to.
"""

from __future__ import annotations

import json
import math
from typing import Literal, NamedTuple

from eval_banana.cache.eviction import least_recently_used_over
from eval_banana.cache.operations import DAY_SECONDS, Pruned
from eval_banana.cache.remotedoc import blobs
from eval_banana.cache.remoteops import listing, unfinished_writes
from eval_banana.core.errors import CacheOperationError
from eval_banana.core.words import one_line, plural
from eval_banana.remote.backend import Kind, RemoteError, RemoteItem, SinkRefused
from eval_banana.remote.guarded import GuardedRemote
from eval_banana.remote.signing import opened

# A blob no entry names yet may be one another runner is storing right now (blobs go up
# before their entry): prune leaves such young blobs alone.
YOUNG_ORPHAN_SECONDS = 3_600.0

Deleted = Literal["removed", "absent", "failed"]


class PrunePlan(NamedTuple):
    """What `prune --remote` will delete, found before anything is deleted anywhere."""

    doomed: list[RemoteItem]  # the entries to delete
    names: dict[str, list[str]]  # every listed entry -> the blobs (hex) it names
    blobs: dict[str, RemoteItem]
    orphan_before: float  # a blob no entry names goes if stored before this
    stale: list[tuple[Kind, RemoteItem]]  # files of unfinished writes no longer written to


class RemotePruned(NamedTuple):
    pruned: Pruned
    failed: int  # deletions that failed, or that the breaker kept from being sent


def plan_prune(
    *,
    remote: GuardedRemote,
    older_than_days: float | None,
    max_bytes: int | None,
    now: float,
    stale_before: float,
) -> PrunePlan:
    """As `prune_local` chooses, on the shared cache: entries unused for `older_than_days` (by
    when they were stored), then the oldest until it holds at most `max_bytes`; then the blobs
    no remaining entry names (except young ones, see YOUNG_ORPHAN_SECONDS), and the files of
    unfinished writes last written to before `stale_before`. An error when the remote cannot
    list, or fails to answer a read of an entry."""
    entries = listing(remote=remote, kind="ac")
    blobs = {item.name: item for item in listing(remote=remote, kind="cas")}
    try:
        unfinished = unfinished_writes(remote=remote)
    except RemoteError as exc:
        raise CacheOperationError(
            f"The shared cache {remote.url} cannot be listed: {exc}"
        ) from None
    read = remote.each(work=lambda item: _named(remote=remote, name=item.name), items=entries)
    unread = read.count(None)
    if unread:
        # Which blobs an unread entry names is unknown: any of them could be deleted from under it.
        tally = remote.tally()
        raise CacheOperationError(
            f"The shared cache {remote.url} failed "
            f"{plural(count=unread, noun='read')} of the entries it lists (first error: "
            f"{one_line(str(tally.first_error))}); nothing was pruned",
            field_path="cache.remote",
            hint="prune once it answers: a blob is deleted only when no entry names it, which "
            "takes reading every entry",
        )
    names = {item.name: named or [] for item, named in zip(entries, read, strict=True)}
    doomed: set[str] = set()
    if older_than_days is not None:
        cutoff = now - older_than_days * DAY_SECONDS
        doomed.update(item.name for item in entries if item.modified < cutoff)
    if max_bytes is not None:
        doomed.update(
            least_recently_used_over(
                documents=(
                    (item.name, item.size, item.modified)
                    for item in entries
                    if item.name not in doomed
                ),
                blob_sizes={name: item.size for name, item in blobs.items()},
                names=names,
                max_bytes=max_bytes,
            )
        )
    return PrunePlan(
        doomed=[item for item in entries if item.name in doomed],
        names=names,
        blobs=blobs,
        orphan_before=math.inf if max_bytes is not None else now - YOUNG_ORPHAN_SECONDS,
        stale=[(kind, item) for kind, item in unfinished if item.modified < stale_before],
    )


def prune_remote(*, remote: GuardedRemote, plan: PrunePlan) -> RemotePruned:
    """Delete the planned entries, then the blobs no entry left names, `remote_concurrency`
    at once, through the circuit breaker: a remote failing its deletions is not asked again."""
    done = remote.each(
        work=lambda item: _delete(remote=remote, kind="ac", name=item.name), items=plan.doomed
    )
    # An entry whose deletion failed still names its blobs: they stay with it.
    left = {
        item.name for item, outcome in zip(plan.doomed, done, strict=True) if outcome == "failed"
    }
    doomed = {item.name for item in plan.doomed} - left
    kept = {blob for name, named in plan.names.items() if name not in doomed for blob in named}
    orphans = [
        item
        for name, item in plan.blobs.items()
        if name not in kept and item.modified < plan.orphan_before
    ]
    done_blobs = remote.each(
        work=lambda item: _delete(remote=remote, kind="cas", name=item.name), items=orphans
    )
    done_stale = remote.each(
        work=lambda found: _delete(
            remote=remote, kind=found[0], name=found[1].name, unfinished=True
        ),
        items=plan.stale,
    )
    stale = [item for _, item in plan.stale]
    gone = [
        item
        for item, outcome in zip(
            [*plan.doomed, *orphans, *stale], [*done, *done_blobs, *done_stale], strict=True
        )
        if outcome == "removed"
    ]
    return RemotePruned(
        pruned=Pruned(
            entries=done.count("removed"),
            blobs=done_blobs.count("removed"),
            bytes_freed=sum(item.size for item in gone),
            unfinished=done_stale.count("removed"),
        ),
        failed=done.count("failed") + done_blobs.count("failed") + done_stale.count("failed"),
    )


def _named(*, remote: GuardedRemote, name: str) -> list[str] | None:
    """The blob names (hex) a remote entry names: none when it is gone or is no entry eb could
    read; None when the request failed."""
    try:
        data = remote.get(kind="ac", name=name)
    except RemoteError:
        return None
    except SinkRefused:
        return []
    if data is None:
        return []
    try:
        document = json.loads(opened(data).text)
        entry = document["entry"]
        return [blob.sha256.split(":", 1)[1] for blob in blobs(entry=entry)]
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        return []


def _delete(*, remote: GuardedRemote, kind: Kind, name: str, unfinished: bool = False) -> Deleted:
    """Delete one object (an unfinished write's file with `unfinished`): what became of it."""
    delete = remote.delete_unfinished if unfinished else remote.delete
    try:
        there = delete(kind=kind, name=name)
    except RemoteError:
        return "failed"  # counted by the remote, or not sent once its breaker tripped
    return "removed" if there else "absent"  # absent: another prune was first
