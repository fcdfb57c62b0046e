"""The `assertions` check type: path assertions on a JSON or YAML artifact."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictInt,
    WithJsonSchema,
    field_validator,
)
from pydantic_core import PydanticCustomError

from eval_banana.assertions.operators import MAX_PATTERN_CHARS, PatternError, compile_pattern
from eval_banana.assertions.paths import (
    EDITOR_PATH_PATTERN,
    WHOLE_PLACEHOLDER_PATTERN,
    ArtifactPathError,
    PathSyntaxError,
    check_artifact_path,
    parse_path,
)
from eval_banana.models.checkbase import CheckBase, type_description

ARTIFACT_PATTERN = r"^(?![/\\]|[A-Za-z]:)(?=.*\S)"
_PATH_DESCRIPTION = (
    "Where to look in the artifact, from its top level (no JSONPath $): dot-separated keys, "
    "with [n] (element n) or [*] (any "
    "element) after a key or at the start, e.g. steps[*].test or [0].name. In a dataset "
    "family a key or an index may be a {{ case.<field> }} placeholder."
)


def _refuse_empty_operand(*, op: str, value: Any) -> Any:
    """An empty `value` for `contains` or `matches` holds on every string: the check could
    never fail (most often a family's empty cell), so it is a definition error."""
    if value == "":
        raise PydanticCustomError(
            "empty_operand",
            "{op} with an empty value holds for every string, so it could never fail",
            {"op": op},
        )
    return value


class _AssertionBase(BaseModel):
    """Fields every assertion shares; `op` selects the operator and its `value`."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        description=_PATH_DESCRIPTION, json_schema_extra={"pattern": EDITOR_PATH_PATTERN}
    )

    @field_validator("path", mode="after")
    @classmethod
    def _path_syntax(cls, value: str) -> str:
        try:
            parse_path(text=value)
        except PathSyntaxError as exc:
            raise PydanticCustomError("path_syntax", str(exc)) from None
        return value


class ExistsAssertion(_AssertionBase):
    """Holds when the path resolves (a JSON null value exists)."""

    model_config = ConfigDict(title="exists")

    op: Literal["exists"] = Field(description="The path resolves; takes no value.")


class EqualsAssertion(_AssertionBase):
    """Holds when the value at the path equals `value` (true is not 1; 1 equals 1.0)."""

    model_config = ConfigDict(title="equals")

    op: Literal["equals"] = Field(description="JSON equality with JSON types kept apart.")
    value: JsonValue = Field(description="Any JSON value, null included.")


class ContainsAssertion(_AssertionBase):
    """A string contains a substring, an array an equal element, an object a key."""

    model_config = ConfigDict(title="contains")

    op: Literal["contains"] = Field(
        description="Substring of a string, element of an array, or key of an object."
    )
    value: JsonValue = Field(
        description="Substring, element, or key to look for; not the empty string."
    )

    @field_validator("value", mode="after")
    @classmethod
    def _not_empty(cls, value: Any) -> Any:
        return _refuse_empty_operand(op="contains", value=value)


class MatchesAssertion(_AssertionBase):
    """The string at the path matches an RE2 pattern somewhere (unanchored search)."""

    model_config = ConfigDict(title="matches")

    op: Literal["matches"] = Field(
        description="RE2 regular-expression search (use ^ and $ to anchor); "
        "strings over 100 KB fail."
    )
    value: str = Field(
        description="An RE2 pattern of 1 to 200 characters (no lookaround or backreferences).",
        min_length=1,
        max_length=MAX_PATTERN_CHARS,
    )

    @field_validator("value", mode="before")
    @classmethod
    def _pattern_rules(cls, value: Any) -> Any:
        # `before`, so the length message below wins over pydantic's generic one.
        if not isinstance(value, str):
            return value
        _refuse_empty_operand(op="matches", value=value)
        try:
            compile_pattern(value)
        except PatternError as exc:
            raise PydanticCustomError("pattern_error", str(exc)) from None
        return value


# Validation takes a whole number; the published schema also a family's placeholder for one
# (`value: "{{ case.least }}"`), which `eb validate` fills in per case or refuses outside one.
_Length = Annotated[
    StrictInt,
    Field(ge=0),
    WithJsonSchema(
        {
            "description": "A non-negative integer; in a dataset family, also a "
            "{{ case.<field> }} placeholder whose field is one.",
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": WHOLE_PLACEHOLDER_PATTERN},
            ],
        }
    ),
]


class LengthAtLeastAssertion(_AssertionBase):
    """Characters of a string, elements of an array or keys of an object: at least `value`."""

    model_config = ConfigDict(title="lengthAtLeast")

    op: Literal["lengthAtLeast"] = Field(description="Length is at least value.")
    value: _Length


class LengthAtMostAssertion(_AssertionBase):
    """Characters of a string, elements of an array or keys of an object: at most `value`."""

    model_config = ConfigDict(title="lengthAtMost")

    op: Literal["lengthAtMost"] = Field(description="Length is at most value.")
    value: _Length


Assertion = Annotated[
    ExistsAssertion
    | EqualsAssertion
    | ContainsAssertion
    | MatchesAssertion
    | LengthAtLeastAssertion
    | LengthAtMostAssertion,
    Field(discriminator="op"),
]

ASSERTION_MODELS: dict[str, type[_AssertionBase]] = {
    "exists": ExistsAssertion,
    "equals": EqualsAssertion,
    "contains": ContainsAssertion,
    "matches": MatchesAssertion,
    "lengthAtLeast": LengthAtLeastAssertion,
    "lengthAtMost": LengthAtMostAssertion,
}


class AssertionsCheck(CheckBase):
    """Reads one JSON/YAML artifact and requires every assertion to hold (strict AND)."""

    type: Literal["assertions"] = Field(description=type_description("assertions"))
    artifact: str = Field(
        description="The JSON or YAML file to check, relative to the project root "
        "(JSON if it parses as JSON, YAML for .yaml/.yml). A missing or unparsable "
        "artifact fails every assertion.",
        # Advisory for editors (not absolute, not blank); `..` escapes are caught by validation.
        json_schema_extra={"pattern": ARTIFACT_PATTERN},
    )
    # `assert` is a Python keyword: the attribute is `assertions`, the YAML key is `assert`.
    # No populate_by_name, so an `assertions:` key stays an unknown field.
    assertions: list[Assertion] = Field(
        alias="assert",
        min_length=1,
        description="Assertions on the artifact; the check passes only when all hold.",
    )

    @field_validator("artifact", mode="after")
    @classmethod
    def _artifact_inside_root(cls, value: str) -> str:
        try:
            return check_artifact_path(text=value)
        except ArtifactPathError as exc:
            raise PydanticCustomError("artifact_path", str(exc)) from None

    @field_validator("assertions", mode="before")
    @classmethod
    def _not_empty(cls, value: Any) -> Any:
        if isinstance(value, list) and not value:
            # An empty list would pass vacuously.
            raise PydanticCustomError(
                "assert_empty",
                "assert must list at least one assertion; an empty list would pass vacuously",
            )
        return value
