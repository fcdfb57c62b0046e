"""`eb diff BASE HEAD` and `eb run --baseline`: what changed between two runs, check by check.

Each check of either run lands in one category (regression, fix, still failing, new, removed,
skipped, not selected...); the families whose results differ are listed beside them. A run is
read into its summary by `diffing.summary`.
"""

from __future__ import annotations

from eval_banana.diffing.summary import RATE_DIGITS, CheckOutcome, RunSummary
from eval_banana.models.diff import DiffEntry, FamilyChange, RunDiff

DIFF_JSON = "diff.json"
_VERDICTS = ("passed", "failed")


def _family_changes(*, base: RunSummary, head: RunSummary) -> list[FamilyChange]:
    """The families that differ, head's order then base-only ones."""
    changes: list[FamilyChange] = []
    for family in [*head.families, *(f for f in base.families if f not in head.families)]:
        before, now = base.families.get(family), head.families.get(family)
        if before == now or (now is None and head.narrowed is not None):
            continue  # unchanged, or none of its cases was selected in head
        # A head that ran part of the family (--last-failed, -k) judged its gate on that part.
        broke = (
            now is not None
            and now.of_cases is None
            and not now.gate_held
            and (before is None or before.gate_held)
        )
        changes.append(FamilyChange(family=family, base=before, head=now, gate_broke=broke))
    return changes


def _entry(
    *,
    check_id: str,
    base: CheckOutcome | None,
    head: CheckOutcome | None,
    skip_reason: str | None = None,
) -> DiffEntry:
    changed = base is not None and head is not None and base.digest != head.digest
    shown = head if head is not None else base
    return DiffEntry(
        check_id=check_id,
        base=base.outcome if base is not None else None,
        head=head.outcome if head is not None else None,
        definition_changed=changed,
        summary=shown.summary if shown is not None else "",
        error_class=shown.error_class if shown is not None else None,
        skip_reason=skip_reason,
        base_flaky=base is not None and base.flaky,
        head_flaky=head is not None and head.flaky,
    )


def _left_out(*, check: CheckOutcome, by: RunSummary) -> bool:
    """Whether a check the run `by` does not have was only left out by its narrowed selection:
    its file is among the ones `by` found (or `by` narrowed discovery too). A case whose row
    was deleted from a file `by` still has is counted here too: `by` cannot tell."""
    narrowed = by.narrowed
    if narrowed is None:
        return False
    return narrowed.files is None or check.source in narrowed.files


def _cut_short(check: CheckOutcome) -> bool:
    """Whether the run stopped before the check had a verdict (never started it, or ended it
    part-way) and no samples that answered decide it."""
    return check.unfinished and check.settled is None


def _could_not_judge(check: CheckOutcome) -> bool:
    """The provider or the agent failed (an infrastructure error): the check was not judged,
    so it neither regressed nor still fails; it is listed apart (a retry or a rerun decides).
    A sampled judge whose other samples already decide it was judged all the same. A check
    the run stopped before its verdict (an interrupt, a cancelled CI job) is not: its judge
    never failed, the run did, and a run that judged nothing must not read as no regression."""
    return check.error_class == "infrastructure" and check.settled is None and not check.unfinished


def _failed_for_flakiness(*, check: CheckOutcome, run: RunSummary) -> bool:
    """Whether the run failed for a check because its samples disagreed: it was flaky there
    and the run ran with fail_on_flaky, whatever its rule decided."""
    return check.flaky and run.run.fail_on_flaky


def _base_failed_it(*, check: CheckOutcome, base: RunSummary) -> bool:
    """Whether the base run failed for a check: it did not pass there, or it was flaky there and
    base ran with fail_on_flaky. A check base stopped before its verdict was never judged, so
    base did not fail for it (not passing now is a new failure)."""
    if _failed_for_flakiness(check=check, run=base):
        return True
    return check.judged != "passed" and not _cut_short(check)


def _steadied(*, before: CheckOutcome | None, now: CheckOutcome) -> bool:
    """Whether a check flaky in base has a verdict in head its samples agree on (or head no
    longer samples it). A head that never judged it (stopped, an infrastructure error, no
    valid verdict) says nothing of its steadiness."""
    return before is not None and before.flaky and not now.flaky and now.judged in _VERDICTS


def compare(*, base: RunSummary, head: RunSummary) -> RunDiff:
    """Every check of both runs in its categories (head's order, then base-only checks)."""
    regressions: list[DiffEntry] = []
    fixes: list[DiffEntry] = []
    could_not_judge: list[DiffEntry] = []
    became_flaky: list[DiffEntry] = []
    no_longer_flaky: list[DiffEntry] = []
    still_failing: list[DiffEntry] = []
    new_checks: list[DiffEntry] = []
    unskipped: list[DiffEntry] = []
    unselected_in_base: list[DiffEntry] = []
    changed: list[DiffEntry] = []
    unchanged = 0
    for check_id, now in head.checks.items():
        before = base.checks.get(check_id)
        entry = _entry(
            check_id=check_id, base=before, head=now, skip_reason=base.skipped.get(check_id)
        )
        passes = now.judged == "passed"
        if before is None:
            # Not new when base skipped it or a narrowed base only left it out; either way
            # base says nothing of its verdict.
            if check_id in base.skipped:
                unskipped.append(entry)
            elif _left_out(check=now, by=base):
                unselected_in_base.append(entry)
            else:
                new_checks.append(entry)
        if now.flaky and not (before is not None and before.flaky):
            became_flaky.append(entry)
        if _steadied(before=before, now=now):
            no_longer_flaky.append(entry)
        if _failed_for_flakiness(check=now, run=head):
            # The head run failed for it (--fail-on-flaky), whatever its rule decided: never a
            # fix or could not judge, and a regression unless base failed for it too.
            if before is not None and entry.definition_changed:
                changed.append(entry)
            failed_before = before is not None and _base_failed_it(check=before, base=base)
            (still_failing if failed_before else regressions).append(entry)
            continue
        if _could_not_judge(now):
            could_not_judge.append(entry)
            if before is not None and entry.definition_changed:
                changed.append(entry)
            continue
        if before is None:
            if not passes:
                # A new check that does not pass is a new failure: the gate is "nothing that
                # passed before, or was not there, fails now".
                regressions.append(entry)
            continue
        if entry.definition_changed:
            changed.append(entry)
        # Base failed for a check it ran with fail_on_flaky and found flaky, whatever its rule
        # decided: passing now, where the run does not fail for it, is a fix, as the mirror
        # case (flaky in both, the flag only in head) is a regression.
        passed = before.judged == "passed" and not _failed_for_flakiness(check=before, run=base)
        if passed and passes:
            unchanged += 1
        elif passed:
            regressions.append(entry)
        elif passes:
            fixes.append(entry)
        elif _cut_short(before):
            # Base stopped before it judged the check: nobody can say it passed before, so
            # not passing now is a new failure, as a new check's is.
            regressions.append(entry)
        else:
            still_failing.append(entry)
    families = _family_changes(base=base, head=head)
    removed: list[DiffEntry] = []
    skipped_now: list[DiffEntry] = []
    not_selected: list[DiffEntry] = []
    for check_id, before in base.checks.items():
        if check_id in head.checks:
            continue
        reason = head.skipped.get(check_id)
        entry = _entry(check_id=check_id, base=before, head=None, skip_reason=reason)
        if reason is not None:
            skipped_now.append(entry)  # still in head's project: not removed
        elif _left_out(check=before, by=head):
            not_selected.append(entry)
        else:
            removed.append(entry)
    return RunDiff(
        base=base.run,
        head=head.run,
        regressions=regressions,
        fixes=fixes,
        could_not_judge=could_not_judge,
        became_flaky=became_flaky,
        no_longer_flaky=no_longer_flaky,
        still_failing=still_failing,
        new_checks=new_checks,
        removed_checks=removed,
        skipped_now=skipped_now,
        no_longer_skipped=unskipped,
        not_selected=not_selected,
        not_selected_in_base=unselected_in_base,
        changed_definitions=changed,
        unchanged_passing=unchanged,
        points_earned_delta=head.run.points_earned - base.run.points_earned,
        pass_rate_delta=round(head.run.pass_rate - base.run.pass_rate, RATE_DIGITS),
        families=families,
        regressed=bool(regressions) or any(change.gate_broke for change in families),
    )
