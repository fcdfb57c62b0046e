"""A run record from a finished run's report.json object.

The report is the one document every kind of run ends with (a run, a merge, a replay), so one
builder serves all three and the record says what the report says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eval_banana.core.caseid import family_of
from eval_banana.core.version import tool_version
from eval_banana.harness.usage import reported_cost, usage_cost, usage_tokens
from eval_banana.history.record import (
    GitState,
    HistoryCheck,
    HistoryRecord,
    HistoryTotals,
    RunKind,
)
from eval_banana.models.config import Selection
from eval_banana.models.repeats import is_flaky
from eval_banana.models.result import (
    NOT_RUN,
    NOT_STARTED,
    RESOURCE_FAULT,
    STOPPED,
    WRITE_FAULT,
)


def _usage(details: Mapping[str, Any]) -> dict[str, Any] | None:
    usage = details.get("usage")
    return usage if isinstance(usage, dict) else None


def early_error(*, result: Mapping[str, Any]) -> bool:
    """An error that says nothing of how the check behaves or how long it takes: never run, not
    started (a missing agent, a setup problem, a script that does not compile), stopped
    part-way by the run, or its output not written, as its runner flagged it. A timeout, a
    verdict error, a crash or an isolation error is none: the check ran, and may keep doing so."""
    if result["status"] != "error":
        return False
    details = result.get("details") or {}
    if any(isinstance(details.get(fault), dict) for fault in (WRITE_FAULT, RESOURCE_FAULT)):
        return True
    return any(details.get(flag) is True for flag in (NOT_RUN, NOT_STARTED, STOPPED))


def not_run(*, result: Mapping[str, Any]) -> bool:
    """A check that reached no outcome because the run stopped: never started, or ended
    part-way (`Stopped: ...`). Other early errors (a missing agent, a script that does not
    compile, a write fault) are errors of the check's own run."""
    details = result.get("details") or {}
    return result["status"] == "error" and any(
        details.get(flag) is True for flag in (NOT_RUN, STOPPED)
    )


def _samples(details: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A sampled check's samples (details.samples); none for a check run once."""
    found = details.get("samples")
    if not isinstance(found, list):
        return []
    return [sample for sample in found if isinstance(sample, Mapping)]


def _mean_sample_ms(samples: list[Mapping[str, Any]]) -> int | None:
    """The mean duration of one sample of a sampled check; None for a check run once."""
    durations = [sample.get("duration_ms") for sample in samples]
    counted = [ms for ms in durations if type(ms) is int and ms >= 0]
    if len(samples) < 2 or len(counted) != len(samples):
        return None
    return round(sum(counted) / len(counted))


def history_check(*, result: Mapping[str, Any]) -> HistoryCheck:
    """One check's entry from its result in report.json."""
    details = result.get("details") or {}
    usage = _usage(details)
    cache = details.get("cache")
    cached = isinstance(cache, dict) and cache.get("hit") is True
    sampled = _samples(details)
    return HistoryCheck(
        id=result["check_id"],
        family=family_of(result["check_id"]),
        type=result["check_type"],
        tags=list(result.get("tags") or []),
        status=result["status"],
        digest=result["check_definition_sha256"],
        duration_ms=int(result["duration_ms"]),
        cost_usd=usage_cost(usage),
        tokens=usage_tokens(usage),
        cached=cached,
        verdict_cost_usd=reported_cost(cache.get("from_run_cost_usd"))
        if isinstance(cache, dict) and cached
        else None,
        samples=max(len(sampled), 1),
        sample_ms=_mean_sample_ms(sampled),
        flaky=is_flaky(details),
        early_error=early_error(result=result),
        not_run=not_run(result=result),
    )


def _run_usage(report: Mapping[str, Any]) -> tuple[float | None, int | None]:
    usage = report.get("judge_usage") or {}
    tokens = report.get("tokens_used")
    return usage.get("cost_usd"), tokens if isinstance(tokens, int) else usage.get("total_tokens")


def build_record(
    *,
    report: Mapping[str, Any],
    selection: Selection,
    kind: RunKind,
    exit_code: int,
    git: GitState | None,
    replayed_from: str | None = None,
) -> HistoryRecord:
    """The record of the run `report` (a report.json object) describes."""
    checks = [history_check(result=result) for result in report["checks"]]
    cost, tokens = _run_usage(report)
    return HistoryRecord(
        tool_version=tool_version(),
        run_id=report["run_id"],
        kind=kind,
        replayed_from=replayed_from,
        merged_from=[source["run_id"] for source in report.get("merged_from") or ()],
        started_at=report["started_at"],
        finished_at=report["completed_at"],
        duration_ms=int(report["duration_ms"]),
        git=git,
        selection=selection,
        passed=bool(report["run_passed"]),
        exit_code=exit_code,
        aborted_by=report.get("aborted_by"),
        pass_threshold=report.get("pass_threshold"),
        meets_threshold=report.get("meets_threshold"),
        halted_by=report.get("halted_by"),
        fail_on_flaky=report.get("fail_on_flaky") is True,
        gates_not_held=[
            str(family["id"])
            for family in report.get("families") or ()
            if family.get("gate_held") is False
        ],
        percentage=float(report["percentage"]),
        totals=HistoryTotals(
            checks=int(report["total_checks"]),
            passed=int(report["passed_checks"]),
            failed=int(report["failed_checks"]),
            errored=int(report["errored_checks"]),
            skipped=int(report.get("skipped_checks") or 0),
            not_run=int(report.get("not_run_checks") or 0),
            cached=sum(check.cached for check in checks),
            flaky=sum(check.flaky for check in checks),
        ),
        cost_usd=cost,
        tokens=tokens,
        checks=checks,
        partial_families={
            str(family["id"]): int(family["of_cases"])
            for family in report.get("families") or ()
            if family.get("of_cases") is not None
        },
    )
