"""What `eb calibrate` prints per judge: cases agreed, the two rates, and every disagreement."""

from __future__ import annotations

from pathlib import Path

from eval_banana.models.calibration import JudgeCalibration


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def judge_lines(entry: JudgeCalibration) -> list[str]:
    """The lines of one judge: a verdict line, its figures, then one line per disagreement."""
    verdict = "AGREED" if entry.cases_agreed == entry.cases else "DISAGREED"
    lines = [
        f"{verdict} {entry.check_id}: {entry.cases_agreed}/{entry.cases} cases agreed "
        f"({entry.samples_per_case} sample{'s' if entry.samples_per_case != 1 else ''} each)",
        f"  true-pass rate {_ratio(entry.true_pass_rate)}, true-fail rate "
        f"{_ratio(entry.true_fail_rate)}, agreement {entry.agreement:.2f}",
    ]
    for outcome in entry.outcomes:
        for sample in outcome.samples:
            if sample.agreed:
                continue
            said = {"passed": "passed", "failed": "failed", "error": "errored"}[sample.status]
            why = " ".join((sample.reason or "no reason given").split())
            lines.append(
                f"  - case '{outcome.name}' (expect {outcome.expect}) sample {sample.sample}: "
                f"the judge {said}: {why}"
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
