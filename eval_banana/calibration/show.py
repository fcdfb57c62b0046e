"""What `eb calibrate` prints per judge: cases agreed, the two rates, and every disagreement."""

from __future__ import annotations

from pathlib import Path

from eval_banana.calibration.figures import case_verdicts
from eval_banana.models.calibration import CaseOutcome, JudgeCalibration

_SAID = {"passed": "passed", "failed": "failed", "error": "errored"}


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _rates(*, true_pass: float | None, true_fail: float | None, agreement: float | None) -> str:
    return (
        f"true-pass rate {_ratio(true_pass)}, true-fail rate {_ratio(true_fail)}, "
        f"agreement {_ratio(agreement)}"
    )


def _verdict_lines(*, outcome: CaseOutcome, rule: str, size: int) -> list[str]:
    """One line per verdict on the case that disagreed with its label (a verdict of several
    samples, decided by the judge's rule as a run decides it): the very verdicts the figures
    count (case_verdicts)."""
    lines = []
    verdicts = case_verdicts(samples=outcome.samples, expect=outcome.expect, rule=rule, size=size)
    for verdict in verdicts:
        if verdict.agrees:
            continue
        status = verdict.status
        counted = "errored" if status == "error" else "passed"
        tally = sum(sample.status == status for sample in verdict.samples)
        how = "" if status == "error" else f" by its rule '{rule}'"
        lines.append(
            f"  - case '{outcome.name}' (expect {outcome.expect}) samples {verdict.first + 1}-"
            f"{verdict.first + size}: the check {_SAID[status]}{how} ({tally} of {size} samples "
            f"{counted})"
        )
    return lines


def judge_lines(entry: JudgeCalibration) -> list[str]:
    """The lines of one judge: a verdict line, its figures, then one line per disagreement."""
    verdict = "AGREED" if entry.cases_agreed == entry.cases else "DISAGREED"
    size = entry.samples_per_verdict or 1
    rule = entry.aggregate or "all"
    each = f"{entry.samples_per_case} sample{'s' if entry.samples_per_case != 1 else ''} each"
    if size > 1:
        each += f", a verdict of {size} by its rule '{rule}'"
    lines = [
        f"{verdict} {entry.check_id}: {entry.cases_agreed}/{entry.cases} cases agreed ({each})",
        "  "
        + _rates(
            true_pass=entry.true_pass_rate,
            true_fail=entry.true_fail_rate,
            agreement=entry.agreement,
        ),
    ]
    if size > 1:
        # Each sample alone: how steady the judge is, beside what its verdicts came to.
        lines.append(
            "  each sample alone: "
            + _rates(
                true_pass=entry.sample_true_pass_rate,
                true_fail=entry.sample_true_fail_rate,
                agreement=entry.sample_agreement,
            )
        )
    for outcome in entry.outcomes:
        if size > 1:
            lines.extend(_verdict_lines(outcome=outcome, rule=rule, size=size))
        for sample in outcome.samples:
            if sample.agreed:
                continue
            why = " ".join((sample.reason or "no reason given").split())
            lines.append(
                f"  - case '{outcome.name}' (expect {outcome.expect}) sample {sample.sample}: "
                f"the judge {_SAID[sample.status]}: {why}"
            )
            # What the judge did on that case, to read why it disagreed.
            transcript = sample.evidence.get("transcript")
            if transcript is not None:
                lines.append(f"    transcript: {Path(entry.run_dir) / transcript}")
    return lines


def summary_lines(*, entries: list[JudgeCalibration], record: str, run_dir: str) -> list[str]:
    lines = [line for entry in entries for line in judge_lines(entry)]
    agreed = sum(entry.cases_agreed == entry.cases for entry in entries)
    lines.append(f"Judges agreed: {agreed}/{len(entries)}")
    lines.append(f"Record: {record}")
    lines.append(f"Evidence: {run_dir}")
    return lines
