"""An entry's stored files between the two tiers: fetched into the local folder, each checked
against its digest first, and sent to the shared cache unless it holds them already."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import partial
from typing import Any, BinaryIO

from eval_banana.cache.blobs import EMPTY_SHA256, Blob, BlobStore
from eval_banana.cache.places import hex_of
from eval_banana.cache.remotedoc import blobs
from eval_banana.core.files import sha256_bytes
from eval_banana.remote.backend import RemoteError, SinkRefused
from eval_banana.remote.digesting import Digesting
from eval_banana.remote.guarded import GuardedRemote, RemoteInterrupted


def keep_files(
    *,
    store: BlobStore,
    remote: GuardedRemote,
    entry: Mapping[str, Any],
    inline: Mapping[str, bytes],
) -> str | None:
    """Every file the entry names, checked against its digest and kept locally; the
    problem of the first that is missing or does not match, or None."""
    for blob in blobs(entry=entry):
        if blob.size == 0 and blob.sha256 == EMPTY_SHA256:
            continue
        if _has_size(path=str(store.blob_path(sha256=blob.sha256)), size=blob.size):
            continue
        data = inline.get(blob.sha256)
        if data is not None:
            if len(data) != blob.size or sha256_bytes(data=data) != blob.sha256:
                return f"names a file {blob.sha256} whose content has another digest (damaged)"
            store.put_bytes(data=data)
            continue
        problem = store.receive(blob=blob, fill=partial(_download, remote=remote, blob=blob))
        if problem is not None:
            return problem
    return None


def _download(file: BinaryIO, /, *, remote: GuardedRemote, blob: Blob) -> str | None:
    """Stream a blob into `file`, hashing it as it comes; why it is not the blob the
    entry names, or None."""
    sink = Digesting(file=file, limit=blob.size)
    try:
        moved = remote.get_into(kind="cas", name=hex_of(blob.sha256), sink=sink)
    except RemoteInterrupted:
        raise  # no problem of the entry: the run is stopping
    except RemoteError as exc:
        return f"names a file {blob.sha256} that could not be fetched ({exc})"
    except SinkRefused as exc:
        if isinstance(exc.__cause__, OSError):
            raise exc.__cause__ from None  # the local disk: a write fault, as any other
        return f"names a file {blob.sha256} whose content has another digest (damaged)"
    if moved is None:
        return f"names a file {blob.sha256} the shared cache does not hold"
    if sink.found() != (blob.sha256, blob.size):
        return f"names a file {blob.sha256} whose content has another digest (damaged)"
    return None


def upload_blob(*, store: BlobStore, remote: GuardedRemote, blob: Blob) -> bool:
    """Stream a local blob to the remote unless it holds it already (by HEAD); False when
    the local copy does not hold (its digest is checked first, from the same open file)."""
    source = store.open_blob(blob=blob)
    if isinstance(source, str):
        return False
    with source:
        if remote.head(kind="cas", name=hex_of(blob.sha256)) != blob.size:
            remote.put_from(kind="cas", name=hex_of(blob.sha256), source=source, size=blob.size)
    return True


def _has_size(*, path: str, size: int) -> bool:
    try:
        return os.stat(path).st_size == size
    except OSError:
        return False
