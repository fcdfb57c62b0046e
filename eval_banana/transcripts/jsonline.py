"""One output line as a JSON object, also when only its start and its end were read.

Of a line too long to hold, the long string open where its start was cut (a result's text, a
tool's output) usually runs on into its end: the two are joined where the middle was left out,
so the string keeps its start and its end (where an answer's verdict is), and the length of the
middle is told. Otherwise the start alone is made whole (eval_banana.transcripts.repair).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from eval_banana.transcripts.reading import Line
from eval_banana.transcripts.repair import repair

# How much of a line too long to hold is made whole again (enough for its kind, its tool and
# the start of its text, whatever transcript_max_chars is).
REPAIR_CHARS = 64 << 10


# Marks where a cut line's start and end are joined; a line already holding it is not joined.
_JOINT = "\ue000"
# How many characters at either side of the joint may be half an escape (`\\uXXXX`).
_HALF_ESCAPE = 6


class Unread(NamedTuple):
    """The string of an event that was joined across the unread middle of its line."""

    text: str
    chars: int  # about how many characters were left out of it (the middle's bytes)


class Loaded(NamedTuple):
    event: dict[str, Any]
    unread: Unread | None = None


def load(line: Line) -> Loaded | None:
    """The object the line holds (of a cut line, its start and end joined, or its start made
    whole), else None."""
    text = line.text.strip()
    if not text.startswith("{"):
        return None
    if line.cut:
        joined = _joined(start=text, end=line.end.strip(), gap=line.gap)
        return joined if joined is not None else _repaired(text)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return _repaired(text)
    return Loaded(event=value) if isinstance(value, dict) else None


def _repaired(text: str) -> Loaded | None:
    event = repair(text[:REPAIR_CHARS])
    return None if event is None else Loaded(event=event)


def _joined(*, start: str, end: str, gap: int) -> Loaded | None:
    """The object of a cut line whose start and end are inside one string, joined there."""
    if _JOINT in start or _JOINT in end:
        return None
    # Either side may hold half an escape sequence: drop a little of it until the join parses.
    for drop_start in range(_HALF_ESCAPE):
        for drop_end in range(_HALF_ESCAPE):
            text = start[: len(start) - drop_start] + _JOINT + end[drop_end:]
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                continue
            if not isinstance(value, dict):
                return None
            joined = _unjoin(value)
            if joined is None:  # the joint fell in a key: no string runs across the middle
                return None
            return Loaded(event=value, unread=Unread(text=joined, chars=gap))
    return None


def _unjoin(event: dict[str, Any]) -> str | None:
    """Take the joint out of the string holding it (in place); that string, or None."""
    stack: list[dict[Any, Any] | list[Any]] = [event]
    while stack:
        container = stack.pop()
        places: dict[Any, Any] = (
            container if isinstance(container, dict) else dict(enumerate(container))
        )
        for key, value in places.items():
            if isinstance(value, str) and _JOINT in value:
                joined = value.replace(_JOINT, "", 1)
                container[key] = joined
                return joined
            if isinstance(value, dict | list):
                stack.append(value)
    return None


def texts(value: object) -> str | None:
    """The text of a content value: a string, or the `text` parts of a list, joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        found = [
            part["text"]
            for part in value
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return "\n".join(found) if found else None
    return None
