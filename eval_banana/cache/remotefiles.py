"""An entry's stored files between the two tiers: fetched into the local folder, each checked
against its digest first, and sent to the shared cache unless it holds them already."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, BinaryIO, Literal

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
    damaged: Callable[[str], None],
) -> str | None:
    """Every file the entry names, checked against its digest and kept locally; the
    problem of the first that is missing or does not match, or None. `damaged` is told the
    digest of each blob the remote holds with other content (an upload replaces it)."""
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
        problem = store.receive(
            blob=blob, fill=partial(_download, remote=remote, blob=blob, damaged=damaged)
        )
        if problem is not None:
            return problem
    return None


def _download(
    file: BinaryIO, /, *, remote: GuardedRemote, blob: Blob, damaged: Callable[[str], None]
) -> str | None:
    """Stream a blob into `file`, hashing it as it comes; why it is not the blob the
    entry names, or None. A body of other content is told to `damaged`."""
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
        damaged(blob.sha256)
        return f"names a file {blob.sha256} whose content has another digest (damaged)"
    if moved is None:
        return f"names a file {blob.sha256} the shared cache does not hold"
    if sink.found() != (blob.sha256, blob.size):
        damaged(blob.sha256)
        return f"names a file {blob.sha256} whose content has another digest (damaged)"
    return None


# What became of a blob to upload: its local copy did not hold, the remote held it already,
# it was sent, or it was sent over a remote object of its size and other content.
Uploaded = Literal["unusable", "held", "sent", "replaced"]


def upload_blob(
    *, store: BlobStore, remote: GuardedRemote, blob: Blob, known_bad: bool, read_back: bool
) -> Uploaded:
    """Stream a local blob to the remote unless it holds it already; its local copy's digest
    is checked first, from the same open file. HEAD tells only a size: an object of that size
    is taken as the blob unless `known_bad` (this run's lookups found it of other content) or,
    with `read_back`, it is fetched and hashed (nothing kept) and has other content."""
    source = store.open_blob(blob=blob)
    if isinstance(source, str):
        return "unusable"
    with source:
        name = hex_of(blob.sha256)
        held = remote.head(kind="cas", name=name) == blob.size
        if held and not known_bad and not (read_back and _other_content(remote=remote, blob=blob)):
            return "held"
        remote.put_from(kind="cas", name=name, source=source, size=blob.size)
    return "replaced" if held else "sent"


def _other_content(*, remote: GuardedRemote, blob: Blob) -> bool:
    """Whether the remote's object of a blob's name is not that blob (or is gone): fetched as
    a stream and hashed, nothing kept. A request that fails raises (RemoteError)."""
    sink = Digesting(file=None, limit=blob.size)
    try:
        moved = remote.get_into(kind="cas", name=hex_of(blob.sha256), sink=sink)
    except SinkRefused:
        return True  # longer than the blob
    return moved is None or sink.found() != (blob.sha256, blob.size)


def _has_size(*, path: str, size: int) -> bool:
    """Whether a regular file of `size` bytes is stored at `path` (never one a link names)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size == size
