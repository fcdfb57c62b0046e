"""The keys that make a check a family, apart from the expansion: every check file is asked
whether it is one, and a project without families never imports the expansion."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

# Keys of a family that describe its dataset, not what each case checks.
DATASET_KEYS = ("cases", "cases_from", "min_pass_rate", "case_schema")


def is_family(definition: dict[str, Any]) -> bool:
    """Whether a definition carries a dataset."""
    return definition.get("cases") is not None or definition.get("cases_from") is not None


def case_picks_digest(cases: Iterable[tuple[str, dict[str, Any]]]) -> str:
    """`sha256:<hex>` over each case's id, tags and skip (a case's id with its expanded
    definition), in id order: the `family_picks` digest an earlier eb recorded whatever the
    selection. Asked only so that a family unchanged since such a plan is told as unchanged
    (`picked_rows_digest` is what a plan records now)."""
    picks = sorted(
        [case_id, sorted(definition.get("tags") or []), definition.get("skip")]
        for case_id, definition in cases
    )
    text = json.dumps(picks, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=True)
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()}"


def picked_rows_digest(rows: Iterable[tuple[str, Any]]) -> str:
    """`sha256:<hex>` over the id and `skip:` of each row a selection's filters pass (given as
    (case id, skip)), in id order: which rows it picks, and which of those run, which is all
    that --subset, --shard, --last-failed and --select then choose by. Rows reordered, and
    any field of a row but these two, give the same digest."""
    picks = sorted(([case_id, skip] for case_id, skip in rows), key=lambda pick: str(pick[0]))
    text = json.dumps(picks, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=True)
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()}"


def case_ids_digest(case_ids: Iterable[str]) -> str:
    """`sha256:<hex>` over a family's case ids in sorted order: the same set of ids, however
    its rows are ordered, gives the same digest (an id holds no newline, so joining is exact)."""
    joined = "\n".join(sorted(case_ids)).encode()
    return f"sha256:{hashlib.sha256(joined).hexdigest()}"
