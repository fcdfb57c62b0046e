"""Counts as a sentence says them: `1 check`, `2 checks`, never `2 check(s)`."""

from __future__ import annotations


def plural(*, count: int, noun: str) -> str:
    """`count` with its noun, plural unless the count is one."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
