"""Building CheckResult objects: the one place every runner and the execute stage get them from."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from eval_banana.core.files import sha256_bytes, write_bytes_atomic
from eval_banana.core.words import plural
from eval_banana.harness.errorclass import ErrorCause
from eval_banana.models.repeats import is_flaky
from eval_banana.models.result import ERROR_CLASSES, CheckResult, Status, result_json_text
from eval_banana.models.stages import AbortReason, ErrorClassCount, PlannedCheck

# How each abort reason reads after `Stopped: ` / `Not run: `.
STOP_REASON_TEXT: dict[str, str] = {
    "interrupt": "interrupted",
    "run_timeout": "run timeout reached",
    "token_fuse": "token fuse tripped",
    "cost_fuse": "cost fuse tripped",
    "write_fault": "a file could not be written",
    "resource_fault": "too many open files",
}


def aborted_text(*, aborted_by: str, not_run: int, report_json: str) -> str:
    """What an aborted run says of itself, in its error and its annotation: why it stopped,
    how many checks did not run and where its report is."""
    why = STOP_REASON_TEXT.get(aborted_by, aborted_by)
    return (
        f"Run aborted ({aborted_by}: {why}); "
        f"{plural(count=not_run, noun='check')} did not run. Report: {report_json}"
    )


class StopSignal(threading.Event):
    """A cancel event that also says why the run is stopping (interrupt or a fuse)."""

    def __init__(self) -> None:
        super().__init__()
        self.reason: AbortReason = "interrupt"

    def stop(self, *, reason: AbortReason) -> None:
        """Set the event; the first reason given wins (later stops do not rewrite it)."""
        if not self.is_set():
            self.reason = reason
        self.set()


def stop_reason(*, cancel: threading.Event) -> AbortReason:
    """Why a set cancel event was set; a plain Event means an interrupt."""
    if isinstance(cancel, StopSignal):
        return cancel.reason
    return "interrupt"


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """eval-banana's ISO-8601 UTC: microseconds and `+00:00`, also when microseconds are 0."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def shown_time(text: str) -> str:
    """A stored time as a page shows it to a reader, to the second (`2026-12-05 02:48:39 UTC`);
    text that is not an ISO time is shown as it is."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text
    offset = moment.utcoffset()
    if offset is None:
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.strftime("%Y-%m-%d %H:%M:%S " + ("UTC" if not offset else "%z"))


def elapsed_ms(*, started: datetime, completed: datetime) -> int:
    """Whole milliseconds between two moments, truncated, never negative."""
    delta = completed - started
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return max(0, micros // 1000)


def build_result(
    *,
    check: PlannedCheck,
    status: Status,
    started: datetime,
    completed: datetime | None = None,
    reason: str | None = None,
    error_detail: str | None = None,
    stdout: str = "",
    stderr: str = "",
    exit_code: int | None = None,
    details: dict[str, Any] | None = None,
) -> CheckResult:
    """One result for `check`, identity fields copied from the plan."""
    done = completed if completed is not None else utc_now()
    definition = check.definition
    tags = definition.get("tags") or []
    expect: Literal["pass", "fail"] = "fail" if definition.get("expect") == "fail" else "pass"
    return CheckResult(
        check_id=check.id,
        check_type=check.type,
        check_definition_sha256=check.check_definition_sha256,
        description=check.description,
        source_path=check.source_path,
        tags=[str(tag) for tag in tags],
        status=status,
        score=1 if status == "passed" else 0,
        started_at=iso(started),
        completed_at=iso(done),
        duration_ms=elapsed_ms(started=started, completed=done),
        reason=reason,
        error_detail=error_detail if status == "error" else None,
        stdout=stdout,
        stderr=stderr,
        exit_code=exit_code,
        details=dict(details or {}),
        expect=expect,
        # What the check itself reached; the judged `status` may differ for controls.
        observed_status=status,
        family=check.family,
    )


def error_result(
    *,
    check: PlannedCheck,
    started: datetime,
    error_detail: str,
    completed: datetime | None = None,
    reason: str | None = None,
    stdout: str = "",
    stderr: str = "",
    exit_code: int | None = None,
    details: dict[str, Any] | None = None,
) -> CheckResult:
    """An `error` result, score 0 (infrastructure problem, never a verdict on the subject)."""
    return build_result(
        check=check,
        status="error",
        started=started,
        completed=completed,
        reason=reason,
        error_detail=error_detail,
        stdout=stdout,
        stderr=stderr,
        exit_code=exit_code,
        details=details,
    )


def instant_error(
    *, check: PlannedCheck, error_detail: str, details: dict[str, Any]
) -> CheckResult:
    """An `error` no time was spent on (a check not run, held back, or whose output could not
    be written): it starts and completes now."""
    moment = utc_now()
    return error_result(
        check=check, started=moment, completed=moment, error_detail=error_detail, details=details
    )


# Stops that are a budget running out (a fuse); an interrupt or a write fault is not.
BUDGET_STOPS = frozenset({"run_timeout", "token_fuse", "cost_fuse"})


def stop_error_cause(*, cancel: threading.Event) -> ErrorCause:
    """The error class of a judge the stopping run ended or never started."""
    reason = stop_reason(cancel=cancel)
    text = STOP_REASON_TEXT[reason]
    return ErrorCause("budget" if reason in BUDGET_STOPS else "infrastructure", text)


def with_error_class(*, result: CheckResult, cancel: threading.Event) -> CheckResult:
    """A judge's `error` with `details.error_class`, when its runner could not give one: a
    check the run never started (a fuse or maxfail: budget; an interrupt: infrastructure), an
    exception out of the runner or a write fault (infrastructure)."""
    details = result.details
    if result.status != "error" or result.check_type != "harness_judge" or "error_class" in details:
        return result
    if details.get("not_run_reason") == "maxfail":
        found = ErrorCause("budget", "maxfail reached")
    elif details.get("not_run") is True:
        found = stop_error_cause(cancel=cancel)
    else:
        found = ErrorCause("infrastructure", "eb could not run the judge")
    update = {"error_class": found.error_class, "error_cause": found.cause}
    return result.model_copy(update={"details": {**details, **update}})


def error_class_counts(results: list[CheckResult]) -> list[ErrorClassCount]:
    """The errors that carry `details.error_class`, counted per class and cause, the most
    frequent class first (ties in the order of ERROR_CLASSES). A check the stopped run never
    started is counted `not run`, not errored, so it is left out here too."""
    causes: dict[str, dict[str, int]] = {name: {} for name in ERROR_CLASSES}
    for result in results:
        found = result.details.get("error_class")
        if result.status != "error" or found not in causes or result.details.get("not_run"):
            continue
        cause = str(result.details.get("error_cause") or found)
        causes[found][cause] = causes[found].get(cause, 0) + 1
    counted = [
        ErrorClassCount(
            error_class=name,
            count=sum(causes[name].values()),
            causes=dict(sorted(causes[name].items(), key=lambda item: (-item[1], item[0]))),
        )
        for name in ERROR_CLASSES
        if causes[name]
    ]
    return sorted(counted, key=lambda entry: -entry.count)


def stopped_detail(*, cancel: threading.Event) -> str:
    """`Stopped: <reason>` for a check that was running when the run stopped."""
    return f"Stopped: {STOP_REASON_TEXT[stop_reason(cancel=cancel)]}"


def not_run_result(*, check: PlannedCheck, cancel: threading.Event) -> CheckResult:
    """A check the stopped run never started: error, `Not run: <reason>`, details.not_run."""
    return instant_error(
        check=check,
        error_detail=f"Not run: {STOP_REASON_TEXT[stop_reason(cancel=cancel)]}",
        details={"not_run": True},
    )


def maxfail_text(*, maxfail: int) -> str:
    """Why launching stopped: `stopped after N failed or errored checks (maxfail N)`."""
    counted = plural(count=maxfail, noun="failed or errored check")
    return f"stopped after {counted} (maxfail {maxfail})"


def held_back_result(*, check: PlannedCheck, maxfail: int) -> CheckResult:
    """A check not launched once maxfail was reached: like a stop's not-run result, with why."""
    return instant_error(
        check=check,
        error_detail=f"Not run: {maxfail_text(maxfail=maxfail)}",
        details={"not_run": True, "not_run_reason": "maxfail"},
    )


def judged_outcome(*, observed: Status, expect: str) -> tuple[Status, int]:
    """The status and score of a result whose check reached `observed` under `expect`: a
    control (expect: fail) passes only on a real failure, an error stays an error."""
    if expect == "pass" or observed == "error":
        status = observed
    else:
        status = "passed" if observed == "failed" else "failed"
    return status, 1 if status == "passed" else 0


def judge_expectation(*, result: CheckResult) -> CheckResult:
    """Applied once to every result: a control (expect: fail) passes only on a real failure.

    `observed_status` keeps what the check itself reached; `status` and `score` become the
    judged outcome. An `error` (a timeout, a stop, a crash) never satisfies a control.
    """
    observed = result.observed_status or result.status
    if result.expect == "pass" or observed == "error":
        return result.model_copy(update={"observed_status": observed})
    judged, score = judged_outcome(observed=observed, expect=result.expect)
    return result.model_copy(update={"status": judged, "score": score, "observed_status": observed})


def exception_result(*, check: PlannedCheck, started: datetime, exc: BaseException) -> CheckResult:
    """An exception escaping a runner becomes this check's error result."""
    return error_result(check=check, started=started, error_detail=f"{type(exc).__name__}: {exc}")


def progress_line(*, check_id: str, result: CheckResult) -> str:
    """A finished check as a log shows it: `<id>: <status> ([cached, ][flaky, ]<n> ms)`."""
    details = result.details
    notes = ["cached"] if "cache" in details and details["cache"].get("hit") is True else []
    if is_flaky(details):
        notes.append("flaky")
    notes.append(f"{result.duration_ms} ms")
    return f"{check_id}: {result.status} ({', '.join(notes)})"


# A dataset family of more cases than this shows its plainly passing cases folded: as one line
# in the run's summary, as counts in a log's progress. Listed one by one, a family of 10,000
# cases would bury its few failures under 10,000 lines of a CI log.
FAMILY_CASES_LISTED = 20


def selected_family_sizes(*, checks: Iterable[PlannedCheck]) -> dict[str, int]:
    """How many cases of each dataset family `checks` hold (a selection may hold part)."""
    return dict(Counter(check.family for check in checks if check.family is not None))


def folded_in_log(*, result: CheckResult, family_size: int) -> bool:
    """Whether a log counts a finished check instead of giving it a line of its own: a case
    that passed (every sample, a control catching its defect, a verdict from the cache), in a
    family of more than FAMILY_CASES_LISTED cases. A failure, an error, a skip or a flaky pass
    keeps its line."""
    return (
        family_size > FAMILY_CASES_LISTED
        and result.status == "passed"
        and not is_flaky(result.details)
    )


def result_file_digest(*, result: CheckResult) -> str:
    """The digest of checks/<stem>.json's bytes as `write_check_result` writes `result`."""
    return sha256_bytes(data=result_json_text(result=result).encode("utf-8"))


def write_check_result(*, checks_dir: Path, stem: str, result: CheckResult) -> str:
    """Write checks/<stem>.json atomically (as soon as the check finishes); return the digest
    of its bytes, which execute.json records (`eb status` sees the file gone or edited)."""
    data = result_json_text(result=result).encode("utf-8")
    write_bytes_atomic(path=checks_dir / f"{stem}.json", data=data)
    return sha256_bytes(data=data)
