"""How `eb status` words a stage's staleness: the first few changes and how many more, and
whether the problems a failed stage recorded are still the ones found now."""

from __future__ import annotations

from eval_banana.core.words import first_and_count
from eval_banana.models.stages import ProblemModel

_SHOWN_CHANGES = 3


def describe_changes(changes: list[str]) -> str:
    return first_and_count(changes, shown=_SHOWN_CHANGES)


def problems_now(*, recorded: list[ProblemModel], now: list[ProblemModel], gone: str) -> str | None:
    """Why a stage file that records a failure is stale: its problems are gone, or others now
    (None: the same problem records, so the failure is up to date)."""
    if not now:
        return f"the problems it recorded are gone: {gone}"
    if now == recorded:
        return None
    first = now[0].message.splitlines()[0]
    return f"the problems it recorded changed; the first now: {first}"
