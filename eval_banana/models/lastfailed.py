"""`.eval-banana/lastfailed.json`: the checks `eb run --last-failed` reruns, as pytest's `--lf`.

The single source of `schemas/lastfailed.schema.json`. A check enters when a run fails or errors
it, or finds it flaky while the run's verdict counts flakiness (`--fail-on-flaky`), and leaves
when a run in which it ran passes it otherwise, or when a run that read every check file finds
no check of its id; runs that do not run it (`-k`, `--tag`, a check stopped before it started)
leave its entry as it is.
"""

from __future__ import annotations

from typing import Literal

from eval_banana.core.record import Field, Record

LAST_FAILED_SCHEMA = "https://eval-banana.dev/schemas/lastfailed.schema.json"


class FailedCheck(Record):
    """How a check failed the last time it ran."""

    model_config = {"extra": "forbid"}

    status: Literal["failed", "error", "flaky"] = Field(
        description="Its status in that run; `flaky`: passed by its samples' rule while they "
        "disagreed, in a run whose verdict counted that as a failure (--fail-on-flaky)."
    )
    run_id: str = Field(description="The run that failed it last.")


class LastFailedDoc(Record):
    """The whole file: the checks that failed the last time they ran, by check id."""

    model_config = {"extra": "forbid"}

    schema_uri: str = Field(default=LAST_FAILED_SCHEMA, alias="$schema")
    schema_version: Literal[1] = 1
    tool_version: str
    updated_at: str
    failed: dict[str, FailedCheck] = Field(
        default_factory=dict, description="Check id -> how it failed the last time it ran."
    )
