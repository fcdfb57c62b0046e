"""Texts that differ yet print alike, and how a message shows them apart.

`café` composed and `cafe` followed by a combining accent, `Paris` with a zero-width space at
its end, `a b` with a no-break space: a terminal prints each pair the same. A message that
quotes two such texts as they are says they differ and shows no difference, so where they
print alike both are quoted with the characters that print as nothing, as a space or as part
of the letter before them escaped (`\\u0301`, `\\u200b`, `\\u00a0`); where even that leaves
them alike (`한` composed or as jamo), every character beyond ASCII is escaped. Texts that
print differently are quoted as they are, so ordinary text in any script stays readable.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Literal

# "none": as it is; "hidden": characters that print as nothing, a space or part of the letter
# before escaped; "all": every character beyond ASCII escaped.
Reveal = Literal["none", "hidden", "all"]
# Marks that join the letter before them, formatting and control characters, private-use and
# unassigned code points, and every separator that is not the ASCII space.
_HIDDEN_CATEGORIES = frozenset({"Mn", "Me", "Cf", "Cc", "Co", "Cn", "Zs", "Zl", "Zp"})
# Characters that select how the one before is drawn, and so print as nothing of their own.
_SELECTORS = re.compile("[\u034f\u180b-\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef]")


def _hidden(char: str) -> bool:
    return char != " " and unicodedata.category(char) in _HIDDEN_CATEGORIES


def _printed(text: str) -> str:
    """Roughly what a terminal shows of `text`: composed, without the characters that print
    as nothing, every separator a space."""
    shown: list[str] = []
    for char in unicodedata.normalize("NFC", _SELECTORS.sub("", text)):
        category = unicodedata.category(char)
        if category == "Cf":
            continue
        shown.append(" " if category in ("Zs", "Zl", "Zp") else char)
    return "".join(shown)


def _escaped(char: str, *, python: bool) -> str:
    """A character as a string escape: `\\u0301`; beyond the first 65,536 code points as
    Python writes it (`\\U000e0001`) or as the surrogate pair JSON writes."""
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    if python:
        return f"\\U{code:08x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _with_hidden_escaped(text: str, *, python: bool = False) -> str:
    return "".join(_escaped(char, python=python) if _hidden(char) else char for char in text)


def _alike(expected: str, found: str, *, within: bool) -> bool:
    if within:
        return _printed(expected) in _printed(found)
    return _printed(expected) == _printed(found)


def reveal_for(*, expected: str, found: str, within: bool = False) -> Reveal:
    """How to quote `expected` and `found`, which differ (`within`: `found` does not hold
    `expected`), so that a reader sees the difference: "none" when it already shows."""
    if not _alike(expected, found, within=within):
        return "none"
    escaped = (_with_hidden_escaped(expected), _with_hidden_escaped(found))
    return "all" if _alike(*escaped, within=within) else "hidden"


def json_quoted(text: str, *, reveal: Reveal = "none") -> str:
    """`text` as a JSON string (`"café"`), its hidden characters escaped as `reveal` says;
    the quoted text still reads back as `text`."""
    quoted = json.dumps(text, ensure_ascii=reveal == "all", allow_nan=False)
    if reveal != "hidden":
        return quoted
    # json.dumps wrote every backslash of the text as `\\`: an escape added here is never
    # mistaken for text that held one.
    return _with_hidden_escaped(quoted)


def python_quoted(text: str, *, reveal: Reveal = "none") -> str:
    """`text` as Python quotes it (`'café'`), its hidden characters escaped as `reveal` says
    (Python's own quoting already escapes those that are not printable)."""
    quoted = ascii(text) if reveal == "all" else repr(text)
    return _with_hidden_escaped(quoted, python=True) if reveal == "hidden" else quoted


def alike_note(reveal: Reveal) -> str:
    """What a message says of two texts it quoted with `reveal` (not "none")."""
    if reveal == "all":
        return "they print alike: characters beyond ASCII are escaped"
    return (
        "they print alike: invisible characters, combining marks and non-ASCII spaces are escaped"
    )
