"""Cutting a text that may hold a secret: masked first, so a cut never leaves part of one behind.

Every text eb shortens before it is written (an output's last characters, a transcript's text,
the error line an agent printed) may hold a secret the run masks (eval_banana.runners.redact).
Cut first, half a secret no longer matches it and stays. So the one rule: a text is masked, then
cut (`cut`). A text that is itself a piece of a longer one (a stream's end, a long line's start)
may begin or end inside a secret: at such an open edge, the characters a secret cut in two could
reach into it are left out, unless they belong to a whole secret, which is masked (`masked`).
"""

from __future__ import annotations

from typing import Protocol

MASK = "***"


class Masker(Protocol):
    """Where the run's secrets are in a text (eval_banana.runners.redact.Redactor is one)."""

    @property
    def reach(self) -> int:
        """The most characters of a secret cut in two that can lie past the cut."""
        ...

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every secret in `text`, in any of its forms, in order."""
        ...


class _NoSecrets:
    reach = 0

    def spans(self, text: str) -> list[tuple[int, int]]:
        return []


NO_SECRETS: Masker = _NoSecrets()


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans joined where they overlap (two secrets sharing characters are one mask)."""
    joined: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if joined and start < joined[-1][1]:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    return joined


def masked(text: str, *, masker: Masker, open_start: bool = False, open_end: bool = False) -> str:
    """`text` with every secret masked; at an open edge (where it was cut from a longer text),
    the `reach` characters next to it left out but for a whole secret's mask."""
    return _masked_at_edges(text, masker=masker, open_start=open_start, open_end=open_end)[0]


def masked_and_left_out(
    text: str, *, masker: Masker, open_start: bool = False, open_end: bool = False
) -> tuple[str, int]:
    """`masked`, and how many characters of `text` its open edges left out."""
    return _masked_at_edges(text, masker=masker, open_start=open_start, open_end=open_end)


def _masked_at_edges(
    text: str, *, masker: Masker, open_start: bool, open_end: bool
) -> tuple[str, int]:
    """`masked`, and how many characters of `text` its open edges left out (outside secrets:
    a masked secret is shown, not left out)."""
    reach = masker.reach
    keep_from = reach if open_start else 0
    keep_to = max(keep_from, len(text) - reach) if open_end else len(text)
    spans = _merged(masker.spans(text))
    if not spans and keep_from == 0 and keep_to == len(text):
        return text, 0
    parts: list[str] = []
    kept = 0
    position = 0
    for start, end in [*spans, (len(text), len(text))]:
        piece = text[max(position, keep_from) : min(start, keep_to)]
        parts.append(piece)
        kept += len(piece)
        if end > start:
            parts.append(MASK)
        position = end
    outside = len(text) - sum(end - start for start, end in spans)
    return "".join(parts), outside - kept


def cut(
    text: str,
    *,
    masker: Masker,
    limit: int,
    keep_end: bool = False,
    open_start: bool = False,
    open_end: bool = False,
) -> tuple[str, int]:
    """`text` masked, then cut to its first `limit` characters (its last, with `keep_end`), and
    how many characters of the masked text the cut and an open edge left out."""
    text, dropped = _masked_at_edges(text, masker=masker, open_start=open_start, open_end=open_end)
    over = len(text) - limit
    if over <= 0:
        return text, dropped
    return (text[over:] if keep_end else text[:limit]), over + dropped
