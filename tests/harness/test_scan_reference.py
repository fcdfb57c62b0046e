"""Step B's linear scan agrees with the obvious quadratic rule on every input tried.

The scan skips work (failed regions, cut points in deep nesting, a shortcut for braces that
cannot open an object); none of that may change the answer. The reference below does the
obvious thing instead: decode a JSON value at every `{` on its own and keep the score object
that closes last. Inputs are built from the pieces that make the skipping hard: quotes and
backslashes inside and outside strings, unclosed objects, and nesting around the scan's cut
depth and past the interpreter's recursion limit.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_banana.harness.scan import scan_text
from eval_banana.harness.verdictobjects import ScanResult, Verdict, classify, rejection

NOTHING = 'no JSON object with a "score" key was found'


def _loose(value: object) -> bool:
    """Read as 0 or 1 by Python equality, or a digit in a string (eval-banana's reading)."""
    if isinstance(value, str):
        return value.strip() in ("0", "1")
    return isinstance(value, (int, float)) and value in (0, 1)


def _malformed(why: str) -> ScanResult:
    problem = (
        f"the judge's last verdict is malformed: {why}; no earlier or nested object stands in "
        "for it"
    )
    return ScanResult(verdict=None, problem=problem, malformed=True)


def reference(text: str) -> ScanResult:
    """Decode at every `{`; of the valid verdicts and the malformed ones (refused, but some
    `score` they give reads loosely as 0 or 1) the one that closes last decides, else the last
    rejected. An object naming `score` or `reason` twice is refused."""
    # id of a decoded object -> the verdict key it names twice (the objects stay alive).
    repeats: dict[int, str] = {}
    loose: set[int] = set()

    def pairs_hook(pairs: list[tuple[str, object]]) -> dict[str, object]:
        obj = dict(pairs)
        if any(key == "score" and _loose(value) for key, value in pairs):
            loose.add(id(obj))
        keys = [key for key, _ in pairs]
        for index, key in enumerate(keys):
            if key in ("score", "reason") and key in keys[:index]:
                repeats[id(obj)] = key
                break
        return obj

    decoder = json.JSONDecoder(object_pairs_hook=pairs_hook)
    best: tuple[int, Verdict | str] | None = None
    rejected: tuple[int, str] | None = None
    for start, char in enumerate(text):
        if char != "{":
            continue
        repeats.clear()
        loose.clear()
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if not isinstance(value, dict) or "score" not in value:
            continue
        repeated = repeats.get(id(value))
        outcome = classify(value) if repeated is None else "refused"
        if isinstance(outcome, Verdict) or id(value) in loose:
            if isinstance(outcome, str):
                outcome = rejection(value, repeated=repeated)
            if best is None or end > best[0]:
                best = (end, outcome)
        elif rejected is None or end > rejected[0]:
            rejected = (end, rejection(value, repeated=repeated))
    if best is not None:
        found = best[1]
        if isinstance(found, str):
            return _malformed(found)
        return ScanResult(verdict=found, problem=None)
    if rejected is not None:
        return ScanResult(
            verdict=None, problem=f"the last object with a score was rejected: {rejected[1]}"
        )
    return ScanResult(verdict=None, problem=NOTHING)


SHALLOW = st.sampled_from(
    [
        "{", "}", "[", "]", '"', "\\", ":", ",", " ", "\n", "x", "1", "0",
        "score", '"score"', '{"score": 1}', '{"score": 0, "reason": "r"}', '{ "score" : 1 }',
        '{"score": true}', '{"score": 2}', '{"a": {"score": 1}}', "\\u0073", '{"reason": "x"}',
        "{ x", "{}", '"a": ', '{"a": "', '\\"', '{"score": 1, "reason": 5}',
        "\\\\", '"\\\\"', '{"n": "{', '"}', '{"score": 1, "reason": "q\\"{"}',
        '{"score": 0, "score": 1}', '"score": 1, ', '{"reason": "a", "reason": "b", "score": 1}',
        '{"score": "1"}', '{"score": 0, "reason": {"score": 1}}', '{"score": 2, "score": 0}',
        '{"score": "high"}', '{"score": 0.0, "r": ',
    ]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(pieces=st.lists(SHALLOW, max_size=30))
def test_scan_agrees_with_the_reference(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert scan_text(text) == reference(text)


DEEP = st.tuples(
    st.sampled_from(
        ['{"a":', "[", '{"a": "', '"', "]", "}", '{"score": 1}', '{"score": 0, "reason": "d"}',
         "\\", " x ", '{"score": 1, "n": ', '{"score": 3}', '{"score": false}']
    ),
    st.sampled_from([1, 2, 255, 256, 257, 300, 1100]),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(DEEP, min_size=1, max_size=5))
def test_scan_agrees_with_the_reference_on_deep_nesting(parts: list[tuple[str, int]]) -> None:
    text = "".join(piece * count for piece, count in parts)
    assert scan_text(text) == reference(text)


@pytest.mark.parametrize(
    "text",
    [
        # An object opened 300 levels deep around an escaped quote, then a verdict.
        '{"a":' * 300 + '"\\"{"' + '{"score": 1, "reason": "after"}',
        # Nesting past the recursion limit, with strings holding braces and backslashes.
        '{"a": "\\\\{", "b":' * 1200 + '{"score": 0, "reason": "inner"}',
        "[" * 1500 + '"{\\"score\\": 1}"' + '{"score": 1, "reason": "x"}' + "]" * 1500,
        # A verdict inside a deeply nested string must not be taken out of it.
        '{"a": "' + "{" * 400 + '{"score": 1}' + '"}' + '{"score": 0, "reason": "outside"}',
        '{"score": 1, "n": ' * 257 + "1" + "}" * 257,
        # A verdict just past what one decode can reach but before where a too-deep decode is
        # given up: found only if the scan resumes at the right depth, which needs the strings
        # (with escaped quotes and braces in them) tracked exactly on the way down.
        *('{"a": ' * depth + '{"score": 1, "reason": "d"}' for depth in (950, 1000, 1040, 1060)),
        *('{"a": "\\"", "b": ' * depth + '{"score": 0}' for depth in (950, 1000, 1060)),
        *('{"a": "{[", "b": ' * depth + '{"score": 1}' for depth in (950, 1000, 1060)),
        *('{"a": "}]", "b": ' * depth + '{"score": 1}' for depth in (950, 1000, 1060)),
        # Balanced, but a little deeper than one decode can go: the scan must find where the
        # too-deep object ends and go on after it.
        *(
            '{"a":' * depth + '{"score": 1, "reason": "in"}' + "}" * depth + '{"score": 0}'
            for depth in (950, 1000, 1060)
        ),
    ],
)
def test_hand_picked_deep_cases(text: str) -> None:
    assert scan_text(text) == reference(text)


@pytest.mark.parametrize(
    ("candidate", "why"),
    [
        ({"score": 2}, '"score" was 2, not the JSON integer 0 or 1'),
        ({"score": True, "reason": "x"}, '"score" was true, not the JSON integer 0 or 1'),
        ({"score": 1.0}, '"score" was 1.0, not the JSON integer 0 or 1'),
        ({"score": "1" * 60}, '"score" was "' + "1" * 39 + ", not the JSON integer 0 or 1"),
        ({"score": 1, "reason": 5}, '"reason" was int, not a string or null'),
        ({"score": 0, "reason": ["a"]}, '"reason" was list, not a string or null'),
    ],
)
def test_a_rejected_score_object_says_which_field_is_wrong(
    candidate: dict[str, object], why: str
) -> None:
    # The reference scan words its findings with this same function, so it is pinned here.
    assert rejection(candidate) == why
    problem = scan_text("said " + json.dumps(candidate)).problem
    assert problem is not None and why in problem


# Found by mutation testing: a `{` inside a string of a decode that failed must still be tried
# (the lexer of the failed region must track quotes and escaped quotes exactly). Each input is
# the smallest one that told a mutant of that lexer from the real one.
@pytest.mark.parametrize(
    "text",
    [
        r'{"\"{"score":1}',
        r'{"\"\\{"score":1}',
        r'{"\"{"score":1,"":""}',
        r'{"{"score":1,"":"\""}',
        r'{"\\\"{"score":1,"":""}',
        r'{"":{"{"score":1}',
        r'{"\"\"{"score":0,"":""}',
    ],
)
def test_a_brace_inside_a_string_of_a_failed_decode_is_still_tried(text: str) -> None:
    found = scan_text(text)
    assert found == reference(text)
    assert found.verdict is not None
