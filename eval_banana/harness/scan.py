"""Step B (B-130, B-131, B-134, B-135): the last valid `{"score": 0|1, ...}` object in a text.

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
from typing import Any, NamedTuple

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
# Answer for a `{` that cannot open an object without running the decoder (a test compares
# the scan with and without this shortcut).
SHORTCUT_NON_OBJECTS = True


class Verdict(NamedTuple):
    score: int
    reason: str | None


class ScanResult(NamedTuple):
    verdict: Verdict | None
    problem: str | None  # why nothing qualified; None when a verdict was found


def classify(obj: dict[str, Any]) -> Verdict | str:
    """A verdict, or the reason this object with a `score` key is not one (B-131, improved)."""
    score = obj["score"]
    # JSON integers only: true/false/1.0 are rejected (the contract's [improve] of B-131).
    if type(score) is not int or score not in (0, 1):
        return f'"score" was {json.dumps(score)[:40]}, not the JSON integer 0 or 1'
    reason = obj.get("reason")
    if reason is not None and not isinstance(reason, str):
        return f'"reason" was {type(reason).__name__}, not a string or null'
    return Verdict(score=score, reason=reason)


class _Harvest:
    """Object hook state: the newest valid verdict and the newest rejected score object."""

    def __init__(self) -> None:
        self.verdict: Verdict | None = None
        self.rejected: str | None = None

    def hook(self, obj: dict[str, Any]) -> dict[str, Any]:
        if "score" in obj:
            outcome = classify(obj)
            if isinstance(outcome, Verdict):
                self.verdict = outcome
                self.rejected = None
            else:
                self.rejected = outcome
        return obj

    def collect(self, *, text: str, start: int) -> bool:
        """Decode again from `start` with the hook on; False if it ran out of recursion depth.

        The outcome itself is already known; objects completed before an error were seen.
        """
        decoder = json.JSONDecoder(object_hook=self.hook)
        try:
            decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pass
        except RecursionError:
            return False
        return True


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
    """Decode one object at `start`: ("ok", end) / ("fail", where) / ("deep", start), + window.

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
                return "fail", start + max(err.pos, 1), window
        except RecursionError:
            return "deep", start, window
        else:
            return "ok", start + end, window
        size *= 4


def scan_text(text: str) -> ScanResult:
    """The right-most valid verdict in `text` (by closing brace), in one linear pass."""
    harvest = _Harvest()
    regions: list[_Region] = []
    pos = 0
    while True:
        start = text.find("{", pos)
        if start < 0:
            break
        pos = start + 1
        if regions:
            regions = [region for region in regions if region.end > start]
            if any(region.structural(start) for region in regions):
                continue
        kind, end, window = _attempt(text=text, start=start)
        if kind != "deep" and _may_hold_score(text=window, start=0, end=end - start):
            # The hook adds a frame per object: a decode that only just fitted may not.
            kind = kind if harvest.collect(text=window, start=0) else "too deep for the hook"
        if kind == "ok":
            pos = end
            continue
        if kind != "fail":
            end, reach = _deep_cut(text=text, start=start)
            if kind == "deep" and _may_hold_score(
                text=window, start=0, end=min(reach - start, len(window))
            ):
                harvest.collect(text=window, start=0)  # objects completed before the limit
        if end > start + 1:
            regions.append(_Region(text=text, start=start, end=end))
            del regions[:-_MAX_REGIONS]
    if harvest.verdict is not None:
        return ScanResult(verdict=harvest.verdict, problem=None)
    if harvest.rejected is not None:
        return ScanResult(
            verdict=None, problem=f"the last object with a score was rejected: {harvest.rejected}"
        )
    return ScanResult(verdict=None, problem='no JSON object with a "score" key was found')
