"""Step B: the last valid `{"score": 0|1, ...}` object in a text.

Every `{` is a candidate start and is decoded on its own with the C JSON decoder, so string
state is decided per candidate (a stray `"` in prose cannot hide a later verdict). Linear time:
- a successful decode jumps past its object; nested verdicts inside it are collected by an
  object hook in the order their closing braces appear, so the outermost valid verdict wins;
- a failed decode from `q` that stopped at `f` has already decided every `{` it read as
  structure in (q, f): those nested objects either completed (collected by the hook) or fail
  at the same `f`. They are skipped; only braces it read inside string literals are retried.
  Which is which is known from a lazy, forward-only lexer over the failed region.
"""

from __future__ import annotations

import json
import re
import sys

from eval_banana.harness.verdictobjects import Harvest, ScanResult, scan_result

_DECODER = json.JSONDecoder()
_SIGNIFICANT = re.compile(r'["\\{}\[\]]')
# More than this many open failed regions is pathological; dropping the oldest only means some
# braces are retried instead of skipped (more work, same answers).
_MAX_REGIONS = 8
# Levels skipped after a decode fails for nesting too deep; far below the recursion limit.
_CUT_DEPTH = 256
# First slice handed to the decoder (most candidates fail or end within it); it grows 4x.
_FIRST_WINDOW = 1024
# A decode error this close to a slice's end may come from the cut, not from the text.
_EDGE = 16
# `{`, then JSON whitespace: what the decoder reads before it needs `"` or `}`.
_OBJECT_OPENING = re.compile(r"\{[ \t\n\r]*")
# A `{` the decoder can read past its first key: `}`, or a key (a string without raw control
# characters or bad escapes), `:` and the first character of a value; or one whose text ends
# on the way (a streaming window's end may cut an object anywhere). Any other `{` fails within
# its first key, where no brace outside a string can be, so it is no candidate at all: output
# dense with `{"` (logs, code) is skipped by the regular expression engine, not by Python.
_MAY_OPEN_OBJECT = re.compile(
    r'\{(?=[ \t\n\r]*+(?:"[^"\\\x00-\x1f]*+(?:\\["\\/bfnrtu][^"\\\x00-\x1f]*+)*+'
    r'(?:"[ \t\n\r]*+(?::[ \t\n\r]*+(?:[-"{\[0-9tfnNI]|\Z)|\Z)|\\?\Z)|\}|\Z))'
)
# Answer for a `{` that cannot open an object without running the decoder (a test compares
# the scan with and without these shortcuts).
SHORTCUT_NON_OBJECTS = True


class _Region:
    """The lexical view of one failed decode: is a `{` in (start, end) structure or string?"""

    def __init__(self, *, text: str, start: int, end: int) -> None:
        self.text = text
        self.end = end
        self.pos = start + 1
        self.in_string = False

    def structural(self, target: int) -> bool:
        """Advance the lexer to `target` (targets only grow) and say if it is outside strings."""
        text, pos, in_string = self.text, self.pos, self.in_string
        while pos < target:
            slash = text.find("\\", pos, target)
            stop = target if slash < 0 else slash
            # Between backslashes only quotes toggle the state, so count them in C.
            if text.count('"', pos, stop) % 2:
                in_string = not in_string
            if slash < 0:
                pos = target
                break
            # A backslash escapes the next character inside a string and is inert outside.
            pos = slash + 2 if in_string else slash + 1
        self.pos, self.in_string = pos, in_string
        # pos > target means the character at target was escaped, so it is inside a string.
        return not in_string and pos == target


def _deep_cut(*, text: str, start: int) -> tuple[int, int]:
    """For a decode too deeply nested to finish: where to retry, and how far it can have read.

    Returns the first opener `_CUT_DEPTH` levels below `start` (the braces before it are
    skipped, the next attempt starts there) and the furthest point the decoder can have reached
    (its recursion limit, or the end of the balanced span).
    """
    limit = sys.getrecursionlimit() + 64
    depth = 0
    in_string = False
    cut = -1
    pos = start
    while True:
        match = _SIGNIFICANT.search(text, pos)
        if match is None:
            break
        char, pos = match.group(), match.end()
        if in_string:
            if char == "\\":
                pos += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
            if depth == _CUT_DEPTH + 1 and cut < 0:
                cut = pos - 1
            if depth > limit:
                break
        elif char in "}]":
            depth -= 1
            if depth <= 0:
                break
    end = min(pos, len(text))
    return (cut if cut >= 0 else end), end


def _may_hold_score(*, text: str, start: int, end: int) -> bool:
    # A "score" key must be spelled out, or hidden in a \u escape.
    return text.find("score", start, end) >= 0 or text.find("\\u", start, end) >= 0


def _attempt(*, text: str, start: int) -> tuple[str, int, str]:
    """Decode one object at `start`, + window: ("ok", end) / ("fail", where) / ("deep", start)
    / ("cut", where): the text ended while the object was still being read.

    The decoder runs on a growing slice, because a decode error counts the lines before its
    position (linear in the position): on the whole text, many early failures would add up to
    quadratic time. A failure near the slice's edge may be the edge itself, so the slice grows.
    """
    if SHORTCUT_NON_OBJECTS:
        # Most braces in prose and code (`{x}`, `{ so`) cannot open a JSON object: the decoder
        # would stop at the first character after the whitespace, so stop there without it.
        opening = _OBJECT_OPENING.match(text, start)
        first = opening.end() if opening else start + 1
        if first < len(text) and text[first] not in '"}':
            return "fail", first, ""
    size = _FIRST_WINDOW
    while True:
        window = text[start : start + size]
        whole = start + size >= len(text)
        try:
            _, end = _DECODER.raw_decode(window, 0)
        except json.JSONDecodeError as err:
            truncated = err.pos >= len(window) - _EDGE or err.msg.startswith("Unterminated")
            if whole or not truncated:
                kind = "cut" if whole and truncated else "fail"
                return kind, start + max(err.pos, 1), window
        except RecursionError:
            return "deep", start, window
        else:
            return "ok", start + end, window
        size *= 4


def _next_candidate(*, text: str, pos: int, limit: int) -> int:
    """The next `{` from `pos` that may open an object and starts before `limit`, or -1."""
    brace = text.find("{", pos, limit)  # prose without braces is passed over at memchr speed
    if brace < 0 or not SHORTCUT_NON_OBJECTS:
        return brace
    # Searched up to `limit` only: there the pattern sees the text end, so a `{` whose opening
    # runs past it is still a candidate (the decoder then reads past `limit`).
    found = _MAY_OPEN_OBJECT.search(text, brace, limit)
    return -1 if found is None else found.start()


def scan_window(*, text: str, limit: int, harvest: Harvest, offset: int) -> None:
    """Harvest every candidate `{` of `text` that starts before `limit`, in one linear pass.

    Positions given to the harvest are `offset` plus positions in `text`.
    """
    regions: list[_Region] = []
    pos = 0
    while True:
        start = _next_candidate(text=text, pos=pos, limit=limit)
        if start < 0:
            break
        pos = start + 1
        if regions:
            regions = [region for region in regions if region.end > start]
            if any(region.structural(start) for region in regions):
                continue
        kind, end, window = _attempt(text=text, start=start)
        if kind == "cut":
            kind = "fail"
            harvest.cut_short.append(offset + start)
        harvest.cursor = offset + end
        if kind != "deep" and _may_hold_score(text=window, start=0, end=end - start):
            # The hook adds a frame per object: a decode that only just fitted may not.
            kind = kind if harvest.collect(text=window, start=0) else "too deep for the hook"
        if kind == "ok":
            pos = end
            continue
        if kind != "fail":
            end, reach = _deep_cut(text=text, start=start)
            harvest.cursor = offset + end
            if kind == "deep" and _may_hold_score(
                text=window, start=0, end=min(reach - start, len(window))
            ):
                harvest.collect(text=window, start=0)  # objects completed before the limit
        if end > start + 1:
            regions.append(_Region(text=text, start=start, end=end))
            del regions[:-_MAX_REGIONS]


def scan_text(text: str) -> ScanResult:
    """The right-most valid verdict in `text` (by closing brace), in one linear pass."""
    harvest = Harvest()
    scan_window(text=text, limit=len(text), harvest=harvest, offset=0)
    return scan_result(harvest)
