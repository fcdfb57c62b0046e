"""A judge dataset family is calibrated once, as one judge: its labelled cases each give the row
its prompt is rendered with, and its record is kept under the family's id and measured under
the family's definition without its rows (so an edited or added row leaves it standing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval_banana.core.errors import DefinitionError
from eval_banana.core.stem import artifact_stem
from eval_banana.models.stages import PlannedCheck


def judge_of(
    check: PlannedCheck, *, family_calibration: Mapping[str, list[dict[str, Any]]]
) -> PlannedCheck:
    """The judge `check`'s calibration belongs to: itself, or for a case of a family its
    family (id, evidence stem and definition digest the family's own, and its calibration
    cases, which the plan holds once per family: `family_calibration`, PlanDoc's)."""
    family = _calibrated_family(check)
    if family is None:
        return check
    return check.model_copy(
        update={
            "id": family,
            "stem": artifact_stem(check_id=family),
            "definition": check.definition | {"calibration": family_calibration.get(family, [])},
            "check_definition_sha256": check.family_definition_sha256,
            "case_id": None,
            "case_index": None,
            "case": None,
        }
    )


def _calibrated_family(check: PlannedCheck) -> str | None:
    """The family `check` is calibrated as, or None when it is calibrated as itself."""
    if check.family_definition_sha256 is None:
        return None
    return check.family


def judges_of(
    checks: Sequence[PlannedCheck], *, family_calibration: Mapping[str, list[dict[str, Any]]]
) -> list[PlannedCheck]:
    """Each judge once, in plan order: a family's many cases are one judge."""
    seen: set[str] = set()
    judges: list[PlannedCheck] = []
    for check in checks:
        # A family's id is known before its judge is copied: 10,000 cases make one copy.
        judge_id = _calibrated_family(check) or check.id
        if judge_id not in seen:
            seen.add(judge_id)
            judges.append(judge_of(check, family_calibration=family_calibration))
    return judges


def case_definitions(judge: PlannedCheck) -> list[dict[str, Any]] | None:
    """For a family judge, its definition rendered for each calibration case's row, read
    again from its check file (the plan holds each dataset row's rendering, not the family's
    text); None for a single judge, whose every case shares its definition. A check file
    changed since it was planned is refused: its cases would not be the ones measured."""
    if judge.family is None:
        return None
    from eval_banana.checks.definition import load_definition
    from eval_banana.datasets.calibrationcases import calibration_definitions
    from eval_banana.datasets.casedigest import family_digest
    from eval_banana.datasets.render import RenderProblem

    path = Path(judge.source_path)
    try:
        definition = load_definition(data=path.read_bytes(), path=path)
        if family_digest(definition=definition) == judge.check_definition_sha256:
            return calibration_definitions(definition=definition)
    except (OSError, DefinitionError, RenderProblem):
        pass
    raise DefinitionError(
        f"{judge.source_path} changed while the judge family '{judge.id}' was being calibrated",
        file=judge.source_path,
        hint="run `eb calibrate` again",
    )
