"""One check's result, as in `report.json` and `checks/<stem>.json`."""

from __future__ import annotations

from typing import Any, Literal

from eval_banana.core import canonjson
from eval_banana.core.record import Field, Record

Status = Literal["passed", "failed", "error"]
# Why a judge ended in `error` (details.error_class; the rules are in docs/judges.md).
ErrorClass = Literal["infrastructure", "verdict", "isolation", "budget"]
ERROR_CLASSES: tuple[ErrorClass, ...] = ("infrastructure", "verdict", "isolation", "budget")
# `details` flags (true when set) of an error that says nothing of how the check behaves or
# how long it takes, the run history's early errors: the run never started it (`not_run`), eb
# could not start it (a missing or unrunnable agent, a setup problem, a script that does not
# compile), or the run stopped it part-way (an interrupt, a fuse).
NOT_RUN = "not_run"
NOT_STARTED = "not_started"
STOPPED = "stopped"
# `details.write_fault` (the path and the cause) of a check whose output eb could not write:
# an early error too, its outcome and time lost.
WRITE_FAULT = "write_fault"
# `details.resource_fault` (what eb was doing and the cause) of a check the run aborted when the
# system refused eb one more open file: an early error as well.
RESOURCE_FAULT = "resource_fault"


class CheckResult(Record):
    """Keys and order are eval-banana's, exactly; trailing keys are ours."""

    model_config = {"extra": "forbid"}

    check_id: str
    check_type: str
    check_definition_sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    description: str
    source_path: str
    tags: list[str] = Field(default_factory=list)
    status: Status
    score: Literal[0, 1]
    started_at: str
    completed_at: str
    duration_ms: int = Field(ge=0)
    reason: str | None = None
    error_detail: str | None = None
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    expect: Literal["pass", "fail"] = "pass"
    observed_status: Status | None = None
    family: str | None = Field(
        default=None, description="The dataset family of a case check (`<family>[<case>]`)."
    )


def result_json_text(*, result: CheckResult) -> str:
    """One check result as in report.json and checks/<stem>.json: indent 2, UTF-8, no newline."""
    return canonjson.dumps(result)


class SkippedCheck(Record):
    """A selected check whose file says `skip: <reason>`: never run or scored, always listed."""

    model_config = {"extra": "forbid"}

    check_id: str
    check_type: str
    description: str
    source_path: str
    tags: list[str] = Field(default_factory=list)
    reason: str = Field(description="The check file's `skip` text.")
