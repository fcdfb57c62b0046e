"""The "did you mean" of error messages: the one close spelling of a mistyped name."""

from __future__ import annotations

from collections.abc import Iterable

# A "did you mean" is looked for for at most this many mistyped values of one command; the
# others are told without one. Each looks through every name (every check id, every case of a
# family), so ids of another commit by the hundred would cost seconds apiece.
SUGGESTED_AT_MOST = 5


def closest(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The choice closest to `word`, when one is close enough to be what was meant."""
    from difflib import get_close_matches  # only an input with a typo pays for difflib

    match = get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return match[0] if match else None
