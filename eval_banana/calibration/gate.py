"""Which judges may gate a run: `[harness] require_calibration` and `[harness] min_agreement`.

A judge passes the gate when it has calibration cases of both labels (known-good and
known-bad), `calibration.json` holds a record of it measured under the key it would run under
now, that record agrees with its own per-case results (its figures are computed again from its
samples, never taken as stored), and the agreement reaches min_agreement, as do its true-fail
rate (on the known-bad cases) and its true-pass rate (on the known-good ones) each. The guard
refuses the others (and `eb validate` lists them).
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from eval_banana.calibration.family import judges_of
from eval_banana.calibration.figures import (
    Figures,
    case_problems,
    cases_of,
    figure_problems,
    figures_of,
    older_form,
    rule_problems,
)
from eval_banana.calibration.key import calibration_key, key_differences, missing_parts
from eval_banana.calibration.store import UnreadableRecord, read_record
from eval_banana.models.calibration import CalibrationDoc, JudgeCalibration
from eval_banana.models.config import Settings
from eval_banana.models.repeats import rule_of, sample_count
from eval_banana.models.stages import (
    ConfigDoc,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
    ResolvedHarness,
)
from eval_banana.settings.folders import record_path
from eval_banana.settings.origin import SettingOrigin, origin_in


def _rerun(check: PlannedCheck) -> str:
    return f"Run `eb calibrate --check-id {check.id}` and commit .eval-banana/calibration.json."


# Each label a judge's cases must include, and the judge that would agree with every case if
# that label were missing: cases of one label cannot tell a judge from one that always says so.
_LABELS = (
    ("pass", "known-good", "fails everything"),
    ("fail", "known-bad", "passes everything"),
)


def _missing_label(*, check: PlannedCheck) -> tuple[str, str] | None:
    """(message, hint) for a judge whose calibration cases lack a known-good or a known-bad
    case, else None."""
    row = " with `case:`, the row it is judged with," if check.family else ""
    labels = {case.get("expect") for case in cases_of(check)}
    for expect, kind, blind in _LABELS:
        if expect not in labels:
            return (
                f"has no {kind} calibration case (expect: {expect}), so a judge that {blind} "
                "would agree with all of its cases",
                f"Add a {kind} case (`expect: {expect}`){row} to `calibration:` in "
                f"{check.source_path} (see docs/judges.md), then run `eb calibrate "
                f"--check-id {check.id}`.",
            )
    return None


class Floor(NamedTuple):
    """What a judge's measured figures are held to: min_agreement, and the samples a run
    decides each judge from (its own repeats, else `[core] repeats`), each where it was set."""

    min_agreement: float
    min_agreement_origin: SettingOrigin
    repeats: int
    repeats_origin: SettingOrigin


def _judge_problem(
    *,
    check: PlannedCheck,
    record: CalibrationDoc | None,
    harness: ResolvedHarness,
    settings: Settings,
    label: str,
    floor: Floor,
) -> ProblemModel | None:
    def problem(message: str, hint: str) -> ProblemModel:
        return ProblemModel(
            message=f"{label} {message}",
            file=check.source_path,
            field_path="calibration",
            hint=hint,
        )

    if not check.definition.get("calibration"):
        row = " (each with `case:`, the row it is judged with)" if check.family else ""
        return problem(
            "has no calibration cases, so nobody has measured that it tells good from bad",
            "Add `calibration:` with at least one known-good (expect: pass) and one known-bad "
            f"(expect: fail) case{row} (see docs/judges.md), then run `eb calibrate "
            f"--check-id {check.id}`.",
        )
    one_sided = _missing_label(check=check)
    if one_sided is not None:
        return problem(*one_sided)
    entry = record.checks.get(check.id) if record is not None else None
    if entry is None:
        return problem("has not been calibrated (no record in calibration.json)", _rerun(check))
    found = _record_problem(
        check=check, entry=entry, harness=harness, settings=settings, floor=floor
    )
    return None if found is None else problem(*found)


def _record_problem(
    *,
    check: PlannedCheck,
    entry: JudgeCalibration,
    harness: ResolvedHarness,
    settings: Settings,
    floor: Floor,
) -> tuple[str, str] | None:
    """(message, hint) when the judge's entry may not let it gate, else None."""
    older = missing_parts(entry.key)
    if older:
        # Fail closed: such a key could not tell one [harness.env] model or gateway from another.
        return (
            "was calibrated under another key, of an older eb that did not record its "
            f"{' or '.join(older)}",
            _rerun(check),
        )
    changed = key_differences(
        recorded=entry.key,
        current=calibration_key(check=check, harness=harness, settings=settings),
    )
    if changed:
        return (
            f"was calibrated under another key: its {', '.join(changed)} changed since",
            _rerun(check),
        )
    if older_form(entry):
        # Fail closed: its figures judged each sample alone, which `aggregate: any` outvotes.
        return (
            "has a calibration record of an older eb, which scored each sample alone, not the "
            "verdict its aggregate rule decides from its samples",
            _rerun(check),
        )
    # The stored figures are a summary; the samples are what was measured.
    inconsistent = (
        figure_problems(entry)
        + case_problems(entry=entry, cases=cases_of(check))
        + rule_problems(entry=entry, check=check)
    )
    if inconsistent:
        return (
            "has a calibration record that disagrees with its own per-case results: "
            + "; ".join(inconsistent),
            "The record was edited or damaged: " + _rerun(check),
        )
    return _measured_problem(check=check, entry=entry, floor=floor)


def _measured_problem(
    *, check: PlannedCheck, entry: JudgeCalibration, floor: Floor
) -> tuple[str, str] | None:
    """(message, hint) when the verdicts this run would reach, as its samples show them, fall
    short of min_agreement, else None. A run decides the judge from `size` samples by its
    rule, so its record's samples are taken `size` at a time, each group one verdict."""
    rule = rule_of(definition=check.definition)
    size = sample_count(definition=check.definition, default=floor.repeats)
    per_case = entry.samples_per_case
    if per_case % size:
        return (
            f"is decided in this run from {size} samples by its rule '{rule}' "
            f"({floor.repeats_origin.given(floor.repeats)}), but its calibration took "
            f"{per_case} sample{'' if per_case == 1 else 's'} per case, which make no whole "
            "number of such verdicts",
            f"Run `eb calibrate --check-id {check.id} --repeats {size}` and commit "
            ".eval-banana/calibration.json, or run with the repeats it was calibrated with.",
        )
    measured = figures_of(entry.outcomes, rule=rule, size=size)
    counted = "samples" if size == 1 else "verdicts"
    how = f" (each decided from {size} samples by its rule '{rule}', as a run decides it)"
    if size == 1:
        how = ""
    short = _below_floor(measured=measured, floor=floor, counted=counted, how=how)
    if short is None:
        return None
    return (
        short,
        "Improve the judge's instructions (or fix a mislabelled case), run `eb calibrate` "
        f"again, or lower {floor.min_agreement_origin.named}.",
    )


# Each label's rate, held to min_agreement on its own: overall agreement alone lets a judge
# that passes everything through when known-good cases outnumber known-bad ones (3 to 1: 0.75).
_RATES = (
    ("true_fail_rate", "true-fail rate", "known-bad", "failed", "it would let defects through"),
    ("true_pass_rate", "true-pass rate", "known-good", "passed", "it would block good work"),
)


def _short_rates(*, measured: Figures, min_agreement: float, counted: str) -> list[str]:
    """Each label's rate below min_agreement, in words (a rate with no case counts as 0)."""
    found = []
    for name, words, kind, did, harm in _RATES:
        rate = getattr(measured, name)
        if rate is None or rate < min_agreement:
            shown = "n/a" if rate is None else f"{rate:.2f}"
            found.append(
                f"{words} {shown} (the share of its {counted} on {kind} cases it {did}: {harm})"
            )
    return found


def _below_floor(*, measured: Figures, floor: Floor, counted: str, how: str) -> str | None:
    """Why the measured figures fall short of min_agreement (named where it was set), or None:
    the agreement over all `counted` (samples or verdicts) and each label's rate must each
    reach it."""
    least = floor.min_agreement
    rates = _short_rates(measured=measured, min_agreement=least, counted=counted)
    named = f"min_agreement {least:g}"
    given = floor.min_agreement_origin.given(least)
    agreed = f"{measured.cases_agreed} of {measured.cases} cases agreed"
    if measured.agreement < least:
        verb = "is" if len(rates) == 1 else "are"
        also = f"; so {verb} its {' and its '.join(rates)}" if rates else ""
        return (
            f"agreed with its calibration cases on {measured.agreement:.2f} of its "
            f"{counted}{how}, below {named} ({agreed}; {given}){also}"
        )
    if rates:
        return (
            f"has a {' and a '.join(rates)}, below {named} ({given}), though it agreed with "
            f"its calibration cases on {measured.agreement:.2f} of its {counted}{how} "
            f"({agreed}): {named} holds for its known-good and its known-bad cases each"
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
    floor = Floor(
        min_agreement=config.settings.harness.min_agreement,
        min_agreement_origin=origin_in(config=config, name="harness.min_agreement"),
        repeats=config.settings.core.repeats,
        repeats_origin=origin_in(config=config, name="core.repeats"),
    )
    # A family's cases are one judge with one calibration, so they make one problem: a
    # family of 10,000 cases is one line, not 10,000.
    cases = Counter(check.family for check in judges if check.family is not None)
    found: list[ProblemModel] = []
    for judge in judges_of(judges, family_calibration=plan.family_calibration):
        label = f"Judge check '{judge.id}'"
        if judge.family is not None:
            count = cases[judge.family]
            label = f"Judge family '{judge.family}' ({count:,} case{'' if count == 1 else 's'})"
        problem = _judge_problem(
            check=judge,
            record=record,
            harness=harness,
            settings=config.settings,
            label=label,
            floor=floor,
        )
        if problem is not None:
            found.append(problem)
    return found
