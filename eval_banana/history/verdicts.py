"""Why a recorded run did not pass, in the words report.html's verdict uses
(`reporting.reasons`), from what its record kept: `eb history` says it beside the run, so a
run that failed with every check passing (a flaky check under --fail-on-flaky, a family's gate)
never reads like one that passed.
"""

from __future__ import annotations

from eval_banana.core.words import first_and_count, plural
from eval_banana.history.record import HistoryRecord

# Families named before `and N more`, as report.html's verdict names them.
_FAMILIES_NAMED = 10


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
    return f"below the threshold {(record.pass_threshold or 0.0) * 100:g}%"


def _errored(*, record: HistoryRecord) -> str | None:
    # A check the run never started is recorded as an error, but it did not error.
    errored = record.totals.errored - record.totals.not_run
    return f"{plural(count=errored, noun='check')} errored" if errored > 0 else None


def _flaky(*, record: HistoryRecord) -> str | None:
    flaky = record.totals.flaky
    if not flaky or not record.fail_on_flaky:
        return None
    said = "check was" if flaky == 1 else "checks were"
    return f"{flaky:,} {said} flaky (--fail-on-flaky)"


def _gates(*, record: HistoryRecord) -> str | None:
    broken = record.gates_not_held
    if not broken:
        return None
    if len(broken) == 1:
        return f"the gate of family {broken[0]} did not hold"
    return f"the gates of families {first_and_count(broken, shown=_FAMILIES_NAMED)} did not hold"
