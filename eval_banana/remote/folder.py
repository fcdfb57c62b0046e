"""A folder as the remote tier: a shared or mounted path, or what `actions/cache` persists.

    <folder>/ac/<2 hex>/<64 hex>    entries
    <folder>/cas/<2 hex>/<64 hex>   blobs

Each object is written beside its final name (`.<64 hex>.<pid>.<n>.tmp`) and renamed into
place, so a reader on another machine never sees half of one. A writer killed part-way leaves
that file: `unfinished` lists them, and `eb cache prune --remote` removes the stale ones.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlsplit

from eval_banana.remote.backend import (
    CHUNK,
    Kind,
    Meter,
    RemoteError,
    RemoteItem,
    Sink,
    WholeObjects,
    checked_name,
)

_TEMP_NAMES = itertools.count()
_UNFINISHED_RE = re.compile(r"\.([0-9a-f]{64})\.[0-9]+\.[0-9]+\.tmp")


class FolderBackend(WholeObjects):
    """Objects as files below one folder."""

    def __init__(self, *, folder: Path) -> None:
        self.folder = folder
        self.url = str(folder)
        self.sent = Meter()  # each file operation is one request

    @classmethod
    def from_url(cls, *, url: str) -> FolderBackend:
        if url.lower().startswith("file://"):
            parts = urlsplit(url)
            if parts.netloc not in ("", "localhost"):
                raise RemoteError(f"file URL {url!r} names another host")
            return cls(folder=Path(unquote(parts.path)))
        return cls(folder=Path(url).expanduser())

    def _path(self, *, kind: Kind, name: str) -> Path:
        checked_name(name)
        return self.folder / kind / name[:2] / name

    def get_into(self, *, kind: Kind, name: str, sink: Sink) -> int | None:
        self.sent.add()
        try:
            with self._path(kind=kind, name=name).open("rb") as source:
                moved = 0
                while chunk := source.read(CHUNK):
                    sink.write(chunk)
                    moved += len(chunk)
                return moved
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise RemoteError(f"cannot read {kind}/{name}: {exc.strerror or exc}") from None

    def put_from(self, *, kind: Kind, name: str, source: BinaryIO, size: int) -> None:
        path = self._path(kind=kind, name=name)
        self.sent.add()
        temp = path.with_name(f".{name}.{os.getpid()}.{next(_TEMP_NAMES)}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with temp.open("xb") as target:
                shutil.copyfileobj(source, target, CHUNK)
            os.replace(temp, path)
        except OSError as exc:
            raise RemoteError(f"cannot write {kind}/{name}: {exc.strerror or exc}") from None
        finally:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)

    def head(self, *, kind: Kind, name: str) -> int | None:
        self.sent.add()
        try:
            return self._path(kind=kind, name=name).stat().st_size
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise RemoteError(f"cannot read {kind}/{name}: {exc.strerror or exc}") from None

    def list(self, *, kind: Kind) -> Iterator[RemoteItem]:
        # A hidden file is a write under way, or one cut off (`unfinished`).
        return self._listed(kind=kind, wanted=lambda name: not name.startswith("."))

    def unfinished(self, *, kind: Kind) -> Iterator[RemoteItem]:
        return self._listed(kind=kind, wanted=lambda name: bool(_UNFINISHED_RE.fullmatch(name)))

    def _listed(self, *, kind: Kind, wanted: Callable[[str], bool]) -> Iterator[RemoteItem]:
        root = self.folder / kind
        self.sent.add()
        try:
            groups = sorted(root.iterdir())
        except FileNotFoundError:
            return
        except OSError as exc:
            raise RemoteError(f"cannot list {kind}: {exc.strerror or exc}") from None
        for group in groups:
            with contextlib.suppress(OSError):
                for path in sorted(group.iterdir()):
                    if wanted(path.name):
                        info = path.stat()
                        yield RemoteItem(name=path.name, size=info.st_size, modified=info.st_mtime)

    def delete_unfinished(self, *, kind: Kind, name: str) -> bool:
        found = _UNFINISHED_RE.fullmatch(name)
        if found is None:
            raise ValueError(f"not an unfinished write: {name!r}")
        self.sent.add()
        try:
            (self.folder / kind / found.group(1)[:2] / name).unlink()
        except FileNotFoundError:
            return False  # finished and renamed meanwhile, or removed by another prune
        except OSError as exc:
            raise RemoteError(f"cannot delete {kind}/{name}: {exc.strerror or exc}") from None
        return True

    def delete(self, *, kind: Kind, name: str) -> bool:
        self.sent.add()
        try:
            self._path(kind=kind, name=name).unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise RemoteError(f"cannot delete {kind}/{name}: {exc.strerror or exc}") from None
        return True
