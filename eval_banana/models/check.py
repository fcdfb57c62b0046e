"""Check definitions: the single source of `schemas/check.schema.json` and of validation texts."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator
from pydantic_core import PydanticCustomError

ID_PATTERN = r"^[a-zA-Z0-9_-]+$"
_ID_RE = re.compile(ID_PATTERN)
NON_BLANK = r"\S"


def _require_int_one(value: Any) -> Any:
    # Only the integer 1 counts: the anchor's lax `true` / `1.0` are rejected (B-68).
    if type(value) is not int or value != 1:
        raise PydanticCustomError("literal_error", "Input should be 1")
    return value


def _non_blank(value: str, *, field: str, strip: bool) -> str:
    if not value.strip():
        raise PydanticCustomError("value_error", f"{field} must be non-empty")
    return value.strip() if strip else value


class CheckBase(BaseModel):
    """Fields every check type shares."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    type: str = Field(description="The check type; selects the fields below.")
    schema_version: Annotated[
        int,
        Field(
            description="Format version of the check file; must be the integer 1.",
            json_schema_extra={"const": 1},
        ),
    ]
    id: str = Field(
        description="Unique id across the project; letters, digits, '_' and '-'.",
        # Surrounding whitespace is stripped (B-69), so editors must accept it too.
        json_schema_extra={"pattern": r"^\s*[a-zA-Z0-9_-]+\s*$"},
    )
    description: str = Field(
        description="What the check verifies; shown in reports.",
        json_schema_extra={"pattern": NON_BLANK},
    )
    tags: list[str] = Field(
        default_factory=list, description="Free-form labels; select with --tag (OR)."
    )
    expect: Literal["pass", "fail"] = Field(
        default="pass",
        description="'fail' makes this a control check: it is satisfied only when the check "
        "really fails (a seeded defect is caught). An error never satisfies it.",
    )

    @field_validator("schema_version", mode="before")
    @classmethod
    def _schema_version_is_one(cls, value: Any) -> Any:
        return _require_int_one(value)

    @field_validator("id", mode="before")
    @classmethod
    def _id_rules(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        stripped = value.strip()
        if not stripped:
            raise PydanticCustomError("value_error", "id must be non-empty")
        if not _ID_RE.match(stripped):
            raise PydanticCustomError("value_error", "id must match ^[a-zA-Z0-9_-]+$")
        return stripped

    @field_validator("description", mode="before")
    @classmethod
    def _description_rules(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        return _non_blank(value, field="description", strip=True)


class DeterministicCheck(CheckBase):
    """Runs a Python script; exit 0 passes."""

    type: Literal["deterministic"]
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [{"required": ["script"]}, {"required": ["script_path"]}],
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
                "value_error", "exactly one of script or script_path must be set"
            )
        # A blank script would be a vacuous pass (W3.1): never accept it.
        if not (getattr(self, given[0]) or "").strip():
            raise PydanticCustomError("value_error", f"{given[0]} must be non-empty")
        return self


class HarnessJudgeCheck(CheckBase):
    """Asks the configured agent CLI for a {"score": 0|1, "reason": ...} verdict."""

    type: Literal["harness_judge"]
    instructions: str = Field(
        description="The evaluation prompt sent to the agent.",
        json_schema_extra={"pattern": NON_BLANK},
    )
    model: str | None = Field(default=None, description="Model for this check only.")

    @field_validator("instructions", mode="before")
    @classmethod
    def _instructions_rules(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        return _non_blank(value, field="instructions", strip=True)


# Defined after CheckBase, which the assertions model subclasses.
from eval_banana.models.assertions import AssertionsCheck  # noqa: E402

CHECK_MODELS: dict[str, type[CheckBase]] = {
    "deterministic": DeterministicCheck,
    "harness_judge": HarnessJudgeCheck,
    "assertions": AssertionsCheck,
}

AnyCheck: TypeAlias = DeterministicCheck | HarnessJudgeCheck | AssertionsCheck
CheckDefinition = Annotated[AnyCheck, Field(discriminator="type")]

CHECK_ADAPTER: TypeAdapter[AnyCheck] = TypeAdapter(CheckDefinition)
