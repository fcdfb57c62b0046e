"""The `eb plan` document (schemas/plan.schema.json): what a run would execute, and where.

An engine that places work itself (a Kubernetes Indexed Job, a homegrown scheduler) reads it,
hands each worker its part, and the worker runs exactly that part with `eb run --select`.
"""

from __future__ import annotations

from typing import Literal

from eval_banana.core.record import Field, Record
from eval_banana.models.config import Selection

PLAN_KIND: Literal["eval-banana-plan"] = "eval-banana-plan"
CacheStatus = Literal["hit", "miss", "off"]
Balance = Literal["hash", "history"]


class PlanCheckEntry(Record):
    """One check the run would execute, in the order it would be reported."""

    model_config = {"extra": "forbid"}

    id: str
    family: str | None = Field(
        description="The dataset family of a case check (`<family>[<case>]`); null otherwise."
    )
    type: str
    source: str = Field(
        description="The check file's path relative to the project root (POSIX), or absolute "
        "when outside it."
    )
    definition_digest: str = Field(
        description="sha256:<hex> of the check's definition (its YAML and any referenced "
        "script), as plan.json's check_definition_sha256."
    )
    cache: CacheStatus = Field(
        description="'hit': the verdict cache holds an entry under this check's key now, judged "
        "under isolation as strict as the run's (the run checks it again before reusing it); "
        "'miss': it does not, or --cache refresh; "
        "'off': the cache is off, or the check is never cached (it samples)."
    )
    expected_seconds: float | None = Field(
        default=None, description="How long the check is expected to take (history); null: unknown."
    )
    expected_cost_usd: float | None = Field(
        default=None, description="What the check is expected to cost (history); null: unknown."
    )
    shard: int | None = Field(
        default=None, ge=1, description="With --shards N: the shard (1..N) the check lands in."
    )


class PlanSkippedEntry(Record):
    model_config = {"extra": "forbid"}

    id: str
    reason: str = Field(description="The check file's `skip:` reason; it is never run.")


class PlanShardTotal(Record):
    """One shard's share of the plan (with --shards N)."""

    model_config = {"extra": "forbid"}

    index: int = Field(ge=1)
    checks: int = Field(ge=0)
    expected_seconds: float | None = Field(
        default=None,
        description="The sum of its checks' expected seconds; null when none is known.",
    )
    expected_cost_usd: float | None = Field(
        default=None, description="The sum of its checks' expected costs; null when none is known."
    )


class PlanDocument(Record):
    """`eb plan --format json`; `eb run --select` takes it back."""

    model_config = {"extra": "forbid", "populate_by_name": True}

    schema_uri: str = Field(alias="$schema")
    kind: Literal["eval-banana-plan"] = PLAN_KIND
    schema_version: Literal[1] = 1
    tool_version: str
    project_root: str = Field(description="Where the plan was made (a worker may differ).")
    plan_digest: str = Field(
        description="sha256:<hex> over every planned check's (source, id, definition_digest), "
        "sorted: the checks listed here (with --shard K/N, the shard's). `eb run --select` "
        "refuses the plan when the project's checks no longer give it."
    )
    selection_digest: str | None = Field(
        default=None,
        description="plan.json's selection_digest of `eb run` with the same flags: the digest "
        "of the whole selection, before --shard K/N cuts it (every shard's is the same); "
        "equal to plan_digest without --shard. Null in a plan written before eb recorded it.",
    )
    selection: Selection = Field(description="The selection flags the plan applied.")
    cache_mode: str = Field(description="[cache] mode the cache statuses were read under.")
    shards: int | None = Field(default=None, ge=1, description="--shards N, or null.")
    balance: Balance | None = Field(
        default=None,
        description="How the checks were dealt into shards: 'hash' (as --shard K/N) or "
        "'history' (longest expected first, to the least loaded shard); null without --shards.",
    )
    checks: list[PlanCheckEntry]
    skipped: list[PlanSkippedEntry] = Field(default_factory=list)
    shard_totals: list[PlanShardTotal] = Field(
        default_factory=list, description="With --shards N: each shard's share, 1..N."
    )
    expected_seconds: float | None = Field(
        default=None, description="The sum of every check's expected seconds; null: none known."
    )
    expected_cost_usd: float | None = Field(
        default=None, description="The sum of every check's expected cost; null: none known."
    )
