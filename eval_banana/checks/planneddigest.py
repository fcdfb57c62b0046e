"""The digest of a planned check's definition, the one execute runs.

`check_definition_sha256` names the check file's bytes (and its script's), which a plan cannot
be compared with without loading every file again. This digest names the normalized definition
the plan holds, so that a plan whose `definition` was edited after validate wrote it is told
when it is read, and so that the verdict cache keys a verdict by the definition that reached it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def planned_definition_digest(*, definition: dict[str, Any]) -> str:
    """`sha256:<hex>` of `definition` as sorted, compact, ASCII JSON: the same for the dict
    validate planned and for the one read back from plan.json."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()
