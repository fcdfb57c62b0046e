"""The safe artifact file stem of a check id (docs/compatibility.md#artifact-stem)."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

_UNSAFE_RUN = re.compile(r"[^a-zA-Z0-9._-]+")
_STEM_PREFIX_CHARS = 40


def artifact_stem(*, check_id: str) -> str:
    """`<safe prefix, max 40 chars>-<sha256 hex of the id>`; distinct ids never share a stem."""
    return _stem(check_id)


# Each stage and report asks again for the stems of the same ids (10,000 at a time).
@lru_cache(maxsize=1 << 16)
def _stem(check_id: str) -> str:
    safe = _UNSAFE_RUN.sub("_", check_id).strip("._")[:_STEM_PREFIX_CHARS] or "check"
    return f"{safe}-{hashlib.sha256(check_id.encode('utf-8')).hexdigest()}"


def case_artifact_stem(*, family: str, case_id: str, check_id: str | None = None) -> str:
    """`artifact_stem` of the case check `<family>[<case_id>]` (`check_id`, when the caller
    has it), without the pattern or the memo: a family id and a case id hold only safe
    characters, so each bracket is one unsafe run of its own (a family of 10,000 cases plans
    10,000 stems)."""
    if check_id is None:
        check_id = f"{family}[{case_id}]"
    safe = f"{family}_{case_id}_".strip("._")[:_STEM_PREFIX_CHARS] or "check"
    return f"{safe}-{hashlib.sha256(check_id.encode('utf-8')).hexdigest()}"
