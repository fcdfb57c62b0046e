"""Why a run did not pass, in words: each reason the verdict rule (`stagefiles.verdict`) has.

Read from a report.json object (a score.json one has the same keys), for report.html's
verdict. A failed check is no reason of its own: it fails a run only through the threshold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eval_banana.core import verdictwords
from eval_banana.core.words import plural
from eval_banana.reporttext.notes import nothing_judged
from eval_banana.runners.results import aborted_text
from eval_banana.stagefiles.layout import REPORT_JSON

# When nothing below explains a failed run (a document that does not say why).
NO_REASON = "the run did not pass"


def failure_reasons(*, report: dict[str, Any]) -> list[str]:
    """Each reason the run did not pass; [] for a run that passed. An aborted run (a fuse, an
    interrupt) is told by its stop, not by these."""
    if report.get("run_passed"):
        return []
    reasons = [
        nothing_judged(report=report),
        _below_threshold(report=report),
        _errored(report=report),
        _halted(report=report),
        _flaky(report=report),
        _gates(report=report),
    ]
    found = [reason for reason in reasons if reason is not None]
    return found or [NO_REASON]


def abort_text(*, report: dict[str, Any]) -> str | None:
    """Why an aborted run stopped, as the error it ends with says it; None for a run that was
    not aborted."""
    aborted_by = report.get("aborted_by")
    if not aborted_by:
        return None
    return aborted_text(
        aborted_by=str(aborted_by),
        not_run=_not_run(report=report),
        report_json=str(Path(str(report.get("output_dir") or ".")) / REPORT_JSON),
    )


def not_passed_text(*, report: dict[str, Any]) -> str | None:
    """`Run did not pass: <each reason>` for a run that did not pass and was not aborted (an
    aborted one says `abort_text`); None for a run that passed."""
    if report.get("run_passed") or report.get("aborted_by"):
        return None
    return "Run did not pass: " + "; ".join(failure_reasons(report=report))


def _not_run(*, report: dict[str, Any]) -> int:
    return int(report.get("not_run_checks") or 0)


def threshold_text(*, report: dict[str, Any]) -> str:
    """`threshold 80%`: the run's pass threshold as its verdict names it."""
    return verdictwords.threshold_text(pass_threshold=float(report.get("pass_threshold", 1.0)))


def _below_threshold(*, report: dict[str, Any]) -> str | None:
    # With no check run the threshold is not met, but no ratio is below it: `nothing_judged`.
    if report.get("meets_threshold", False) or report.get("total_checks") == 0:
        return None
    return verdictwords.below_threshold(pass_threshold=float(report.get("pass_threshold", 1.0)))


def _errored(*, report: dict[str, Any]) -> str | None:
    return verdictwords.errored(
        errored=int(report.get("errored_checks") or 0), not_run=_not_run(report=report)
    )


def _halted(*, report: dict[str, Any]) -> str | None:
    if report.get("halted_by") != "maxfail":
        return None
    return f"maxfail stopped it ({plural(count=_not_run(report=report), noun='check')} not run)"


def _flaky(*, report: dict[str, Any]) -> str | None:
    return verdictwords.flaky(
        flaky=int(report.get("flaky_checks") or 0), fail_on_flaky=bool(report.get("fail_on_flaky"))
    )


def _gates(*, report: dict[str, Any]) -> str | None:
    return verdictwords.gates_not_held(
        families=[
            str(family.get("id"))
            for family in report.get("families") or []
            if isinstance(family, dict) and family.get("gate_held") is False
        ]
    )
