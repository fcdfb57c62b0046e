"""A family's case_schema: its patterns are matched in linear time (a backtracking pattern
against a row's value hung `eb validate`), a pattern RE2 cannot take is told at its place, and
what the schema allows is what JSON Schema says."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from eval_banana.core.errors import DefinitionError
from eval_banana.datasets.rowschema import error_message, first_error, row_validator

# Python's `re` needs some 2 ** 40 steps to find that this does not match `^(a+)+$`.
BACKTRACKER = "a" * 40 + "!"


def _errors_in_a_child(schema: dict[str, Any], row: dict[str, Any]) -> str:
    """The first error's message (or "valid"), worked out in a child with a timeout: a match
    that backtracks fails the test by timing out instead of hanging the suite."""
    code = (
        "import json, sys\n"
        "from eval_banana.datasets.rowschema import first_error, row_validator\n"
        "schema, row = json.loads(sys.argv[1]), json.loads(sys.argv[2])\n"
        "validator = row_validator(schema=schema, check_file='fam.yaml')\n"
        "error = first_error(validator=validator, row=row, check_file='fam.yaml')\n"
        "print('valid' if error is None else error.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(schema), json.dumps(row)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return done.stdout.strip()


def test_a_backtracking_pattern_against_a_rows_value_is_answered_at_once() -> None:
    schema = {"properties": {"s": {"pattern": "^(a+)+$"}}}
    assert _errors_in_a_child(schema, {"s": BACKTRACKER}) == (
        f"{BACKTRACKER!r} does not match '^(a+)+$'"
    )
    assert _errors_in_a_child(schema, {"s": "aaaa"}) == "valid"


def test_a_backtracking_pattern_property_or_an_extra_field_is_answered_at_once() -> None:
    schema = {
        "patternProperties": {"^(a+)+$": {"type": "string"}},
        "additionalProperties": False,
    }
    # The name matches no pattern (at once), so the field is one the schema does not allow.
    assert _errors_in_a_child(schema, {BACKTRACKER: "x"}) == (
        f"fields not allowed here: {BACKTRACKER!r}"
    )
    # A name the pattern matches takes its schema.
    assert _errors_in_a_child(schema, {"aaa": 5}) == "5 is not of type 'string'"
    assert _errors_in_a_child(schema, {"aaa": "x"}) == "valid"
    typed_extras = {"properties": {"id": {}}, "additionalProperties": {"type": "integer"}}
    assert _errors_in_a_child(typed_extras, {"id": "a", "n": "x"}) == (
        "'x' is not of type 'integer'"
    )


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        (
            {"properties": {"s": {"pattern": "^(?=a)a+$"}}},
            "at properties.s.pattern: '^(?=a)a+$': pattern is not supported by RE2",
        ),
        (
            {"patternProperties": {"^(\\w)\\1$": {}}},
            "at patternProperties: '^(\\\\w)\\\\1$': pattern is not supported by RE2",
        ),
        (
            {"patternProperties": {"^x": {}}, "unevaluatedProperties": False},
            "unevaluatedProperties beside patternProperties is not supported",
        ),
        (
            {"properties": {"s": {"$ref": "https://example.com/s.json"}}},
            "at properties.s.$ref: 'https://example.com/s.json' refers outside the schema",
        ),
        # Checked by 2020-12's rules, it judged rows otherwise than the draft it names does.
        (
            {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
            "at $schema: 'http://json-schema.org/draft-04/schema#' is not draft 2020-12",
        ),
    ],
)
def test_what_the_schema_cannot_do_in_linear_time_or_offline_is_told_at_its_place(
    schema: dict[str, Any], said: str
) -> None:
    with pytest.raises(DefinitionError) as raised:
        row_validator(schema=schema, check_file="fam.yaml")
    assert raised.value.message.startswith("Invalid case_schema in fam.yaml"), raised.value.message
    assert said in raised.value.message, raised.value.message


def test_a_schema_naming_draft_2020_12_is_checked() -> None:
    for named in (
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2020-12/schema#",
    ):
        assert row_validator(schema={"$schema": named}, check_file="fam.yaml") is not None


def test_a_ref_to_a_place_the_schema_has_validates_and_one_it_lacks_is_the_schemas_fault() -> None:
    schema = {
        "$defs": {"answer": {"type": "string"}},
        "properties": {"a": {"$ref": "#/$defs/answer"}},
    }
    validator = row_validator(schema=schema, check_file="fam.yaml")
    assert first_error(validator=validator, row={"a": "yes"}, check_file="fam.yaml") is None
    error = first_error(validator=validator, row={"a": 1}, check_file="fam.yaml")
    assert error is not None and error.message == "1 is not of type 'string'"
    dangling = row_validator(
        schema={"properties": {"a": {"$ref": "#/$defs/nothing"}}}, check_file="fam.yaml"
    )
    with pytest.raises(DefinitionError, match="'#/\\$defs/nothing' points to nothing"):
        first_error(validator=dangling, row={"a": 1}, check_file="fam.yaml")


def test_a_value_with_a_lone_surrogate_fails_a_pattern_rather_than_crashing() -> None:
    # A JSON row may hold "\ud800", which RE2 (UTF-8 only) cannot be given: the row does not
    # match, and the schema says so at its field.
    validator = row_validator(
        schema={"properties": {"s": {"pattern": "^a"}}}, check_file="fam.yaml"
    )
    row = json.loads('{"s": "a\\ud800"}')
    error = first_error(validator=validator, row=row, check_file="fam.yaml")
    assert error is not None and error.message == "'a\\ud800' does not match '^a'"
    assert first_error(validator=validator, row={"s": "ab"}, check_file="fam.yaml") is None


@pytest.mark.parametrize(
    ("schema", "value", "told"),
    [
        # An article to judge, longer than the schema allows: its start and its length.
        (
            {"type": "string", "maxLength": 1000},
            "Lorem ipsum " * 20_000,
            "'Lorem ipsum Lorem ipsum Lorem ipsum Lorem ipsum Lorem ipsum… (240,000 characters) "
            "is too long",
        ),
        # A 5,000-digit cell a CSV keeps as text, typed as an integer.
        (
            {"type": "integer"},
            "9" * 5000,
            "'" + "9" * 59 + "… (5,000 characters) is not of type 'integer'",
        ),
        (
            {"type": "string"},
            {"deep": ["x" * 200]},
            "{'deep': ['" + "x" * 49 + "… (214 characters) is not of type 'string'",
        ),
        # A short value is quoted whole, as jsonschema says it.
        ({"type": "integer"}, "abc", "'abc' is not of type 'integer'"),
    ],
)
def test_an_error_quotes_a_long_value_by_its_start_and_length(
    schema: dict[str, Any], value: Any, told: str
) -> None:
    validator = row_validator(schema={"properties": {"field": schema}}, check_file="fam.yaml")
    error = first_error(validator=validator, row={"field": value}, check_file="fam.yaml")
    assert error is not None
    assert error_message(error) == told
