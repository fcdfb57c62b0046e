"""A sample run history written as eb writes it (`history.store.write_record`), for the
history page's tests and its screenshot in docs/."""

from __future__ import annotations

import hashlib
from pathlib import Path

from eval_banana.history.record import GitState, HistoryCheck, HistoryRecord, HistoryTotals
from eval_banana.history.store import write_record

# A check whose id and reason are markup: the page must show them as text.
HOSTILE_ID = "x<script>alert(1)</script>"


def _status(check_id: str, run: int) -> str:
    if check_id == "flipper":
        return "passed" if run % 2 == 0 else "failed"
    if check_id == "breaker":
        return "passed" if run < 6 or run % 12 == 11 else "failed"
    if check_id == "refunds[late]":
        return "error" if run in (3, 4) else "passed"
    return "passed"


def _digest(check_id: str, run: int) -> str:
    # `breaker` was edited at run 6: its definition digest changes there.
    edited = check_id == "breaker" and run >= 6
    return "sha256:" + hashlib.sha256(f"{check_id} {edited}".encode()).hexdigest()


CHECKS: dict[str, list[str]] = {
    "steady": ["fast"],
    "flipper": ["judge"],
    "breaker": ["fast"],
    "refunds[early]": ["dataset"],
    "refunds[late]": ["dataset"],
    HOSTILE_ID: ["<b>odd</b>"],
}


def write_sample_history(*, folder: Path, runs: int = 9) -> list[str]:
    """`runs` run records of CHECKS in `folder`; the run ids, oldest first."""
    ids = []
    for run in range(runs):
        checks = [
            HistoryCheck(
                id=check_id,
                family=check_id.split("[")[0] if "[" in check_id else None,
                type="deterministic",
                tags=tags,
                status=_status(check_id, run),  # type: ignore[arg-type]
                digest=_digest(check_id, run),
                duration_ms=100 * (run + 1) + len(check_id),
                cost_usd=0.01 * run if check_id == "flipper" else None,
            )
            for check_id, tags in CHECKS.items()
        ]
        passed = sum(check.status == "passed" for check in checks)
        failed = sum(check.status == "failed" for check in checks)
        run_id = f"20260101T00{run:02d}00Z-run{run:02d}"
        record = HistoryRecord(
            tool_version="0.0.0",
            run_id=run_id,
            kind="run",
            started_at=f"2026-01-01T00:{run:02d}:00+00:00",
            finished_at=f"2026-01-01T00:{run:02d}:05+00:00",
            duration_ms=1000 + 250 * run,
            git=GitState(commit=hashlib.sha1(str(run).encode()).hexdigest(), dirty=False),
            passed=passed == len(checks),
            exit_code=0 if passed == len(checks) else 1,
            percentage=100.0 * passed / len(checks),
            totals=HistoryTotals(
                checks=len(checks),
                passed=passed,
                failed=failed,
                errored=len(checks) - passed - failed,
            ),
            cost_usd=round(0.01 * run + 0.005, 6),
            checks=checks,
        )
        write_record(folder=folder, record=record)
        ids.append(run_id)
    return ids
