"""Globs matched together in RE2 match exactly what `fnmatch.fnmatchcase` matches."""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest
import re2  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_banana.core.globset import GlobSet, glob_pattern

# The characters that mean something to a glob or to RE2, a line end, and a few letters
# (some outside ASCII) for ranges to hold or leave out.
GLOB_ALPHABET = st.sampled_from(list("ab-z]![*?\\^&~|.$()+{}\n\x00é") + ["\U0001f600"])


def re2_matches(glob: str, text: str) -> bool:
    options = re2.Options()
    options.log_errors = False
    return re2.compile(glob_pattern(glob), options).fullmatch(text) is not None


@pytest.mark.parametrize(
    ("glob", "text", "matches"),
    [
        ("[!ab]x", "cx", True),  # ! first negates the class
        ("[!ab]x", "ax", False),
        ("[]a]", "]", True),  # ] first is a member
        ("[!]a]", "]", False),  # ... after the ! too
        ("[!]a]", "b", True),
        ("[z-a]", "m", False),  # a reversed range holds nothing: the glob matches nothing
        ("[z-a]", "z", False),
        ("[!z-a]", "\n", True),  # ... and its complement is any character
        ("[a-c-e]", "-", True),  # a - just after a range's end is a member
        ("[a-c-e]", "d", False),
        ("[-a]", "-", True),  # first and last - are members
        ("[a-]", "-", True),
        ("[c-a-z]", "b", False),  # the reversed range is dropped with both its ends
        ("[c-a-z]", "-", True),
        ("[ab", "[ab", True),  # an unclosed [ is itself
        ("[ab", "a", False),
        ("a.b", "axb", False),  # RE2's metacharacters are plain characters
        ("(a|b)+", "(a|b)+", True),
        ("[\\d]", "\\", True),
        ("[\\d]", "1", False),
        ("[^a]", "^", True),  # ^ is not a negation in a glob
        ("*?", "\n", True),  # * and ? match a line end
    ],
)
def test_a_glob_in_re2_matches_as_fnmatch_does(glob: str, text: str, matches: bool) -> None:
    assert fnmatchcase(text, glob) is matches
    assert re2_matches(glob, text) is matches
    assert GlobSet([glob]).matching(text) == ([0] if matches else [])


@settings(max_examples=1500, deadline=None)
@given(glob=st.text(GLOB_ALPHABET, max_size=10), text=st.text(GLOB_ALPHABET, max_size=8))
def test_every_glob_in_re2_matches_what_fnmatch_matches(glob: str, text: str) -> None:
    assert re2_matches(glob, text) is fnmatchcase(text, glob)


@settings(max_examples=500, deadline=None)
@given(
    globs=st.lists(st.text(GLOB_ALPHABET, max_size=8), min_size=1, max_size=6),
    texts=st.lists(st.text(GLOB_ALPHABET, max_size=6), max_size=4),
)
def test_a_set_names_every_glob_fnmatch_matches(globs: list[str], texts: list[str]) -> None:
    matcher = GlobSet(globs)
    for text in [*texts, *globs]:
        expected = [position for position, glob in enumerate(globs) if fnmatchcase(text, glob)]
        assert matcher.matching(text) == expected


def test_what_re2_cannot_read_is_matched_by_fnmatch() -> None:
    # A lone surrogate (from an undecodable argument) has no UTF-8: fnmatch matches it.
    globs = ["a\udcff*", "*", "b?"]
    matcher = GlobSet(globs)
    assert matcher.matching("a\udcffx") == [0, 1]
    assert matcher.matching("b\udcff") == [1, 2]
    assert matcher.matching("bc") == [1, 2]
