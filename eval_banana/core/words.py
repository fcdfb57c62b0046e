"""Counts as a sentence says them: `1 check`, `2 checks`, never `2 check(s)`."""

from __future__ import annotations


def plural(*, count: int, noun: str, nouns: str | None = None) -> str:
    """`count` with its noun, plural unless the count is one; `nouns` for a plural that is not
    the noun and an s (`entries`)."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {nouns if nouns is not None else noun + 's'}"
