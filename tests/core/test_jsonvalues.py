"""What JSON can say: half a surrogate pair, as a key or as text, and only when alone."""

from __future__ import annotations

import json

import pytest

from eval_banana.core.jsonvalues import (
    lone_surrogate_in,
    lone_surrogates_replaced,
    too_long_json_number_place,
    unsayable,
)


@pytest.mark.parametrize(
    ("text", "field", "what"),
    [
        ('{"a": "x\\ud800"}', "a", "the escape \\ud800 (half of a UTF-16 surrogate pair, alone)"),
        ('{"a": {"\\udc00k": 1}}', "a", "a key with the escape \\udc00"),
        ('[{"b": ["ok", "\\udbff"]}]', ".0.b.1", "the escape \\udbff"),
    ],
)
def test_half_a_pair_is_found_where_it_is(text: str, field: str, what: str) -> None:
    for raw in (text, text.encode()):
        found = lone_surrogate_in(text=raw, document=json.loads(text))
        assert found is not None and found.field == field and found.what.startswith(what)
        assert found.fix.startswith("write the character itself")


def test_a_whole_pair_and_an_escaped_backslash_are_text() -> None:
    # A pair decodes to one character; `\\ud800` is a backslash and five letters.
    for text in ('{"a": "\\ud83d\\ude00"}', '{"a": "\\\\ud800"}', '{"a": "plain é"}'):
        assert lone_surrogate_in(text=text, document=json.loads(text)) is None


def test_the_walk_is_skipped_for_a_text_that_escapes_no_surrogate() -> None:
    # The document holds one (built by hand), but its text could not have: no walk, no find.
    assert lone_surrogate_in(text='{"a": "x"}', document={"a": "\ud800"}) is None
    assert unsayable({"a": "\ud800"}) is not None


def test_halves_are_replaced_in_texts_and_keys() -> None:
    value = {"k\udc00": ["a\ud83d", 1, None, {"n": "é"}]}
    assert lone_surrogates_replaced(value) == {"k\ufffd": ["a\ufffd", 1, None, {"n": "é"}]}


def test_a_too_long_whole_number_of_json_is_found_past_strings_fractions_and_exponents() -> None:
    digits = "7" * 5000
    text = (
        f'{{"s": "{digits}", "e": "\\"{digits}", "f": 1.{digits}, "g": {digits}.5, '
        f'"x": 1e{digits}, "y": 2E-{digits},\n  "n": -{digits}}}'
    )
    assert too_long_json_number_place(text) == (2, 9)
    assert too_long_json_number_place(f'["{digits}", 1.{digits}]') is None
