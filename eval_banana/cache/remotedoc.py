"""An entry as it travels to and from the shared cache: the remote document (docs/shared-cache.md).

A remote document is the local entry without its MAC (that MAC is keyed by the local secret,
which never leaves the machine) and without its origin (a fact of this machine: the runner that
fetches it records its own), its small stored files inline, signed with
EVAL_BANANA_CACHE_SIGNING_KEY when the run has it:

    {"signature": "hmac-sha256:<hex>", "$schema": ..., "kind": "eval-banana/remote-cache-entry",
     "key": ..., "key_version": 1, "tool_version": ..., "entry": {...}, "inline": {...}}

Larger files are blobs named by their digest (cas/<sha256 hex>).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any

from eval_banana.cache.blobs import Blob
from eval_banana.cache.entry import DIGEST_RE, entry_problem
from eval_banana.core.readback import loads_json
from eval_banana.core.version import tool_version
from eval_banana.stagefiles.layout import SCHEMA_BASE

REMOTE_ENTRY_KIND = "eval-banana/remote-cache-entry"
REMOTE_ENTRY_SCHEMA = f"{SCHEMA_BASE}remote-cache-entry.schema.json"
# Files up to this size travel inside their entry: a cached judge is then one request.
INLINE_MAX = 16 * 1024
# Inline files, in all, up to this many bytes (a third more as base64): an entry stays well
# under the ENTRY_MAX_BYTES a runner reads of one (remote/backend.py), whatever number of small
# evidence files a check leaves; the rest travel as blobs.
INLINE_TOTAL_MAX = 1 << 20
_PLACEHOLDER_MAC = "hmac-sha256:" + "0" * 64
# Members of a local entry that stay on the machine.
_LOCAL_ONLY = frozenset({"mac", "origin"})


def remote_text(*, key: str, entry: Mapping[str, Any], inline: Mapping[str, str]) -> bytes:
    """A remote document's text, before it is sealed."""
    body = {
        "$schema": REMOTE_ENTRY_SCHEMA,
        "schema_version": 1,
        "kind": REMOTE_ENTRY_KIND,
        "key": key,
        "key_version": 1,
        "tool_version": tool_version(),
        "entry": {name: value for name, value in entry.items() if name not in _LOCAL_ONLY},
        "inline": dict(inline),
    }
    return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n"


_TOP = frozenset(
    {"$schema", "schema_version", "kind", "key", "key_version", "tool_version", "entry", "inline"}
)


def parsed(
    *, text: bytes, key: str, check_id: str
) -> tuple[str | None, dict[str, Any], dict[str, bytes]]:
    """(problem, entry, inline files) of a remote document's text."""
    try:
        document = loads_json(text)
    except ValueError:
        return "is not valid JSON (truncated or foreign)", {}, {}
    if type(document) is not dict or not document.keys() <= _TOP:
        return "is not a shared cache entry", {}, {}
    if document.get("kind") != REMOTE_ENTRY_KIND or document.get("schema_version") != 1:
        return "is not a shared cache entry of this version", {}, {}
    if document.get("key_version") != 1 or document.get("key") != key:
        return "belongs to another key (a foreign entry)", {}, {}
    entry = document.get("entry")
    if type(entry) is not dict or not entry.keys().isdisjoint(_LOCAL_ONLY):
        return "holds no entry", {}, {}
    problem = entry_problem({"mac": _PLACEHOLDER_MAC, **entry})
    if problem is not None:
        return f"holds an entry that is not valid ({problem})", {}, {}
    if entry["key"] != key or entry["check_id"] != check_id:
        return "belongs to another key (a foreign entry)", {}, {}
    inline: dict[str, bytes] = {}
    raw = document.get("inline", {})
    if type(raw) is not dict:
        return "has inline files that are not an object", {}, {}
    for digest, encoded in raw.items():
        if not DIGEST_RE.match(digest) or type(encoded) is not str:
            return "has an inline file that is not named by its digest", {}, {}
        try:
            inline[digest] = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            return "has an inline file that is not base64", {}, {}
    return None, entry, inline


def blobs(*, entry: Mapping[str, Any]) -> Sequence[Blob]:
    items = [*entry.get("files", []), entry.get("result_file")]
    return [
        Blob(sha256=item["sha256"], size=int(item["size"]))
        for item in items
        if isinstance(item, dict)
    ]


def carried_inline(*, files: Sequence[Blob]) -> frozenset[str]:
    """The digests of the files an entry carries inline: each up to INLINE_MAX bytes, the
    smallest first (the most files for the fewest requests), until INLINE_TOTAL_MAX bytes."""
    sizes = {blob.sha256: blob.size for blob in files if blob.size <= INLINE_MAX}
    chosen: set[str] = set()
    total = 0
    for digest, size in sorted(sizes.items(), key=lambda item: (item[1], item[0])):
        if total + size > INLINE_TOTAL_MAX:
            break
        chosen.add(digest)
        total += size
    return frozenset(chosen)
