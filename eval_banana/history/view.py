"""What `eb history` shows, as data: the source of schemas/history.schema.json.

`eb history --format json` prints one `HistoryView`; the text and Markdown renderings are made
from the same object, so the three never disagree.
"""

from __future__ import annotations

from typing import Literal

from eval_banana.core.record import Field, Record

HISTORY_VIEW_SCHEMA = "https://eval-banana.dev/schemas/history.schema.json"


class RunRef(Record):
    """A run named in a check's story: its id and the commit it ran on."""

    model_config = {"extra": "forbid"}

    run_id: str
    started_at: str
    commit: str | None = None


class RunRow(Record):
    """One run of the window: the whole suite's figures."""

    model_config = {"extra": "forbid"}

    run_id: str
    kind: str
    started_at: str
    commit: str | None = None
    dirty: bool = False
    passed: bool
    checks: int = Field(ge=0)
    passed_checks: int = Field(ge=0)
    not_run: int = Field(
        default=0,
        ge=0,
        description="Checks the run never started (its console's and report.json's "
        "`not run`): no runs of them, left out of its pass rate as of theirs.",
    )
    stopped: int = Field(
        default=0,
        ge=0,
        description="Checks the run ended part-way (an error to its console, `Stopped: ...`): "
        "no outcome either, left out of its pass rate as the checks not run are.",
    )
    pass_rate: float | None = Field(
        description="Passed checks over the checks that ran to an outcome (not run and "
        "stopped left out), 0 to 1; null: none did."
    )
    pass_threshold: float | None = Field(
        default=None,
        description="The pass ratio the run needed, which its rate is shown beside, never "
        "rounded onto or past it; null: a record written before eb kept it.",
    )
    aborted_by: str | None = Field(
        default=None,
        description="Why the run was aborted (`interrupt`, `run_timeout`, a fuse); null: it "
        "ran to its end.",
    )
    failed_because: list[str] = Field(
        default_factory=list,
        description="Why the run did not pass, in report.html's words (below the threshold, "
        "errors, maxfail, a flaky check under --fail-on-flaky, a family's gate); empty for a "
        "run that passed, an aborted run (aborted_by says why) and a record written before eb "
        "kept the reasons.",
    )
    duration_ms: int = Field(ge=0)
    cost_usd: float | None = None


class CheckRow(Record):
    """One check over the window."""

    model_config = {"extra": "forbid"}

    id: str
    family: str | None = None
    tags: list[str] = Field(default_factory=list)
    strip: str = Field(
        description="One mark per run of the window, oldest first: ✓ passed, ✗ failed, "
        "E error, · not in that run (or not run in it: the run stopped before or while it ran)."
    )
    runs: int = Field(
        ge=0, description="Runs of the window the check was in and ran in (not run left out)."
    )
    passed: int = Field(ge=0)
    pass_rate: float | None = Field(description="Passed over runs, 0 to 1; null: no run.")
    flips: int = Field(
        ge=0,
        description="Changes between passing and not passing from one run to the next on an "
        "unchanged definition (a change across a definition change does not count).",
    )
    most_flips_on_one_definition: int = Field(ge=0)
    definitions: int = Field(ge=0, description="Distinct definition digests in the window.")
    definition_changes: list[RunRef] = Field(
        default_factory=list,
        description="The runs of the window in which its definition differs from its run "
        "before in the window (an edit, or its revert), oldest first.",
    )
    flaky_runs: int = Field(
        default=0,
        ge=0,
        description="Runs of the window in which its repeated samples disagreed (flaky within "
        "the run, whatever its flips between runs).",
    )
    median_ms: float | None = Field(description="Median duration, early errors left out.")
    p90_ms: float | None = Field(description="90th percentile duration, early errors left out.")
    cost_usd: float | None = Field(
        default=None,
        ge=0,
        description="Dollars spent on it over the window; null: no run of it reported a cost.",
    )
    status: Literal["passed", "failed", "error"] = Field(description="Its latest outcome.")
    failing_since: RunRef | None = Field(
        default=None, description="Not passing now: the first run of the current streak."
    )
    last_passed: RunRef | None = Field(
        default=None, description="Not passing now: the last run in the history it passed."
    )


class FamilyRun(Record):
    """A dataset family in one run: its cases there, and how many passed."""

    model_config = {"extra": "forbid"}

    cases: int = Field(ge=1)
    passed: int = Field(ge=0)


class FamilyRow(Record):
    """One dataset family over the window."""

    model_config = {"extra": "forbid"}

    id: str
    cases: int = Field(
        ge=1,
        description="Its cases in its latest run of all of them in the window (those the "
        "view keeps); with none, the size the latest run of part of it recorded.",
    )
    strip: str = Field(
        description="One mark per run of the window, oldest first: the pass rate of a run of "
        "all its cases in eight heights (█ 100%, ▇ 90% or more, ▆ 80%, ▅ 70%, ▄ 60%, ▃ 50%, "
        "▂ 25%, ▁ less), ◦ a run of part of them (--last-failed, -k, a shard, a run that "
        "stopped before some of them), · not in that run or none of them ran in it."
    )
    runs: list[FamilyRun | None] = Field(
        description="Per run of the window, oldest first: its counts (of the cases that ran); "
        "null: not in that run, or the run stopped before any of its cases had an outcome."
    )
    latest_rate: float | None = Field(
        description="The pass rate of the latest run of all its cases, 0 to 1; null: none."
    )
    lowest_rate: float | None = Field(
        description="The lowest pass rate of a run of all its cases in the window; null: none."
    )


class HistoryView(Record):
    """`eb history`: the runs of the window and each check over them."""

    model_config = {"extra": "forbid"}

    schema_uri: str = Field(default=HISTORY_VIEW_SCHEMA, alias="$schema")
    schema_version: Literal[1] = 1
    folder: str = Field(description="The history folder read.")
    records: int = Field(ge=0, description="Run records in the folder.")
    listing: Literal["all", "flaky", "slowest", "costliest"] = "all"
    runs: list[RunRow] = Field(default_factory=list, description="The window, oldest first.")
    cost_usd: float | None = Field(
        default=None,
        ge=0,
        description="What the runs of the window cost together, in dollars (their cost_usd "
        "added up, as the text's `Total cost of the N runs shown`); null: no run of it "
        "reported a cost.",
    )
    runs_without_cost: int = Field(
        default=0,
        ge=0,
        description="Runs of the window that reported no cost: left out of cost_usd, and "
        "counted so that the sum is not read as the whole window's.",
    )
    checks: list[CheckRow] = Field(default_factory=list)
    families: list[FamilyRow] = Field(
        default_factory=list, description="Each dataset family of the window's checks, by id."
    )
