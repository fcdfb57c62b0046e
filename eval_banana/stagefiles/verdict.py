"""The run verdict: whether a run passes, from its counts and the settings that judge them.

One rule for the score stage, which decides it, and for a replay, which derives its exit code
from the score it replays and never takes a stored number for it.
"""

from __future__ import annotations

from eval_banana.models.stages import ScoreDoc
from eval_banana.stagefiles.agreement import inconsistency


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
) -> bool:
    """A met threshold is not enough: an error, a stop or (with fail_on_flaky) a flaky check
    fails the run whatever its score says."""
    return met and errored == 0 and not aborted and not halted and not (fail_on_flaky and flaky > 0)


def replayed_verdict(*, score: ScoreDoc, threshold: float, fail_on_flaky: bool) -> bool | str:
    """Whether the run `score` describes passes under this run's settings, derived from its
    counts; or, when the document contradicts itself or those settings, what does."""
    found = inconsistency(stage="score", doc=score)
    if found is not None:
        return f"has a score.json whose {found[0]} {found[1]}"
    if score.pass_threshold != threshold or score.fail_on_flaky != fail_on_flaky:
        return "has a score.json judged under other settings"
    if score.aborted_by is not None:
        return "has a score.json of an aborted run"
    met = meets(earned=score.points_earned, total=score.total_points, threshold=threshold)
    passed = run_passes(
        met=met,
        errored=score.errored_checks,
        aborted=False,
        halted=score.halted_by is not None,
        flaky=score.flaky_checks,
        fail_on_flaky=fail_on_flaky,
    )
    if score.meets_threshold != met or score.run_passed != passed:
        return "has a score.json whose verdict does not follow from its counts"
    return passed
