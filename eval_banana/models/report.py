"""`report.json`: the run's report, the single source of `schemas/report.schema.json`."""

from __future__ import annotations

from typing import Literal

from eval_banana.core.record import Field, Record
from eval_banana.models.config import Shard
from eval_banana.models.result import CheckResult, SkippedCheck
from eval_banana.models.stages import (
    AbortReason,
    CacheCounts,
    ErrorClassCount,
    FamilyScore,
    HaltReason,
    JudgeUsage,
    ProblemModel,
    ShardSource,
)


class ReportJson(Record):
    """Keys and order are eval-banana's, exactly; the trailing keys are our additions."""

    model_config = {"extra": "allow"}

    schema_version: Literal[1]
    run_id: str
    project_root: str
    output_dir: str
    started_at: str = Field(
        description="When the run's checks started; `eb update` keeps it (the run's place in "
        "time), and says when it ran checks again in updated_at."
    )
    completed_at: str = Field(description="When the checks ended, the latest update's if any.")
    duration_ms: int = Field(
        ge=0,
        description="How long the checks ran: after `eb update`, the run's own time plus that "
        "of each update's checks (not the time between them).",
    )
    total_checks: int = Field(ge=0)
    passed_checks: int = Field(ge=0)
    failed_checks: int = Field(ge=0)
    errored_checks: int = Field(ge=0)
    points_earned: int = Field(ge=0)
    total_points: int = Field(ge=0)
    percentage: float
    pass_threshold: float
    meets_threshold: bool
    run_passed: bool
    checks: list[CheckResult]
    not_run_checks: int = Field(default=0, ge=0)
    aborted_by: AbortReason | None = None
    env_policy: Literal["inherit", "allowlist"] = "inherit"
    env_allow: list[str] = Field(default_factory=list)
    env_allow_prefixes: list[str] = Field(default_factory=list)
    tokens_used: int | None = None
    warnings: list[ProblemModel] = Field(default_factory=list)
    skipped_checks: int = Field(default=0, ge=0)
    skipped: list[SkippedCheck] = Field(default_factory=list)
    maxfail: int = Field(default=0, ge=0)
    halted_by: HaltReason | None = None
    # Scale-out (docs/scale-out.md).
    shard: Shard | None = Field(default=None, description="A shard run: its --shard K/N.")
    allow_empty: str | None = Field(
        default=None, description="Why a run with no check passed (a shard that received none)."
    )
    merged_from: list[ShardSource] = Field(
        default_factory=list, description="eb merge: the shard runs the results came from."
    )
    judge_usage: JudgeUsage | None = None
    cached_checks: int = Field(
        default=0, ge=0, description="Results reused from the verdict cache (details.cache.hit)."
    )
    selection_note: str | None = Field(
        default=None,
        description="Set when --changed-since or --last-failed ran no check (it selected none, "
        "or only skipped ones): why.",
    )
    flaky_checks: int = Field(
        default=0, ge=0, description="Checks whose samples disagreed (details.flaky)."
    )
    fail_on_flaky: bool = Field(
        default=False, description="--fail-on-flaky was on: a flaky check fails the run."
    )
    families: list[FamilyScore] = Field(
        default_factory=list,
        description="Each dataset family: its cases, pass rate and whether its own gate held.",
    )
    error_classes: list[ErrorClassCount] = Field(
        default_factory=list,
        description="The errors of judges by class (details.error_class), most frequent first; "
        "checks the stopped run never started (not_run_checks) are not among them.",
    )
    cache: CacheCounts | None = Field(
        default=None,
        description="What the verdict cache did in this run (local and shared tier); null "
        "when it was off.",
    )
    updated_at: str | None = Field(
        default=None,
        description="When `eb update` (or `eb stage execute --check-id`) last started running "
        "checks of this run again; null: never.",
    )
