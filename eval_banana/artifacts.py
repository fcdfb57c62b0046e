"""Files on disk: atomic writes and digests (reading a stage file back: stagefiles.py)."""

from __future__ import annotations

import hashlib
import itertools
import os
from pathlib import Path
from typing import Any

from eval_banana import canonjson
from eval_banana.models.record import Record

_TEMP_NAMES = itertools.count()


def write_bytes_atomic(*, path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary sibling and a rename, never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Created with 0666 so the umask applies, as for any file the user writes (mkstemp would
    # make it 0600 and need a chmod); O_EXCL, so a clash with another writer is retried.
    while True:
        tmp_name = f"{path.parent}/.{path.name}.{os.getpid()}.{next(_TEMP_NAMES)}.tmp"
        try:
            fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def write_text_atomic(*, path: Path, text: str) -> None:
    write_bytes_atomic(path=path, data=text.encode("utf-8"))


def stage_json_bytes(*, document: dict[str, Any] | Record) -> bytes:
    """Canonical stage-file bytes: sorted keys, two-space indent, trailing newline.

    A Record is written as its `model_dump(mode="json", by_alias=True)` would be.
    """
    return (canonjson.dumps(document, sort_keys=True) + "\n").encode()


def sha256_file(*, path: Path) -> str:
    """`sha256:<hex>` of a file's exact bytes, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def sha256_bytes(*, data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def write_model(*, path: Path, model: Record) -> str:
    """Write a stage document atomically; return the digest of the bytes written."""
    data = stage_json_bytes(document=model)
    write_bytes_atomic(path=path, data=data)
    return sha256_bytes(data=data)
