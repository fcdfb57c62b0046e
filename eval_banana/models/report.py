"""`report.json`: the run's report (B-155), the single source of `schemas/report.schema.json`."""

from __future__ import annotations

from typing import Literal

from eval_banana.models.record import Field, Record
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import AbortReason, ProblemModel


class ReportJson(Record):
    """Keys and order are the eval-banana contract; the trailing keys are our additions."""

    model_config = {"extra": "allow"}

    schema_version: Literal[1]
    run_id: str
    project_root: str
    output_dir: str
    started_at: str
    completed_at: str
    duration_ms: int = Field(ge=0)
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
    cached_checks: int = Field(
        default=0, ge=0, description="Results reused from the verdict cache (details.cache.hit)."
    )
    selection_note: str | None = Field(
        default=None,
        description="Set when --changed-since or --last-failed selected no check: why.",
    )
