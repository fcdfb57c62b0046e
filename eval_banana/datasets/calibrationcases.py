"""A judge family's calibration cases: the id each row is shown to the judge under, the
family's definition rendered for each, and the rows that cannot fill the family's text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from eval_banana.core.errors import DefinitionError
from eval_banana.datasets.familytext import FamilyRenderer
from eval_banana.datasets.render import RenderProblem


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
        renderer.render(case_id=case_id, row=row) | {"calibration": renderer.calibration}
        for _, case_id, row in _calibration_rows(renderer)
    ]


def _calibration_rows(
    renderer: FamilyRenderer,
) -> Iterator[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(calibration case, the id its row is shown under, its row), in order."""
    for position, case in enumerate(renderer.calibration, start=1):
        row = case.get("case") or {}
        yield case, calibration_case_id(row=row, position=position), row


def calibration_problems(*, renderer: FamilyRenderer, check_file: str) -> list[DefinitionError]:
    """A calibration case of a judge family whose row cannot fill the family's text."""
    problems: list[DefinitionError] = []
    if renderer.kind != "harness_judge":
        return problems
    for position, (case, case_id, row) in enumerate(_calibration_rows(renderer), start=1):
        try:
            renderer.render(case_id=case_id, row=row)
        except RenderProblem as exc:
            problems.append(
                DefinitionError(
                    f"{check_file}: calibration case '{case.get('name')}': {exc.told}",
                    file=check_file,
                    field_path=f"calibration.{position - 1}.case",
                    hint="give the calibration row every field the family's text uses, as "
                    "a dataset row has",
                )
            )
    return problems
