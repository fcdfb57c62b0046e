"""Synthetic run records for the history tests: a series of runs from outcome strings."""

from __future__ import annotations

import json
from pathlib import Path

from eval_banana.history.record import HistoryCheck, HistoryRecord, HistoryTotals

_STATUS = {"P": "passed", "F": "failed", "E": "error"}


def digest(name: str) -> str:
    return "sha256:" + name.encode().hex().ljust(64, "0")[:64]


def check(
    *,
    check_id: str,
    outcome: str = "P",
    definition: str = "v1",
    duration_ms: int = 1000,
    cost_usd: float | None = None,
    cached: bool = False,
    early_error: bool = False,
    not_run: bool = False,
    tags: list[str] | None = None,
) -> HistoryCheck:
    return HistoryCheck(
        id=check_id,
        type="deterministic",
        tags=tags or [],
        status=_STATUS[outcome],
        digest=digest(definition),
        duration_ms=duration_ms,
        cost_usd=cost_usd,
        cached=cached,
        early_error=early_error,
        not_run=not_run,
    )


def record(*, index: int, checks: list[HistoryCheck], commit: str | None = None) -> HistoryRecord:
    """Run number `index` (its times sort by index)."""
    passed = sum(c.status == "passed" for c in checks)
    failed = sum(c.status == "failed" for c in checks)
    return HistoryRecord.model_validate(
        {
            "tool_version": "0.0.0",
            "run_id": f"20260101_0000{index:02d}_{index:08x}",
            "kind": "run",
            "started_at": f"2026-01-01T00:00:{index:02d}.000000+00:00",
            "finished_at": f"2026-01-01T00:00:{index:02d}.500000+00:00",
            "duration_ms": 500,
            "git": None if commit is None else {"commit": commit, "dirty": False},
            "passed": passed == len(checks),
            "exit_code": 0 if passed == len(checks) else 1,
            "percentage": 100.0 * passed / max(1, len(checks)),
            "totals": HistoryTotals(
                checks=len(checks),
                passed=passed,
                failed=failed,
                errored=len(checks) - passed - failed,
            ).model_dump(),
            "checks": [c.model_dump() for c in checks],
        }
    )


def write(*, folder: Path, records: list[HistoryRecord]) -> None:
    from eval_banana.history.store import record_file_name

    folder.mkdir(parents=True, exist_ok=True)
    for one in records:
        path = folder / record_file_name(record=one)
        path.write_text(json.dumps(one.model_dump(by_alias=True)), encoding="utf-8")
