"""A case's definition digest: its family's normalized definition, the case's canonical JSON
and, for a row without an `id`, the place that names it, each framed by its name and length
(so no two different cases run together into one digest)."""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

from eval_banana.datasets.keys import DATASET_KEYS

_DIGEST_PREFIX = b"eval-banana/case-definition-sha256/v1\x00"

# Built once: json.dumps with options builds an encoder per call, and this runs per case.
# NaN and Infinity are refused: Python's json reads and writes them, but they are not JSON, and
# a script in another language would fail to read its case, or plan.json, over them.
CANONICAL_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
CANONICAL = CANONICAL_ENCODER.encode


def _canonical(value: object) -> bytes:
    return CANONICAL(value).encode()


def component(*, name: bytes, content: bytes) -> bytes:
    return struct.pack(">Q", len(name)) + name + struct.pack(">Q", len(content)) + content


def family_hash(
    *, definition: dict[str, Any], script: bytes | None, calibration: bool = False
) -> Any:
    """The digest state every case of the family starts from (its cases left out). A case's
    digest leaves out the calibration cases too: they say how the judge was measured, not what
    a case checks, so editing one re-runs no case. `calibration`: kept in (the family's own
    digest, which its calibration is measured under)."""
    left_out = DATASET_KEYS if calibration else (*DATASET_KEYS, "calibration")
    kept = {key: value for key, value in definition.items() if key not in left_out}
    digest = hashlib.sha256(_DIGEST_PREFIX)
    digest.update(component(name=b"family", content=_canonical(kept)))
    if script is not None:
        digest.update(component(name=b"referenced-script", content=script))
    return digest


def family_digest(*, definition: dict[str, Any], script: bytes | None = None) -> str:
    """`sha256:<hex>` of a family's definition without its rows (Expansion.family_digest)."""
    hexdigest: str = family_hash(definition=definition, script=script, calibration=True).hexdigest()
    return "sha256:" + hexdigest
