"""`eb history`'s figures: the window of runs, and each check's story over it.

Pure functions of the records: the command reads the folder and chooses the window, this
module counts. A flip is a change between passing and not passing from one run of a check to
its next, both on the same definition digest: an edited check is expected to change its
verdict, so a change across a definition change (an edit, or its revert) is no flip. Early
errors (not run, a missing agent) are no outcome of the check and are skipped when flips and
durations are counted; a run that never started the check, or stopped it while it ran, is no
run of it at all: drawn as not in that run and left out of its pass rate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from eval_banana.harness.usage import dollars_sum, reported_cost
from eval_banana.history.merges import merges_once
from eval_banana.history.recent import median
from eval_banana.history.record import HistoryCheck, HistoryRecord
from eval_banana.history.verdicts import failed_because
from eval_banana.history.view import CheckRow, RunRef, RunRow

MARKS = {"passed": "✓", "failed": "✗", "error": "E"}
ABSENT = "·"
Listing = str  # "all", "flaky", "slowest" or "costliest"
CheckFilter = Callable[[HistoryCheck], bool]


class Seen(NamedTuple):
    """One check in one run (`position`: the run's place in the window; -1 before it)."""

    record: HistoryRecord
    check: HistoryCheck
    position: int = -1


def run_row(*, record: HistoryRecord) -> RunRow:
    """A run's row; its pass rate, as each check's, counts only the checks it ran: an aborted
    run that stopped before any check had an outcome has none, not 0 %."""
    totals = record.totals
    # No outcome, counted from the checks as their rows count them: never started, or ended
    # part-way. Of those, the never started are the run's own `not run`, as its console and
    # report.json counted them; the rest it stopped (an error there, no run of them here).
    no_outcome = sum(check.not_run for check in record.checks)
    not_run = min(totals.not_run, no_outcome)
    ran = totals.checks - no_outcome
    return RunRow(
        run_id=record.run_id,
        kind=record.kind,
        started_at=record.started_at,
        commit=record.git.commit if record.git else None,
        dirty=bool(record.git and record.git.dirty),
        passed=record.passed,
        checks=totals.checks,
        passed_checks=totals.passed,
        not_run=not_run,
        stopped=no_outcome - not_run,
        pass_rate=totals.passed / ran if ran > 0 else None,
        pass_threshold=record.pass_threshold,
        aborted_by=record.aborted_by,
        failed_because=failed_because(record=record),
        duration_ms=record.duration_ms,
        # What judging the run cost, with the results its updates replaced and, for a merge,
        # the shard runs of its pipeline it stands for; an amount past the ceiling (recorded
        # before eb had it) is none.
        cost_usd=_spent(
            reported_cost(cost)
            for cost in (record.cost_usd, record.replaced_cost_usd, record.superseded_cost_usd)
        ),
    )


def _by_check(
    *, records: Sequence[HistoryRecord], keep: CheckFilter | None
) -> dict[str, list[Seen]]:
    found: dict[str, list[Seen]] = {}
    make = tuple.__new__  # a Seen without a Python-level __new__: half a million are made
    for position, record in enumerate(records):
        for check in record.checks:
            if keep is None or keep(check):
                seen = found.get(check.id)
                if seen is None:
                    seen = found[check.id] = []
                seen.append(make(Seen, (record, check, position)))
    return found


def _flips(checks: Sequence[HistoryCheck]) -> dict[str, int]:
    """Definition digest -> flips between consecutive outcomes both on it (early errors
    skipped): a definition edited away and back again does not flip across the edits."""
    outcomes = [(c.digest, c.status == "passed") for c in checks if not c.early_error]
    if len({digest for digest, _ in outcomes}) == 1:  # the usual case: one definition
        passes = [passed for _, passed in outcomes]
        return {outcomes[0][0]: sum(a != b for a, b in zip(passes, passes[1:], strict=False))}
    flips = dict.fromkeys((digest for digest, _ in outcomes), 0)
    for (before, was_passing), (digest, passed) in zip(outcomes, outcomes[1:], strict=False):
        if digest == before and passed != was_passing:
            flips[digest] += 1
    return flips


def _p90(values: Sequence[float]) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return float(values[0])
    # Imported here: statistics (with fractions and decimal) costs 3 ms, and a run that only
    # marks its report from the history (trend) never asks for a percentile.
    import statistics

    return float(statistics.quantiles(values, n=10, method="inclusive")[-1])


def _spent(amounts: Iterable[float | None]) -> float | None:
    """Dollars spent, added up; None when none was reported."""
    costs = [cost for cost in amounts if cost is not None]
    return dollars_sum(costs) if costs else None


def _total_cost(checks: Sequence[HistoryCheck]) -> float | None:
    """What the runs spent on the check, with the runs of it `eb update` replaced."""
    return _spent(cost for check in checks for cost in (check.cost_usd, check.replaced_cost_usd))


def _ref(seen: Seen) -> RunRef:
    git = seen.record.git
    return RunRef(
        run_id=seen.record.run_id,
        started_at=seen.record.started_at,
        commit=git.commit if git else None,
    )


def _not_passed_since_the_start(seen: Sequence[Seen]) -> bool:
    """Whether no outcome of the check in `seen` is a pass, so its streak may go further back."""
    return all(one.check.status != "passed" for one in seen if not one.check.early_error)


def _streak(everything: Sequence[Seen]) -> tuple[RunRef | None, RunRef | None]:
    """(first run of the current not-passing streak, last run it passed) over `everything`
    (oldest first); (None, None) when its latest outcome is a pass."""
    ran = [one for one in everything if not one.check.not_run]
    outcomes = [one for one in ran if not one.check.early_error] or ran
    if not outcomes or outcomes[-1].check.status == "passed":
        return None, None
    start = len(outcomes) - 1
    while start > 0 and outcomes[start - 1].check.status != "passed":
        start -= 1
    last_passed = _ref(outcomes[start - 1]) if start > 0 else None
    return _ref(outcomes[start]), last_passed


def _earlier(*, pending: set[str], older: Iterator[HistoryRecord]) -> dict[str, list[Seen]]:
    """Check id -> its runs before the window, oldest first, read back only as far as its
    last pass (or the first record) for each check in `pending`; a shard run a merge holds is
    no run of its own here, wherever the merge is (every window names the same runs)."""
    found: dict[str, list[Seen]] = {check_id: [] for check_id in pending}
    waiting = set(pending)
    for record in merges_once(newest_first=older):
        if not waiting:
            break
        for check in record.checks:
            if check.id in waiting:
                found[check.id].append(Seen(record=record, check=check))
                if check.status == "passed" and not check.early_error:
                    waiting.discard(check.id)
    return {check_id: seen[::-1] for check_id, seen in found.items()}


def check_row(
    *, window: Sequence[HistoryRecord], seen: Sequence[Seen], earlier: Sequence[Seen]
) -> CheckRow:
    """One check's row: `seen` are its runs in the window, `earlier` those before it that
    its failing streak needs (oldest first)."""
    marks = [ABSENT] * len(window)
    checks: list[HistoryCheck] = []
    timed: list[int] = []
    passed = ran = 0
    for _, check, position in seen:  # one pass over the window's runs of the check
        checks.append(check)
        if check.not_run:
            continue  # the run stopped before the check had an outcome: no run of it
        status = check.status
        marks[position] = MARKS[status]
        ran += 1
        passed += status == "passed"
        if not check.early_error:
            timed.append(check.duration_ms)
    flips = _flips(checks)
    changes = [
        _ref(one)
        for before, one in zip(seen, seen[1:], strict=False)
        if one.check.digest != before.check.digest
    ]
    latest = checks[-1]
    # Its latest outcome: a run that stopped before the check had one says nothing of it.
    outcome = next((check for check in reversed(checks) if not check.not_run), latest)
    failing_since, last_passed = _streak([*earlier, *seen])
    return CheckRow(
        id=latest.id,
        family=latest.family,
        tags=list(latest.tags),
        strip="".join(marks),
        runs=ran,
        passed=passed,
        pass_rate=passed / ran if ran else None,
        flips=sum(flips.values()),
        most_flips_on_one_definition=max(flips.values(), default=0),
        definitions=len({check.digest for check in checks}),
        definition_changes=changes,
        flaky_runs=sum(check.flaky for check in checks),
        median_ms=float(median(timed)) if timed else None,
        p90_ms=_p90(timed),
        cost_usd=_total_cost(checks),
        status=outcome.status,
        failing_since=failing_since,
        last_passed=last_passed,
    )


def check_rows(
    *,
    window: Sequence[HistoryRecord],
    older: Iterator[HistoryRecord],
    keep: CheckFilter | None,
    on_pending: Callable[[frozenset[str]], None] | None = None,
) -> list[CheckRow]:
    """A row per check present in the window (and kept), in id order; `older`: the records
    before the window, newest first, read only for checks that have not passed in it (whose
    ids `on_pending` is told before any is read)."""
    in_window = _by_check(records=window, keep=keep)
    pending = {
        check_id
        for check_id, seen in in_window.items()
        if seen[-1].check.status != "passed" and _not_passed_since_the_start(seen)
    }
    if on_pending is not None:
        on_pending(frozenset(pending))  # the older records need only these checks
    earlier = _earlier(pending=pending, older=older)
    return [
        check_row(window=window, seen=in_window[check_id], earlier=earlier.get(check_id, []))
        for check_id in sorted(in_window)
    ]


def listed(*, rows: Sequence[CheckRow], listing: Listing, min_flips: int) -> list[CheckRow]:
    """The rows a listing shows, in its order: flaky (most flips first, then the most runs
    whose samples disagreed), slowest (median duration), costliest (total cost), or all (by
    id)."""
    if listing == "flaky":
        found = [row for row in rows if is_flaky(row=row, min_flips=min_flips)]
        return sorted(
            found, key=lambda row: (-row.most_flips_on_one_definition, -row.flaky_runs, row.id)
        )
    if listing == "slowest":
        timed = [row for row in rows if row.median_ms is not None]
        return sorted(timed, key=lambda row: (-(row.median_ms or 0.0), row.id))
    if listing == "costliest":
        costed = [row for row in rows if row.cost_usd is not None]
        return sorted(costed, key=lambda row: (-(row.cost_usd or 0.0), row.id))
    return list(rows)


def is_flaky(*, row: CheckRow, min_flips: int) -> bool:
    """Whether `--flaky` lists the check: it flipped `min_flips` times on one definition from
    run to run, or its own samples disagreed in a run (flaky within it)."""
    return row.most_flips_on_one_definition >= min_flips or row.flaky_runs > 0
