"""Fields every check type shares: the base of the check models in check.py and assertions.py.

It sits below both, so the concrete models import it and never each other.
"""

from __future__ import annotations

import re
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
    model_validator,
)
from pydantic_core import PydanticCustomError

from eval_banana.core.caseid import CASE_ID_PATTERN, no_reason_editor_pattern
from eval_banana.models.repeats import MAX_REPEATS, MIN_REPEATS, RULE_WORDS, Rule, valid_repeats
from eval_banana.projectstate.patterns import pattern_problem

ID_PATTERN = r"^[a-zA-Z0-9_-]+$"
_ID_RE = re.compile(ID_PATTERN)
# What is stripped from around an id: spaces and tabs only, so an id ending in a line break
# is refused instead of quietly becoming another id.
ID_SPACES = " \t"
NON_BLANK = r"\S"

# What each check type is, in the words editors show when hovering over `type:`.
CHECK_TYPES = {
    "deterministic": "runs a Python script (script or script_path); exit 0 passes",
    "harness_judge": "asks the configured agent CLI to read the instructions and answer with a "
    "score of 0 or 1 and a reason",
    "assertions": "grades a JSON or YAML artifact with the conditions listed under assert",
}
TYPE_DESCRIPTION = (
    "The kind of check; it decides which other keys are allowed. "
    + "; ".join(f"{name} {what}" for name, what in CHECK_TYPES.items())
    + "."
)


def type_description(name: str) -> str:
    """The `type` field's description in the model of check type `name`."""
    return f"{name}: {CHECK_TYPES[name]}. The type decides which other keys are allowed."


def _require_int_one(value: Any) -> Any:
    # Only the integer 1 counts: eval-banana's lax `true` / `1.0` are rejected.
    if type(value) is not int or value != 1:
        raise PydanticCustomError("schema_version", "Input should be 1")
    return value


# For editors: no leading `/`, no `..` segment, no backslash (the model checks the full rules).
INPUT_PATTERN = r"^(?!!?/)(?!!?\.\.(/|$))(?!.*/\.\.(/|$))[^\\]*\S[^\\]*$"


def _input_pattern(value: str) -> str:
    problem = pattern_problem(value)
    if problem is not None:
        raise PydanticCustomError("input_pattern", f"{value!r} {problem}")
    return value


# Keys a definition holds only when its file sets them: a check that does not use them keeps
# exactly the normalized definition (and plan) it had before they existed.
OMITTED_WHEN_UNSET = (
    "repeats",
    "aggregate",
    "calibration",
    "cases",
    "cases_from",
    "min_pass_rate",
    "case_schema",
)

# For editors, the rules of one inline case that a schema can say (eb validate says why). An id
# is a whole number from 0 or text of CASE_ID_PATTERN (null: its position names the case); tags a
# word or a list of them (null: none of its own); skip a reason, never blank, a yes/no, a number
# or a missing value (NULL, nan), nor one without a letter or digit (`-`, a check mark).
CASE_ITEM_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {
        "id": {
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": CASE_ID_PATTERN},
                {"type": "null"},
            ]
        },
        "tags": {
            "anyOf": [
                # One word: a text with a comma or a space would be one tag (eb refuses it).
                {"type": "string", "minLength": 1, "not": {"pattern": r"[\s,]"}},
                {"type": "array", "items": {"type": "string"}},
                {"type": "null"},
            ]
        },
        "skip": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "string",
                    "pattern": NON_BLANK,
                    "not": {"pattern": no_reason_editor_pattern()},
                },
            ]
        },
    },
}


def _needs_rows(key: str, kind: str) -> dict[str, JsonValue]:
    """For editors: `key`, when set, belongs to a dataset family (cases or cases_from)."""
    return {
        "if": {"required": [key], "properties": {key: {"type": kind}}},
        "then": {
            "anyOf": [
                {"required": ["cases"], "properties": {"cases": {"type": "array"}}},
                {"required": ["cases_from"], "properties": {"cases_from": {"type": "string"}}},
            ]
        },
    }


# Every check model's schema carries it (a model's own json_schema_extra adds to it).
FAMILY_KEYS_SCHEMA: dict[str, JsonValue] = {
    "allOf": [_needs_rows("min_pass_rate", "number"), _needs_rows("case_schema", "object")]
}

AGGREGATE_DESCRIPTION = (
    "How the samples of a check with repeats decide it: "
    + "; ".join(f"'{rule}' {words}" for rule, words in RULE_WORDS.items())
    + " (default 'all'). An error in any sample makes the check an error whatever the rule."
)


def non_blank(value: str, *, field: str, strip: bool) -> str:
    if not value.strip():
        raise PydanticCustomError("blank", "{field} must be non-empty", {"field": field})
    return value.strip() if strip else value


class CheckBase(BaseModel):
    """Fields every check type shares."""

    model_config = ConfigDict(
        extra="forbid", str_strip_whitespace=False, json_schema_extra=FAMILY_KEYS_SCHEMA
    )

    type: str = Field(description=TYPE_DESCRIPTION)
    schema_version: Annotated[
        int,
        Field(
            description="Format version of the check file; must be the integer 1.",
            json_schema_extra={"const": 1},
        ),
    ]
    id: str = Field(
        description="Unique id across the project; letters, digits, '_' and '-'.",
        # Surrounding spaces and tabs are stripped (as eval-banana does), so editors must accept
        # them too; a line break is never part of an id, nor stripped away.
        json_schema_extra={"pattern": r"^[ \t]*[a-zA-Z0-9_-]+[ \t]*$"},
    )
    description: str = Field(
        description="What the check verifies; shown in reports.",
        json_schema_extra={"pattern": NON_BLANK},
    )
    tags: list[str] = Field(
        default_factory=list,
        description="Free-form labels; select with --tag (a tag or an expression such as "
        "'judge and not slow').",
    )
    expect: Literal["pass", "fail"] = Field(
        default="pass",
        description="'fail' makes this a control check: it is satisfied only when the check "
        "really fails (a seeded defect is caught). An error never satisfies it.",
    )
    skip: str | None = Field(
        default=None,
        description="Why this check is skipped: it is not run and not scored, and every "
        "report lists it as skipped with this reason.",
        json_schema_extra={"pattern": NON_BLANK},
    )

    inputs: list[Annotated[str, AfterValidator(_input_pattern)]] | None = Field(
        default=None,
        description="Files the check reads: glob patterns relative to the project root "
        "('**' any depth, '!pattern' excludes). The verdict cache and --changed-since then "
        "look only at these files (an assertions check's artifact always counts too); "
        "without `inputs`, the whole project counts.",
        json_schema_extra={"items": {"type": "string", "pattern": INPUT_PATTERN}},
    )

    repeats: int | None = Field(
        default=None,
        description=f"Run the check this many times ({MIN_REPEATS} to {MAX_REPEATS}) and decide "
        "by `aggregate`; samples that disagree mark the check flaky. Without it, [core] "
        "repeats (or --repeats) counts.",
        json_schema_extra={"minimum": MIN_REPEATS, "maximum": MAX_REPEATS},
    )
    aggregate: Rule | None = Field(default=None, description=AGGREGATE_DESCRIPTION)

    cases: list[dict[str, JsonValue]] | None = Field(
        default=None,
        description="Inline dataset: each mapping is one case, run as its own check "
        "`<id>[<case id>]`. A case's `id` names it (ASCII letters, digits, '_', '-', '.'), "
        "else its 1-based position does; `tags` and `skip` in a case add to the family's. "
        "Text fields may use {{ case.<field> }}.",
        json_schema_extra={"minItems": 1, "items": CASE_ITEM_SCHEMA},
    )
    cases_from: str | None = Field(
        default=None,
        description="Dataset file(s), a path or glob relative to the project root: .jsonl, "
        ".json (a list), .yaml/.yml (a list) or .csv (header row = field names). Each row is "
        "one case, as in `cases`.",
        json_schema_extra={"pattern": NON_BLANK},
    )
    min_pass_rate: float | None = Field(
        default=None,
        description="The family's own gate (0 to 1): the run fails when fewer than this "
        "ratio of the family's non-skipped cases pass, whatever the run threshold says.",
        json_schema_extra={"minimum": 0, "maximum": 1},
    )
    case_schema: dict[str, JsonValue] | None = Field(
        default=None,
        description="A JSON Schema every case row must satisfy (checked by eb validate). A "
        "CSV cell is read as the number, integer, boolean or null type its field is given here.",
    )

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        for key in OMITTED_WHEN_UNSET:
            if key in dumped and dumped[key] is None:
                del dumped[key]
        return dumped

    @field_validator("repeats", mode="before")
    @classmethod
    def _repeats_rules(cls, value: Any) -> Any:
        # Only a plain integer: YAML's `true` or `3.0` would otherwise be read as a count.
        if value is not None and not valid_repeats(value):
            raise PydanticCustomError(
                "repeats",
                "repeats must be an integer from {low} to {high}",
                {"low": MIN_REPEATS, "high": MAX_REPEATS},
            )
        return value

    @field_validator("inputs", mode="after")
    @classmethod
    def _inputs_include_something(cls, value: list[str] | None) -> list[str] | None:
        if value and all(pattern.startswith("!") for pattern in value):
            raise PydanticCustomError(
                "value_error",
                "inputs has only '!' exclusions: add a pattern naming the files the check reads",
            )
        return value

    @field_validator("min_pass_rate", mode="before")
    @classmethod
    def _rate_rules(cls, value: Any) -> Any:
        # A ratio: YAML's `true` would otherwise read as 1.0.
        if value is None:
            return value
        if type(value) not in (int, float) or not 0 <= value <= 1:
            raise PydanticCustomError(
                "min_pass_rate", "min_pass_rate must be a number from 0 to 1, e.g. 0.9"
            )
        return value

    @model_validator(mode="after")
    def _rate_needs_cases(self) -> CheckBase:
        if self.min_pass_rate is not None and self.cases is None and self.cases_from is None:
            raise PydanticCustomError(
                "min_pass_rate",
                "min_pass_rate gates a dataset family: add cases or cases_from, or delete it",
            )
        if self.case_schema is not None and self.cases is None and self.cases_from is None:
            raise PydanticCustomError(
                "case_schema",
                "case_schema describes dataset rows: add cases or cases_from, or delete it",
            )
        return self

    @field_validator("schema_version", mode="before")
    @classmethod
    def _schema_version_is_one(cls, value: Any) -> Any:
        return _require_int_one(value)

    @field_validator("id", mode="before")
    @classmethod
    def _id_rules(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        stripped = value.strip(ID_SPACES)
        if not stripped.strip():
            raise PydanticCustomError("blank", "{field} must be non-empty", {"field": "id"})
        # fullmatch: `$` would also match before a trailing newline.
        if not _ID_RE.fullmatch(stripped):
            raise PydanticCustomError("id_characters", "id must match ^[a-zA-Z0-9_-]+$")
        return stripped

    @field_validator("description", mode="before")
    @classmethod
    def _description_rules(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        return non_blank(value, field="description", strip=True)

    @field_validator("skip", mode="before")
    @classmethod
    def _skip_rules(cls, value: Any) -> Any:
        # A blank reason would hide why the check is off: a skip must say why.
        if not isinstance(value, str):
            return value
        return non_blank(value, field="skip", strip=True)
