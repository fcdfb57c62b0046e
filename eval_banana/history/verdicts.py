"""Why a recorded run did not pass, in the words report.html's verdict uses
(`core.verdictwords`), from what its record kept: `eb history` says it beside the run, so a
run that failed with every check passing (a flaky check under --fail-on-flaky, a family's gate)
never reads like one that passed.
"""

from __future__ import annotations

from eval_banana.core import verdictwords
from eval_banana.history.record import HistoryRecord


def failed_because(*, record: HistoryRecord) -> list[str]:
    """Each reason the run did not pass that its record holds; [] for a run that passed, an
    aborted run (its stop says why) and a record written before eb kept the reasons."""
    if record.passed or record.aborted_by is not None:
        return []
    found = [
        _nothing_judged(record=record),
        _below_threshold(record=record),
        _errored(record=record),
        "maxfail stopped it" if record.halted_by == "maxfail" else None,
        _flaky(record=record),
        _gates(record=record),
    ]
    return [reason for reason in found if reason is not None]


def _nothing_judged(*, record: HistoryRecord) -> str | None:
    if record.totals.checks != 0 or record.meets_threshold is None:
        return None
    return "no check ran, so nothing was judged"


def _below_threshold(*, record: HistoryRecord) -> str | None:
    # With no check run the threshold is not met, but no ratio is below it.
    if record.meets_threshold is not False or record.totals.checks == 0:
        return None
    return verdictwords.below_threshold(pass_threshold=record.pass_threshold or 0.0)


def _errored(*, record: HistoryRecord) -> str | None:
    return verdictwords.errored(errored=record.totals.errored, not_run=record.totals.not_run)


def _flaky(*, record: HistoryRecord) -> str | None:
    return verdictwords.flaky(flaky=record.totals.flaky, fail_on_flaky=bool(record.fail_on_flaky))


def _gates(*, record: HistoryRecord) -> str | None:
    return verdictwords.gates_not_held(families=record.gates_not_held or [])
