"""A judge's calibration case, as written under `calibration:` in a harness_judge check file.

Each case names a state of the project (the files it writes or deletes over the project) and the
verdict a trustworthy judge must give on it; `eb calibrate` runs the judge on every case.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)
from pydantic_core import PydanticCustomError

from eval_banana.core.jsonvalues import unsayable
from eval_banana.models.casepaths import CASE_PATH_PATTERN, case_path_problem


def _case_path(value: str) -> str:
    problem = case_path_problem(value)
    if problem is not None:
        raise PydanticCustomError("case_path", f"{value!r} {problem}")
    return value


CasePath = Annotated[str, AfterValidator(_case_path)]


class CalibrationCase(BaseModel):
    """One labelled case: the files it lays over the project and the verdict it expects."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        description="A short name for the case, unique within the check (shown in reports).",
        json_schema_extra={"pattern": r"\S"},
    )
    expect: Literal["pass", "fail"] = Field(
        description="The verdict a trustworthy judge gives on this case: 'pass' for a "
        "known-good case, 'fail' for a known-bad one."
    )
    files: dict[CasePath, str | None] = Field(
        default_factory=dict,
        description="Project-relative path -> the text this case puts in that file, or null "
        "to delete it. Every other file is as in the project. {} (or no `files`) means the "
        "project as it is.",
        json_schema_extra={"propertyNames": {"pattern": CASE_PATH_PATTERN}},
    )
    case: dict[str, JsonValue] | None = Field(
        default=None,
        description="For a judge dataset family only, and required there: the row the "
        "family's prompt is rendered with for this case, as a dataset row is (its fields fill "
        "{{ case.<field> }}, or the fenced block after the instructions).",
    )

    @model_serializer(mode="wrap")
    def _omit_no_case(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A single judge's case has no row: its dump stays as it was (and as the fast path's).
        dumped: dict[str, Any] = handler(self)
        if dumped.get("case") is None:
            dumped.pop("case", None)
        return dumped

    @field_validator("case")
    @classmethod
    def _json_only(cls, value: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
        # As a dataset row: NaN and Infinity pass as floats, but they are not JSON.
        found = None if value is None else unsayable(value)
        if found is not None:
            raise PydanticCustomError(
                "not_json",
                "case field {field} holds {what}, which JSON cannot say: {fix}",
                {"field": found.field, "what": found.what, "fix": found.fix},
            )
        return value

    @field_validator("name", mode="before")
    @classmethod
    def _name_rules(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if not value.strip():
            raise PydanticCustomError("blank", "{field} must be non-empty", {"field": "name"})
        return value.strip()


def duplicate_case_names(cases: list[CalibrationCase]) -> list[str]:
    """Names used by more than one case, in first-use order."""
    seen: set[str] = set()
    repeated: list[str] = []
    for case in cases:
        if case.name in seen and case.name not in repeated:
            repeated.append(case.name)
        seen.add(case.name)
    return repeated
