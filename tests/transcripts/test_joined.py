"""A cut line's start and end joined across its middle: the drops of half an escape at either
side are found by reading the characters there, and the join is what trying all 36 drops one
parse after another gave."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_banana.transcripts import jsonline
from eval_banana.transcripts.jsonline import Loaded, Unread


def _every_drop_parsed(*, start: str, end: str, gap: int) -> Loaded | None:
    """The join as it was made before: each of the 36 drops parsed in turn, the first that
    parses taken."""
    if "\ue000" in start or "\ue000" in end:
        return None
    for drop_start in range(6):
        for drop_end in range(6):
            text = start[: len(start) - drop_start] + "\ue000" + end[drop_end:]
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                continue
            if not isinstance(value, dict):
                return None
            joined = jsonline._unjoin(value)
            if joined is None:
                return None
            return Loaded(event=value, unread=Unread(text=joined, chars=gap))
    return None


def _line(*, text: str, ascii_only: bool) -> str:
    """An event whose long `text` is followed by more strings, escapes in all of them."""
    event = {"type": "result", "result": text, "parts": [text[::-1], {"k\\": text[:3]}], "n": 1}
    return json.dumps(event, ensure_ascii=ascii_only)


# Characters written as escapes: \uXXXX, a surrogate pair (ensure_ascii), \" and \\, \n, and
# the letters an escape is made of, so a cut leaves text that looks like half of one.
_CHARS = st.sampled_from(['"', "\\", "\n", "\u00e9", "\U0001f600", "\x01", "/", "u", "0", "e", "a"])


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(_CHARS, min_size=1, max_size=30).map("".join),
    ascii_only=st.booleans(),
    cut=st.data(),
)
def test_a_join_is_the_one_every_drop_parsed_in_turn_gave(
    text: str, ascii_only: bool, cut: st.DataObject
) -> None:
    line = _line(text=text, ascii_only=ascii_only)
    # Some lines are no JSON near the cut: a raw tab, an escape JSON has not, a stray quote.
    damage = cut.draw(st.sampled_from(["", "\t", "\\q", '"']))
    at = cut.draw(st.integers(min_value=0, max_value=len(line)))
    line = line[:at] + damage + line[at:]
    stop = cut.draw(st.integers(min_value=1, max_value=len(line)))
    resume = cut.draw(st.integers(min_value=stop, max_value=len(line)))
    start, end = line[:stop], line[resume:]
    assert jsonline._joined(start=start, end=end, gap=7) == _every_drop_parsed(
        start=start, end=end, gap=7
    )


_ESCAPED = ["\u00e9", "\U0001f600", '"', "\\", "\n", "\\u00e9", '\\"']


@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("char", _ESCAPED)
def test_every_cut_inside_an_escape_joins_as_before(char: str, ascii_only: bool) -> None:
    # The start cut at each character of one escape, the end at each character of another.
    line = _line(text=f"ab{char}cd{char}ef", ascii_only=ascii_only)
    first = line.index("ab") + 2
    second = line.index("cd") + 2
    width = second - first  # the written escape and "cd"
    for stop in range(first - 1, first + width):
        for resume in range(second - 1, second + width):
            start, end = line[:stop], line[resume:]
            assert jsonline._joined(start=start, end=end, gap=1) == _every_drop_parsed(
                start=start, end=end, gap=1
            ), (start[-8:], end[:8])


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ('{"a": "xy\tab', 'cd"}'),  # a raw tab, then an escape JSON has not, each droppable
        ('{"a": "xy\\qab', 'cd"}'),
        ('{"a": "xy', 'a\tcd"}'),
        ('{"a": "xy', 'a\\qcd"}'),
        ('{"a": "xy\tabcdef', 'cd"}'),  # too far from the joint to drop
        ('{"a": "xy', 'cd"}]}'),  # the end closes what the start never opened
        ('{"a": ["xy', 'cd"], "b": 1}'),
    ],
)
def test_a_join_drops_what_cannot_be_read_near_the_joint_as_before(start: str, end: str) -> None:
    assert jsonline._joined(start=start, end=end, gap=1) == _every_drop_parsed(
        start=start, end=end, gap=1
    )


def _parses(monkeypatch: pytest.MonkeyPatch, *, start: str, end: str) -> tuple[int, bool]:
    """How many times joining `start` and `end` parses a text, and whether they joined."""
    parsed = 0
    loads = json.loads

    def counted(text: str) -> object:
        nonlocal parsed
        parsed += 1
        return loads(text)

    monkeypatch.setattr(json, "loads", counted)
    joined = jsonline._joined(start=start, end=end, gap=1)
    monkeypatch.setattr(json, "loads", loads)
    return parsed, joined is not None


def test_a_cut_line_is_parsed_once_not_once_per_drop(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each of the 36 drops parsed the whole line (a megabyte): a start cut inside `\u00e9`
    # took 19 parses, a line no string runs across all 36.
    line = json.dumps({"type": "result", "result": "caf\u00e9 " * 50 + "the verdict"})
    escape = line.index("\\u00e9", 100)
    assert _parses(monkeypatch, start=line[: escape + 3], end=line[-40:]) == (1, True)
    items = json.dumps({"type": "user", "items": [{"n": n} for n in range(50)]})
    between = items.index("}, {", 100) + 3  # the start ends between two objects
    assert _parses(monkeypatch, start=items[:between], end=items[-30:]) == (0, False)
    # A string runs across, but the end closes lists the start never opened: one parse fails
    # after the string, and so would every other drop inside it.
    nested = json.dumps({"type": "user", "items": [["x " * 50]]})
    assert _parses(monkeypatch, start=line[:100], end=nested[-30:]) == (1, False)
