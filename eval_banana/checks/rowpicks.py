"""What a run's selection picks a dataset family's rows by, as the plan records it
(`family_picks`): a row it left out that the same selection would pick now makes the plan stale.

A row's own fields reach the selection only through the run's filters: `--check-id` and `-k`
read its case id, `--tag` its tags (`-k` never reads tags). A row they pass is planned, or
listed as skipped by its `skip:`, and what comes after them (--subset, --shard, --last-failed,
--select) chooses among those by id and skip alone. So the digest covers the id and skip of
each row the filters pass, and nothing of the rows they leave out: a tag edited on a row under
`--check-id` or `-k` is no change, and under `--tag fast` a row that gains `fast` is one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from eval_banana.checks.idselectors import IdSelectors
from eval_banana.checks.keywords import compile_selector
from eval_banana.datasets.keys import case_picks_digest, picked_rows_digest
from eval_banana.models.config import Selection

if TYPE_CHECKING:
    from eval_banana.datasets.expand import ExpandedCase


def rows_picked_digest(*, cases: Iterable[ExpandedCase], selection: Selection) -> str:
    """The digest of what `selection` picks of a family's `cases` (`picked_rows_digest` over the
    rows its --check-id, -k and --tag pass), as validate records it in `family_picks`."""
    chosen = IdSelectors(selection.check_ids) if selection.check_ids else None
    selector = compile_selector(keyword=selection.keyword, tags=selection.tags)
    return picked_rows_digest(
        (case.case_id, case.definition.get("skip"))
        for case in cases
        if (chosen is None or chosen.selects(case.check_id))
        and selector.selects(check_id=case.check_id, tags=case.definition.get("tags") or [])
    )


def picks_as_recorded(*, cases: list[ExpandedCase], selection: Selection) -> frozenset[str]:
    """The `family_picks` digests a plan made under `selection` records of `cases` as they are
    now: this eb's, and the one an earlier eb recorded over every row's id, tags and skip
    (a plan it made is unchanged while its rows are)."""
    return frozenset(
        (
            rows_picked_digest(cases=cases, selection=selection),
            case_picks_digest((case.case_id, case.definition) for case in cases),
        )
    )
