"""Building results (eval_banana/runners/results.py): the fields every report copies from one place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from eval_banana.runners.results import (
    build_result,
    elapsed_ms,
    error_result,
    exception_result,
    held_back_result,
    iso,
    utc_now,
)
from tests.builders import planned_inline

ROOT = Path("/project")
MOMENT = datetime(2026, 11, 30, 0, 24, 31, tzinfo=UTC)


def test_an_exception_in_a_runner_becomes_that_check_s_error() -> None:
    check = planned_inline(id="boom", script="pass", project_root=ROOT, tags=["t"])
    result = exception_result(check=check, started=MOMENT, exc=ValueError("bad value"))
    assert (result.check_id, result.status, result.score) == ("boom", "error", 0)
    assert result.error_detail == "ValueError: bad value"
    assert result.started_at == "2026-11-30T00:24:31.000000+00:00"
    assert result.tags == ["t"] and result.source_path == check.source_path
    assert result.check_definition_sha256 == check.check_definition_sha256


def test_timestamps_and_durations() -> None:
    assert iso(MOMENT) == "2026-11-30T00:24:31.000000+00:00"
    later = MOMENT + timedelta(days=1, seconds=2, microseconds=3999)
    assert elapsed_ms(started=MOMENT, completed=later) == 86_402_003  # truncated, not rounded
    assert elapsed_ms(started=later, completed=MOMENT) == 0  # never negative


def test_build_result_copies_identity_and_keeps_error_detail_for_errors_only() -> None:
    check = planned_inline(id="c", script="pass", project_root=ROOT, tags=["a"], expect="fail")
    details = {"k": 1}
    result = build_result(
        check=check,
        status="failed",
        started=MOMENT,
        completed=MOMENT + timedelta(milliseconds=5),
        reason="why",
        error_detail="ignored for a failure",
        stdout="out",
        stderr="err",
        exit_code=3,
        details=details,
    )
    assert (result.status, result.score, result.observed_status, result.expect) == (
        "failed",
        0,
        "failed",
        "fail",
    )
    assert (result.reason, result.error_detail) == ("why", None)
    assert (result.stdout, result.stderr, result.exit_code) == ("out", "err", 3)
    assert (result.duration_ms, result.completed_at) == (5, "2026-11-30T00:24:31.005000+00:00")
    assert result.details == {"k": 1} and result.details is not details
    assert result.description == "check c" and result.check_type == "deterministic"
    passed = build_result(check=check, status="passed", started=MOMENT, completed=MOMENT)
    assert (passed.score, passed.details, passed.reason, passed.exit_code) == (1, {}, None, None)
    errored = error_result(check=check, started=MOMENT, completed=MOMENT, error_detail="broken")
    assert (errored.status, errored.score, errored.error_detail) == ("error", 0, "broken")


def test_a_check_held_back_by_maxfail_is_a_not_run_error_that_says_why() -> None:
    check = planned_inline(id="later", script="pass", project_root=ROOT, tags=["t"])
    before = utc_now()
    one = held_back_result(check=check, maxfail=1)
    assert (one.check_id, one.status, one.score, one.tags) == ("later", "error", 0, ["t"])
    assert one.error_detail == "Not run: stopped after 1 failed or errored check (maxfail 1)"
    assert one.details == {"not_run": True, "not_run_reason": "maxfail"}
    assert one.started_at == one.completed_at and one.duration_ms == 0
    assert datetime.fromisoformat(one.started_at) >= before
    three = held_back_result(check=check, maxfail=3)
    assert three.error_detail == "Not run: stopped after 3 failed or errored checks (maxfail 3)"


def test_a_judge_error_without_a_class_from_its_runner_gets_one() -> None:
    from eval_banana.runners.results import StopSignal, not_run_result, with_error_class
    from tests.builders import planned_judge

    judge = planned_judge(id="j", project_root=ROOT)
    fuse = StopSignal()
    fuse.stop(reason="token_fuse")
    unrun = with_error_class(result=not_run_result(check=judge, cancel=fuse), cancel=fuse)
    assert (unrun.details["error_class"], unrun.details["error_cause"]) == (
        "budget",
        "token fuse tripped",
    )
    held = with_error_class(result=held_back_result(check=judge, maxfail=1), cancel=StopSignal())
    assert held.details["error_class"] == "budget"
    interrupt = StopSignal()
    interrupt.stop(reason="interrupt")
    stopped = with_error_class(
        result=not_run_result(check=judge, cancel=interrupt), cancel=interrupt
    )
    assert stopped.details["error_class"] == "infrastructure"
    crashed = exception_result(check=judge, started=MOMENT, exc=ValueError("bad"))
    assert with_error_class(result=crashed, cancel=StopSignal()).details["error_class"] == (
        "infrastructure"
    )
    # Only judges get a class; a class the runner gave is kept.
    script = planned_inline(id="s", script="pass", project_root=ROOT)
    plain = exception_result(check=script, started=MOMENT, exc=ValueError("bad"))
    assert "error_class" not in with_error_class(result=plain, cancel=StopSignal()).details
    given = error_result(
        check=judge,
        started=MOMENT,
        error_detail="x",
        details={"error_class": "verdict", "error_cause": "no valid verdict"},
    )
    assert with_error_class(result=given, cancel=fuse).details["error_class"] == "verdict"


def test_error_classes_are_counted_with_their_causes_most_frequent_first() -> None:
    from eval_banana.runners.results import error_class_counts
    from tests.builders import planned_judge

    judge = planned_judge(id="j", project_root=ROOT)

    def errored(error_class: str, cause: str) -> Any:
        details = {"error_class": error_class, "error_cause": cause}
        return error_result(check=judge, started=MOMENT, error_detail="x", details=details)

    results = [
        errored("verdict", "no valid verdict"),
        errored("infrastructure", "HTTP 429"),
        errored("infrastructure", "timeout"),
        errored("infrastructure", "HTTP 429"),
        build_result(check=judge, status="passed", started=MOMENT),
    ]
    counted = [entry.model_dump() for entry in error_class_counts(results)]
    assert counted == [
        {"error_class": "infrastructure", "count": 3, "causes": {"HTTP 429": 2, "timeout": 1}},
        {"error_class": "verdict", "count": 1, "causes": {"no valid verdict": 1}},
    ]
