"""CSV cells read as the types a family's case_schema declares for their fields."""

from __future__ import annotations

from typing import Any

import pytest

from eval_banana.datasets.celltypes import NumberOutOfRange, cell_readers, typed_row


def _typed(schema: Any, row: dict[str, str]) -> dict[str, Any]:
    return typed_row(row=row, readers=cell_readers(schema))


def test_each_declared_type_reads_cells_as_json_says_them() -> None:
    schema = {
        "type": "object",
        "properties": {
            "price": {"type": "number"},
            "count": {"type": "integer"},
            "ok": {"type": "boolean"},
            "note": {"type": ["number", "null"]},
        },
    }
    row = {"price": "1.5e2", "count": "-3", "ok": "TRUE", "note": "", "name": "apple"}
    assert _typed(schema, row) == {
        "price": 150.0,
        "count": -3,
        "ok": True,
        "note": None,
        "name": "apple",  # no type declared: left as text
    }
    assert _typed(schema, {"price": "2", "ok": "false"}) == {"price": 2, "ok": False}


def test_a_cell_that_is_not_of_its_type_stays_text_for_the_schema_to_tell() -> None:
    schema = {"properties": {"n": {"type": "number"}, "i": {"type": "integer"}}}
    # JSON's number grammar, not Python's float: no sign, no bare fraction, no NaN, no spaces.
    for cell in ("+1", ".5", "NaN", "inf", " 1", "1,5", "", "0x10"):
        assert _typed(schema, {"n": cell}) == {"n": cell}
    assert _typed(schema, {"i": "1.5"}) == {"i": "1.5"}
    assert _typed({"properties": {"b": {"type": "boolean"}}}, {"b": "yes"}) == {"b": "yes"}


def test_fields_text_may_fill_and_schemas_of_another_shape_change_nothing() -> None:
    row = {"v": "1"}
    for schema in (
        {"properties": {"v": {"type": ["string", "number"]}}},  # text fits: the author's choice
        {"properties": {"v": {"type": "string"}}},
        {"properties": {"v": {"minimum": 0}}},  # no type
        {"properties": {"v": True}},
        {"properties": ["v"]},
        {"type": "object"},
        ["not", "a", "schema"],
        None,
    ):
        assert _typed(schema, row) == row


@pytest.mark.parametrize("cell", ["1e400", "-1.5e309"])
def test_a_number_cell_too_large_to_read_is_refused_with_its_field(cell: str) -> None:
    """Read, it would be Infinity, which JSON cannot say; the row is told with the field."""
    schema = {"properties": {"n": {"type": "number"}}}
    with pytest.raises(NumberOutOfRange) as raised:
        _typed(schema, {"n": cell, "m": "x"})
    assert (raised.value.field, raised.value.cell) == ("n", cell)
    assert _typed(schema, {"n": "1e308"}) == {"n": 1e308}
