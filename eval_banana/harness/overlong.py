"""Objects too long for the streaming scan to read whole, followed to where they close.

The streaming scan decodes each candidate `{` with a bounded reach of text after it. A candidate
whose decode is cut short by that reach may still be a verdict (its `"score"` key can come after
megabytes of evidence), and it would close after every verdict read before it. A follower reads
such an object lexically, piece by piece, never holding it: it tracks strings and nesting, and
notes each object in it with a `"score"` key of its own that spans at least the reach. The
scan then refuses an earlier verdict instead of letting it win by default.
"""

from __future__ import annotations

import json
import re
import sys
from collections import deque
from typing import NamedTuple

# Outside strings only these characters change the lexical state.
_STRUCTURE = re.compile(r'["{}\[\]]')
# The rest of a string's body, up to its closing quote (or a backslash cut off at a piece's end).
_STRING_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_WHITESPACE = re.compile(r"[ \t\n\r]*")
# A key spelling `score` (escapes included) is never longer than this.
_LONGEST_SCORE_KEY = 64


class Overlong(NamedTuple):
    """An object holding a `"score"` key that was too long to read: where it starts and ends."""

    start: int
    end: int  # one past its closing brace


def _spells_score(raw: str) -> bool:
    if raw == "score":
        return True
    if "\\" not in raw:
        return False
    try:
        return bool(json.loads(f'"{raw}"') == "score")
    except ValueError:
        return False


class _Level:
    __slots__ = ("start", "is_object", "has_score")

    def __init__(self, *, start: int, is_object: bool) -> None:
        self.start = start
        self.is_object = is_object
        self.has_score = False


class Follower:
    """Follows the object opened at `start` until it closes, one piece of text at a time."""

    def __init__(self, *, start: int, reach: int) -> None:
        self.pos = start  # the next position to read
        self.reach = reach
        # The innermost levels only: an object nested deeper than the decoder's recursion limit
        # holds cannot be decoded, so the outer levels dropped here cannot be verdicts.
        self._levels: deque[_Level] = deque(maxlen=sys.getrecursionlimit() + 64)
        self._dropped = 0
        self._in_string = False
        self._escaped = False  # the last character read was a backslash inside a string
        self._key_so_far: str | None = None  # the open string's text, while short enough
        self._score_key_open = False  # a `"score"` string was read; is a `:` next?
        self.closed = False
        self.found: Overlong | None = None

    def structural(self, *, text: str, base: int, position: int) -> bool:
        """Whether the `{` at `position` opens an object nested in this one (read up to it)."""
        self.advance(text=text, base=base, to=position)
        return not self.closed and not self._in_string and self.pos == position

    def advance(self, *, text: str, base: int, to: int) -> None:
        """Read up to `to` (exclusive); `text[0]` is the character at `base`."""
        while self.pos < to and not self.closed:
            start = self.pos - base
            end = to - base
            if self._in_string:
                relative = self._read_string(text=text, start=start, end=end)
            elif self._score_key_open:
                relative = self._read_colon(text=text, start=start, end=end)
            else:
                relative = self._read_structure(text=text, start=start, end=end, base=base)
            self.pos = base + relative

    def _read_structure(self, *, text: str, start: int, end: int, base: int) -> int:
        found = _STRUCTURE.search(text, start, end)
        if found is None:
            return end
        at = found.start()
        char = text[at]
        if char == '"':
            self._in_string, self._key_so_far = True, ""
        elif char in "{[":
            if len(self._levels) == self._levels.maxlen:
                self._dropped += 1
            self._levels.append(_Level(start=base + at, is_object=char == "{"))
        else:
            self._close(end=base + at + 1)
        return at + 1

    def _close(self, *, end: int) -> None:
        if self._levels:
            level = self._levels.pop()
            if level.has_score and end - level.start >= self.reach:
                self.found = Overlong(start=level.start, end=end)
        elif self._dropped:
            self._dropped -= 1
        self.closed = not self._levels and not self._dropped

    def _read_string(self, *, text: str, start: int, end: int) -> int:
        if self._escaped:
            self._escaped = False
            self._extend_key(text[start : start + 1])
            return start + 1
        body = _STRING_BODY.match(text, start, end)
        stop = body.end() if body else start
        self._extend_key(text[start:stop])
        if stop == end:
            return stop
        if text[stop] == "\\":  # a backslash at the piece's end: its escape comes next
            self._escaped = True
            self._extend_key("\\")
            return stop + 1
        self._in_string = False
        level = self._levels[-1] if self._levels else None
        key = self._key_so_far
        if level is not None and level.is_object and key is not None and _spells_score(key):
            self._score_key_open = True
        return stop + 1

    def _extend_key(self, piece: str) -> None:
        if self._key_so_far is not None:
            joined = self._key_so_far + piece
            self._key_so_far = joined if len(joined) <= _LONGEST_SCORE_KEY else None

    def _read_colon(self, *, text: str, start: int, end: int) -> int:
        stop = _WHITESPACE.match(text, start, end)
        after = stop.end() if stop else start
        if after == end:
            return end
        self._score_key_open = False
        if text[after] == ":" and self._levels:
            self._levels[-1].has_score = True
        return after


# Followers open at once. A new one starts only inside a string of every open one, which takes
# contrived text; past this many, the rest of the output counts as one unread object.
_MAX_FOLLOWERS = 16


class Followers:
    """The followers of one streaming scan, and the last unread object they found."""

    def __init__(self, *, reach: int) -> None:
        self.reach = reach
        self._open: list[Follower] = []
        self.last: Overlong | None = None

    def start(self, *, text: str, base: int, positions: list[int]) -> None:
        """Follow the objects cut short at `positions` (ascending) that no open follower holds."""
        for position in positions:
            if any(
                follower.structural(text=text, base=base, position=position)
                for follower in self._open
            ):
                continue
            if len(self._open) < _MAX_FOLLOWERS:
                self._open.append(Follower(start=position, reach=self.reach))
            else:
                self._note(Overlong(start=position, end=sys.maxsize))

    def advance(self, *, text: str, base: int, to: int) -> None:
        """Read every open follower up to `to`; `text[0]` is the character at `base`."""
        for follower in self._open:
            follower.advance(text=text, base=base, to=to)
            if follower.found is not None:
                self._note(follower.found)
        self._open = [follower for follower in self._open if not follower.closed]

    def _note(self, found: Overlong) -> None:
        if self.last is None or found.end > self.last.end:
            self.last = found


def unread_problem(*, found: Overlong, reach: int) -> str:
    """Why no verdict is given when an object too long to read closes after the last verdict."""
    return (
        f'the object starting at character {found.start + 1} may hold a "score" key but is '
        f"longer than the {reach:,} characters an object is read whole from, and it ends after "
        "every verdict read, so none counts: print the verdict as a small JSON object of its "
        "own, after any long output"
    )
