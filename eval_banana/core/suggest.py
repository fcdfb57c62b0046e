"""The "did you mean" of error messages: the one close spelling of a mistyped name."""

from __future__ import annotations

from collections.abc import Iterable

# A "did you mean" is looked for for at most this many mistyped values of one command; the
# others are told without one. Each looks through every name (every check id, every case of a
# family), so ids of another commit by the hundred would cost seconds apiece.
SUGGESTED_AT_MOST = 5


def closest(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The choice closest to `word`, when one is close enough to be what was meant; first one
    that differs from it only in letter case."""
    listed = list(choices)
    # difflib counts each letter of another case as a change, so `REFUND-01` is not close to
    # `refund-01` there; the same letters are surely what was meant.
    folded = word.casefold()
    same_letters = next((choice for choice in listed if choice.casefold() == folded), None)
    if same_letters is not None:
        return same_letters
    from difflib import get_close_matches  # only an input with a typo pays for difflib

    match = get_close_matches(word, listed, n=1, cutoff=cutoff)
    return match[0] if match else None
