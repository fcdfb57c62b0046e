"""Stage documents: each stage writes one, every one shares the envelope of pipeline.md."""

from __future__ import annotations

from typing import Any, Literal

from eval_banana.models.config import AgentTemplate, Selection, Settings, SettingSource
from eval_banana.models.record import Field, Record
from eval_banana.models.result import CheckResult

AbortReason = Literal["interrupt", "run_timeout", "token_fuse"]


class ProblemModel(Record):
    model_config = {"extra": "forbid"}

    message: str
    file: str | None = None
    field_path: str | None = None
    hint: str | None = None


class StageEnvelope(Record):
    model_config = {"extra": "forbid", "populate_by_name": True}

    schema_uri: str = Field(alias="$schema")
    schema_version: Literal[1] = 1
    stage: str
    tool_version: str
    run_id: str
    created_at: str
    inputs: dict[str, str] = Field(
        default_factory=dict,
        description="Upstream stage name -> sha256:<hex> of that stage file's exact bytes.",
    )


class ConfigDoc(StageEnvelope):
    stage: Literal["config"] = "config"
    project_root: str
    config_file: str | None = Field(description="The config.toml used, or null.")
    no_project_config: bool = False
    settings: Settings
    sources: dict[str, SettingSource] = Field(
        description="Dotted setting name -> where its value came from."
    )
    selection: Selection = Field(default_factory=Selection)
    warnings: list[ProblemModel] = Field(default_factory=list)


class DiscoveredFile(Record):
    model_config = {"extra": "forbid"}

    path: str = Field(description="Absolute resolved path of the check file.")
    relative_path: str | None = Field(description="POSIX path relative to the project root.")
    size: int
    sha256: str


class DiscoverDoc(StageEnvelope):
    stage: Literal["discover"] = "discover"
    roots: list[str]
    exclude_dirs: list[str]
    check_dirs: list[str]
    files: list[DiscoveredFile]
    problems: list[ProblemModel] = Field(default_factory=list)


class PlannedCheck(Record):
    model_config = {"extra": "forbid"}

    id: str
    type: str
    description: str
    source_path: str
    stem: str
    check_definition_sha256: str
    definition: dict[str, Any] = Field(description="The normalized check definition.")
    snapshot: str | None = Field(
        default=None, description="Run-relative path of the frozen referenced script."
    )
    script_path: str | None = Field(
        default=None, description="Resolved original path of a referenced script."
    )
    script_unavailable: str | None = Field(
        default=None, description="Why the referenced script could not be frozen."
    )


class PlanDoc(StageEnvelope):
    stage: Literal["validate"] = "validate"
    ok: bool
    checks: list[PlannedCheck]
    errors: list[ProblemModel] = Field(default_factory=list)
    warnings: list[ProblemModel] = Field(default_factory=list)


class ResolvedHarness(Record):
    model_config = {"extra": "forbid"}

    agent: str
    template: AgentTemplate
    model: str | None
    reasoning_effort: str | None
    timeout_seconds: int
    executable: str | None = Field(description="Where the agent's command was found on PATH.")


class GuardDoc(StageEnvelope):
    stage: Literal["guard"] = "guard"
    ok: bool
    judge_checks: list[str]
    harness: ResolvedHarness | None
    problems: list[ProblemModel] = Field(default_factory=list)
    warnings: list[ProblemModel] = Field(default_factory=list)


class ExecuteDoc(StageEnvelope):
    stage: Literal["execute"] = "execute"
    started_at: str
    completed_at: str
    results: list[CheckResult]
    aborted_by: AbortReason | None = None
    not_run: list[str] = Field(default_factory=list, description="Ids of checks that never ran.")
    env_policy: str = "inherit"
    tokens_used: int | None = Field(
        default=None,
        description="Judge tokens the agents reported (token fuse, D-5); null if none reported.",
    )
    warnings: list[ProblemModel] = Field(
        default_factory=list,
        description="E.g. a judge that reported no token usage while the token fuse was on.",
    )


class ScoreDoc(StageEnvelope):
    stage: Literal["score"] = "score"
    total_checks: int
    passed_checks: int
    failed_checks: int
    errored_checks: int
    points_earned: int
    total_points: int
    percentage: float
    pass_threshold: float
    meets_threshold: bool
    run_passed: bool
    not_run_checks: int = 0
    aborted_by: AbortReason | None = None
    status: Literal["passed", "failed", "aborted"]
    control_checks: int = Field(default=0, description="Checks with expect: fail (D-11).")
    controls_met: int = Field(
        default=0, description="Control checks whose seeded defect was caught (status passed)."
    )
    cached_checks: int = Field(
        default=0, description="Results reused from the verdict cache (details.cache.hit)."
    )


class ReportDoc(StageEnvelope):
    stage: Literal["report"] = "report"
    report_json: str
    report_md: str
    extra_outputs: list[str] = Field(default_factory=list)


# Each stage's document model, in pipeline order (the names of eval_banana.stages.STAGE_NAMES).
STAGE_MODELS: dict[str, type[StageEnvelope]] = {
    "config": ConfigDoc,
    "discover": DiscoverDoc,
    "validate": PlanDoc,
    "guard": GuardDoc,
    "execute": ExecuteDoc,
    "score": ScoreDoc,
    "report": ReportDoc,
}
