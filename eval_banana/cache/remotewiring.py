"""The shared tier in a run's session: opened only when one is set, its code imported only then
(a cached run without one stays light), and what it did counted beside the local hits."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from eval_banana.cache.store import CacheStore
from eval_banana.models.config import CacheSettings
from eval_banana.models.stages import CacheCounts, RemoteRejections

if TYPE_CHECKING:
    from eval_banana.cache.remotetier import RemoteTier


def open_remote(
    *,
    settings: CacheSettings,
    store: CacheStore,
    reads: bool,
    local_writes: bool,
    environ: Mapping[str, str],
    source: str,
    warn: Callable[[str, str | None, str], None],
) -> RemoteTier | None:
    """The shared tier, imported only when one is set: a cached run without one stays light."""
    if not settings.remote or settings.remote_mode == "off":
        return None
    from eval_banana.cache.remoteopen import open_tier

    return open_tier(
        settings=settings,
        store=store,
        reads=reads,
        local_writes=local_writes,
        environ=environ,
        source=source,
        warn=warn,
    )


def cache_counts(
    *, hits: Mapping[str, int], remote: RemoteTier | None, remote_mode: str | None
) -> CacheCounts:
    """What the cache did in a run so far: the lookups by tier (`hits`), and the shared tier's
    writes, requests and refusals."""
    tally = remote.tally() if remote is not None else None
    return CacheCounts(
        local_hits=hits["local"],
        remote_hits=hits["remote"],
        misses=hits["miss"],
        remote=remote.remote.url if remote is not None else None,
        remote_mode=remote_mode,
        remote_writes=remote.writes_done if remote is not None else 0,
        remote_kept_local=remote.kept_local if remote is not None else 0,
        remote_requests=tally.requests if tally else 0,
        remote_errors=tally.errors if tally else 0,
        remote_rejected=RemoteRejections(**remote.rejected)
        if remote is not None
        else RemoteRejections(),
        remote_stopped=tally.tripped if tally else False,
        bytes_downloaded=tally.bytes_down if tally else 0,
        bytes_uploaded=tally.bytes_up if tally else 0,
        first_remote_error=tally.first_error if tally else None,
    )
