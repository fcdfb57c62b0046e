"""JSON text exactly as `json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False[,
sort_keys=True])` writes it, in a fraction of the time, and straight from `Record`s (no
`model_dump` first).

NaN and the infinities are refused (ValueError), as that call refuses them: Python's json would
write `NaN` and `Infinity`, which no other JSON reader takes (a browser's JSON.parse throws), so
a stage file or report holding one would break its own schema. What eb reads from outside is
checked where it is read (an agent's cost, a dataset's numbers); this is the guard behind that.

The standard library's C encoder is used only without `indent`; with it, every value goes
through the pure-Python encoder's generators. Stage files and reports are indented (they are
read by people and hashed as bytes), and at 10,000 checks that costs seconds. Strings are
escaped by the standard library's own C function, numbers printed by `int`/`float` as the
encoder prints them, so the text is byte-for-byte the same (tests/core/test_canonjson.py proves it).
Anything unusual (a key that is not a string, a type JSON has no form for) falls back to
`json.dumps` itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring
from typing import Any

from eval_banana.core.record import Record

_INFINITY = float("inf")
_int_text = int.__repr__
_float_text = float.__repr__
# Per (Record class, indentation, sorted?): each field's opening text and attribute name. The
# keys repeat in every record of a list, so they are escaped and laid out once.
_HEADS: dict[tuple[type, str, bool], list[tuple[str, str]]] = {}


# `id()` of a Record -> (indentation, its text written there): texts known before a dump.
Rendered = Mapping[int, tuple[str, str]]


class _Unusual(Exception):
    """A value the fast path does not write; json.dumps will."""


def _float(value: float) -> str:
    if value != value or value in (_INFINITY, -_INFINITY):
        # json.dumps's own words for it, with allow_nan=False.
        raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
    return _float_text(value)


def _heads(cls: type[Record], pad: str, sort_keys: bool) -> list[tuple[str, str]]:
    heads = _HEADS.get((cls, pad, sort_keys))
    if heads is None:
        order = [(spec.alias or name, name) for name, spec in cls.model_fields.items()]
        if sort_keys:
            order.sort()
        inner = pad + "  "
        heads = [
            (("{\n" if index == 0 else ",\n") + inner + encode_basestring(key) + ": ", name)
            for index, (key, name) in enumerate(order)
        ]
        _HEADS[(cls, pad, sort_keys)] = heads
    return heads


def dumps(value: Any, *, sort_keys: bool = False, rendered: Rendered | None = None) -> str:
    """The indent-2, non-ASCII-as-is JSON text of `value` (Records dumped by alias).

    `rendered` maps `id()` of Records inside `value` to (indentation, text): their own text as
    this function writes it at that indentation (with the same `sort_keys`). Those are copied,
    re-indented where they land elsewhere, instead of written again. The caller keeps the
    Records alive while this runs.
    """
    parts: list[str] = []
    if _render(value, parts=parts, sort_keys=sort_keys, rendered=rendered, flush=None):
        return "".join(parts)
    return _plain(value, sort_keys=sort_keys)


def dump(
    value: Any,
    *,
    emit: Callable[[str], None],
    sort_keys: bool = False,
    rendered: Rendered | None = None,
) -> bool:
    """`dumps`'s text handed to `emit` piece by piece, never held whole: the stage files of
    10,000 checks are tens of megabytes of text, and the pieces of it several times that.

    False when `value` holds something only `json.dumps` writes: `emit` may have had the
    beginning of the text by then, so the caller starts again with `dumps`.
    """
    parts: list[str] = []

    def flush() -> None:
        emit("".join(parts))
        parts.clear()

    if not _render(value, parts=parts, sort_keys=sort_keys, rendered=rendered, flush=flush):
        return False
    flush()
    return True


def _plain(value: Any, *, sort_keys: bool) -> str:
    plain = value.model_dump(mode="json", by_alias=True) if isinstance(value, Record) else value
    return json.dumps(plain, indent=2, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False)


# A piece handed to `dump`'s `emit`: this many parts at least (a part is about one field, some
# tens of characters: a piece is a few hundred kilobytes).
_PIECE_PARTS = 1 << 12


def _render(
    value: Any,
    *,
    parts: list[str],
    sort_keys: bool,
    rendered: Rendered | None,
    flush: Callable[[], None] | None,
) -> bool:
    """Append the text of `value` to `parts` (calling `flush` once they are many, which
    empties them); False when it holds something only `json.dumps` writes."""
    append = parts.append
    # Per indentation of the members: each key's text after its line break and indentation
    # (the first member's opening brace is added to it), written once per key.
    heads_at: dict[str, dict[str, str]] = {}
    known = rendered or {}

    # The loops over a dict's, a list's and a Record's members below write plain scalars in
    # place, each the same way: a call per member was a third of the time on large documents.
    def nested(item: Any, inner: str) -> None:
        write(item, inner)
        # A nested value is done: a good place to hand a piece over.
        if flush is not None and len(parts) >= _PIECE_PARTS:
            flush()

    def write(item: Any, pad: str) -> None:
        kind = type(item)
        inner = pad + "  "
        if kind is dict:
            if not item:
                append("{}")
                return
            heads = heads_at.get(inner)
            if heads is None:
                heads = heads_at[inner] = {}
            first = True
            for key in sorted(item) if sort_keys else item:
                head = heads.get(key)
                if head is None:
                    if type(key) is not str:
                        raise _Unusual
                    head = heads[key] = ",\n" + inner + encode_basestring(key) + ": "
                if first:
                    head = "{" + head[1:]
                    first = False
                value = item[key]
                kind = type(value)
                if kind is str:
                    append(head + encode_basestring(value))
                elif kind is int:
                    append(head + _int_text(value))
                elif value is None:
                    append(head + "null")
                elif kind is bool:
                    append(head + ("true" if value else "false"))
                else:
                    append(head)
                    nested(value, inner)
            append("\n" + pad + "}")
        elif kind is list or kind is tuple:
            if not item:
                append("[]")
                return
            head = "[\n" + inner
            for element in item:
                kind = type(element)
                if kind is str:
                    append(head + encode_basestring(element))
                elif kind is int:
                    append(head + _int_text(element))
                elif element is None:
                    append(head + "null")
                elif kind is bool:
                    append(head + ("true" if element else "false"))
                else:
                    append(head)
                    nested(element, inner)
                head = ",\n" + inner
            append("\n" + pad + "]")
        elif isinstance(item, Record):
            found = known.get(id(item)) if known else None
            if found is not None:
                at, text = found
                # JSON text holds no raw line break inside a string: each one starts a line.
                append(text if at == pad else text.replace("\n" + at, "\n" + pad))
                return
            fields = _heads(type(item), pad, sort_keys)
            if not fields:
                append("{}")
                return
            own = item.__dict__
            for head, name in fields:
                value = own[name]
                kind = type(value)
                if kind is str:
                    append(head + encode_basestring(value))
                elif kind is int:
                    append(head + _int_text(value))
                elif value is None:
                    append(head + "null")
                elif kind is bool:
                    append(head + ("true" if value else "false"))
                else:
                    append(head)
                    nested(value, inner)
            append("\n" + pad + "}")
        elif isinstance(item, str):
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
        else:
            raise _Unusual

    try:
        write(value, "")
    except _Unusual:
        return False
    return True
