"""The end of `eb run` on the console, as pytest users expect it: the checks that never started
as one line, a recap of the failed and errored checks, and one closing line of counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from eval_banana.core.errors import Located
from eval_banana.core.words import one_line, plural
from eval_banana.reporting.common import Check, check_place, is_not_run, summary

RECAP_TITLE = "Failed and errored checks:"
# Ids named on the not-run line before `and N more`: a stopped run of thousands stays one line.
_NOT_RUN_IDS_SHOWN = 5


class Counts(NamedTuple):
    """What the closing line counts; `errored` leaves out the checks that never started."""

    failed: int
    passed: int
    errored: int
    skipped: int
    not_run: int


def counts(*, report: dict[str, Any]) -> Counts:
    checks: list[Check] = report["checks"]
    not_run = sum(1 for check in checks if is_not_run(check=check))
    return Counts(
        failed=sum(1 for check in checks if check.get("status") == "failed"),
        passed=sum(1 for check in checks if check.get("status") == "passed"),
        errored=sum(
            1 for check in checks if check.get("status") == "error" and not is_not_run(check=check)
        ),
        skipped=len(report.get("skipped") or []),
        not_run=not_run,
    )


def closing_line(*, report: dict[str, Any]) -> str:
    """`N failed, N passed, N errored, N skipped, N not run in 12.3s`: always all five."""
    tally = counts(report=report)
    seconds = int(report.get("duration_ms") or 0) / 1000
    return (
        f"{tally.failed} failed, {tally.passed} passed, {tally.errored} errored, "
        f"{tally.skipped} skipped, {tally.not_run} not run in {seconds:.1f}s"
    )


def not_run_text(*, report: dict[str, Any]) -> str | None:
    """The checks a stop or maxfail kept from starting, in one text: `<n> checks (<first ids>)
    - <why>`, one such part per reason joined by `; ` (None when there are none)."""
    by_reason: dict[str, list[str]] = {}
    for check in report["checks"]:
        if is_not_run(check=check):
            # One run holds back its checks for one reason; a merge of shards or an updated
            # run can hold several (one shard interrupted, another stopped by a fuse).
            why = str(check.get("error_detail") or "Not run").removeprefix("Not run: ")
            by_reason.setdefault(why, []).append(str(check["check_id"]))
    if not by_reason:
        return None
    return "; ".join(_held_back_part(ids=ids, why=why) for why, ids in by_reason.items())


def _held_back_part(*, ids: list[str], why: str) -> str:
    shown = ", ".join(ids[:_NOT_RUN_IDS_SHOWN])
    if len(ids) > _NOT_RUN_IDS_SHOWN:
        shown += f" and {len(ids) - _NOT_RUN_IDS_SHOWN:,} more"
    return f"{plural(count=len(ids), noun='check')} ({shown}) - {why}"


def not_run_line(*, report: dict[str, Any]) -> str | None:
    """The console's line for the checks that never started (None when there are none)."""
    text = not_run_text(report=report)
    return None if text is None else f"- not run: {text}"


def recap_lines(
    *, report: dict[str, Any], places: Mapping[str, Located] | None = None
) -> list[str]:
    """`FAILED <id> - <reason> (<check file>)` per failed check, then `ERROR ...`; [] if none.
    A case found in `places` names its row instead: `(data/qa.jsonl:31)`, as an editor or a
    terminal opens it."""
    root = str(report.get("project_root") or "")
    places = places or {}
    lines: list[str] = []
    for status, word in (("failed", "FAILED"), ("error", "ERROR")):
        for check in report["checks"]:
            if check.get("status") != status or is_not_run(check=check):
                continue
            text = summary(check=check)
            reason = f" - {one_line(text)}" if text else ""
            source = ""
            place = places.get(str(check["check_id"]))
            if (place is not None and place.file) or check.get("source_path"):
                file, line = check_place(check=check, project_root=root, place=place)
                source = f" ({file})" if line is None else f" ({file}:{line})"
            lines.append(f"{word} {check['check_id']}{reason}{source}")
    return [RECAP_TITLE, *lines] if lines else []
