"""The verdict cache key: SHA-256 over a versioned, length-framed list of named components.

Each component is written as its name and its value, each preceded by its length in 8 bytes
(big-endian), after a version line; no two different component lists can encode the same.
Bump KEY_VERSION whenever what goes in (or how) changes: every old entry then misses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

KEY_VERSION = 2
_PREFIX = b"eval-banana/verdict-cache-key/v%d\0" % KEY_VERSION

Component = tuple[str, str]


def _framed(text: str) -> bytes:
    data = text.encode("utf-8", "surrogateescape")
    return len(data).to_bytes(8, "big") + data


def verdict_key(*, components: Sequence[Component]) -> str:
    """`sha256:<hex>` of the framed components, in the order given."""
    return framed_key(prefix=_PREFIX, components=components)


def framed_key(*, prefix: bytes, components: Sequence[Component]) -> str:
    """`sha256:<hex>` of `prefix` (a kind and version of key) and the framed components."""
    digest = hashlib.sha256(prefix)
    for name, value in components:
        digest.update(_framed(name))
        digest.update(_framed(value))
    return f"sha256:{digest.hexdigest()}"
