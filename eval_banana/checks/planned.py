"""A unit as plan.json lists it: a plain check with its own digest and frozen script, a
family's cases copied from one template, a check that says `skip:`, a script that is missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from eval_banana.checks.definition import FrozenScript, definition_digest
from eval_banana.checks.plainwords import plain_words
from eval_banana.checks.planneddigest import planned_definition_digest
from eval_banana.checks.units import Unit
from eval_banana.core.stem import artifact_stem, case_artifact_stem
from eval_banana.models.result import SkippedCheck
from eval_banana.models.stages import PlannedCheck, ProblemModel

if TYPE_CHECKING:
    from eval_banana.datasets.expand import ExpandedCase

SNAPSHOTS_DIR = "stages/snapshots"


def plan_check(*, unit: Unit, frozen: FrozenScript | None) -> tuple[PlannedCheck, bytes | None]:
    """`unit`'s planned check, and the bytes of its frozen script (None without one)."""
    item, case = unit.item, unit.case
    definition = unit.definition
    check_id = unit.check_id
    stem = artifact_stem(check_id=check_id)
    # The cases of a family share one frozen copy of its script.
    snapshot_stem = artifact_stem(check_id=item.definition["id"]) if case is not None else stem
    planned = PlannedCheck(
        id=check_id,
        type=definition["type"],
        description=definition["description"],
        source_path=item.path,
        stem=stem,
        check_definition_sha256=case.digest
        if case is not None
        else definition_digest(yaml_bytes=item.data, frozen=frozen),
        definition=definition,
        snapshot=f"{SNAPSHOTS_DIR}/{snapshot_stem}.py"
        if frozen and frozen.data is not None
        else None,
        script_path=str(frozen.path) if frozen else None,
        script_unavailable=frozen.unavailable if frozen else None,
        family=item.definition["id"] if case is not None else None,
        case_id=case.case_id if case is not None else None,
        case_index=unit.case_index,
        case=case.row if case is not None else None,
        case_format=case_format(case=case) if case is not None else None,
        filled_values=filled_values(definition=item.definition) if case is not None else None,
        plain_words=plain_words(data=item.data, definition=item.definition),
        family_files=unit.family_files,
        family_definition_sha256=unit.family_digest,
    )
    return planned, frozen.data if frozen else None


def case_format(*, case: ExpandedCase) -> Literal["csv", "json", "yaml"]:
    """The format of the file `case`'s row was read from: its fix of a value is said in it."""
    origin = case.origin
    if origin.inline_index is not None:
        return "yaml"  # the check file's own `cases:`
    return _file_format(origin.file)


# A family's rows come from a few files, and a family of 10,000 cases asks 10,000 times: a
# path object per case was a fifth of planning them.
@lru_cache(maxsize=256)
def _file_format(file: str) -> Literal["csv", "json", "yaml"]:
    """The format of the dataset file `file` names, by its suffix."""
    suffix = PurePosixPath(file).suffix.lower()
    if suffix == ".csv":
        return "csv"
    return "json" if suffix in (".json", ".jsonl") else "yaml"


def filled_values(*, definition: dict[str, Any]) -> list[str | None] | None:
    """Per assertion of an assertions family, the row field its value is wholly filled from
    (`value: "{{ case.expected }}"`), else None; None for a family of another type."""
    assertions = definition.get("assert")
    if definition.get("type") != "assertions" or not isinstance(assertions, list):
        return None
    # Loaded here: a project without families never loads the datasets package.
    from eval_banana.datasets.render import whole_placeholder_field

    return [
        whole_placeholder_field(item.get("value")) if isinstance(item, dict) else None
        for item in assertions
    ]


def case_template(*, unit: Unit, frozen: FrozenScript | None) -> PlannedCheck:
    """What every case of `unit`'s family plans alike (its file, type, script, family)."""
    planned, _ = plan_check(unit=unit, frozen=frozen)
    return planned


def plan_case(
    *, template: PlannedCheck, case: ExpandedCase, case_index: int | None
) -> PlannedCheck:
    """One case's planned check: its family's template with the case's own fields.

    A copy of the template's values, not a new record built field by field: a family of
    10,000 cases plans 10,000 checks that differ in seven fields.
    """
    definition = case.definition
    check_id = case.check_id
    planned: PlannedCheck = object.__new__(PlannedCheck)
    values = template.__dict__.copy()  # the template's fields, in their order
    values["id"] = check_id
    values["description"] = definition["description"]
    values["stem"] = case_artifact_stem(
        family=template.family or "", case_id=case.case_id, check_id=check_id
    )
    values["check_definition_sha256"] = case.digest
    values["definition"] = definition
    values["case_id"] = case.case_id
    values["case"] = case.row
    values["case_index"] = case_index  # its place in the dataset: merges keep dataset order
    values["case_format"] = case_format(case=case)  # rows of one family may mix formats
    planned.__dict__ = values
    return planned


def skipped_check(*, unit: Unit) -> SkippedCheck:
    """`unit`, whose check says `skip:`, as the plan lists it among the skipped."""
    definition = unit.definition
    return SkippedCheck(
        check_id=unit.check_id,
        check_type=definition["type"],
        description=definition["description"],
        source_path=unit.item.path,
        tags=list(definition["tags"]),
        reason=definition["skip"],
    )


def _script_problem(*, message: str, source_path: str, check_type: str) -> ProblemModel:
    return ProblemModel(
        message=message,
        file=source_path,
        field_path=f"{check_type}.script_path",
        hint="Fix script_path (it is relative to the check file's folder), or write the "
        "check's rule in the script it names.",
    )


def unavailable_scripts(*, checks: list[PlannedCheck]) -> list[ProblemModel]:
    """Checks that validate but could never run: a referenced script that is not there, or
    is blank."""
    return [
        _script_problem(
            message=check.script_unavailable, source_path=check.source_path, check_type=check.type
        )
        for check in checks
        if check.script_unavailable
    ]


def unavailable_skipped_scripts(
    *, skipped: list[tuple[Unit, FrozenScript | None]], planned: list[PlannedCheck]
) -> list[ProblemModel]:
    """The same for the checks that say `skip:` (each file once, and not again for a family
    some of whose cases run): a skipped check is still validated, so a `script_path` that was
    moved or deleted is caught while the check waits to be run again."""
    told = {check.source_path for check in planned if check.script_unavailable}
    problems: list[ProblemModel] = []
    for unit, frozen in skipped:
        path = unit.item.path
        if frozen is None or frozen.unavailable is None or path in told:
            continue
        told.add(path)
        problems.append(
            _script_problem(
                message=frozen.unavailable, source_path=path, check_type=unit.definition["type"]
            )
        )
    return problems


def fill_definition_digests(*, checks: Iterable[PlannedCheck]) -> None:
    """Record each planned check's `definition_sha256` where it has none yet: done as plan.json
    is written, not as the check is planned, so that `eb validate`, which writes no plan, pays
    no JSON encoding of every case's definition (a family of 10,000 cases: 60 ms of CPU)."""
    for check in checks:
        if check.definition_sha256 is None:
            check.definition_sha256 = planned_definition_digest(definition=check.definition)
