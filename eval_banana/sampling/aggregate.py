"""One check's result from its samples: an error decides first, then the rule; disagreement shows.

The result is what the check itself reached (its observed status); the execute stage then
applies a control's expectation to it like to any other result, so a control (expect: fail)
is judged on the rule's outcome, never sample by sample.
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from eval_banana.harness.usage import summed_usage
from eval_banana.models.repeats import decided_status
from eval_banana.models.result import NOT_RUN, STOPPED, CheckResult, Status
from eval_banana.models.stages import PlannedCheck
from eval_banana.runners.results import build_result, error_result, stopped_detail
from eval_banana.runners.retries import EVIDENCE_SUFFIXES, attempt_count

# Keys of a sample's own result that belong to that sample only, not to the check's result: a
# check some of whose samples started was running, never `not_run` (docs/fail-closed.md).
_PER_RUN_KEYS = ("attempts", "cache", NOT_RUN)


def sample_stem(*, stem: str, sample: int) -> str:
    """The evidence stem of sample `sample` (1-based): `<stem>.s<k>`."""
    return f"{stem}.s{sample}"


def observed(result: CheckResult) -> Status:
    """What a sample itself reached, before any expectation."""
    return result.observed_status or result.status


def sample_record(
    *, sample: int, result: CheckResult, checks_dir: Path, stem: str, wrote_result: bool
) -> dict[str, Any]:
    """One entry of `details.samples`: the sample's outcome and where its evidence is."""
    evidence = {
        key: f"checks/{stem}{suffix}"
        for key, suffix in EVIDENCE_SUFFIXES.items()
        if (checks_dir / f"{stem}{suffix}").is_file()
    }
    if (checks_dir / stem).is_dir():
        evidence["output_dir"] = f"checks/{stem}"  # a deterministic script's output_dir
    if wrote_result:
        evidence["result"] = f"checks/{stem}.json"
    status = observed(result)
    return {
        "sample": sample,
        "status": status,
        "score": 1 if status == "passed" else 0,
        "reason": result.reason,
        "error_detail": result.error_detail,
        "exit_code": result.exit_code,
        "started_at": result.started_at,
        "duration_ms": result.duration_ms,
        "attempts": attempt_count(details=result.details),
        "usage": result.details.get("usage"),
        "not_run": result.details.get("not_run") is True,
        "evidence": evidence,
    }


def _outvotable(result: CheckResult) -> bool:
    """An errored sample the others may outvote: one whose judge judged nothing (an
    infrastructure error) or that has no class at all (a script's error); a judge that answered
    without a verdict, changed the project or was stopped by a fuse never is."""
    found = result.details.get("error_class")
    return found is None or found == "infrastructure"


def _representative(*, samples: list[CheckResult], status: Status) -> int:
    """The first sample that reached the check's outcome: its words explain the verdict. For an
    error, the first whose error no other sample can outvote, when there is one: its class
    (`details.error_class`) is the check's, whatever order the samples ended in."""
    reached = [index for index, result in enumerate(samples) if observed(result) == status]
    if status == "error":
        lasting = [index for index in reached if not _outvotable(samples[index])]
        reached = lasting or reached
    return reached[0] if reached else 0


def _halted(result: CheckResult) -> bool:
    """A sample the stopping run ended part-way or never started."""
    return any(result.details.get(flag) is True for flag in (NOT_RUN, STOPPED))


def _error_detail(
    *, samples: list[CheckResult], chosen: int, cancel: threading.Event
) -> tuple[str, bool]:
    """The check's `error_detail`, and whether the run stopped it: a check whose samples did
    not all finish reads `Stopped: <why>` first, as a check stopped while running does."""
    total = len(samples)
    picked = samples[chosen]
    errored = sum(1 for result in samples if observed(result) == "error")
    quoted = f"{errored} of {total} samples errored; sample {chosen + 1}: "
    quoted += picked.error_detail or "error"
    halted = sum(1 for result in samples if _halted(result))
    if not halted:
        return quoted, False
    stopped = f"{stopped_detail(cancel=cancel)} ({halted} of {total} samples did not finish)"
    # The stop is the whole story unless another sample's error explains the check.
    return (stopped if _halted(picked) else f"{stopped}; {quoted}"), True


def aggregate_samples(
    *,
    check: PlannedCheck,
    samples: list[CheckResult],
    records: list[dict[str, Any]],
    rule: str,
    cancel: threading.Event,
) -> CheckResult:
    """The check's observed result from its samples (in sample order) under `rule`.

    Every sample counts: any error makes the check an error (a broken judge must not be
    outvoted); otherwise the rule decides. Samples that both passed and failed mark the check
    `flaky` whatever the rule decided. Samples the stopping run (`cancel`) ended or never
    started make it an error the run stopped (`details.stopped`).
    """
    total = len(samples)
    statuses = [observed(result) for result in samples]
    passed, failed = (statuses.count(name) for name in ("passed", "failed"))
    started = min(datetime.fromisoformat(result.started_at) for result in samples)
    completed = max(datetime.fromisoformat(result.completed_at) for result in samples)
    status: Status = decided_status(statuses=statuses, rule=rule)
    chosen = _representative(samples=samples, status=status)
    picked = samples[chosen]
    details = {key: value for key, value in picked.details.items() if key not in _PER_RUN_KEYS}
    if any("usage" in result.details for result in samples):
        details["usage"] = summed_usage([result.details.get("usage") for result in samples])
    details.update(
        samples=records,
        aggregate=rule,
        pass_rate=passed / total,
        flaky=passed > 0 and failed > 0,
    )
    tally = f"{passed} of {total} samples passed"
    common: dict[str, Any] = {
        "check": check,
        "started": started,
        "completed": completed,
        "exit_code": picked.exit_code,
        "details": details,
    }
    if status == "error":
        error_detail, stopped = _error_detail(samples=samples, chosen=chosen, cancel=cancel)
        if stopped:
            details[STOPPED] = True
        # No reason: the error is what a reader must see first, whatever the others said.
        return error_result(error_detail=error_detail, **common)
    said = f"; sample {chosen + 1}: {picked.reason}" if picked.reason else ""
    return build_result(status=status, reason=f"{tally} ({rule}){said}", **common)
