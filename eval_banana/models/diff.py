"""`diff.json` / `eb diff --format json`: two runs compared check by check.

The single source of `schemas/diff.schema.json` (`eb schema diff`).
"""

from __future__ import annotations

from typing import Literal

from eval_banana.core.record import Field, Record
from eval_banana.models.result import ErrorClass
from eval_banana.models.stages import AbortReason

# A check's outcome as the diff names it: a check the run never started is `not_run` here
# (report.json records it as `error` with details.not_run), one the stopping run ended
# part-way is `stopped` (an `error` with details.stopped: `Stopped: interrupted`).
Outcome = Literal["passed", "failed", "error", "not_run", "stopped"]


class DiffRun(Record):
    """One side of the comparison."""

    model_config = {"extra": "forbid"}

    run_id: str
    run_dir: str
    total_checks: int = Field(ge=0)
    points_earned: int = Field(ge=0)
    total_points: int = Field(ge=0)
    pass_rate: float = Field(description="points_earned / total_points (0.0 with no checks).")
    run_passed: bool
    selection: str | None = Field(
        default=None,
        description="The flags that narrowed the run's selection (`--changed-since main`, "
        "`-k refund`, `--shard 2/4`), from its stages/config.json; null: it selected every "
        "check, or its folder does not say.",
    )
    aborted_by: AbortReason | None = Field(
        default=None,
        description="What stopped the run before it ended (its report.json `aborted_by`: an "
        "interrupt such as a cancelled CI job's SIGTERM, a fuse, a write or resource fault); "
        "null: it ran to its end.",
    )
    unfinished_checks: int = Field(
        default=0,
        ge=0,
        description="Its checks the run stopped before they had a verdict: never started "
        "(details.not_run: an abort or maxfail) or ended part-way (details.stopped). In head, "
        "each one that passed in base (or is new) is a regression, whatever its error class.",
    )
    flaky_checks: int = Field(
        default=0,
        ge=0,
        description="Its checks whose samples disagreed (details.flaky: some passed, some "
        "failed), whatever their rule decided.",
    )
    fail_on_flaky: bool = Field(
        default=False,
        description="The run ran with fail_on_flaky (its report.json `fail_on_flaky`): any "
        "flaky check failed it. In head, a flaky check is then a regression unless base "
        "failed for it too (it did not pass there, or base ran with fail_on_flaky and it was "
        "flaky there). In base, a flaky check that head passes (head without the flag, or "
        "steady there) is then a fix.",
    )


class DiffEntry(Record):
    """One check in one category."""

    model_config = {"extra": "forbid"}

    check_id: str
    base: Outcome | None = Field(
        description="Its outcome in the base run; null: not there. `not_run`: the run never "
        "started it; `stopped`: the run (interrupted or aborted) ended it part-way, which "
        "report.json records as an error with details.stopped."
    )
    head: Outcome | None = Field(
        description="Its outcome in the head run; null: not there. `not_run` and `stopped` as "
        "for base."
    )
    definition_changed: bool = Field(
        default=False, description="Both runs have it, with different check_definition_sha256."
    )
    summary: str = Field(
        default="", description="The head run's reason or error (the base run's if removed)."
    )
    error_class: ErrorClass | None = Field(
        default=None,
        description="The head run's details.error_class when it errored (the base run's if "
        "removed); null: no class recorded.",
    )
    base_flaky: bool = Field(
        default=False,
        description="Its samples disagreed in the base run (details.flaky); false: they agreed, "
        "it was not sampled, or it is not there.",
    )
    head_flaky: bool = Field(
        default=False,
        description="Its samples disagreed in the head run (details.flaky); false: they agreed, "
        "it was not sampled, or it is not there.",
    )
    skip_reason: str | None = Field(
        default=None,
        description="In skipped_now or no_longer_skipped: why the run that skipped it did (its "
        "`skip:`); that run's outcome (head or base) is null, as it did not run there.",
    )


class FamilySide(Record):
    """A dataset family as one run reported it (report.json `families`)."""

    model_config = {"extra": "forbid"}

    cases: int = Field(ge=0, description="Its non-skipped cases in that run.")
    passed: int = Field(ge=0)
    pass_rate: float = Field(description="passed / cases, as a ratio from 0 to 1.")
    min_pass_rate: float | None = Field(description="Its gate then; null: none.")
    gate_held: bool
    of_cases: int | None = Field(
        default=None,
        ge=0,
        description="When that run's selection ran only part of the family: how many cases "
        "the family has (its rate and gate are those of the part); null: every case ran.",
    )
    gate_at_merge: float | None = Field(
        default=None,
        description="A shard run's gate, which that run does not judge (eb merge judges it on "
        "the whole family); null: not a shard, or no gate.",
    )


class FamilyChange(Record):
    """A family whose cases, pass rate or gate differ between the runs."""

    model_config = {"extra": "forbid"}

    family: str
    base: FamilySide | None = Field(description="In the base run; null: not there.")
    head: FamilySide | None = Field(description="In the head run; null: not there.")
    gate_broke: bool = Field(
        description="Its min_pass_rate holds in base (or it was not there) and not in head: "
        "the run fails for it now. A regression, even when no case of it did (cases removed "
        "can lower its rate). Never for a head that ran only part of the family (head.of_cases): "
        "a gate over a part says nothing of the family."
    )


class RunDiff(Record):
    """Every category of the comparison; a check may be in two (a regression whose definition
    changed, a new check that fails)."""

    model_config = {"extra": "forbid"}

    schema_version: Literal[1] = 1
    base: DiffRun
    head: DiffRun
    regressions: list[DiffEntry] = Field(
        description="Passed in base and not in head (failed, error, not run or stopped), and "
        "new (or "
        "no longer skipped) checks that do not pass: what got worse (an infrastructure "
        "error is in could_not_judge instead, unless the run stopped before the check had a "
        "verdict: never started or ended part-way by an abort). A check base stopped before "
        "its verdict (an abort, maxfail) that does not pass in head is one too: nobody can "
        "say it passed before. A check flaky in head is one when head ran with "
        "fail_on_flaky, unless base failed for it too. Any entry makes `eb diff` exit 1."
    )
    could_not_judge: list[DiffEntry] = Field(
        default_factory=list,
        description="An infrastructure error in head (details.error_class): the provider or "
        "the agent failed, so nobody judged the check. Never a regression, whatever base was. "
        "Not a check the run stopped before its verdict (an interrupted or aborted run's "
        "never started or stopped checks): those are regressions when they passed in base.",
    )
    became_flaky: list[DiffEntry] = Field(
        default_factory=list,
        description="Flaky in head (head_flaky: its samples disagreed), and not in base (or "
        "not there), whatever its outcome. When head ran with fail_on_flaky (head.fail_on_flaky), "
        "its verdict counted the flakiness: each is then a regression too, or still failing "
        "when it did not pass in base (never a fix or could not judge).",
    )
    no_longer_flaky: list[DiffEntry] = Field(
        default_factory=list,
        description="Flaky in base (base_flaky: its samples disagreed) and not in head, where "
        "its samples agree on a verdict (passed or failed) or it is no longer sampled. A check "
        "head never judged (stopped, an infrastructure error, no valid verdict) is not one. "
        "Never a regression by itself; its verdict puts it in the other categories as usual.",
    )
    fixes: list[DiffEntry] = Field(
        description="Base failed for it and head passes it: it did not pass in base, or base "
        "ran with fail_on_flaky and it was flaky there (whatever its rule decided), and head "
        "passes it without failing for flakiness."
    )
    still_failing: list[DiffEntry] = Field(description="Does not pass in either run.")
    new_checks: list[DiffEntry] = Field(
        description="In head only (whatever their outcome), and not because base ran a "
        "narrowed selection or skipped them."
    )
    removed_checks: list[DiffEntry] = Field(
        description="In base only, and not because head ran a narrowed selection or skipped them."
    )
    skipped_now: list[DiffEntry] = Field(
        default_factory=list,
        description="Run in base, skipped in head (in head's report.json `skipped`: its check "
        "or row is still there, with `skip:`), so not removed; skip_reason says why. Never a "
        "regression itself; a family gate the skip breaks is one (families).",
    )
    no_longer_skipped: list[DiffEntry] = Field(
        default_factory=list,
        description="Skipped in base (in base's report.json `skipped`), run in head, so not "
        "new; skip_reason says why base skipped it. One that does not pass in head is a "
        "regression all the same, as a new check is (nobody can say it passed before).",
    )
    not_selected: list[DiffEntry] = Field(
        default_factory=list,
        description="In base only while head ran a narrowed selection (head.selection) that "
        "left them out, their check file still in head's project (or head narrowed discovery "
        "itself, --check-dir): head says nothing of them. Never a regression.",
    )
    not_selected_in_base: list[DiffEntry] = Field(
        default_factory=list,
        description="In head only while base ran a narrowed selection (base.selection) that "
        "left them out, their check file among the ones base found: base says nothing of "
        "them, so they are not new. One that does not pass in head is a regression all the "
        "same (nobody can say it passed before).",
    )
    changed_definitions: list[DiffEntry] = Field(
        description="In both runs with a different definition digest."
    )
    unchanged_passing: int = Field(ge=0, description="Passes in both runs.")
    points_earned_delta: int = Field(description="head.points_earned - base.points_earned.")
    pass_rate_delta: float = Field(description="head.pass_rate - base.pass_rate, as a ratio.")
    families: list[FamilyChange] = Field(
        default_factory=list,
        description="The dataset families whose case count, pass rate or gate changed (a "
        "family none of whose cases a narrowed head selected is left out).",
    )
    regressed: bool = Field(
        description="Whether there is any regression, or a family gate broke (exit code 1)."
    )
