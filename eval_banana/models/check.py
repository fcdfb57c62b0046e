"""Check definitions: the single source of `schemas/check.schema.json` and of validation texts."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from eval_banana.models.assertions import AssertionsCheck
from eval_banana.models.calibcase import CalibrationCase, duplicate_case_names
from eval_banana.models.checkbase import (
    FAMILY_KEYS_SCHEMA,
    ID_PATTERN,
    NON_BLANK,
    CheckBase,
    non_blank,
    type_description,
)

__all__ = [
    "CHECK_ADAPTER",
    "CHECK_MODELS",
    "ID_PATTERN",
    "AnyCheck",
    "AssertionsCheck",
    "CheckBase",
    "CheckDefinition",
    "DeterministicCheck",
    "HarnessJudgeCheck",
]


# What an editor shows when a deterministic check has neither or both script keys. Editors that
# use yaml-language-server or VS Code's JSON service read `errorMessage` instead of their own
# "Missing property" / "Incorrect type"; other validators ignore the unknown keyword.
ONE_SCRIPT_MESSAGE = (
    "Exactly one of script or script_path is required: script holds inline Python, "
    "script_path names a Python file relative to this check file's folder."
)


def _only(given: str, other: str) -> dict[str, Any]:
    """One branch of the exactly-one rule: `given` is text and `other` is absent or null."""
    return {
        "required": [given],
        "properties": {
            given: {"type": "string", "errorMessage": ONE_SCRIPT_MESSAGE},
            other: {"type": "null", "errorMessage": ONE_SCRIPT_MESSAGE},
        },
        "errorMessage": ONE_SCRIPT_MESSAGE,
    }


class DeterministicCheck(CheckBase):
    """Runs a Python script; exit 0 passes."""

    type: Literal["deterministic"] = Field(description=type_description("deterministic"))
    model_config = ConfigDict(
        json_schema_extra={
            **FAMILY_KEYS_SCHEMA,
            "oneOf": [_only("script", "script_path"), _only("script_path", "script")],
        }
    )

    script: str | None = Field(
        default=None,
        description="Inline Python source. Exactly one of script / script_path.",
        json_schema_extra={"pattern": NON_BLANK},
    )
    script_path: str | None = Field(
        default=None,
        description="Python file, relative to this YAML file's folder. "
        "Exactly one of script / script_path.",
        json_schema_extra={"pattern": NON_BLANK},
    )

    @model_validator(mode="after")
    def _exactly_one_script(self) -> DeterministicCheck:
        given = [name for name in ("script", "script_path") if getattr(self, name) is not None]
        if len(given) != 1:
            raise PydanticCustomError(
                "script_choice", "exactly one of script or script_path must be set"
            )
        # A blank script would be a vacuous pass: never accept it.
        if not (getattr(self, given[0]) or "").strip():
            raise PydanticCustomError("blank", "{field} must be non-empty", {"field": given[0]})
        return self


class HarnessJudgeCheck(CheckBase):
    """Asks the configured agent CLI for a {"score": 0|1, "reason": ...} verdict."""

    type: Literal["harness_judge"] = Field(description=type_description("harness_judge"))
    instructions: str = Field(
        description="The evaluation prompt sent to the agent.",
        json_schema_extra={"pattern": NON_BLANK},
    )
    model: str | None = Field(default=None, description="Model for this check only.")
    calibration: list[CalibrationCase] | None = Field(
        default=None,
        description="Labelled cases `eb calibrate` runs this judge on, each in a disposable "
        "copy of the project with the case's files laid over it: at least one known-good "
        "(expect: pass) and one known-bad (expect: fail) case. [harness] require_calibration "
        "lets only a judge that agreed with its cases gate a run.",
        json_schema_extra={"minItems": 1},
    )

    @field_validator("instructions", mode="before")
    @classmethod
    def _instructions_rules(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        return non_blank(value, field="instructions", strip=True)

    @field_validator("calibration", mode="after")
    @classmethod
    def _calibration_rules(cls, value: list[CalibrationCase] | None, info: ValidationInfo) -> Any:
        if value is None:
            return value
        # Validated after `cases` / `cases_from` (the base's fields come first), so the error
        # is located at `calibration:`. A family's prompt is its instructions rendered with a
        # row: each labelled case of a family says which row it is judged with; a single
        # judge's case has no row to give.
        family = info.data.get("cases") is not None or info.data.get("cases_from") is not None
        for case in value:
            if family and case.case is None:
                raise PydanticCustomError(
                    "calibration_case_row",
                    "calibration case '{name}' of a dataset family needs `case:`, the row the "
                    "family's prompt is rendered with for it, a mapping as a dataset row is",
                    {"name": case.name},
                )
            if not family and case.case is not None:
                raise PydanticCustomError(
                    "calibration_case_row",
                    "calibration case '{name}' has `case:`, which only a dataset family's "
                    "cases take; delete it (the case's files are what the judge reads)",
                    {"name": case.name},
                )
        if not value:
            raise PydanticCustomError(
                "calibration_empty",
                "calibration has no cases: add a known-good and a known-bad case, or delete "
                "the key",
            )
        repeated = duplicate_case_names(value)
        if repeated:
            raise PydanticCustomError(
                "calibration_names",
                "calibration case names must be unique; repeated: {names}",
                {"names": ", ".join(repeated)},
            )
        return value


CHECK_MODELS: dict[str, type[CheckBase]] = {
    "deterministic": DeterministicCheck,
    "harness_judge": HarnessJudgeCheck,
    "assertions": AssertionsCheck,
}

AnyCheck: TypeAlias = DeterministicCheck | HarnessJudgeCheck | AssertionsCheck
CheckDefinition = Annotated[AnyCheck, Field(discriminator="type")]

CHECK_ADAPTER: TypeAdapter[AnyCheck] = TypeAdapter(CheckDefinition)
