"""A judge family's calibration cases: the id each row is shown to the judge under, the
family's definition rendered for each, and the rows that cannot fill the family's text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from eval_banana.core.errors import DefinitionError
from eval_banana.datasets.familytext import FamilyRenderer
from eval_banana.datasets.render import RenderProblem
from eval_banana.datasets.rows import ItemLines, Row, row_line, row_where
from eval_banana.datasets.rowschema import error_message, first_error


def calibration_case_id(*, row: dict[str, Any], position: int) -> str:
    """The id a calibration row is shown to the judge under: its own `id`, or its 1-based
    position, as a dataset row's (nothing in the prompt tells it from a real case)."""
    given = row.get("id")
    return str(given) if given is not None else str(position)


def calibration_definitions(*, definition: dict[str, Any]) -> list[dict[str, Any]]:
    """A judge family's definition rendered for each of its calibration cases, in order, as
    one of its dataset rows would be (`eb calibrate` judges these). Raises RenderProblem for a
    row that cannot fill the family's text (`eb validate` reports it first)."""
    calibration = list(definition.get("calibration") or [])
    rows = [case.get("case") for case in calibration if isinstance(case, dict)]
    sample = next((row for row in rows if isinstance(row, dict)), {})
    renderer = FamilyRenderer(definition=definition, sample=sample)
    # Each keeps the calibration cases: the sample judged under it is told by its case.
    return [
        renderer.render(case_id=case_id, row=row, with_inputs=False)
        | {"calibration": renderer.calibration}
        for _, case_id, row in _calibration_rows(renderer)
    ]


def _calibration_rows(
    renderer: FamilyRenderer,
) -> Iterator[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(calibration case, the id its row is shown under, its row), in order."""
    for position, case in enumerate(renderer.calibration, start=1):
        row = case.get("case") or {}
        yield case, calibration_case_id(row=row, position=position), row


def calibration_problems(
    *,
    renderer: FamilyRenderer,
    check_file: str,
    validator: Any = None,
    check_text: str | None = None,
) -> list[DefinitionError]:
    """A calibration case of a judge family whose row breaks the family's `case_schema` (the
    family's `validator`, built once for its dataset rows; None without a schema) or cannot
    fill the family's text. A row the schema refuses is held to it as a dataset row is: a
    known-bad case that fails only for a misspelt field would measure nothing. `check_text`:
    the check file's text, to tell the line of a case the schema refuses."""
    problems: list[DefinitionError] = []
    if renderer.kind != "harness_judge":
        return problems
    # Found in the text only when a case breaks the schema (a second parse of the file).
    lines = ItemLines(check_text, under="calibration") if check_text else None
    for position, (case, case_id, row) in enumerate(_calibration_rows(renderer), start=1):
        field_path = f"calibration.{position - 1}.case"
        if validator is not None:
            try:
                error = first_error(validator=validator, row=row, check_file=check_file)
            except DefinitionError as exc:  # the schema's fault, not the row's: told once
                return [*problems, exc]
            if error is not None:
                place = Row(
                    value=row,
                    file=check_file,
                    where=f"calibration item {position}",
                    line=None,
                    item_index=position,
                    item_lines=lines,
                )
                problems.append(
                    _breaks_schema(case=case, place=place, error=error, field_path=field_path)
                )
                continue
        try:
            renderer.render(case_id=case_id, row=row, with_inputs=False)
        except RenderProblem as exc:
            problems.append(
                DefinitionError(
                    f"{check_file}: calibration case '{case.get('name')}': {exc.told}",
                    file=check_file,
                    field_path=field_path,
                    hint="give the calibration row every field the family's text uses, as "
                    "a dataset row has",
                )
            )
    return problems


def _breaks_schema(
    *, case: dict[str, Any], place: Row, error: Any, field_path: str
) -> DefinitionError:
    """A calibration row that breaks `case_schema`, worded as a dataset row's is, and told at
    the row's field the schema names (`calibration.1.case.answer`), else at the row."""
    parts = [str(part) for part in error.absolute_path]
    at = "/".join(parts)
    return DefinitionError(
        f"{place.file} {row_where(place)}: calibration case '{case.get('name')}' does not "
        "match case_schema" + (f" at {at}" if at else "") + f": {error_message(error)}",
        file=place.file,
        line=row_line(place),
        field_path=".".join([field_path, *parts]),
        hint="fix the calibration case's row (a known-bad case must break the rule the judge "
        "grades, not the schema every row satisfies) or the family's case_schema",
    )
