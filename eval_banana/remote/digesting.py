"""A sink a download streams into that hashes what it is given (`Sink`, remote/backend.py)."""

from __future__ import annotations

import hashlib
from typing import BinaryIO

from eval_banana.remote.backend import SinkRefused


class Digesting:
    """A sink that hashes what it is given and passes it on to `file` (if any); past `limit`
    bytes it refuses more, so a remote that sends too much fills no disk."""

    def __init__(self, *, file: BinaryIO | None, limit: int | None) -> None:
        self.file = file
        self.limit = limit
        self.size = 0
        self._digest = hashlib.sha256()

    def write(self, data: bytes, /) -> int:
        self.size += len(data)
        if self.limit is not None and self.size > self.limit:
            raise SinkRefused(f"more than the {self.limit} bytes asked for")
        self._digest.update(data)
        if self.file is not None:
            try:
                self.file.write(data)
            except OSError as exc:
                raise SinkRefused(f"cannot be kept: {exc.strerror or exc}") from exc
        return len(data)

    def found(self) -> tuple[str, int]:
        """`sha256:<hex>` and the size of what was written."""
        return f"sha256:{self._digest.hexdigest()}", self.size
