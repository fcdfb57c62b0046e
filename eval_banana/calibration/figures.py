"""A judge's figures, from its per-case results: what `eb calibrate` writes and the gate uses.

A figure counts verdicts, each decided from samples of a case by the judge's aggregate rule as
a run decides the check (an error in any sample makes an error): a judge with `repeats: 5,
aggregate: any` that passes a known-bad case in one sample of five lets that defect through,
however often its other samples fail it. One sample per verdict scores each sample alone.

A record's stored figures are a summary of its samples. The gate never takes them on trust: it
computes them again from the samples (each verdict they decide against its case's label) and
uses those, and a record whose stored figures, agreement flags or cases disagree with them is
reported (a hand edit, a damaged file, a forgery), naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from eval_banana.models.calibration import (
    CaseOutcome,
    CaseSample,
    JudgeCalibration,
    SampleStatus,
)
from eval_banana.models.repeats import decided_status, rule_of, sample_count
from eval_banana.models.stages import PlannedCheck

# The figures a record stores that must be ratios (null: no case of that label).
RATIO_FIELDS: tuple[str, ...] = (
    "agreement",
    "true_pass_rate",
    "true_fail_rate",
    "sample_agreement",
    "sample_true_pass_rate",
    "sample_true_fail_rate",
)
# The per-sample figures a record keeps beside the verdicts' (by the field of each).
SAMPLE_FIELDS: dict[str, str] = {
    "sample_agreement": "agreement",
    "sample_true_pass_rate": "true_pass_rate",
    "sample_true_fail_rate": "true_fail_rate",
}
# What a record of an older eb lacks: it scored each sample alone, whatever the judge's rule.
VERDICT_FIELDS: tuple[str, ...] = ("aggregate", "samples_per_verdict", "sample_agreement")
# What a sample must have answered to agree with its case's label.
AGREEING_STATUS: dict[str, str] = {"pass": "passed", "fail": "failed"}


def cases_of(check: PlannedCheck) -> list[dict[str, Any]]:
    """The check's calibration cases, as its definition lists them."""
    cases = check.definition.get("calibration") or []
    return [case for case in cases if isinstance(case, dict)]


class Figures(NamedTuple):
    cases: int
    cases_agreed: int
    agreement: float
    true_pass_rate: float | None
    true_fail_rate: float | None


def sample_agrees(*, sample: CaseSample, expect: str) -> bool:
    """Whether a sample's answer is the verdict its case is labelled with (an error never is)."""
    return sample.status == AGREEING_STATUS.get(expect)


def _rate(agreed: Sequence[bool]) -> float | None:
    return sum(agreed) / len(agreed) if agreed else None


def verdict_of(*, samples: Sequence[CaseSample], rule: str) -> SampleStatus:
    """What a run decides from these samples under `rule`: an error in any is an error (a
    broken judge is never outvoted), else the rule decides (sampling/aggregate.py)."""
    return decided_status(statuses=[sample.status for sample in samples], rule=rule)


class CaseVerdict(NamedTuple):
    """One verdict on a case: its samples, the 0-based index of the first, and what they
    decide."""

    first: int
    samples: Sequence[CaseSample]
    status: SampleStatus
    agrees: bool


def case_verdicts(
    *, samples: Sequence[CaseSample], expect: str, rule: str, size: int
) -> list[CaseVerdict]:
    """The verdicts on a case: its samples in order, `size` at a time (a last group short of
    `size` makes none), each decided by `rule` and held against its label `expect`. The one
    place a case's verdicts are made: the figures the gate uses and the disagreements
    `eb calibrate` lists must be the same verdicts."""
    expected = AGREEING_STATUS.get(expect)
    verdicts = []
    for start in range(0, len(samples) - size + 1, size):
        group = samples[start : start + size]
        status = verdict_of(samples=group, rule=rule)
        verdicts.append(
            CaseVerdict(first=start, samples=group, status=status, agrees=status == expected)
        )
    return verdicts


def verdict_answers(
    *, samples: Sequence[CaseSample], expect: str, rule: str, size: int
) -> list[bool]:
    """Whether each verdict on a case agrees with its label `expect` (case_verdicts)."""
    verdicts = case_verdicts(samples=samples, expect=expect, rule=rule, size=size)
    return [verdict.agrees for verdict in verdicts]


def case_agreed(*, samples: Sequence[CaseSample], expect: str, rule: str, size: int) -> bool:
    """Whether every verdict on a case (there is at least one) agreed with its label."""
    answers = verdict_answers(samples=samples, expect=expect, rule=rule, size=size)
    return bool(answers) and all(answers)


def figures_of(outcomes: Iterable[CaseOutcome], *, rule: str, size: int) -> Figures:
    """The figures of these per-case results: the verdicts `size` samples at a time decide by
    `rule`, each against its case's label (`size` 1: each sample alone)."""
    by_label: dict[str, list[bool]] = {"pass": [], "fail": []}
    cases = agreed_cases = 0
    for outcome in outcomes:
        answers = verdict_answers(
            samples=outcome.samples, expect=outcome.expect, rule=rule, size=size
        )
        by_label[outcome.expect].extend(answers)
        cases += 1
        agreed_cases += bool(answers) and all(answers)
    every = by_label["pass"] + by_label["fail"]
    return Figures(
        cases=cases,
        cases_agreed=agreed_cases,
        agreement=_rate(every) or 0.0,
        true_pass_rate=_rate(by_label["pass"]),
        true_fail_rate=_rate(by_label["fail"]),
    )


def ratio_problem(value: object) -> str | None:
    """Why a stored figure is not a finite ratio in [0, 1] (None for null), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"is {value!r}, not a number"
    if not math.isfinite(value):
        return f"is {value!r}, not a finite number"
    if not 0.0 <= value <= 1.0:
        return f"is {value!r}, outside [0, 1]"
    return None


def document_ratio_problem(document: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field path, problem) of the first stored figure that is not a finite ratio, or None.

    Run on a document its schema accepted: JSON's NaN passes every minimum and maximum.
    """
    checks = document.get("checks")
    if not isinstance(checks, Mapping):
        return None
    for check_id, entry in checks.items():
        if not isinstance(entry, Mapping):
            continue
        for name in RATIO_FIELDS:
            problem = ratio_problem(entry.get(name))
            if problem is not None:
                return f"$.checks.{check_id}.{name}", problem
    return None


def _same(stored: float | None, computed: float | None) -> bool:
    """Exactly equal: eb writes the very float it computed, and JSON carries it unchanged."""
    if stored is None or computed is None:
        return stored is computed
    return stored == computed


def _shown(value: float | int | None) -> str:
    if value is None:
        return "null"
    return str(value) if isinstance(value, int) else f"{value:.4g}"


def _flag_problems(*, entry: JudgeCalibration, rule: str, size: int) -> list[str]:
    """Agreement flags and sample numbers that do not follow from the samples themselves."""
    found: list[str] = []
    for position, outcome in enumerate(entry.outcomes):
        where = f"outcomes[{position}]"
        answers = [sample_agrees(sample=one, expect=outcome.expect) for one in outcome.samples]
        for index, (sample, agrees) in enumerate(zip(outcome.samples, answers, strict=True)):
            if sample.agreed != agrees:
                found.append(
                    f"{where}.samples[{index}].agreed is {str(sample.agreed).lower()} for a "
                    f"sample that {sample.status} a case expected to {outcome.expect}"
                )
        agreed = case_agreed(samples=outcome.samples, expect=outcome.expect, rule=rule, size=size)
        if outcome.agreed != agreed:
            found.append(f"{where}.agreed does not follow from its samples")
        numbers = [sample.sample for sample in outcome.samples]
        # Compared without building 1..samples_per_case: a forged count of 10**9 must cost
        # nothing (it took all the memory of the machine).
        in_order = all(number == place for place, number in enumerate(numbers, start=1))
        if len(numbers) != entry.samples_per_case or not in_order:
            found.append(
                f"{where} holds samples {numbers}, not 1 to samples_per_case "
                f"({entry.samples_per_case})"
            )
    return found


def older_form(entry: JudgeCalibration) -> list[str]:
    """The fields of a verdict's figures an older eb did not write (empty: it wrote them)."""
    return [name for name in VERDICT_FIELDS if getattr(entry, name) is None]


def figure_problems(entry: JudgeCalibration) -> list[str]:
    """Where a record's entry disagrees with its own per-case results (empty: it agrees)."""
    rule, size = entry.aggregate, entry.samples_per_verdict
    if rule is None or size is None:
        return [f"it has no {' or '.join(older_form(entry))}"]
    if entry.samples_per_case % size:
        return [
            f"samples_per_verdict ({size}) does not divide samples_per_case "
            f"({entry.samples_per_case})"
        ]
    computed = figures_of(entry.outcomes, rule=rule, size=size)
    by_sample = figures_of(entry.outcomes, rule=rule, size=1)
    expected = [(name, getattr(computed, name)) for name in Figures._fields]
    expected += [(name, getattr(by_sample, of)) for name, of in SAMPLE_FIELDS.items()]
    found = [
        f"{name} is {_shown(getattr(entry, name))}, its samples give {_shown(value)}"
        for name, value in expected
        if not _same(getattr(entry, name), value)
    ]
    return found + _flag_problems(entry=entry, rule=rule, size=size)


def rule_problems(*, entry: JudgeCalibration, check: PlannedCheck) -> list[str]:
    """Where the record's rule or samples per verdict are not the check's own."""
    found = []
    rule = rule_of(definition=check.definition)
    if entry.aggregate != rule:
        found.append(f"its aggregate '{entry.aggregate}' is not the check's rule '{rule}'")
    size = own_samples(check)
    if entry.samples_per_verdict != size:
        found.append(
            f"its samples_per_verdict ({entry.samples_per_verdict}) is not the {size} "
            "sample(s) the check's file takes per verdict"
        )
    return found


def own_samples(check: PlannedCheck) -> int:
    """The samples a verdict of the check is decided from as its file says: its own repeats,
    else 1 (how many a run takes beyond that, `[core] repeats`, is the run's to say)."""
    return sample_count(definition=check.definition, default=1)


def case_problems(*, entry: JudgeCalibration, cases: Sequence[Mapping[str, Any]]) -> list[str]:
    """Where the record's cases are not the check's (by name and label, in order)."""
    recorded = [(outcome.name, outcome.expect) for outcome in entry.outcomes]
    defined = [(str(case.get("name")), str(case.get("expect"))) for case in cases]
    if recorded == defined:
        return []
    return [f"its cases {_pairs(recorded)} are not the check's calibration cases {_pairs(defined)}"]


def _pairs(pairs: Sequence[tuple[str, str]]) -> str:
    return "[" + ", ".join(f"'{name}' (expect {expect})" for name, expect in pairs) + "]"
