"""The text of each element of a stage file's top-level list, as the file holds it.

`eb merge` writes the plan and execute files of 10,000 checks that it has just read from the
shards, unchanged. Writing each record again costs more than copying its text: this module
cuts that text out of the canonical file (sorted keys, two-space indent), so
`canonjson.dumps(..., rendered=...)` can copy it. It only reads files laid out as eb writes
them; anything else gives None and the records are written the usual way.

A canonical file holds no line break inside a string, so its layout is found by plain text
search: a top-level list `"name": [` starts a line at two spaces, its elements open and close
at four, and it ends with `]` at two.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from eval_banana.core.record import Record

_OPEN = "\n    {\n"
_BETWEEN = "\n    },\n    {\n"
_CLOSE = "\n    }\n  ]"
ELEMENT_PAD = "    "  # where a top-level list's elements sit
_END = "\n" + ELEMENT_PAD + "}"


def element_texts(
    *, text: str, field: str, elements: Sequence[Record]
) -> dict[int, tuple[str, str]]:
    """`id(element)` -> (its indentation, its text), for the elements of the list `field`.

    Empty when the file is not laid out as eb writes it, or when the texts found are not the
    elements read (their number, or the first and the last, differ).
    """
    if not elements:
        return {}
    head = f'\n  "{field}": [' + _OPEN
    start = text.find(head)
    if start < 0:
        return {}
    start += len(head)
    end = text.find(_CLOSE, start)
    if end < 0:
        return {}
    region = text[start:end]
    # Inside an element every line is indented six spaces or more; the only shallower lines
    # are the two of each boundary (`    },` and `    {`). Anything else is not eb's layout.
    shallow = region.count("\n") - region.count("\n      ")
    if shallow != 2 * region.count(_BETWEEN):
        return {}
    parts = region.split(_BETWEEN)
    if len(parts) != len(elements):
        return {}
    for position in {0, len(parts) - 1}:
        if not _same(text="{\n" + parts[position] + "\n}", element=elements[position]):
            return {}
    # As the file holds them: opened at four spaces, closed at four (canonjson copies them).
    return {
        id(element): (ELEMENT_PAD, "{\n" + part + _END)
        for element, part in zip(elements, parts, strict=True)
    }


def file_element_texts(
    *, data: bytes, field: str, elements: Sequence[Record]
) -> dict[int, tuple[str, str]]:
    """`element_texts` of a file's bytes, as just read (none if they are not UTF-8)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {}  # written anew instead
    return element_texts(text=text, field=field, elements=elements)


def _same(*, text: str, element: Record) -> bool:
    try:
        value: Any = json.loads(text)
    except ValueError:
        return False
    return bool(value == element.model_dump(mode="json", by_alias=True))
