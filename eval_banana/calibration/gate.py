"""Which judges may gate a run: `[harness] require_calibration` and `[harness] min_agreement`.

A judge passes the gate when it has calibration cases, `calibration.json` holds a record of it
measured under the key it would run under now, that record agrees with its own per-case results
(its figures are computed again from its samples, never taken as stored), and the agreement
reaches min_agreement. The guard refuses the others (and `eb validate` lists them).
"""

from __future__ import annotations

from eval_banana.calibration.figures import (
    case_problems,
    cases_of,
    figure_problems,
    figures_of,
)
from eval_banana.calibration.key import calibration_key, key_differences
from eval_banana.calibration.store import UnreadableRecord, read_record
from eval_banana.models.calibration import CalibrationDoc
from eval_banana.models.stages import (
    ConfigDoc,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
    ResolvedHarness,
)
from eval_banana.settings.folders import record_path


def _rerun(check: PlannedCheck) -> str:
    return f"Run `eb calibrate --check-id {check.id}` and commit .eval-banana/calibration.json."


def _judge_problem(
    *, check: PlannedCheck, record: CalibrationDoc | None, harness: ResolvedHarness, floor: float
) -> ProblemModel | None:
    def problem(message: str, hint: str) -> ProblemModel:
        return ProblemModel(
            message=f"Judge check '{check.id}' {message}",
            file=check.source_path,
            field_path="calibration",
            hint=hint,
        )

    if not check.definition.get("calibration"):
        return problem(
            "has no calibration cases, so nobody has measured that it tells good from bad",
            "Add `calibration:` with at least one known-good (expect: pass) and one known-bad "
            f"(expect: fail) case (see docs/judges.md), then run `eb calibrate --check-id "
            f"{check.id}`.",
        )
    entry = record.checks.get(check.id) if record is not None else None
    if entry is None:
        return problem("has not been calibrated (no record in calibration.json)", _rerun(check))
    changed = key_differences(
        recorded=entry.key, current=calibration_key(check=check, harness=harness)
    )
    if changed:
        return problem(
            f"was calibrated under another key: its {', '.join(changed)} changed since",
            _rerun(check),
        )
    # The stored figures are a summary; the samples are what was measured.
    inconsistent = figure_problems(entry) + case_problems(entry=entry, cases=cases_of(check))
    if inconsistent:
        return problem(
            "has a calibration record that disagrees with its own per-case results: "
            + "; ".join(inconsistent),
            "The record was edited or damaged: " + _rerun(check),
        )
    measured = figures_of(entry.outcomes)
    if measured.agreement < floor:
        return problem(
            f"agreed with its calibration cases on {measured.agreement:.2f} of its samples, "
            f"below [harness] min_agreement {floor:g} ({measured.cases_agreed} of "
            f"{measured.cases} cases agreed)",
            "Improve the judge's instructions (or fix a mislabelled case), run `eb calibrate` "
            "again, or lower [harness] min_agreement.",
        )
    return None


def calibration_problems(
    *, config: ConfigDoc, plan: PlanDoc, harness: ResolvedHarness
) -> list[ProblemModel]:
    """The gate's refusals, one per planned judge that may not gate a run (errors with the
    gate on, `eb validate`'s warnings with it off)."""
    judges = [check for check in plan.checks if check.type == "harness_judge"]
    if not judges:
        return []
    path = record_path(config=config)
    try:
        record = read_record(path=path)
    except UnreadableRecord as exc:
        return [
            ProblemModel(
                message=f"The calibration record cannot be used: {exc}",
                file=str(path),
                field_path=exc.field_path,
                hint="Run `eb calibrate` to write it again.",
            )
        ]
    floor = config.settings.harness.min_agreement
    families: dict[str, list[PlannedCheck]] = {}
    found: list[ProblemModel] = []
    for check in judges:
        if check.family is not None and not check.definition.get("calibration"):
            families.setdefault(check.family, []).append(check)
            continue
        problem = _judge_problem(check=check, record=record, harness=harness, floor=floor)
        if problem is not None:
            found.append(problem)
    # A family's cases share one reason, so they make one problem: a family of 10,000 cases
    # is one line, not 10,000.
    found.extend(_family_problem(family=family, cases=cases) for family, cases in families.items())
    return found


def _family_problem(*, family: str, cases: list[PlannedCheck]) -> ProblemModel:
    """Why no case of a judge family may gate a run: a family carries no calibration cases."""
    count = len(cases)
    return ProblemModel(
        message=f"Judge family '{family}' ({count:,} case{'' if count == 1 else 's'}) has no "
        "calibration cases, so nobody has measured that its judge tells good from bad",
        file=cases[0].source_path,
        field_path="calibration",
        hint="A family cannot carry `calibration:` (each case renders its own prompt): "
        "`min_pass_rate` gates it on its own results (docs/datasets.md).",
    )
