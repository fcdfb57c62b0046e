"""JSON text exactly as `json.dumps(value, indent=2, ensure_ascii=False[, sort_keys=True])`
writes it, in a fraction of the time, and straight from `Record`s (no `model_dump` first).

The standard library's C encoder is used only without `indent`; with it, every value goes
through the pure-Python encoder's generators. Stage files and reports are indented (they are
read by people and hashed as bytes), and at 10,000 checks that costs seconds. Strings are
escaped by the standard library's own C function, numbers printed by `int`/`float` as the
encoder prints them, so the text is byte-for-byte the same (tests/test_canonjson.py proves it).
Anything unusual (a key that is not a string, a type JSON has no form for) falls back to
`json.dumps` itself.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

from eval_banana.models.record import Record

_INFINITY = float("inf")
_int_text = int.__repr__
_float_text = float.__repr__
# Per Record class: (dumped key, attribute name), in the order a dump lists them.
_FIELD_ORDER: dict[tuple[type, bool], list[tuple[str, str]]] = {}


class _Unusual(Exception):
    """A value the fast path does not write; json.dumps will."""


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return _float_text(value)


def _fields(cls: type[Record], *, sort_keys: bool) -> list[tuple[str, str]]:
    order = _FIELD_ORDER.get((cls, sort_keys))
    if order is None:
        order = [(spec.alias or name, name) for name, spec in cls.model_fields.items()]
        if sort_keys:
            order.sort()
        _FIELD_ORDER[(cls, sort_keys)] = order
    return order


def dumps(value: Any, *, sort_keys: bool = False) -> str:
    """The indent-2, non-ASCII-as-is JSON text of `value` (Records dumped by alias)."""
    parts: list[str] = []
    append = parts.append

    def members(items: list[tuple[str, Any]], pad: str) -> None:
        inner = pad + "  "
        opening = "{\n"
        for key, item in items:
            head = opening + inner + encode_basestring(key) + ": "
            opening = ",\n"
            # Plain scalars inline: a call per leaf is most of the time on large documents.
            kind = type(item)
            if kind is str:
                append(head + encode_basestring(item))
            elif kind is int:
                append(head + _int_text(item))
            elif item is None:
                append(head + "null")
            elif kind is bool:
                append(head + ("true" if item else "false"))
            else:
                append(head)
                write(item, inner)
        append("\n" + pad + "}")

    def write(item: Any, pad: str) -> None:
        if isinstance(item, str):
            append(encode_basestring(item))
        elif item is None:
            append("null")
        elif item is True:
            append("true")
        elif item is False:
            append("false")
        elif isinstance(item, int):
            append(_int_text(item))
        elif isinstance(item, float):
            append(_float(item))
        elif isinstance(item, Record):
            own = item.__dict__
            pairs = [(key, own[name]) for key, name in _fields(type(item), sort_keys=sort_keys)]
            members(pairs, pad) if pairs else append("{}")
        elif isinstance(item, dict):
            if not item:
                append("{}")
                return
            if not all(isinstance(key, str) for key in item):
                raise _Unusual
            members(sorted(item.items()) if sort_keys else list(item.items()), pad)
        elif isinstance(item, list | tuple):
            if not item:
                append("[]")
                return
            inner = pad + "  "
            opening = "[\n"
            for element in item:
                append(opening + inner)
                opening = ",\n"
                write(element, inner)
            append("\n" + pad + "]")
        else:
            raise _Unusual

    try:
        write(value, "")
    except _Unusual:
        plain = value.model_dump(mode="json", by_alias=True) if isinstance(value, Record) else value
        return json.dumps(plain, indent=2, sort_keys=sort_keys, ensure_ascii=False)
    return "".join(parts)
