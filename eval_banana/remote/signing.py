"""The signature an entry carries on the remote, keyed by EVAL_BANANA_CACHE_SIGNING_KEY.

An entry on the remote is the entry's text with the signature as its first member, or without
one when the writer had no key:

    {"signature": "hmac-sha256:<64 hex>", <the entry's members>
    {<the entry's members>

The signature is HMAC-SHA-256 over a domain line and the entry's text without that member, the
exact bytes written (nothing is encoded again to be compared). The key is the CI secret every
trusted runner shares; the local cache's own secret (<cache>/secret.key) never leaves the
machine and signs nothing here.
"""

from __future__ import annotations

import hmac
from hashlib import sha256
from typing import NamedTuple

SIGNING_KEY_VARIABLE = "EVAL_BANANA_CACHE_SIGNING_KEY"
_PREFIX = b'{"signature": "hmac-sha256:'
_HEX_END = len(_PREFIX) + 64
_AFTER = b'", '
_DOMAIN = b"eval-banana/remote-cache-signature/1\0"
_VERIFIED_DOMAIN = b"eval-banana/verified-under-key/1\0"


class Opened(NamedTuple):
    """A remote entry split: its text without the signature, and the signature (None: none)."""

    text: bytes
    signature: str | None


def keyless_but_required(*, require_signature: bool, key: str | bytes | None) -> bool:
    """Signatures are required and there is no key: such a runner may reuse no shared entry,
    and may write none (its unsigned entries would never be reused, and would take the place
    of signed ones)."""
    return require_signature and not key


def signature_of(*, key: bytes, text: bytes) -> str:
    """`hmac-sha256:<hex>` of an entry's text (a JSON object without a signature member)."""
    mac = hmac.new(key, _DOMAIN, sha256)
    mac.update(text)
    return "hmac-sha256:" + mac.hexdigest()


def verified_mark(*, key: bytes, entry_key: str) -> str:
    """What a local entry records of the signing key its fetched verdict was verified under:
    an HMAC of the entry's key under it, so that `eb cache push` can tell the same key again
    without the key being stored (cache/remotestore.py)."""
    mac = hmac.new(key, _VERIFIED_DOMAIN, sha256)
    mac.update(entry_key.encode("utf-8"))
    return "hmac-sha256:" + mac.hexdigest()


def sealed(*, key: bytes | None, text: bytes) -> bytes:
    """`text` (a JSON object's text) as the remote stores it: signed when there is a key."""
    if not text.startswith(b"{") or text.startswith(b"{}"):
        raise ValueError("only a JSON object with members is stored")
    if key is None:
        return text
    rest = text[1:].lstrip(b"\n ")
    text = b"{" + rest
    return b'{"signature": "' + signature_of(key=key, text=text).encode("ascii") + _AFTER + rest


def opened(data: bytes) -> Opened:
    """A stored remote entry's text and signature, as `sealed` wrote them."""
    if data.startswith(_PREFIX) and data[_HEX_END : _HEX_END + len(_AFTER)] == _AFTER:
        signature = data[len(_PREFIX) - len(b"hmac-sha256:") : _HEX_END].decode("ascii", "replace")
        return Opened(text=b"{" + data[_HEX_END + len(_AFTER) :], signature=signature)
    return Opened(text=data, signature=None)


def signature_problem(*, key: bytes, found: Opened) -> str | None:
    """Why an entry's signature does not hold under `key`, or None."""
    if found.signature is None:
        return "has no signature"
    if not hmac.compare_digest(found.signature, signature_of(key=key, text=found.text)):
        return (
            "has a signature that does not match its content (edited, or signed with another key)"
        )
    return None
