"""What a run does to the cache once its checks have ended: an entry that changed while they
ran and is not what eb wrote there is dropped, every entry the run wrote goes when it stopped
or was found compromised, its own entries go up to the shared tier, and the folder is kept
within its size limit."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.cache.ownwrites import OwnWrites
from eval_banana.cache.recording import VerdictRecorder
from eval_banana.cache.remotewiring import release_fetched
from eval_banana.cache.store import CacheStore
from eval_banana.cache.warn import Warn

if TYPE_CHECKING:
    from eval_banana.cache.remotetier import RemoteTier


def discard_written(*, recorder: VerdictRecorder, own: OwnWrites, store: CacheStore) -> list[Path]:
    """Drop every entry the run wrote and every entry changed while its checks ran, and store
    nothing more; the paths dropped."""
    recorder.discard()
    paths = sorted(set(own.forget_written()) | set(own.changed()))
    return [Path(path) for path in paths if store.drop(path=Path(path))]


def finish_run(
    *,
    aborted: bool,
    recorder: VerdictRecorder,
    own: OwnWrites,
    store: CacheStore,
    remote: RemoteTier | None,
    writes: bool,
    warn: Warn,
    interrupt: threading.Event | None = None,
) -> None:
    """Drop what changed without eb while checks ran; then keep the cache folder within its
    size limit (only when the run stored or fetched something). `aborted`: every entry the
    run stored goes too, and nothing it judged is reused (blobs go with the next eviction).
    `interrupt`: once set, the uploads to the shared cache stop and are not waited for."""
    if aborted:
        release_fetched(remote=remote)
        discard_written(recorder=recorder, own=own, store=store)
        _remove_dropped(remote=remote)
        return
    if not recorder.discarded:
        _drop_changed(own=own, store=store, warn=warn)
    _remove_dropped(remote=remote)
    if remote is not None and not recorder.discarded:
        # Only what is still this run's own entry goes to the shared cache.
        remote.upload(
            keep=lambda key: own.still_written(path=store.entry_file(key=key)),
            stop=interrupt if interrupt is not None else threading.Event(),
        )
    if writes and (recorder.stored or fetched_locally(remote=remote)):
        store.evict()


def fetched_locally(*, remote: RemoteTier | None) -> bool:
    """Whether the run fetched entries from the shared cache: kept in the local folder, they
    count against its size limit as the verdicts it stores do."""
    return remote is not None and bool(remote.fetched)


def _drop_changed(*, own: OwnWrites, store: CacheStore, warn: Warn) -> None:
    for path in own.changed():
        if store.drop(path=Path(path)):
            warn(
                message=f"Cache file {path} changed during this run and is not what this "
                "run wrote there (a check, a judge, another eb run storing into this cache "
                "or another process wrote it); it was dropped",
                file=path,
            )


def _remove_dropped(*, remote: RemoteTier | None) -> None:
    """The shared entries of the verdicts a refresh dropped go, before this run's new ones
    go up: removing only ever makes a runner judge again, so even a run that aborted or was
    found compromised removes them."""
    if remote is not None:
        remote.remove_dropped()
