"""Texts that differ yet print alike are quoted apart; every other text is quoted as it is."""

from __future__ import annotations

import ast
import json

import pytest

from eval_banana.core.lookalike import Reveal, json_quoted, python_quoted, reveal_for

ALIKE = [
    ("café", "cafe\u0301", "hidden"),
    ("Paris", "Paris\u200b", "hidden"),
    ("a b", "a\u00a0b", "hidden"),
    ("❤", "❤\ufe0f", "hidden"),  # a variation selector
    ("\ud55c", "\u1112\u1161\u11ab", "all"),  # no mark to escape: everything beyond ASCII
]


@pytest.mark.parametrize(("expected", "found", "reveal"), ALIKE)
def test_texts_that_print_alike_are_quoted_apart(expected: str, found: str, reveal: Reveal) -> None:
    assert reveal_for(expected=expected, found=found) == reveal
    for quote in (json_quoted, python_quoted):
        shown = quote(expected, reveal=reveal), quote(found, reveal=reveal)
        assert shown[0] != shown[1]
        assert reveal_for(expected=shown[0], found=shown[1]) == "none"


@pytest.mark.parametrize(
    ("expected", "found"),
    [("café", "cafe"), ("नमस्ते", "नमस्कार"), ("Paris", "London"), ("a b", "a  b")],
)
def test_texts_that_print_differently_are_quoted_as_they_are(expected: str, found: str) -> None:
    assert reveal_for(expected=expected, found=found) == "none"
    assert json_quoted(found) == json.dumps(found, ensure_ascii=False)


def test_a_text_only_seems_to_hold_what_prints_alike_within_it() -> None:
    assert reveal_for(expected="Paris", found="Par\u200bis is far", within=True) == "hidden"
    assert reveal_for(expected="Paris", found="Rome is far", within=True) == "none"


@pytest.mark.parametrize("reveal", ["none", "hidden", "all"])
@pytest.mark.parametrize(
    "text", ["cafe\u0301 \\u0301", "tag\U000e0001 \U0001d167", "नमस्ते\u200d", "a\x85\u2028b"]
)
def test_quoting_reads_back_as_the_text(text: str, reveal: Reveal) -> None:
    # An escape added is never mistaken for a backslash the text held.
    assert json.loads(json_quoted(text, reveal=reveal)) == text
    assert ast.literal_eval(python_quoted(text, reveal=reveal)) == text
