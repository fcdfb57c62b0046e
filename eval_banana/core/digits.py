"""Whole numbers written with ASCII digits, read without a traceback.

`str.isdigit()` is true of '²' and of other scripts' digits, which `int()` refuses or reads as
numbers nobody typed, and `int()` refuses more than 4,300 digits; a flag, a variable or an
agent's output can hold either.
"""

from __future__ import annotations

import re

_ASCII_WHOLE = re.compile(r"[0-9]{1,18}")


def ascii_whole(text: str) -> int | None:
    """`text` as a whole number when it is 1 to 18 ASCII digits (no sign, no spaces), else None."""
    return int(text) if _ASCII_WHOLE.fullmatch(text) is not None else None


# What may stand between digit groups in a printed count: `12,480`, `12_480`, `12.480`, `12 480`.
_GROUP_MARKS = re.compile(r"[,_.\s]")


def grouped_whole(text: str) -> int | None:
    """A count printed with its digits grouped (`12,480`, as codex prints the tokens it used),
    read by `ascii_whole` once the group marks are gone; None when it is no such count."""
    return ascii_whole(_GROUP_MARKS.sub("", text))
