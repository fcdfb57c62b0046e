"""One of json's C encoders kept for many values: `JSONEncoder.encode` builds a new one on each
call (through two Python frames), which is most of its time for a dataset row."""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as json_encoder
from typing import Any


def reused_encoder(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """`encoder.encode` for mappings and lists, from one C encoder made with exactly the
    arguments `encode` would give it: the same text, and the same errors.

    Not for sharing between threads: the encoder keeps the containers it is inside of (its
    cycle check) in one mapping, emptied again after a value that failed.
    """
    make = json_encoder.c_make_encoder  # type: ignore[attr-defined]  # not in typeshed
    if make is None or encoder.indent is not None:  # no C encoder: encode's own path
        return encoder.encode
    markers: dict[int, Any] | None = {} if encoder.check_circular else None
    chunks = make(
        markers,
        encoder.default,
        json_encoder.encode_basestring_ascii
        if encoder.ensure_ascii
        else json_encoder.encode_basestring,
        encoder.indent,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )

    def encode(value: Any) -> str:
        if isinstance(value, str):  # as `encode` does: a string alone is its escaped text
            return encoder.encode(value)
        try:
            return "".join(chunks(value, 0))
        except BaseException:
            # A value that failed leaves the containers it was inside of marked: `encode`
            # starts each value with a new mapping, this one with the same, emptied.
            if markers is not None:
                markers.clear()
            raise

    return encode
