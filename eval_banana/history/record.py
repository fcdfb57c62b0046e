"""A run record: `.eval-banana/history/<time>-<run id>.json`, the source of its schema.

One file per run, written once and never changed, so shards and concurrent runs cannot clobber
each other. Small on purpose: `eb history` reads hundreds of them, so a check's entry holds
what trends need (status, digest, time, cost) and nothing a run folder already explains.
"""

from __future__ import annotations

from typing import Literal

from eval_banana.core.record import Field, Record
from eval_banana.models.config import Selection

HISTORY_RECORD_SCHEMA = "https://eval-banana.dev/schemas/history-record.schema.json"
RunKind = Literal["run", "merge", "replay"]
CheckStatus = Literal["passed", "failed", "error"]


class GitState(Record):
    """The commit the project was at when the run started."""

    model_config = {"extra": "forbid"}

    commit: str = Field(description="The full id of HEAD.")
    dirty: bool = Field(
        description="Tracked files differed from HEAD (untracked files are not counted)."
    )


class HistoryTotals(Record):
    """How many checks ended each way; the same counts report.json gives."""

    model_config = {"extra": "forbid"}

    checks: int = Field(ge=0)
    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    errored: int = Field(ge=0)
    skipped: int = Field(default=0, ge=0)
    not_run: int = Field(default=0, ge=0)
    cached: int = Field(default=0, ge=0)
    flaky: int = Field(default=0, ge=0)


class HistoryCheck(Record):
    """One check in one run."""

    model_config = {"extra": "forbid"}

    id: str = Field(description="The check id.")
    family: str | None = Field(
        default=None, description="The dataset family of a case check (`<family>[<case>]`)."
    )
    type: str = Field(description="The check type.")
    tags: list[str] = Field(default_factory=list)
    status: CheckStatus
    digest: str = Field(description="sha256 of the check's definition when it ran.")
    duration_ms: int = Field(
        ge=0,
        description="How long the check took; for a verdict reused from the cache or a "
        "replayed run, how long it took when it ran.",
    )
    cost_usd: float | None = Field(
        default=None, ge=0, description="Dollars its agent reported spending in this run."
    )
    replaced_cost_usd: float | None = Field(
        default=None,
        ge=0,
        description="A run brought up to date by `eb update` that ran the check again: the "
        "dollars its replaced runs in this run folder (a merge: in its shard's) had spent, "
        "kept over every update "
        "(`cost_usd` is what its current result cost); null: none replaced, or none reported "
        "a cost.",
    )
    tokens: int | None = Field(default=None, ge=0, description="Tokens it reported in this run.")
    samples: int = Field(
        default=1,
        ge=1,
        description="How many samples it took (its `repeats`); 1: run once, or a record written "
        "before eb kept this.",
    )
    sample_ms: int | None = Field(
        default=None,
        ge=0,
        description="A sampled check: the mean time one of its samples took (they may run side "
        "by side, so duration_ms can be less than their sum); null: it took one sample.",
    )
    cached: bool = Field(default=False, description="Its verdict was reused, not run.")
    verdict_cost_usd: float | None = Field(
        default=None,
        ge=0,
        description="A reused verdict (`cached`): the dollars its agent reported spending in the "
        "run that made it (nothing was spent in this run), so that what the check costs when it "
        "runs is known, as its duration is; null otherwise.",
    )
    flaky: bool = Field(default=False, description="Its repeated samples disagreed.")
    early_error: bool = Field(
        default=False,
        description="An error that says nothing of how the check behaves or how long it "
        "takes (not run, a missing agent, a setup failure, a script that does not compile, "
        "stopped part-way by the run): left out of flips, streaks, expected durations and "
        "costs. A timeout, a judge's answer without a verdict or a crash is none.",
    )
    not_run: bool = Field(
        default=False,
        description="It reached no outcome: the run never started it (an interrupt, a fuse, "
        "maxfail) or stopped it while it ran. `eb history` draws it as not in that run and "
        "leaves it out of the pass rate; an early error too.",
    )


class HistoryRecord(Record):
    """One run: when, on what commit, what was selected, how it ended, and every check."""

    model_config = {"extra": "forbid"}

    schema_uri: str = Field(default=HISTORY_RECORD_SCHEMA, alias="$schema")
    schema_version: Literal[1] = 1
    tool_version: str
    run_id: str
    kind: RunKind = Field(description="`eb run`, `eb merge`, or a run replayed whole.")
    replayed_from: str | None = Field(
        default=None, description="A replayed run: the run whose verdicts it replayed."
    )
    merged_from: list[str] = Field(
        default_factory=list,
        description="`eb merge`: the run ids of the shard runs it merged (`eb history` counts "
        "the merged run, not its shards, when both are recorded).",
    )
    started_at: str = Field(description="ISO-8601 UTC.")
    finished_at: str = Field(description="ISO-8601 UTC.")
    duration_ms: int = Field(ge=0, description="Wall time of the run's checks.")
    git: GitState | None = Field(default=None, description="Null outside a git work tree.")
    selection: Selection = Field(default_factory=Selection)
    passed: bool = Field(description="The run's verdict (report.json's run_passed).")
    exit_code: int = Field(description="What `eb` exited with for this run.")
    aborted_by: str | None = None
    pass_threshold: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="The pass ratio the run needed (report.json's pass_threshold); null: a "
        "record written before eb kept why a run did not pass.",
    )
    meets_threshold: bool | None = Field(
        default=None,
        description="Its points met pass_threshold; null: a record written before eb kept this.",
    )
    halted_by: str | None = Field(
        default=None, description="`maxfail`: the run stopped launching checks at --maxfail."
    )
    fail_on_flaky: bool = Field(
        default=False,
        description="The run was judged with --fail-on-flaky: a flaky check fails it.",
    )
    gates_not_held: list[str] = Field(
        default_factory=list,
        description="The dataset families whose gate (`min_pass_rate`) did not hold.",
    )
    percentage: float
    totals: HistoryTotals
    cost_usd: float | None = Field(
        default=None,
        ge=0,
        description="Dollars its current results cost (the report's judge usage).",
    )
    replaced_cost_usd: float | None = Field(
        default=None,
        ge=0,
        description="A run brought up to date by `eb update`: the dollars spent on results its "
        "updates replaced (checks run again, or gone from its plan), kept over every update; a "
        "merge: with what its shard runs' updates replaced, as their records say; "
        "null: nothing replaced had reported a cost. What judging this run folder cost is "
        "this plus cost_usd.",
    )
    superseded_cost_usd: float | None = Field(
        default=None,
        ge=0,
        description="A merge: the dollars spent by shard runs that earlier merges of its shards "
        "merged and it does not (a shard job run again and merged with the others), kept over "
        "merges of the pipeline; null: none, or none reported a cost. What judging the "
        "pipeline cost is this plus cost_usd and replaced_cost_usd.",
    )
    tokens: int | None = Field(default=None, ge=0, description="Tokens spent in this run.")
    checks: list[HistoryCheck] = Field(default_factory=list)
    partial_families: dict[str, int] | None = Field(
        default=None,
        description="Each dataset family this run ran only part of (its selection took part: "
        "`-k`, `--subset`, `--last-failed`, a shard; or it stopped before the rest: maxfail, a "
        "fuse, an interrupt): how many cases the family has, not skipped (report.json's "
        "`of_cases`). A family run whole is not listed, whatever its size; null or absent: a "
        "record written before eb kept this, which cannot tell a whole run from a part.",
    )
