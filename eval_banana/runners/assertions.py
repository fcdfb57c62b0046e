"""`assertions` checks: path assertions on one artifact; a failed one is data, not an error."""

from __future__ import annotations

from pydantic import ValidationError

from eval_banana.assertions.evaluate import (
    AssertionOutcome,
    evaluate_all,
    fail_all,
    load_artifact,
    summarize,
)
from eval_banana.assertions.operators import ExpectedFrom
from eval_banana.models.assertions import AssertionsCheck
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import PlannedCheck
from eval_banana.runners.base import RunContext
from eval_banana.runners.results import build_result, error_result, utc_now


def _definition_problem(*, exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or '(check)'}: {error['msg']}"
        for error in exc.errors()
    )
    return f"Invalid assertions definition in the plan: {problems}"


def _graded_nothing(*, problem: str) -> str:
    """Why a control whose artifact could not be used is an error, and the fix."""
    return (
        f"Control graded nothing, so it caught no defect: {problem}. Make `artifact` "
        "(relative to the project root) name the seeded-defect file, a JSON or YAML document "
        "its assertions can read"
    )


def _expected_from(*, check: PlannedCheck, count: int) -> list[ExpectedFrom | None]:
    """Where each of the `count` assertions' values was written: a family's whole placeholder
    in the case's row (in its file's format), anything else in the check file, with the plain
    scalars it writes there that YAML 1.1 read as no text; unknown for a case planned without
    that record."""
    words = _plain_words(check=check, count=count)
    in_file = [
        ExpectedFrom(format="check file", plain_words=words[index]) for index in range(count)
    ]
    if check.family is None:
        return list(in_file)
    row_format, fields = check.case_format, check.filled_values
    if row_format is None or fields is None:
        return [None] * count
    return [
        in_file[index] if field is None else ExpectedFrom(format=row_format, field=field)
        for index, field in enumerate(fields)
    ]


def _plain_words(*, check: PlannedCheck, count: int) -> list[dict[str, str] | None]:
    """Per assertion, where the check file writes a plain scalar YAML 1.1 read as no text in
    its value (path in the value -> the scalar as written); None each when the plan does not
    record it (an older eb's)."""
    if check.plain_words is None:
        return [None] * count
    words: list[dict[str, str]] = [{} for _ in range(count)]
    for plain in check.plain_words:
        if plain.assertion < count:
            words[plain.assertion][plain.at] = plain.word
    return list(words)


def _not_all_evaluated(*, outcomes: list[AssertionOutcome]) -> str:
    """Why a control with an assertion it could not evaluate is an error, and the fix."""
    unevaluated = [outcome.message for outcome in outcomes if not outcome.evaluated]
    return (
        f"Control could not evaluate {len(unevaluated)} of its {len(outcomes)} assertions, so "
        f"it caught no defect: {'; '.join(unevaluated)}. A control counts a defect as caught "
        "only when every assertion was evaluated: make each one an assertion eb can evaluate "
        "on the seeded-defect artifact"
    )


def run_assertions(ctx: RunContext) -> CheckResult:
    """Read the artifact under the project root and require every assertion to hold."""
    started = utc_now()
    try:
        check = AssertionsCheck.model_validate(ctx.check.definition)
    except ValidationError as exc:
        # Validate already rejected bad definitions; a plan edited by hand lands here.
        return error_result(
            check=ctx.check, started=started, error_detail=_definition_problem(exc=exc)
        )
    if ctx.artifacts is not None:
        loaded = ctx.artifacts.load(artifact=check.artifact)
    else:
        loaded = load_artifact(project_root=ctx.project_root, artifact=check.artifact)
    if loaded.problem is not None and check.expect == "fail":
        # A control passes only on a defect its assertions caught; with no artifact to read
        # they graded nothing, so its failing proves nothing (an ordinary check still fails).
        return error_result(
            check=ctx.check,
            started=started,
            error_detail=_graded_nothing(problem=loaded.problem),
            details={"artifact": check.artifact},
        )
    if loaded.problem is not None:
        outcomes = fail_all(assertions=check.assertions, problem=loaded.problem)
    else:
        outcomes = evaluate_all(
            document=loaded.document,
            assertions=check.assertions,
            expected_from=_expected_from(check=ctx.check, count=len(check.assertions)),
        )
    details = {
        "artifact": check.artifact,
        "assertions": [outcome.as_dict() for outcome in outcomes],
    }
    if check.expect == "fail" and not all(outcome.evaluated for outcome in outcomes):
        # An assertion that failed unevaluated says nothing of the seeded defect; whatever the
        # others found, the control has not shown that its assertions catch it.
        return error_result(
            check=ctx.check,
            started=started,
            error_detail=_not_all_evaluated(outcomes=outcomes),
            details=details,
        )
    passed = all(outcome.ok for outcome in outcomes)
    return build_result(
        check=ctx.check,
        status="passed" if passed else "failed",
        started=started,
        reason=summarize(outcomes=outcomes),
        details=details,
    )
