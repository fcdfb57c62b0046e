"""The shared tier in a run's session: opened only when one is set, its code imported only then
(a cached run without one stays light), its entries fetched before the lookups and kept in the
local folder (or let go) after the checks, and what it did counted beside the local hits."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from eval_banana.cache.ownwrites import OwnWrites
from eval_banana.cache.store import CacheStore
from eval_banana.cache.warn import Warn
from eval_banana.core.errors import EvalBananaError
from eval_banana.models.config import CacheSettings
from eval_banana.models.stages import CacheCounts, PlannedCheck, RemoteRejections

if TYPE_CHECKING:
    from eval_banana.cache.remotetier import RemoteTier

_REMOTE_HINT = (
    "the check ran as on a miss; the run's report counts what the shared cache did "
    "(docs/shared-cache.md)"
)


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


def prefetch(
    *,
    remote: RemoteTier,
    keys: Mapping[str, str],
    checks: Sequence[PlannedCheck],
    stop: threading.Event,
    warn: Warn,
) -> None:
    """Fetch the entries of `checks` (keyed in `keys`) the local folder lacks, before any
    lookup; `stop` (an interrupt) ends the fetching."""
    try:
        remote.prefetch(wanted={keys[check.stem]: check.id for check in checks}, stop=stop)
    except (OSError, EvalBananaError) as exc:
        # The local folder could not take what was fetched: those checks run as on a miss.
        message = exc.message if isinstance(exc, EvalBananaError) else str(exc)
        warn(
            message=f"Entries of the shared cache could not be kept locally: {message}",
            hint=_REMOTE_HINT,
        )


def keep_fetched(
    *, remote: RemoteTier | None, store: CacheStore, own: OwnWrites, warn: Warn
) -> None:
    """Keep in the local folder `store` what the run fetched while another run's checks
    executed with it; the caller holds the cache's turn. Each is the run's own write from
    here on (its end keeps it, and nothing else may change it unseen)."""
    if remote is None or not remote.held.entries:
        return
    try:
        remote.held.keep(
            into=store,
            kept=lambda path, digest, document: own.wrote(
                path=path, digest=digest, document=document
            ),
        )
    except OSError as exc:
        # Only a copy went: this run reused them all the same, and a later run fetches
        # them again.
        warn(
            message="Entries fetched from the shared cache could not be kept in "
            f"{store.folder}: {exc.strerror or exc}",
            file=str(store.folder),
            hint="this run reused them; a later run fetches them again",
        )


def release_fetched(*, remote: RemoteTier | None) -> int:
    """Forget what the run holds of the shared cache without keeping it (it had no turn at
    the local folder); how many entries that was."""
    if remote is None:
        return 0
    count = len(remote.held.entries)
    remote.held.release()
    return count


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
