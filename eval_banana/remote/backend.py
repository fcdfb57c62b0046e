"""What every remote tier speaks.

A remote holds two kinds of objects, both named by 64 hex digits:

    ac/<key hex>       a verdict entry, named by its cache key
    cas/<sha256 hex>   a stored file (blob), named by the SHA-256 of its content

A backend moves bytes and nothing else: it never reads an entry, and it checks no digest
(the cache does both). Every request either answers or raises `RemoteError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal, NamedTuple, Protocol

Kind = Literal["ac", "cas"]
KINDS: tuple[Kind, ...] = ("ac", "cas")
NAME_RE = re.compile(r"[0-9a-f]{64}")


class RemoteError(Exception):
    """A request to the remote failed: unreachable, timed out, refused, or a bad answer."""


class ListingUnsupported(RemoteError):
    """The remote cannot list what it holds (a plain HTTP cache)."""


class RemoteItem(NamedTuple):
    """One stored object as a listing shows it."""

    name: str
    size: int
    modified: float  # seconds since the epoch


class RemoteBackend(Protocol):
    """Storage of entries (`ac`) and blobs (`cas`) by name; `url` is safe to show."""

    url: str

    def get(self, *, kind: Kind, name: str) -> bytes | None:
        """The object's bytes, or None when it is absent."""
        ...

    def put(self, *, kind: Kind, name: str, data: bytes) -> None:
        """Store the object (replacing one of the same name)."""
        ...

    def head(self, *, kind: Kind, name: str) -> int | None:
        """The object's size, or None when it is absent."""
        ...

    def list(self, *, kind: Kind) -> Iterator[RemoteItem]:
        """Every object of a kind; raises ListingUnsupported where the remote cannot."""
        ...

    def delete(self, *, kind: Kind, name: str) -> bool:
        """Remove the object; whether it was there."""
        ...


def checked_name(name: str) -> str:
    """`name` if it is 64 lowercase hex digits (nothing else ever names an object)."""
    if not NAME_RE.fullmatch(name):
        raise ValueError(f"not an object name: {name!r}")
    return name
