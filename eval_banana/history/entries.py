"""The checks of a run record, checked and built in one pass: the reader's hot loop.

`eb history` reads hundreds of records of thousands of checks each; a schema walk and a generic
`model_validate` per entry cost seconds there. This loop asks of each entry exactly what the
published schema asks of a `HistoryCheck` (a test holds the two to the same answers) and builds
the record from the dict it already has. Any entry it refuses sends the caller to the schema
for the message.
"""

from __future__ import annotations

from typing import Any

from eval_banana.history.record import HistoryCheck

_STATUSES = frozenset({"passed", "failed", "error"})
_REQUIRED = ("id", "type", "status", "digest", "duration_ms")
_FIELDS = frozenset(HistoryCheck.model_fields)
# Each field's default, for the keys an entry leaves out (writers leave out the defaults).
_DEFAULTS: dict[str, Any] = {
    name: spec.get_default(call_default_factory=False)
    for name, spec in HistoryCheck.model_fields.items()
    if not spec.is_required() and spec.default_factory is None
}


class BadEntry(Exception):
    """An entry the schema would refuse."""


def _count(value: Any, *, optional: bool) -> int | None:
    """A JSON integer >= 0 (1.0 is one, as JSON Schema says; a bool is none)."""
    if value is None and optional:
        return None
    kind = type(value)
    if kind is int and value >= 0:
        return int(value)
    if kind is float and value.is_integer() and value >= 0:
        return int(value)
    raise BadEntry


def _money(value: Any) -> float | None:
    if value is None:
        return None
    kind = type(value)
    if (kind is int or kind is float) and value >= 0:
        return float(value)
    raise BadEntry


def _flag(value: Any) -> bool:
    if type(value) is not bool:
        raise BadEntry
    return bool(value)


def _entry(raw: Any) -> HistoryCheck:
    if type(raw) is not dict or not _FIELDS.issuperset(raw):
        raise BadEntry
    values = {**_DEFAULTS, **raw}
    for name in _REQUIRED:
        if name not in raw:
            raise BadEntry
    if type(values["id"]) is not str or type(values["type"]) is not str:
        raise BadEntry
    if type(values["digest"]) is not str or values["status"] not in _STATUSES:
        raise BadEntry
    family = values["family"]
    if family is not None and type(family) is not str:
        raise BadEntry
    tags = raw.get("tags")
    if tags is None:
        if "tags" in raw:
            raise BadEntry
        values["tags"] = []
    elif type(tags) is not list or any(type(tag) is not str for tag in tags):
        raise BadEntry
    values["duration_ms"] = _count(values["duration_ms"], optional=False)
    values["tokens"] = _count(values["tokens"], optional=True)
    values["cost_usd"] = _money(values["cost_usd"])
    for name in ("cached", "flaky", "early_error"):
        values[name] = _flag(values[name])
    entry = object.__new__(HistoryCheck)
    entry.__dict__.update(values)
    return entry


def read_entries(items: Any) -> list[HistoryCheck] | None:
    """The checks of a record, or None when any entry is not valid (the schema says why)."""
    if type(items) is not list:
        return None
    try:
        return [_entry(raw) for raw in items]
    except BadEntry:
        return None


def entry_document(check: HistoryCheck) -> dict[str, Any]:
    """A check as written: its defaults left out (most checks are not cached, flaky...)."""
    dumped = check.model_dump()
    return {
        name: value
        for name, value in dumped.items()
        if name in _REQUIRED or value != _DEFAULTS.get(name, [])
    }
