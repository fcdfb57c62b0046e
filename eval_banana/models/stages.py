"""Stage documents: each stage writes one, every one shares the same envelope."""

from __future__ import annotations

from typing import Any, Literal

from eval_banana.core.record import Field, Record
from eval_banana.models.config import AgentTemplate, Selection, Settings, SettingSource
from eval_banana.models.result import CheckResult, ErrorClass, SkippedCheck

AbortReason = Literal[
    "interrupt", "run_timeout", "token_fuse", "cost_fuse", "write_fault", "resource_fault"
]
# Why launching stopped early without aborting the run: the run ends as failed, not aborted.
HaltReason = Literal["maxfail"]


class FieldProblem(Record):
    """One field error inside a check file: where it is and what to do about it."""

    model_config = {"extra": "forbid"}

    message: str
    field_path: str | None = None
    line: int | None = Field(default=None, description="1-based line in the check file.")
    column: int | None = Field(default=None, description="1-based column in the check file.")
    hint: str | None = None


class ProblemModel(Record):
    model_config = {"extra": "forbid"}

    message: str
    file: str | None = None
    field_path: str | None = None
    hint: str | None = None
    line: int | None = Field(default=None, description="1-based line in `file`, when known.")
    column: int | None = Field(default=None, description="1-based column in `file`.")
    fields: list[FieldProblem] = Field(
        default_factory=list,
        description="A check file's field errors one by one; `message` already lists them.",
    )


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
    config_file_sha256: str | None = Field(
        default=None,
        description="sha256:<hex> of the config file's bytes when it was read (eb status "
        "compares it with the file on disk).",
    )
    run_created_at: str | None = Field(
        default=None,
        description="When the run was created; kept when the config stage is rerun. "
        "'The newest run' is the one with the latest run_created_at.",
    )
    no_project_config: bool = False
    project_output_dir: str | None = Field(
        default=None,
        description="[core] output_dir as the config file names it, or null: eb's own folder "
        "even when a flag or variable sends this run elsewhere.",
    )
    settings: Settings
    sources: dict[str, SettingSource] = Field(
        description="Dotted setting name -> where its value came from."
    )
    outputs: list[str] = Field(
        default_factory=list,
        description="Files this run writes outside its run folder (the JUnit file, "
        "--result-out, the GitHub step summary) and the --select file it read, absolute: "
        "eb's own, never project files.",
    )
    selection: Selection = Field(default_factory=Selection)
    shard_durations: dict[str, float] | None = Field(
        default=None,
        description="--shard with balance 'history': check id -> the seconds it is expected to "
        "take, read from the run history when the run began; the validate stage splits by it.",
    )
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


class PlainWord(Record):
    """A plain scalar an assertion's value holds in its check file that YAML 1.1 reads as no
    text, spelled otherwise than JSON writes what it became: `yes`, `no`, `on` or `off` (a
    boolean), a number such as `01234`, `0x1F`, `1_000` or `1:30`, null written `~`, `Null`
    or nothing."""

    model_config = {"extra": "forbid"}

    assertion: int = Field(ge=0, description="The assertion's 0-based position in `assert`.")
    at: str = Field(
        description="Where in the value, in assertion-path syntax relative to it; empty for the "
        "value itself."
    )
    word: str = Field(
        description="The scalar as the file writes it (`NO`, `01234`, `~`; empty for a value "
        "left empty)."
    )


class PlannedCheck(Record):
    model_config = {"extra": "forbid"}

    id: str
    type: str
    description: str
    source_path: str
    stem: str
    check_definition_sha256: str
    definition: dict[str, Any] = Field(description="The normalized check definition.")
    definition_sha256: str | None = Field(
        default=None,
        description="sha256:<hex> of `definition` as sorted, compact JSON, as validate wrote "
        "it: a plan whose definition differs from it was edited after validate and is refused. "
        "Null in a plan an earlier eb wrote.",
    )
    snapshot: str | None = Field(
        default=None, description="Run-relative path of the frozen referenced script."
    )
    script_path: str | None = Field(
        default=None, description="Resolved original path of a referenced script."
    )
    script_unavailable: str | None = Field(
        default=None, description="Why the referenced script could not be frozen."
    )
    family: str | None = Field(
        default=None, description="The dataset family this case check belongs to, or null."
    )
    case_id: str | None = Field(default=None, description="The case's id within its family.")
    case_index: int | None = Field(
        default=None,
        ge=0,
        description="The case's 0-based position in its family's dataset order, so a merge of "
        "shards lists the cases as one machine does; null for a check that is not a case.",
    )
    case: dict[str, Any] | None = Field(default=None, description="The case's row, as loaded.")
    case_format: Literal["csv", "json", "yaml"] | None = Field(
        default=None,
        description="The format of the file the case's row was read from (json for .json and "
        ".jsonl, yaml for a check file's own cases:), which words the fix of a value it holds; "
        "null for a check that is not a case.",
    )
    filled_values: list[str | None] | None = Field(
        default=None,
        description="For a case of an assertions family: per assertion, in order, the row "
        "field its value is filled from when the value is one whole {{ case.<field> }} "
        "placeholder, else null; null for other checks.",
    )
    plain_words: list[PlainWord] | None = Field(
        default=None,
        description="For an assertions check: each place where its check file writes an "
        "assertion's value (or a part of it) as a plain scalar YAML 1.1 reads as no text, "
        "spelled otherwise than JSON writes what it became (yes, no, on or off read as a "
        "boolean; 01234 read as 668; ~ or nothing read as null) and carries no tag of its own "
        "(!!int 01234 is meant as written), so that a reason can tell to "
        "quote it there and nowhere else; null for other checks.",
    )
    family_definition_sha256: str | None = Field(
        default=None,
        description="sha256:<hex> of the family's definition without its dataset rows, the "
        "same for all its cases: a judge family's calibration is measured under it, so an "
        "edited or added row leaves the calibration standing. Null for a check that is not a "
        "case.",
    )
    family_files: list[str] | None = Field(
        default=None,
        description="Project-relative files the family is defined by (its check file and "
        "dataset files): their content is in the case's definition digest, so they are left "
        "out of the case's input state.",
    )


class PlanDoc(StageEnvelope):
    stage: Literal["validate"] = "validate"
    ok: bool
    selection: Selection = Field(
        default_factory=Selection,
        description="The selection this plan applied (config.json's, or the one given to "
        "`eb stage validate`).",
    )
    config_selection: Selection | None = Field(
        default=None,
        description="The selection stages/config.json held when this plan was made, when "
        "`eb stage validate` applied another (`--check-id ...`); null: config.json's is the "
        "one applied. While config.json holds it, `eb update` plans again under `selection`; "
        "once config.json's changes (`eb stage config --check-id ...`), under config.json's.",
    )
    checks: list[PlannedCheck]
    errors: list[ProblemModel] = Field(default_factory=list)
    warnings: list[ProblemModel] = Field(default_factory=list)
    skipped: list[SkippedCheck] = Field(
        default_factory=list,
        description="Selected checks whose file says `skip:`; never run or scored.",
    )
    selection_digest: str | None = Field(
        default=None,
        description="sha256:<hex> over every selected check before a shard filter: its path "
        "relative to the project root, its id and its definition digest, in that path order. "
        "Shards of one plan share it (eval_banana.checks.shard).",
    )
    selected_checks: int | None = Field(
        default=None, description="How many checks the selection holds before a shard filter."
    )
    family_gates: dict[str, float] = Field(
        default_factory=dict,
        description="Dataset family id -> its min_pass_rate, for the planned families that "
        "set one.",
    )
    family_sizes: dict[str, int] = Field(
        default_factory=dict,
        description="Dataset family id -> its cases that are not skipped, before the selection "
        "narrowed them (--check-id, -k, --tag, --changed-since, --last-failed, --select, "
        "--shard), for the planned families: a family that ran fewer is reported with how "
        "many of these it ran.",
    )
    family_file_rows: dict[str, list[int]] = Field(
        default_factory=dict,
        description="Dataset family id -> how many of its rows (skipped ones too) each of its "
        "family_files held, in that order (the check file's own `cases:` first), for the "
        "planned families: with a case's case_index it names the file a row gone since was in.",
    )
    family_case_ids: dict[str, str] = Field(
        default_factory=dict,
        description="Dataset family id -> sha256:<hex> over the sorted ids of the cases "
        "family_sizes counts, for the planned families: `eb status` tells by it a row added, "
        "removed or renamed outside a selection that planned part of the family, where the "
        "count alone misses a row replaced by another.",
    )
    family_picks: dict[str, str] = Field(
        default_factory=dict,
        description="The check file (project-relative; as given when outside the project) of "
        "each dataset family some of whose rows the selection left out, its cases planned or "
        "not -> sha256:<hex> over the id and skip of each of its rows the selection's "
        "--check-id, -k and --tag pass, in id order: which rows it picks by the fields it "
        "reads (--check-id and -k a row's id, --tag its tags), and which of those run. `eb "
        "status` tells by it a row the selection would pick otherwise now (under --tag fast, "
        "a row that gains fast); a field the selection does not read (a tag under --check-id "
        "or -k, a row's other fields) leaves the plan as it is. A plan an earlier eb made "
        "holds a digest of every row's id, tags and skip, compared as such.",
    )
    family_calibration: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict,
        description="Judge dataset family id -> its calibration cases, as its check file gives "
        "them, for the planned families that have some. Held once here, not in each case's "
        "definition: a family is calibrated as one judge (eval_banana.calibration.family), and "
        "10,000 cases would otherwise copy the list 10,000 times.",
    )
    allow_empty: str | None = Field(
        default=None,
        description="Why this plan may hold no check and still pass (a shard that received "
        "none); null: an empty selection is 'No checks found'.",
    )
    no_checks: bool = Field(
        default=False,
        description="True when its only error is that discovery and the selection found no "
        "check ('No checks found'), which `eb list` and `eb validate --allow-empty` accept.",
    )


class ResolvedHarness(Record):
    model_config = {"extra": "forbid"}

    agent: str
    template: AgentTemplate
    model: str | None
    reasoning_effort: str | None
    timeout_seconds: int
    executable: str | None = Field(
        description=(
            "Where the agent's command was found: on PATH, or the file a path names (a "
            "relative one taken from the project root)."
        )
    )


class GuardDoc(StageEnvelope):
    stage: Literal["guard"] = "guard"
    ok: bool
    judge_checks: list[str]
    harness: ResolvedHarness | None
    problems: list[ProblemModel] = Field(default_factory=list)
    warnings: list[ProblemModel] = Field(default_factory=list)
    calibration_file: str | None = Field(
        default=None,
        description="The calibration record the calibration gate read, or null when it read none.",
    )
    calibration_file_sha256: str | None = Field(
        default=None,
        description="Its SHA-256 then; null when the file did not exist.",
    )
    min_agreement: float | None = Field(
        default=None,
        description="The min_agreement the calibration gate held the judges to (that of `eb "
        "stage guard --min-agreement`, when given), or null when it read no record.",
    )


class ShardSource(Record):
    """One shard run folder a merged run was built from."""

    model_config = {"extra": "forbid"}

    shard: int = Field(ge=1, description="K of the shard's --shard K/N.")
    total: int = Field(ge=1, description="N of the shard's --shard K/N.")
    run_id: str
    run_dir: str = Field(description="The shard's run folder, as given to eb merge (resolved).")
    checks: int = Field(ge=0, description="How many results the shard contributed.")


class ExecuteDoc(StageEnvelope):
    stage: Literal["execute"] = "execute"
    started_at: str = Field(
        description="When the run's checks started; a rerun merged over these results (`eb "
        "update`, `eb stage execute --check-id`) keeps it: the run is still the one it was."
    )
    completed_at: str = Field(
        description="When the checks ended: those of the latest rerun merged over the results, "
        "if any."
    )
    duration_ms: int | None = Field(
        default=None,
        ge=0,
        description="How long the checks ran: the run's own time plus that of every rerun "
        "merged over its results since; null: completed_at minus started_at (no rerun was "
        "merged, or an execute.json written before eb kept this).",
    )
    updated_at: str | None = Field(
        default=None,
        description="When the latest rerun merged over the results started; null: none was.",
    )
    results: list[CheckResult]
    aborted_by: AbortReason | None = None
    not_run: list[str] = Field(default_factory=list, description="Ids of checks that never ran.")
    env_policy: str = Field(
        default="inherit",
        description="The env policy the checks ran under: config.json's, or the one "
        "`eb stage execute --env-policy` gave.",
    )
    env_allow: list[str] | None = Field(
        default=None,
        description="The env_allow names the checks ran under: config.json's, or the ones "
        "`eb stage execute --env-allow` gave; null in an execute.json written before eb "
        "recorded them, whose run used config.json's.",
    )
    env_allow_prefixes: list[str] | None = Field(
        default=None,
        description="The env_allow_prefixes the checks ran under: config.json's, or the ones "
        "`eb stage execute --env-allow-prefix` gave; null in an execute.json written before "
        "eb recorded them, whose run used config.json's.",
    )
    tokens_used: int | None = Field(
        default=None,
        description="Judge tokens the agents reported (for the token fuse); null if none reported.",
    )
    cost_usd: float | None = Field(
        default=None,
        description="Dollars the agents reported spending (cost fuse); null if none reported.",
    )
    warnings: list[ProblemModel] = Field(
        default_factory=list,
        description="E.g. a judge that reported no token usage while the token fuse was on.",
    )
    skipped: list[SkippedCheck] = Field(
        default_factory=list, description="The plan's skipped checks, carried to the reports."
    )
    halted_by: HaltReason | None = Field(
        default=None,
        description="Why no further check was launched although the run was not aborted "
        "(maxfail); the checks left are in not_run.",
    )
    maxfail: int | None = Field(
        default=None,
        ge=0,
        description="The maxfail the checks were launched under (0: no limit): config.json's, "
        "or the one `eb stage execute --maxfail` gave; null in an execute.json written before "
        "eb recorded it, whose run used config.json's.",
    )
    family_gates: dict[str, float] = Field(
        default_factory=dict,
        description="Dataset family id -> its min_pass_rate, for the families that set one "
        "(copied from the plan for the score stage).",
    )
    family_sizes: dict[str, int] = Field(
        default_factory=dict,
        description="The plan's family_sizes, copied for the score stage.",
    )
    allow_empty: str | None = Field(
        default=None,
        description="The plan's allow_empty, copied: why no result still lets the run pass.",
    )
    merged_from: list[ShardSource] = Field(
        default_factory=list,
        description="eb merge: the shard run folders these results were gathered from.",
    )
    merge_interrupted: bool = Field(
        default=False,
        description="eb merge was interrupted before it had brought every shard's files into "
        "this folder (the checks' output files and folders in checks/, the frozen scripts): "
        "only the shards hold them, so eb status calls execute stale and eb update refuses the "
        "folder; merging the same shards again makes a complete one.",
    )
    cache: CacheCounts | None = Field(
        default=None,
        description="What the verdict cache did in this run; null when it was off.",
    )
    input_digests: dict[str, str] = Field(
        default_factory=dict,
        description="Check id -> sha256:<hex> of the files its `inputs:` patterns matched when "
        "its result was recorded (only checks that declare `inputs:`); eb status and eb update "
        "compare it with the files on disk.",
    )
    tracked_input_digests: dict[str, str] = Field(
        default_factory=dict,
        description="Check id -> sha256:<hex> of the files git tracked among those its "
        "`inputs:` patterns matched and the artifact an assertions check graded, when its "
        "result was recorded (only such checks, and only in a git work tree): eb merge "
        "compares it with its own checkout, files git ignores or does not track (build "
        "outputs) left out.",
    )
    artifact_ids: dict[str, str] = Field(
        default_factory=dict,
        description="Assertions check id -> the git blob id of the artifact its result graded "
        "('absent' when there was none; for a symbolic link, its text's id and the id of the "
        "file it led to, `<id>><mode>:<id>`); eb status and eb update compare it with the "
        "artifact on disk, as the verdict cache's key holds it.",
    )
    result_file_digests: dict[str, str] = Field(
        default_factory=dict,
        description="Check id -> sha256:<hex> of checks/<stem>.json's bytes as eb wrote them "
        "(or linked them from the verdict cache, from a kept run, from a shard): eb status marks "
        "the stage stale when one is gone or has other bytes now, and eb update writes it again "
        "from its result here, running no check. A check eb wrote no such file for (a rerun's "
        "placeholder for a check it left out) has none, and an execute.json written before eb "
        "recorded them has none at all: those files are not looked at.",
    )
    verdict_digests: dict[str, str] = Field(
        default_factory=dict,
        description="Check id -> sha256:<hex> of the fields its verdict is read from (check "
        "id, status, observed_status, score, exit_code, expect, family, and whether its "
        "samples disagreed or it never ran), as compact JSON, taken when its result was made: "
        "a result here that no longer has it was edited by hand, the file is invalid, and eb "
        "update runs the check again. A result kept from an execute.json written before eb "
        "recorded them has none, and is not compared.",
    )
    verdict_settings: dict[str, str] = Field(
        default_factory=dict,
        description="Check id -> sha256:<hex> naming the settings its result was decided under "
        "(a judge's agent, command line, the variables the config sets for it, its output "
        "dialect, executable (a project file's content too), model, effort and timeout; a "
        "script's timeout; the samples; the env policy), as this stage ran it; eb status and "
        "eb update compare it with those a rerun would use and judge again the checks whose "
        "settings differ. An execute.json "
        "written before eb recorded them has none: such a result is compared by what it "
        "records of them itself (its agent, model, effort, dialect and timeout).",
    )
    verdict_setting_parts: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Each verdict_settings digest -> its parts: setting -> sha256:<hex> of its "
        "value (never the value), so eb status can name the setting that changed.",
    )


class RemoteRejections(Record):
    """Entries the shared cache held that were not reused, by why."""

    model_config = {"extra": "forbid"}

    signature: int = Field(
        default=0, ge=0, description="A missing or bad signature (EVAL_BANANA_CACHE_SIGNING_KEY)."
    )
    entry: int = Field(
        default=0, ge=0, description="Not a valid entry, or one of another key or check."
    )
    blob: int = Field(
        default=0, ge=0, description="A file it names is missing or has another digest."
    )


class CacheCounts(Record):
    """What the verdict cache did in one run: its tiers' hits and misses, the shared cache's
    traffic (docs/shared-cache.md)."""

    model_config = {"extra": "forbid"}

    local_hits: int = Field(default=0, ge=0, description="Verdicts reused from the cache folder.")
    remote_hits: int = Field(
        default=0,
        ge=0,
        description="Verdicts reused from the shared cache (fetched in this run, kept locally).",
    )
    misses: int = Field(
        default=0, ge=0, description="Checks the cache could answer by key that it did not."
    )
    remote: str | None = Field(
        default=None, description="The shared cache used ([cache] remote), or null."
    )
    remote_mode: str | None = Field(default=None, description="[cache] remote_mode of the run.")
    remote_writes: int = Field(
        default=0, ge=0, description="Verdicts of this run stored in the shared cache."
    )
    remote_kept_local: int = Field(
        default=0,
        ge=0,
        description="Verdicts of this run stored in the local cache only because the shared "
        "cache holds an entry under the same key signed with a key this run cannot verify "
        "(another signing key, or none set), which a run never writes over.",
    )
    remote_requests: int = Field(default=0, ge=0, description="Requests made to it.")
    remote_errors: int = Field(
        default=0,
        ge=0,
        description="Requests to it that failed (unreachable, timed out, refused, bad answer).",
    )
    remote_rejected: RemoteRejections = Field(default_factory=RemoteRejections)
    remote_stopped: bool = Field(
        default=False,
        description="The shared cache failed several requests in a row and was not asked "
        "again in this run.",
    )
    bytes_downloaded: int = Field(default=0, ge=0)
    bytes_uploaded: int = Field(default=0, ge=0)
    first_remote_error: str | None = Field(
        default=None, description="The first failed request, as eb saw it."
    )


class JudgeUsage(Record):
    """Usage totals over the judges that reported any (their `details.usage`)."""

    judges: int = Field(ge=0, description="Judge results whose agent reported usage eb could read.")
    total_tokens: int | None = Field(
        default=None, ge=0, description="Sum of their tokens; null if none reported tokens."
    )
    input_tokens: int | None = Field(
        default=None, ge=0, description="Sum over the judges that split input from output."
    )
    output_tokens: int | None = Field(
        default=None, ge=0, description="Sum over the judges that split input from output."
    )
    cost_usd: float | None = Field(
        default=None, ge=0, description="Sum of the costs reported (claude); null if none did."
    )


class FamilyScore(Record):
    """One dataset family's cases, counted: its pass rate and whether its own gate held."""

    model_config = {"extra": "forbid"}

    id: str = Field(description="The family's check id.")
    cases: int = Field(
        ge=0,
        description="Its cases that ran (skipped cases and cases never started are not counted).",
    )
    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    errored: int = Field(ge=0)
    pass_rate: float = Field(ge=0, le=1, description="passed / cases (0 with no case).")
    min_pass_rate: float | None = Field(
        default=None, ge=0, le=1, description="The family's gate, or null when it sets none."
    )
    gate_held: bool = Field(
        description="Whether the pass rate reaches min_pass_rate (true without a gate)."
    )
    gate_at_merge: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="In a shard run (`--shard K/N`), the family's min_pass_rate, which this "
        "shard does not judge: it holds part of the family, and `eb merge` judges the gate on "
        "all of it. Null outside a shard, or for a family without a gate.",
    )
    of_cases: int | None = Field(
        default=None,
        ge=0,
        description="When only some of the family's cases ran (the selection took part of it: "
        "--check-id, -k, --last-failed, a shard; or the run stopped before the rest: maxfail, "
        "a fuse, an interrupt): how many it has (not skipped). `cases`, the pass rate and the "
        "gate are then those of the cases that ran. Null when every case ran.",
    )
    not_run: int = Field(
        default=0,
        ge=0,
        description="Its selected cases the run never started because it stopped (maxfail, a "
        "fuse, an interrupt): counted in none of cases, passed, failed and errored, nor in the "
        "pass rate and the gate.",
    )


class ErrorClassCount(Record):
    """How many judge errors one class holds, and their causes (docs/judges.md#error-classes)."""

    model_config = {"extra": "forbid"}

    error_class: ErrorClass = Field(description="infrastructure, verdict, isolation or budget.")
    count: int = Field(ge=1, description="Errors of this class (details.error_class).")
    causes: dict[str, int] = Field(
        default_factory=dict,
        description="details.error_cause of those errors (e.g. `HTTP 429`), with their counts.",
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
    control_checks: int = Field(default=0, description="Checks with expect: fail.")
    controls_met: int = Field(
        default=0, description="Control checks whose seeded defect was caught (status passed)."
    )
    skipped_checks: int = Field(
        default=0, description="Selected checks with `skip:`, outside every count above."
    )
    halted_by: HaltReason | None = None
    judge_usage: JudgeUsage | None = Field(
        default=None,
        description="Totals of what the judges reported about their own usage; null if none did.",
    )
    cached_checks: int = Field(
        default=0, description="Results reused from the verdict cache (details.cache.hit)."
    )
    flaky_checks: int = Field(
        default=0,
        description="Checks whose samples disagreed (details.flaky), whatever their rule decided.",
    )
    fail_on_flaky: bool = Field(
        default=False,
        description="Whether [core] fail_on_flaky (--fail-on-flaky) was on: then a flaky check "
        "fails the run.",
    )
    families: list[FamilyScore] = Field(
        default_factory=list,
        description="Each dataset family, by id: a family whose gate does not hold fails the run.",
    )
    error_classes: list[ErrorClassCount] = Field(
        default_factory=list,
        description="The errors of judges by class (details.error_class), most frequent first; "
        "checks the stopped run never started (not_run_checks) are not among them.",
    )


class ReportFault(Record):
    """A report the report stage could not write once the checks had run (the run ended with
    exit 3): eb status marks the stage stale naming it, and eb update writes it again."""

    model_config = {"extra": "forbid"}

    report: Literal["report.md", "report.html", "junit_xml"] = Field(
        description="Which report: report.md or report.html of the run folder, or the JUnit "
        "file ([core] junit_xml, --junit-xml)."
    )
    path: str = Field(description="The path it was to be written to, absolute.")
    cause: str = Field(
        description="Why it could not be written, in the system's words ('No space left on "
        "device', 'File too large')."
    )
    earlier: str | None = Field(
        default=None,
        description="What became of the file an earlier run (or report stage) left at the "
        "path, in eb's words ('the earlier file there was removed, so it is not read as this "
        "run's', or that it could not be removed or emptied: remove it); null when none was "
        "there.",
    )


class ReportDoc(StageEnvelope):
    stage: Literal["report"] = "report"
    report_json: str
    report_md: str
    extra_outputs: list[str] = Field(default_factory=list)
    report_json_sha256: str | None = Field(
        default=None,
        description="sha256:<hex> of report.json's bytes as the stage wrote them (eb status "
        "marks the stage stale when the file has other bytes now); null in a stage file "
        "written before eb recorded it, where only a missing report is seen.",
    )
    report_md_sha256: str | None = Field(
        default=None,
        description="sha256:<hex> of report.md's bytes as the stage wrote them, as "
        "report_json_sha256; null also when the stage could not write it (report_faults).",
    )
    report_html_sha256: str | None = Field(
        default=None,
        description="sha256:<hex> of report.html's bytes as the run wrote them (eb status "
        "marks the stage stale when the page is gone or has other bytes now); null when the "
        "run wrote no page (--no-html, or one it could not write: report_faults) and in a "
        "stage file written before eb recorded it: then report.html is not looked at.",
    )
    report_faults: list[ReportFault] = Field(
        default_factory=list,
        description="The reports the run could not write (report.md, report.html, the JUnit "
        "file), each with its path and why: eb status marks the stage stale naming them and "
        "eb update writes them again. Empty when every report asked for was written. The "
        "JUnit file's digest is not recorded: its path is shared by the project's runs, each "
        "of which replaces it.",
    )


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
