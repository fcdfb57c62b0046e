"""What a run folder's judging cost, kept over `eb update` (docs/history.md#what-is-recorded).

An update that runs a check again (its definition edited, its inputs changed) pays its agent
again, and the result it replaces had been paid for too. The run's record is written again
from the report, which holds only the current results: `cost_usd` is what they cost (as the
report's "Judge usage" says), and `replaced_cost_usd` what the results replaced so far had
spent, carried from the record the update replaces. `eb history` shows their sum.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from eval_banana.harness.usage import dollars_sum
from eval_banana.history.record import HistoryCheck, HistoryRecord


def _total(amounts: Iterable[float | None]) -> float | None:
    """The amounts added up; None when none was reported."""
    found = [amount for amount in amounts if amount is not None]
    return dollars_sum(found) if found else None


def _carried(*, check: HistoryCheck, before: HistoryCheck | None, again: bool) -> HistoryCheck:
    """`check` with what its replaced runs spent: the earlier record's, and, when the update
    ran it again, the cost of the result that run replaced."""
    if before is None:
        return check
    replaced = [before.replaced_cost_usd, before.cost_usd if again else None]
    return check.model_copy(update={"replaced_cost_usd": _total(replaced)})


def carried_spend(
    *, record: HistoryRecord, before: HistoryRecord | None, ran_again: Collection[str]
) -> HistoryRecord:
    """`record` of a run an update rebuilt, with the money spent on the results it replaced:
    `before` is the run's record the update replaces (None: there is none, nothing carried),
    `ran_again` the checks the update ran again. A check gone from the plan leaves its cost to
    the run's replaced spend."""
    if before is None:
        return record
    earlier = {check.id: check for check in before.checks}
    now = {check.id for check in record.checks}
    checks = [
        _carried(check=check, before=earlier.get(check.id), again=check.id in ran_again)
        for check in record.checks
    ]
    gone = [
        check.cost_usd for check in before.checks if check.id in ran_again or check.id not in now
    ]
    replaced = _total([before.replaced_cost_usd, *gone])
    # A merge's spend on the shard runs its pipeline ran before stays too.
    return record.model_copy(
        update={
            "checks": checks,
            "replaced_cost_usd": replaced,
            "superseded_cost_usd": before.superseded_cost_usd,
        }
    )
