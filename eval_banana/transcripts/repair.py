"""A JSON event line read only in part (it was too long to hold): its start made whole.

An agent can print one event of many megabytes (a tool result holding a whole file). Only its
first part is read; this closes what is still open there (the string being read, then every
array and object) so the event's kind, tool and the start of its text can still be shown. A key
or a value cut in the middle is dropped back to the last complete member.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],:]|[^\s{}\[\],:"]+|\s+')
_CLOSERS = {"{": "}", "[": "]"}


def _close_string(fragment: str) -> str | None:
    """`fragment` (an unterminated string, from its opening quote) closed, or None."""
    for drop in range(7):  # a cut escape is at most `\uXXX` long
        candidate = fragment[: len(fragment) - drop] + '"'
        try:
            json.loads(candidate)
        except ValueError:
            continue
        return candidate
    return None


def repair(prefix: str) -> dict[str, Any] | None:
    """The object `prefix` starts, with everything open closed; None if it is not one."""
    if not prefix.startswith("{"):
        return None
    stack = ""
    safe = (0, "")  # a position after which closing the open containers gives valid JSON
    expect_key = False
    pos = 0
    end = len(prefix)
    while pos < end:
        match = _TOKEN.match(prefix, pos)
        if match is None:
            # An unterminated string: keep it when it is a value, else drop back.
            if prefix[pos] == '"' and not expect_key:
                closed = _close_string(prefix[pos:])
                if closed is not None:
                    return _load(prefix[:pos] + closed + _closing(stack))
            break
        token = match.group()
        pos = match.end()
        first = token[0]
        if first in "{[":
            stack += first
            expect_key = first == "{"
            safe = (pos, stack)
        elif first in "}]":
            stack = stack[:-1]
            safe = (pos, stack)
        elif first == ",":
            expect_key = stack.endswith("{")
        elif first == ":":
            expect_key = False
        elif first == '"':
            if expect_key:
                expect_key = False
            else:
                safe = (pos, stack)
        elif not first.isspace() and pos < end:
            safe = (pos, stack)  # a number or literal, complete only if something follows
        if not stack:
            break
    cut, open_at_cut = safe
    return _load(prefix[:cut] + _closing(open_at_cut))


def _closing(stack: str) -> str:
    return "".join(_CLOSERS[opener] for opener in reversed(stack))


def _load(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
