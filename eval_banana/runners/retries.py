"""Retries for judges whose agent process failed (`[harness] retries`, `--retries N`).

Only an `infrastructure` error (`details.error_class`, see eval_banana.harness.errorclass) of
an agent process that ran (`details.agent_failure`: a non-zero exit, a timeout, no verdict)
whose cause is transient (`details.error_transient`) is run again: a rate limit, a provider
outage, a crash or a timeout may pass the next time; a missing CLI (a wrapper's exit 127) or
refused credentials (HTTP 401/403) would fail the same way. A pass
or a fail is a verdict and stands, and so does an agent's failure after it printed a verdict or
a malformed one (never transient: eval_banana.harness.errorclass); a `verdict` error (the agent
answered without a valid verdict) would most likely answer the same way; a stop (interrupt,
fuse) ends the run; a setup error (no agent, a model the template cannot take, a prompt too
large) would fail the same way.

Every attempt runs under the check's evidence stem, so `checks/<stem>.stdout.txt` and its
siblings always hold the latest attempt and every reader of one attempt keeps working. Before
the next attempt starts, the finished one's files move to `checks/<stem>.attempt<n>.*`, its
result to `checks/<stem>.attempt<n>.json`. The final result lists every attempt in
`details.attempts`, and its `details.usage` is the sum of every attempt's (each attempt keeps its
own in `details.attempts[].usage`): every attempt was paid for.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from eval_banana.harness.usage import summed_usage
from eval_banana.models.result import CheckResult
from eval_banana.runners.base import RunContext
from eval_banana.runners.results import elapsed_ms, iso

RETRIED_TYPES = frozenset({"harness_judge"})
RETRYABLE_FAILURES = frozenset({"exit_code", "timeout", "no_verdict"})
# Evidence a judge run leaves under checks/, by the key used in details.attempts[].evidence.
EVIDENCE_SUFFIXES: dict[str, str] = {
    "stdout": ".stdout.txt",
    "stderr": ".stderr.txt",
    "prompt": ".prompt.txt",
    "transcript": ".transcript.jsonl",
}


class RunOnce(Protocol):
    def __call__(self, *, ctx: RunContext) -> CheckResult: ...


WriteResult = Callable[..., object]  # write_check_result(checks_dir=, stem=, result=)


def attempt_stem(*, stem: str, attempt: int) -> str:
    """The stem an earlier attempt's files are kept under: `<stem>.attempt<n>`."""
    return f"{stem}.attempt{attempt}"


def is_retryable(*, result: CheckResult) -> bool:
    """A transient infrastructure error of the agent process; never a verdict, a stop, a setup
    problem or a cause a retry cannot cure (a missing CLI, refused credentials)."""
    details = result.details
    return (
        result.status == "error"
        and details.get("error_class") == "infrastructure"
        and details.get("error_transient") is not False
        and details.get("agent_failure") in RETRYABLE_FAILURES
    )


def attempt_count(*, details: dict[str, Any]) -> int:
    """How many times the check ran (1 when no retry was configured)."""
    attempts = details.get("attempts")
    return len(attempts) if isinstance(attempts, list) and attempts else 1


def attempts_needed(*, details: dict[str, Any]) -> int:
    """The most attempts one run of the check took: its own, or for a sampled check the most
    any of its samples took (each sample is retried on its own). What a check is flagged with."""
    most = attempt_count(details=details)
    samples = details.get("samples")
    for sample in samples if isinstance(samples, list) else []:
        attempts = sample.get("attempts") if isinstance(sample, dict) else None
        if type(attempts) is int and attempts > most:
            most = attempts
    return most


def _existing_evidence(*, checks_dir: Path, stem: str) -> dict[str, str]:
    return {
        key: f"checks/{stem}{suffix}"
        for key, suffix in EVIDENCE_SUFFIXES.items()
        if (checks_dir / f"{stem}{suffix}").is_file()
    }


def _record(*, attempt: int, result: CheckResult, evidence: dict[str, str]) -> dict[str, Any]:
    """One entry of details.attempts."""
    return {
        "attempt": attempt,
        "status": result.status,
        "reason": result.reason,
        "error_detail": result.error_detail,
        "agent_failure": result.details.get("agent_failure"),
        "error_class": result.details.get("error_class"),
        "exit_code": result.exit_code,
        "started_at": result.started_at,
        "duration_ms": result.duration_ms,
        "usage": result.details.get("usage"),
        "evidence": evidence,
    }


def _set_aside(
    *, ctx: RunContext, attempt: int, result: CheckResult, write_result: WriteResult
) -> dict[str, Any]:
    """Move a finished attempt's files to attempt names; return its details.attempts entry."""
    target = attempt_stem(stem=ctx.stem, attempt=attempt)
    evidence: dict[str, str] = {}
    for key, suffix in EVIDENCE_SUFFIXES.items():
        source = ctx.evidence_path(suffix)
        if source.is_file():
            os.replace(source, ctx.checks_dir / f"{target}{suffix}")
            evidence[key] = f"checks/{target}{suffix}"
    details = dict(result.details)
    if details.get("raw_response_path") is not None:
        details["raw_response_path"] = evidence.get("stdout")
    if details.get("transcript_path") is not None:
        details["transcript_path"] = evidence.get("transcript")
    kept = result.model_copy(update={"details": details})
    write_result(checks_dir=ctx.checks_dir, stem=target, result=kept)
    evidence["result"] = f"checks/{target}.json"
    return _record(attempt=attempt, result=kept, evidence=evidence)


def run_attempts(
    *, ctx: RunContext, run_once: RunOnce, retries: int, write_result: WriteResult
) -> CheckResult:
    """Run the check, then up to `retries` more times while its agent process keeps failing.

    With `retries` 0 (or a check type that is never retried) this is exactly one run. Each
    attempt counts against the token fuse and the run timeout like any judge run, and no retry
    starts once the run is stopping.
    """
    if retries <= 0 or ctx.check.type not in RETRIED_TYPES:
        return run_once(ctx=ctx)
    records: list[dict[str, Any]] = []
    attempt = 1
    result = run_once(ctx=ctx)
    first_started = result.started_at
    while attempt <= retries and is_retryable(result=result) and not ctx.cancel.is_set():
        records.append(
            _set_aside(ctx=ctx, attempt=attempt, result=result, write_result=write_result)
        )
        attempt += 1
        result = run_once(ctx=ctx)
    evidence = _existing_evidence(checks_dir=ctx.checks_dir, stem=ctx.stem)
    evidence["result"] = ctx.evidence_name(".json")
    records.append(_record(attempt=attempt, result=result, evidence=evidence))
    details = {**result.details, "attempts": records}
    if len(records) > 1:
        # Every attempt was paid for and counted by the fuses: the check's usage is all of them.
        details["usage"] = summed_usage([record["usage"] for record in records])
    started = datetime.fromisoformat(first_started)
    completed = datetime.fromisoformat(result.completed_at)
    return result.model_copy(
        update={
            "started_at": iso(started),
            "duration_ms": elapsed_ms(started=started, completed=completed),
            "details": details,
        }
    )
