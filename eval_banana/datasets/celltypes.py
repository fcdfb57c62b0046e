"""CSV cells read as the types a family's `case_schema` gives their fields.

Every CSV cell is text, while a spreadsheet holds prices, counts and yes/no columns. A field
whose type in `case_schema` admits no text (`number`, `integer`, `boolean`, `null`, or a list of
them) has its cells read as that type, as JSON says it: `1.5`, `-3`, `true`/`false` (spreadsheets
write `TRUE`), and an empty cell as null where null is allowed. A cell that is not such a value
stays text, so the schema tells it at its row. Fields a schema gives no type, or a type text
fits, are left as they are: only what the author declared changes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from eval_banana.core.jsonvalues import longest_whole_number, underflows

# JSON's number grammar: no leading `+`, no `.5`, no `NaN` (which Python's float would take).
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_BOOLEANS = {"true": True, "false": False}
_TYPED = frozenset({"number", "integer", "boolean", "null"})

Reader = Callable[[str], Any]


class NumberOutOfRange(ValueError):
    """A number cell beyond the largest number a program reads from JSON (about 1.8e308, as
    `1e400`): read, it would be Infinity, which JSON cannot say; or one too close to zero
    (`1e-400`), which would read as 0 though it is not zero (`cell` tells which). A CSV cell
    cannot be quoted to keep it as text, as a JSON or YAML value can: the fix is another
    number, or the type."""

    def __init__(self, *, field: str, cell: str) -> None:
        super().__init__(cell)
        self.field = field
        self.cell = cell


def cell_readers(schema: object) -> dict[str, Reader]:
    """For each top-level field of `schema` whose declared type admits no text, how to read a
    cell of it; empty when the schema types none (or is no object schema)."""
    if not isinstance(schema, Mapping):
        return {}
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    readers: dict[str, Reader] = {}
    for field, spec in properties.items():
        declared = spec.get("type") if isinstance(spec, Mapping) else None
        types = {declared} if isinstance(declared, str) else set(declared or ())
        if types and types <= _TYPED:
            readers[str(field)] = _reader(field=str(field), types=frozenset(types))
    return readers


def typed_row(*, row: dict[str, Any], readers: Mapping[str, Reader]) -> dict[str, Any]:
    """`row` (a CSV row: every value text) with the typed fields read as their types; raises
    NumberOutOfRange for a number cell too large to read."""
    return {
        name: readers[name](cell) if name in readers and isinstance(cell, str) else cell
        for name, cell in row.items()
    }


def _reader(*, field: str, types: frozenset[str]) -> Reader:
    # A whole number longer than Python reads stays text, and the schema tells it at its row.
    longest = longest_whole_number() or None

    def read(cell: str) -> Any:
        if cell == "" and "null" in types:
            return None
        integer = _INTEGER.fullmatch(cell) is not None
        whole = integer and (longest is None or len(cell.lstrip("-")) <= longest)
        if "integer" in types and whole:
            return int(cell)
        if "number" in types and _NUMBER.fullmatch(cell):
            if whole:
                return int(cell)
            if not integer:
                number = float(cell)
                if not math.isfinite(number) or (number == 0.0 and underflows(cell)):
                    raise NumberOutOfRange(field=field, cell=cell)
                return number
        if "boolean" in types and cell.lower() in _BOOLEANS:
            return _BOOLEANS[cell.lower()]
        return cell  # not of its type: the schema names the row and the field

    return read
