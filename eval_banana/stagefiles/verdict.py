"""The run verdict: whether a run passes, from its counts and the settings that judge them.

One rule for the score stage, which decides it, for a score.json read back, whose derived
fields must follow from its counts by it, and for a replay, which derives its exit code from
the score it replays and never takes a stored number for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from eval_banana.models.result import NOT_RUN, STOPPED, CheckResult
from eval_banana.models.stages import FamilyScore, ScoreDoc

# (JSON path of the field, what is wrong with it)
Inconsistency = tuple[str, str]


def percentage(*, earned: int, total: int) -> float:
    """`round(earned / total * 100, 1)`; 0.0 for no checks."""
    if total == 0:
        return 0.0
    return round(earned / total * 100, 1)


def meets(*, earned: int, total: int, threshold: float) -> bool:
    """The unrounded ratio against the threshold; never met with no checks."""
    return total > 0 and earned / total >= threshold


def run_passes(
    *,
    met: bool,
    errored: int,
    aborted: bool,
    halted: bool,
    flaky: int,
    fail_on_flaky: bool,
    gates_held: bool = True,
) -> bool:
    """A met threshold is not enough: an error, a stop, a dataset family below its own
    min_pass_rate or (with fail_on_flaky) a flaky check fails the run whatever its score says."""
    return (
        met
        and gates_held
        and errored == 0
        and not aborted
        and not halted
        and not (fail_on_flaky and flaky > 0)
    )


def gate_holds(*, passed: int, cases: int, min_pass_rate: float | None) -> bool:
    """A family's gate, on the unrounded ratio. A family none of whose cases ran here (every
    case skipped, or selected away) has nothing to gate; an empty dataset never gets this far
    (it is a definition error)."""
    if min_pass_rate is None or cases == 0:
        return True
    return passed / cases >= min_pass_rate


def family_scores(
    *,
    results: Iterable[CheckResult],
    gates: Mapping[str, float],
    gates_at_merge: Mapping[str, float] | None = None,
    sizes: Mapping[str, int] | None = None,
) -> list[FamilyScore]:
    """Each dataset family's counts, by family id (a gated family with no result included).
    `gates_at_merge`: in a shard, the gates it leaves to `eb merge`, named in its report so
    that nobody reads the family as ungated; `sizes`: each family's cases before the
    selection narrowed them, told beside a family that ran fewer. A case a stopped run never
    started is counted apart: it neither passed nor failed, so the gate is judged on the cases
    that ran (the run fails for having stopped anyway)."""
    at_merge = gates_at_merge or {}
    planned = sizes or {}
    counts: dict[str, _FamilyCounts] = {family: _FamilyCounts() for family in gates}
    for result in results:
        if result.family is not None:
            counts.setdefault(result.family, _FamilyCounts()).add(result=result)
    families = []
    for family in sorted(counts):
        found = counts[family]
        cases = found.passed + found.failed + found.errored
        rate = gates.get(family)
        families.append(
            FamilyScore(
                id=family,
                cases=cases,
                passed=found.passed,
                failed=found.failed,
                errored=found.errored,
                pass_rate=found.passed / cases if cases else 0.0,
                min_pass_rate=rate,
                gate_held=gate_holds(passed=found.passed, cases=cases, min_pass_rate=rate),
                gate_at_merge=at_merge.get(family),
                of_cases=_of_cases(ran=cases, size=planned.get(family, cases + found.not_run)),
                not_run=found.not_run,
            )
        )
    return families


class _FamilyCounts:
    """One family's results by outcome, as `family_scores` counts them."""

    def __init__(self) -> None:
        self.passed = self.failed = self.errored = self.not_run = 0

    def add(self, *, result: CheckResult) -> None:
        if _not_run(result=result):
            self.not_run += 1
        elif result.status == "passed":
            self.passed += 1
        elif result.status == "failed":
            self.failed += 1
        else:
            self.errored += 1


def _not_run(*, result: CheckResult) -> bool:
    """A case the stop kept from an outcome: never started, or ended part-way (`Stopped: ...`,
    an error the run's stop caused, not the case), as the history record counts it."""
    if result.details.get(NOT_RUN) is True:
        return True
    return result.status == "error" and result.details.get(STOPPED) is True


def _of_cases(*, ran: int, size: int) -> int | None:
    """The family's size when fewer of its cases ran (a narrowed selection, a stopped run),
    else None."""
    return size if ran < size else None


def score_contradiction(doc: ScoreDoc) -> Inconsistency | None:
    """The first field of a score document that does not follow from its counts by the rules
    above (None: every derived field agrees): a hand-edited verdict beside the counts that
    refute it is refused, not reported. Whether the counts are those of its execute.json is
    asked where both are read (`stages.score.score_disagreement`)."""
    counted = doc.passed_checks + doc.failed_checks + doc.errored_checks
    if counted != doc.total_checks:
        return "$.total_checks", f"{doc.total_checks}, but the statuses add up to {counted}"
    if doc.total_points != doc.total_checks or doc.points_earned != doc.passed_checks:
        return "$.points_earned", "points must be one per check, earned by each passed check"
    expected = percentage(earned=doc.points_earned, total=doc.total_points)
    if doc.percentage != expected:
        return "$.percentage", f"{doc.percentage}, but its points make {expected}"
    # With no check the threshold may be met (an empty shard, an incremental run that selected
    # nothing): only execute.json and the selection tell, so it is left to that comparison.
    met = meets(earned=doc.points_earned, total=doc.total_points, threshold=doc.pass_threshold)
    if doc.total_points and doc.meets_threshold != met:
        return "$.meets_threshold", (
            f"{str(doc.meets_threshold).lower()}, but {doc.points_earned}/{doc.total_points} "
            f"against pass_threshold {doc.pass_threshold} says {str(met).lower()}"
        )
    for index, family in enumerate(doc.families):
        found = _family_contradiction(family)
        if found is not None:
            return f"$.families[{index}].{found[0]}", found[1]
    passed = run_passes(
        gates_held=all(family.gate_held for family in doc.families),
        met=doc.meets_threshold,
        errored=doc.errored_checks,
        aborted=doc.aborted_by is not None,
        halted=doc.halted_by is not None,
        flaky=doc.flaky_checks,
        fail_on_flaky=doc.fail_on_flaky,
    )
    if doc.run_passed != passed:
        return "$.run_passed", (
            f"{str(doc.run_passed).lower()}, but its threshold, errors, stop, flaky checks and "
            f"family gates say {str(passed).lower()}"
        )
    status = "aborted" if doc.aborted_by else ("passed" if doc.run_passed else "failed")
    if doc.status != status:
        return "$.status", f"{doc.status!r}, but the counts say {status!r}"
    return None


def _family_contradiction(family: FamilyScore) -> Inconsistency | None:
    """(field, problem) of a family whose counts, pass rate or gate disagree."""
    if family.passed + family.failed + family.errored != family.cases:
        return "cases", "its passed, failed and errored do not add up"
    rate = family.passed / family.cases if family.cases else 0.0
    if family.pass_rate != rate:
        return "pass_rate", f"{family.pass_rate}, but {family.passed}/{family.cases} is {rate}"
    held = gate_holds(passed=family.passed, cases=family.cases, min_pass_rate=family.min_pass_rate)
    if family.gate_held != held:
        return "gate_held", f"{str(family.gate_held).lower()}, but its pass rate says otherwise"
    return None


def replayed_verdict(*, score: ScoreDoc, threshold: float, fail_on_flaky: bool) -> bool | str:
    """Whether the run `score` describes passes under this run's settings; or, when the
    document contradicts itself or those settings, what does. Its verdict is taken only once
    `score_contradiction` finds it follows from its counts."""
    if score.pass_threshold != threshold or score.fail_on_flaky != fail_on_flaky:
        return "has a score.json judged under other settings"
    found = score_contradiction(score)
    if found is not None:
        return f"has a score.json whose {found[0]} {found[1]}"
    if score.aborted_by is not None:
        return "has a score.json of an aborted run"
    if not score.total_points and score.run_passed:
        # An empty run passes only by its selection, which a replay does not replay.
        return "has a score.json that passes with no check"
    return score.run_passed
