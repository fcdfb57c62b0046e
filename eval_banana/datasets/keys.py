"""The keys that make a check a family, apart from the expansion: every check file is asked
whether it is one, and a project without families never imports the expansion."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

# Keys of a family that describe its dataset, not what each case checks.
DATASET_KEYS = ("cases", "cases_from", "min_pass_rate", "case_schema")


def is_family(definition: dict[str, Any]) -> bool:
    """Whether a definition carries a dataset."""
    return definition.get("cases") is not None or definition.get("cases_from") is not None


def case_ids_digest(case_ids: Iterable[str]) -> str:
    """`sha256:<hex>` over a family's case ids in sorted order: the same set of ids, however
    its rows are ordered, gives the same digest (an id holds no newline, so joining is exact)."""
    joined = "\n".join(sorted(case_ids)).encode()
    return f"sha256:{hashlib.sha256(joined).hexdigest()}"
