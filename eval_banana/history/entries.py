"""The checks of a run record, checked and built in one pass: the reader's hot loop.

`eb history` reads hundreds of records of thousands of checks each; a schema walk and a generic
`model_validate` per entry cost seconds there. This loop asks of each entry exactly what the
published schema asks of a `HistoryCheck` (a test holds the two to the same answers) and builds
the record from the dict it already has. Any entry it refuses sends the caller to the schema
for the message.
"""

from __future__ import annotations

from typing import Any

from eval_banana.harness.usage import MOST_DOLLARS
from eval_banana.history.record import HistoryCheck

_STATUSES = frozenset({"passed", "failed", "error"})
_REQUIRED = ("id", "type", "status", "digest", "duration_ms")
# Each field's default, for the keys an entry leaves out (writers leave out the defaults).
_DEFAULTS: dict[str, Any] = {
    name: spec.get_default(call_default_factory=False)
    for name, spec in HistoryCheck.model_fields.items()
    if not spec.is_required() and spec.default_factory is None
}


class BadEntry(Exception):
    """An entry the schema would refuse."""


def _count(value: Any) -> int:
    """A JSON integer >= 0 (1.0 is one, as JSON Schema says; a bool is none)."""
    kind = type(value)
    if kind is int and value >= 0:
        return int(value)
    if kind is float and value.is_integer() and value >= 0:
        return int(value)
    raise BadEntry


def _optional_count(value: Any) -> int | None:
    return None if value is None else _count(value)


def _sample_count(value: Any) -> int:
    """A JSON integer >= 1."""
    if _count(value) < 1:
        raise BadEntry
    return int(value)


def _money(value: Any) -> float | None:
    """Dollars, 0 or more; an amount past MOST_DOLLARS (recorded before eb had the ceiling)
    is no amount (None), as it would be reported now."""
    if value is None:
        return None
    kind = type(value)
    if (kind is int or kind is float) and value >= 0:
        return float(value) if value <= MOST_DOLLARS else None
    raise BadEntry


def _flag(value: Any) -> bool:
    if type(value) is not bool:
        raise BadEntry
    return bool(value)


def _family(value: Any) -> str | None:
    if value is not None and type(value) is not str:
        raise BadEntry
    return value


def _tags(value: Any) -> list[str]:
    if type(value) is not list or any(type(tag) is not str for tag in value):
        raise BadEntry
    return value


# The optional fields: how each is checked (and normalised) when an entry holds it.
_OPTIONAL: dict[str, Any] = {
    "family": _family,
    "tags": _tags,
    "cost_usd": _money,
    "tokens": _optional_count,
    "samples": _sample_count,
    "sample_ms": _optional_count,
    "cached": _flag,
    "verdict_cost_usd": _money,
    "replaced_cost_usd": _money,
    "flaky": _flag,
    "early_error": _flag,
    "not_run": _flag,
}
_REQUIRED_KEYS = frozenset(_REQUIRED)


_new = object.__new__
_set = object.__setattr__


def _entry(raw: Any) -> HistoryCheck:
    # The hot loop of `eb history` (500 records of 1,000 checks are half a million entries):
    # plain type tests, the optional fields only when present, and the entry built from the
    # dict it has, without a call per field.
    if type(raw) is not dict:
        raise BadEntry
    try:
        check_id, kind, status = raw["id"], raw["type"], raw["status"]
        digest, duration = raw["digest"], raw["duration_ms"]
    except KeyError:
        raise BadEntry from None
    if (
        type(check_id) is not str
        or type(kind) is not str
        or type(digest) is not str
        or type(status) is not str
        or status not in _STATUSES
    ):
        raise BadEntry
    values = _DEFAULTS.copy()
    values.update(raw)
    if type(duration) is not int or duration < 0:
        values["duration_ms"] = _count(duration)
    if len(raw) > len(_REQUIRED):
        for name in raw:
            if name not in _REQUIRED_KEYS:
                check = _OPTIONAL.get(name)
                if check is None:
                    raise BadEntry
                values[name] = check(raw[name])
    if "tags" not in raw:
        values["tags"] = []
    entry = _new(HistoryCheck)
    _set(entry, "__dict__", values)
    return entry


def read_entries(items: Any) -> list[HistoryCheck] | None:
    """The checks of a record, or None when any entry is not valid (the schema says why)."""
    if type(items) is not list:
        return None
    try:
        return [_entry(raw) for raw in items]
    except BadEntry:
        return None


# The fields in declaration order, as `model_dump` gives them; each one's value when left out
# (`tags`, whose default is made by a factory, is an empty list).
_FIELDS = tuple(HistoryCheck.model_fields)
_LEFT_OUT: dict[str, Any] = {name: _DEFAULTS.get(name, []) for name in _FIELDS}


def entry_document(check: HistoryCheck) -> dict[str, Any]:
    """A check as written: its defaults left out (most checks are not cached, flaky...).
    Read from the record's own values, without a dump of every field first: a record of
    1,000 checks is written at the end of every run, a replayed one included."""
    values = check.__dict__
    return {
        name: values[name]
        for name in _FIELDS
        if name in _REQUIRED_KEYS or values[name] != _LEFT_OUT[name]
    }
