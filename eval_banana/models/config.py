"""The resolved configuration: the single source of `schemas/config.schema.json`."""

from __future__ import annotations

from typing import Literal

from eval_banana.core.record import Field, Record

DEFAULT_EXCLUDE_DIRS: tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    "dist",
    "build",
)


class _Section(Record):
    model_config = {"extra": "forbid"}


class CoreSettings(_Section):
    output_dir: str = Field(
        default=".eval-banana/results",
        description="Where run folders go; relative paths are joined to the project root.",
    )
    pass_threshold: float = Field(
        default=1.0, ge=0.0, le=1.0, description="Pass ratio a run needs (0.0-1.0)."
    )
    llm_max_input_chars: int = Field(
        default=0, description="Accepted for compatibility and ignored (it has no effect)."
    )
    max_parallel_checks: int = Field(
        default=4,
        ge=1,
        description="Checks run at the same time (assertions checks, which run inside eb, "
        "one at a time).",
    )
    check_timeout_seconds: int = Field(
        default=900, ge=0, description="Wall-clock limit per deterministic check; 0 means none."
    )
    run_timeout_seconds: int = Field(
        default=0, ge=0, description="Fuse: wall-clock limit for the whole run; 0 means none."
    )
    junit_xml: str | None = Field(
        default=None, description="Also write a JUnit XML report to this path."
    )
    maxfail: int = Field(
        default=0,
        ge=0,
        description="Stop launching checks once this many have failed or errored; the rest "
        "are recorded as not run and the run does not pass. 0 means never stop.",
    )
    keep_runs: int = Field(
        default=0,
        ge=0,
        description="How many run folders to keep under output_dir: after a run or merge, the "
        "oldest finished ones beyond this many are deleted (the new one is always kept, and a "
        "folder without report.json, a run still going, is never touched). 0 keeps every one.",
    )
    max_cases: int = Field(
        default=100_000,
        ge=1,
        description="Most cases one dataset family may expand to; a larger dataset is a "
        "definition error, so a wrong glob cannot plan millions of checks.",
    )
    repeats: int = Field(
        default=1,
        ge=1,
        le=20,
        description="How many times each check runs (1 to 20) unless its file sets `repeats`; "
        "its `aggregate` rule decides from the samples, and samples that disagree mark the "
        "check flaky. 1 runs every check once.",
    )
    fail_on_flaky: bool = Field(
        default=False,
        description="Fail the run when any check is flaky (its samples disagreed), whatever "
        "its rule decided.",
    )
    last_failed_none: Literal["all", "skip"] = Field(
        default="all",
        description="What --last-failed selects when none of the selected checks failed the "
        "last time it ran (a failed check that says `skip:` now does not count): every check "
        "(`all`) or none, a run that passes empty (`skip`), as pytest's "
        "--last-failed-no-failures.",
    )
    schedule: Literal["history", "plan"] = Field(
        default="history",
        description="The order checks start in: 'history' starts the checks expected to take "
        "longest first (the median of their recorded durations on their current definition, "
        "from the run history; checks with none go first), so a parallel run ends sooner; "
        "'plan' starts them in plan order. Reports list checks in plan order either way.",
    )
    shard_balance: Literal["hash", "history"] = Field(
        default="hash",
        description="How --shard K/N splits the selection: 'hash' by a stable hash of each id; "
        "'history' by the checks' recorded durations, so the shards take about as long "
        "(checks with no recorded duration are placed by the hash).",
    )


class DiscoverySettings(_Section):
    exclude_dirs: list[str] = Field(
        default_factory=lambda: list(DEFAULT_EXCLUDE_DIRS),
        description="Folder names never walked into, wherever they are (replaces the default "
        "list). A path (an entry holding a '/', as 'vendor/lib' or './vendor') never matches and "
        "is refused; a trailing '/' is dropped ('vendor/' is vendor).",
    )


class HarnessSettings(_Section):
    agent: str | None = Field(default=None, description="Agent CLI that runs harness_judge checks.")
    model: str | None = Field(default=None, description="Model passed to the agent.")
    reasoning_effort: str | None = Field(
        default=None, description="Reasoning effort for the agent."
    )
    timeout_seconds: int = Field(default=300, ge=1, description="Wall-clock limit per judge.")
    token_fuse: int = Field(
        default=0, ge=0, description="Fuse: judge tokens the whole run may use; 0 means none."
    )
    cost_fuse_usd: float = Field(
        default=0.0,
        ge=0,
        description="Fuse: dollars the judges together may report spending (claude reports "
        "its cost); 0 means none.",
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra variables for the agent, set verbatim."
    )
    skills_dir: object | None = Field(default=None, description="Accepted and ignored.")
    isolation: Literal["detect", "copy", "off"] = Field(
        default="detect",
        description="What keeps judges from changing the project they judge: 'detect' runs them "
        "in the project and makes every judge running while a project file changed an error; "
        "'copy' runs each in its own disposable copy (the project untouched, its changes "
        "listed); 'off' lets them write.",
    )
    isolation_ignore: list[str] = Field(
        default_factory=list,
        description="Glob patterns (relative to the project root) of paths a judge may change "
        "without it counting, beside Python's caches that running code leaves behind.",
    )
    retries: int = Field(
        default=0,
        ge=0,
        description="Extra attempts for a judge whose agent process failed for an "
        "infrastructure reason (non-zero exit, timeout, a failed model call); a pass, a fail or "
        "an answer without a verdict is never retried.",
    )
    require_calibration: bool = Field(
        default=False,
        description="Refuse to run a judge that has no calibration cases, no known-good or no "
        "known-bad case, no record in "
        ".eval-banana/calibration.json, a record measured under another definition, agent, "
        "model, effort, command, prompt, agent variables ([harness.env], provider_env, "
        "fixed_env) or output dialect, or agreement below min_agreement (`eb calibrate` "
        "writes the record).",
    )
    min_agreement: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="The share of its calibration verdicts (0.0-1.0; each decided from its "
        "samples by its aggregate rule as the run decides it) a judge must have agreed with "
        "for require_calibration to let it run; its true-fail rate (on known-bad cases) and "
        "its true-pass rate (on known-good cases) must each reach it too.",
    )
    transcripts: bool = Field(
        default=True,
        description="Write each judge's transcript (its messages, tool calls and results, "
        "errors, usage and answer, read from the agent's output) as "
        "checks/<stem>.transcript.jsonl and show it in report.html.",
    )
    transcript_max_chars: int = Field(
        default=2000,
        ge=1,
        description="The most characters a transcript keeps of one event's text (a message, "
        "a tool call's arguments, a tool result).",
    )


class ExecutionSettings(_Section):
    env: Literal["inherit", "allowlist"] = Field(
        default="inherit",
        description="'inherit' passes the whole environment to checks and judges; "
        "'allowlist' passes only a safe base set plus env_allow / env_allow_prefixes.",
    )
    env_allow: list[str] = Field(default_factory=list, description="Variable names let through.")
    env_allow_prefixes: list[str] = Field(
        default_factory=list, description="Variable name prefixes let through."
    )
    redact: list[str] = Field(
        default_factory=list,
        description="More variables whose values are replaced by *** in everything eb writes "
        "or prints (names or shell-style patterns), beside the credential-like names "
        "(*_KEY, *_TOKEN, *_SECRET, *_PASSWORD, *_CREDENTIALS, *_ACCESS_KEY_ID) that "
        "always are.",
    )
    isolation: Literal["off", "detect", "copy"] = Field(
        default="off",
        description="The same as [harness] isolation, for deterministic and assertions checks "
        "(off by default: checks that write their outputs into the project are common).",
    )


CacheMode = Literal["off", "on", "read-only", "refresh"]
RemoteMode = Literal["read-write", "read-only", "off"]


class CacheSettings(_Section):
    mode: CacheMode = Field(
        default="off",
        description="Verdict cache: 'off'; 'on' reuses and stores verdicts; 'read-only' reuses "
        "and never writes (pull requests from forks); 'refresh' runs every check and stores.",
    )
    dir: str = Field(
        default=".eval-banana/cache",
        description="The cache folder; a relative path is joined to the project root.",
    )
    max_mb: int = Field(
        default=256,
        ge=1,
        description="Size limit of the cache folder in MiB; least recently used entries go first.",
    )
    replay: bool = Field(
        default=True,
        description="Keep a run whose every verdict was reused, and replay it whole while its "
        "settings, check files and inputs are unchanged (no check parsed, no key computed); "
        "false: every cached run looks its verdicts up one by one.",
    )
    remote: str | None = Field(
        default=None,
        description="A shared second tier behind the cache folder (docs/shared-cache.md): a "
        "folder path or file:// URL, s3://bucket/prefix (the s3 extra), or http(s)://host/prefix "
        "(GET/PUT/HEAD of ac/<key> and cas/<sha256>). A lookup reads the folder first, then the "
        "remote; a new verdict is written to both.",
    )
    remote_mode: RemoteMode = Field(
        default="read-write",
        description="What a run does with [cache] remote: 'read-write' reads and stores; "
        "'read-only' reads and never writes (pull requests from forks); 'off' ignores it.",
    )
    remote_endpoint: str | None = Field(
        default=None,
        description="The S3 endpoint URL (http:// or https://, with a host, no query) of an s3:// "
        "remote that is not AWS (MinIO, Ceph, R2, GCS); else AWS_ENDPOINT_URL_S3 or "
        "AWS_ENDPOINT_URL, else AWS.",
    )
    require_signature: bool = Field(
        default=False,
        description="Reuse a remote entry only when it carries a valid signature by "
        "EVAL_BANANA_CACHE_SIGNING_KEY (with the key set, a missing or bad signature is a miss "
        "anyway; this makes a run without the key reuse nothing from the remote).",
    )
    remote_timeout_seconds: int = Field(
        default=10,
        ge=1,
        description="The limit of each request to the remote; a remote that fails 3 requests "
        "in a row is not asked again in that run.",
    )
    remote_concurrency: int = Field(
        default=8, ge=1, description="Requests to the remote in flight at once."
    )


HistoryMode = Literal["on", "off"]


class HistorySettings(_Section):
    mode: HistoryMode = Field(
        default="on",
        description="Run history (docs/history.md): 'on' writes one record per `eb run`, "
        "`eb merge` and replayed run into the history folder; 'off' writes none.",
    )
    dir: str = Field(
        default=".eval-banana/history",
        description="The history folder; a relative path is joined to the project root. "
        "Never an input of a check nor part of a cache key.",
    )
    keep: int = Field(
        default=1000,
        ge=1,
        description="How many run records the history folder keeps; the oldest go first.",
    )


class AgentTemplate(_Section):
    """How to launch one agent CLI (a built-in, or an `[agents.<name>]` table)."""

    command: list[str] = Field(default_factory=list, description="argv prefix.")
    shared_flags: list[str] = Field(default_factory=list, description="Flags always appended.")
    prompt_flag: str | None = Field(default=None, description="Flag placed before the prompt.")
    prompt_position: Literal["tail", "after_command"] = Field(default="tail")
    model_flag: str | None = Field(default="--model", description="Flag placed before the model.")
    model_env_vars: list[str] = Field(
        default_factory=list, description="Variables that receive the model."
    )
    default_model: str | None = Field(default=None)
    reasoning_effort: str | None = Field(default=None, description="Default effort.")
    reasoning_effort_flag: list[str] = Field(
        default_factory=list, description="argv tokens; {effort} is replaced."
    )
    provider_env: dict[str, str] = Field(
        default_factory=dict, description="Extra variables; {env:NAME} placeholders."
    )
    fixed_env: dict[str, str] = Field(
        default_factory=dict,
        description="Variables a built-in template always sets (e.g. gemini workspace trust).",
    )
    output_dialect: str = Field(
        default="text",
        description="How the verdict is read from stdout: text, claude, gemini, codex, openhands.",
    )


class Settings(_Section):
    """Every setting after layering CLI > EVAL_BANANA_* > project file > defaults."""

    core: CoreSettings = Field(default_factory=CoreSettings)
    discovery: DiscoverySettings = Field(default_factory=DiscoverySettings)
    harness: HarnessSettings = Field(default_factory=HarnessSettings)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    agents: dict[str, AgentTemplate] = Field(
        default_factory=dict,
        description="Agent templates written in [agents.<name>], merged over the built-ins.",
    )


SettingSource = Literal["cli", "env", "project", "default"]


# The most slices `--shard K/N` and `eb plan --shards N` cut: more than any CI matrix runs
# (GitHub allows 256 jobs, GitLab's parallel 200). A typo of a larger N would cost memory and
# time in proportion before anything ran.
MAX_SHARDS = 10_000


class Shard(_Section):
    """Slice K of N of a selection: the checks whose id hashes to K (`eb run --shard K/N`)."""

    index: int = Field(ge=1, description="K: which slice, 1-based.")
    total: int = Field(ge=1, description="N: how many slices the selection is cut into.")
    variables: list[str] = Field(
        default_factory=list,
        description="--shard auto: the environment variables K and N were read from (every "
        "CI engine's that was set; they agreed). Empty for --shard K/N.",
    )

    balance: Literal["hash", "history"] = Field(
        default="hash",
        description="How the slices were cut: by a hash of each id, or by recorded durations "
        "(`[core] shard_balance`).",
    )
    history_digest: str | None = Field(
        default=None,
        description="Balance 'history': sha256:<hex> of the durations table the split used "
        "(equal histories give equal digests); `eb merge` refuses shards whose digests differ. "
        "Null for a --select run: its file dealt the part (balance is the plan's split).",
    )


# How many cases `--subset N` may ask for: as many as one family may have (`[core] max_cases`
# caps a family below this anyway), so a typo of a huge N is told, not planned.
MAX_SUBSET_CASES = 1_000_000


class CaseSubset(_Section):
    """`--subset N` or `--subset P%`: the same part of each dataset family's cases every run, by
    a seeded hash of each case's id (checks/subset.py)."""

    count: int | None = Field(
        default=None,
        ge=1,
        le=MAX_SUBSET_CASES,
        description="At most this many cases of each family (null when given as a percentage).",
    )
    percent: float | None = Field(
        default=None,
        le=100,
        json_schema_extra={"exclusiveMinimum": 0},
        description="This share of each family's cases, rounded up to a whole case (null when "
        "given as a count).",
    )
    seed: int = Field(
        default=0, ge=0, description="--subset-seed: another seed picks another subset."
    )


# The `--select` file that is standard input (`eb run --select -`).
SELECT_STDIN = "-"


class PlanSelection(_Section):
    """`eb run --select FILE`: the ids a plan (or a list) names, and the ones this run runs."""

    file: str = Field(description="The selection file as given ('-': standard input).")
    file_sha256: str = Field(description="sha256:<hex> of the selection file's bytes.")
    form: Literal["plan", "list", "lines"] = Field(
        description="What the file held: an `eb plan` document, a JSON list of ids, or one id "
        "per line."
    )
    plan_ids: list[str] = Field(description="Every id the file names, in its order.")
    plan_digest: str | None = Field(
        default=None,
        description="The plan document's plan_digest (null for a list of ids): the digest the "
        "named checks must still have, and what `eb merge` groups --select runs by.",
    )
    definition_digests: dict[str, str] = Field(
        default_factory=dict,
        description="Check id -> definition digest as the plan document recorded it (empty for "
        "a list): names the checks that changed since the plan.",
    )
    ids: list[str] = Field(
        description="The ids this run executes: every one of plan_ids, or its part under "
        "--shard K/N (the plan's own assignment when it was cut into N shards)."
    )
    skipped_ids: list[str] = Field(
        default_factory=list,
        description="The plan document's `skipped` ids (empty for a list, which names only "
        "checks that run): the skipped checks this run lists, on every part alike.",
    )
    allow_stale_plan: bool = Field(
        default=False, description="--allow-stale-plan: run although the plan digest changed."
    )


class Selection(_Section):
    """What the command line selected; the validate stage applies it (checks/keywords.py,
    checks/idselectors.py)."""

    check_ids: list[str] = Field(
        default_factory=list,
        description="--check-id values: exact ids or shell-style globs; a check matching any "
        "of them is selected.",
    )
    check_dir: str | None = Field(default=None, description="--check-dir, if given.")
    tags: list[str] = Field(
        default_factory=list,
        description="--tag expressions over tags; a check matching any of them is kept.",
    )
    keyword: str | None = Field(
        default=None,
        description="The -k expression over check ids (case-insensitive substrings); "
        "empty or null selects every id.",
    )
    shard: Shard | None = Field(
        default=None,
        description="Keep only this slice of the selected checks (applied after the other "
        "filters); null: every selected check.",
    )
    subset: CaseSubset | None = Field(
        default=None,
        description="--subset: keep only this part of each dataset family's selected cases "
        "(applied after the other filters and before the shard's); null: every case.",
    )
    changed_since: str | None = Field(
        default=None,
        description="--changed-since: only checks whose files differ from this git revision.",
    )
    changed_since_commit: str | None = Field(
        default=None,
        description="The commit --changed-since's revision named when the run was made: a "
        "plan made again for the run (`eb update`, `eb stage validate`) compares with this "
        "commit, not with the one the revision names by then (a branch or HEAD that moved), "
        "so it selects as the run did. Null: git could not name one (the plan says why), or "
        "no --changed-since.",
    )
    last_failed: bool = Field(
        default=False, description="--last-failed: only the checks the newest earlier run failed."
    )
    last_failed_run_id: str | None = Field(
        default=None, description="The earlier run --last-failed read (null: none was found)."
    )
    last_failed_ids: list[str] | None = Field(
        default=None,
        description="The checks that run failed or errored; null selects every check.",
    )
    select: PlanSelection | None = Field(
        default=None,
        description="`eb run --select FILE`: exactly these checks of the selection; null: no "
        "selection file.",
    )
