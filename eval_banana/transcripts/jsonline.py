"""One output line as a JSON object, also when only its start and its end were read.

Of a line too long to hold, the long string open where its start was cut (a result's text, a
tool's output) usually runs on into its end: the two are joined where the middle was left out,
so the string keeps its start and its end (where an answer's verdict is), and the length of the
middle is told. Otherwise the start alone is made whole (eval_banana.transcripts.repair).
"""

from __future__ import annotations

import itertools
import json
from bisect import bisect_left
from collections.abc import Iterator
from string import hexdigits
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
    failed_after: set[_Around] = set()  # the strings a join failed after
    for drop in _drops(start=start, end=end):
        if drop.around in failed_after:
            continue
        kept = start[: len(start) - drop.start]
        text = kept + _JOINT + end[drop.end :]
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            if exc.pos > len(kept) + drop.around.closes - drop.end:
                # What follows the joint's string is no JSON, whatever else is dropped.
                failed_after.add(drop.around)
            continue
        except (ValueError, RecursionError):
            continue
        if not isinstance(value, dict):
            return None
        joined = _unjoin(value)
        if joined is None:  # the joint fell in a key: no string runs across the middle
            return None
        return Loaded(event=value, unread=Unread(text=joined, chars=gap))
    return None


class _Around(NamedTuple):
    """The quotes of the string a join puts the joint in: where it opens in the start and
    closes in the end. Joins that drop other characters inside that string differ in it only."""

    opens: int
    closes: int


class _Drop(NamedTuple):
    start: int  # characters dropped from the start's end
    end: int  # from the end's start
    around: _Around


def _drops(*, start: str, end: str) -> Iterator[_Drop]:
    """How much of the start's end and of the end's start to drop, in the order tried: only
    the drops whose join can parse, which leave the joint inside a string and between two
    escapes (any other join is no JSON). Parsing a megabyte for each of the 36 drops took
    seconds; this reads the few characters at either side and counts quotes once."""
    escaped = _escaped_quotes(text=start)
    base = max(0, len(start) - _HALF_ESCAPE)  # every drop keeps the start up to here
    quotes_to_base = _quotes(text=start, escaped=escaped, begin=0, stop=base)
    opens: dict[int, int] = {}
    for drop in range(_HALF_ESCAPE):
        stop = len(range(len(start))[: len(start) - drop])  # where start[: len - drop] ends
        quotes = quotes_to_base + _quotes(text=start, escaped=escaped, begin=base, stop=stop)
        if quotes % 2 and _between_escapes(text=start, stop=stop):
            opens[drop] = _opening_quote(text=start, stop=stop, escaped=escaped)
    if not opens:
        return
    closes = {
        drop: _closing_quote(text=end, begin=drop)
        for drop in range(_HALF_ESCAPE)
        if _closes_string(text=end[drop:])
    }
    for (drop_start, opening), (drop_end, closing) in itertools.product(
        opens.items(), closes.items()
    ):
        yield _Drop(start=drop_start, end=drop_end, around=_Around(opening, closing))


def _quotes(*, text: str, escaped: list[int], begin: int, stop: int) -> int:
    """How many quotes in `text[begin:stop]` open or close a string (`escaped`: those that do
    not, `_escaped_quotes`)."""
    inside = bisect_left(escaped, stop) - bisect_left(escaped, begin)
    return text.count('"', begin, stop) - inside


def _between_escapes(*, text: str, stop: int) -> bool:
    """Whether `text[:stop]` ends inside no escape: after no unpaired backslash, nor after a
    `\\u` and fewer than four digits."""
    if _backslashes_before(text=text, stop=stop) % 2:
        return False
    return not any(
        text.startswith("\\u", at) and _backslashes_before(text=text, stop=at + 1) % 2
        for at in range(max(0, stop - 5), stop - 1)
    )


def _opening_quote(*, text: str, stop: int, escaped: list[int]) -> int:
    """Where the string `text[:stop]` ends inside opens: its last quote not inside a string."""
    at = text.rfind('"', 0, stop)
    while at >= 0 and _among(ordered=escaped, value=at):
        at = text.rfind('"', 0, at)
    return at


def _among(*, ordered: list[int], value: int) -> bool:
    at = bisect_left(ordered, value)
    return at < len(ordered) and ordered[at] == value


def _closing_quote(*, text: str, begin: int) -> int:
    """Where the string `text[begin:]` begins inside closes: its first quote not escaped."""
    at = text.find('"', begin)
    while at >= 0 and _backslashes_before(text=text, stop=at, begin=begin) % 2:
        at = text.find('"', at + 1)
    return at


def _escaped_quotes(*, text: str) -> list[int]:
    """Where in `text` a `"` stands inside a string (an odd run of backslashes before it)
    rather than opening or closing one, in order."""
    found: list[int] = []
    at = text.find('\\"')
    while at >= 0:
        if _backslashes_before(text=text, stop=at + 1) % 2:
            found.append(at + 1)
        at = text.find('\\"', at + 2)
    return found


def _backslashes_before(*, text: str, stop: int, begin: int = 0) -> int:
    """How many backslashes run just before `stop` (none before `begin` counted)."""
    at = stop
    while at > begin and text[at - 1] == "\\":
        at -= 1
    return stop - at


def _closes_string(text: str) -> bool:
    """Whether `text`, read from inside a string, between escapes, begins with no broken
    escape and closes that string and every one it opens after (an odd count of quotes that
    do not stand inside a string)."""
    if text.startswith("\\") and not _whole_escape(text):
        return False
    escaped = _escaped_quotes(text=text)
    return _quotes(text=text, escaped=escaped, begin=0, stop=len(text)) % 2 == 1


def _whole_escape(text: str) -> bool:
    """Whether `text` begins with an escape JSON has: a backslash and one of `"\\/bfnrt`, or
    `\\u` and four hex digits."""
    if text.startswith("\\u"):
        digits = text[2:6]
        return len(digits) == 4 and all(char in hexdigits for char in digits)
    return len(text) > 1 and text[1] in '"\\/bfnrt'


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
