"""The id of one case of a dataset family: `<family id>[<case id>]`.

A plain check id holds only letters, digits, `_` and `-`, so the brackets alone tell a case
check from any other, and every package can name a case's family without loading the dataset.
"""

from __future__ import annotations

import re

CASE_ID_PATTERN = r"^[A-Za-z0-9_.-]+$"
# A case's `skip` that reads as a yes/no or a number is no reason: a spreadsheet's checkbox column
# exports TRUE and FALSE, a flag column 0 and 1 (the dataset rows and the editor schema agree).
NO_REASON_WORDS = ("true", "false", "yes", "no", "y", "n", "on", "off")
NUMBER_TEXT = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
# Nor is how a tool writes a missing value (in any case): the spellings pandas reads as missing,
# SQL Server's NULL, MySQL's and PostgreSQL's \N, C's and many SQL clients' (null), Ruby's nil,
# pandas' NaT. Exported into a `skip` column, `NULL` would skip every case it means to run.
MISSING_VALUE_WORDS = (
    "null",
    "(null)",
    "\\n",
    "none",
    "nil",
    "nan",
    "-nan",
    "nat",
    "na",
    "n/a",
    "#n/a",
    "#n/a n/a",
    "#na",
    "<na>",
    "1.#ind",
    "-1.#ind",
    "1.#qnan",
    "-1.#qnan",
)
_CASE_CHECK = re.compile(r"^([A-Za-z0-9_-]+)\[([A-Za-z0-9_.-]+)\]$")


def no_reason_editor_pattern() -> str:
    """An ECMA-262 pattern (editors' regular expressions have no inline flags) of a `skip`
    that is a yes/no, a number, a missing value or holds no letter or digit (`-`, a check
    mark), with spaces around it."""
    words = [
        "".join(_any_case(char) for char in word)
        for word in (*NO_REASON_WORDS, *MISSING_VALUE_WORDS)
    ]
    return rf"^\s*(?:{'|'.join(words)}|{NUMBER_TEXT}|\W*)\s*$"


def _any_case(char: str) -> str:
    """`char` as a one-character class of both its cases: in a class, `(`, `.`, `#` and `?`
    are themselves in Python's and ECMA-262's patterns alike; a backslash is escaped."""
    if char == "\\":
        return r"\\"
    return f"[{char.upper()}{char}]" if char.upper() != char else f"[{char}]"


def case_check_id(*, family: str, case_id: str) -> str:
    """The check id of case `case_id` of family `family`."""
    return f"{family}[{case_id}]"


def split_case_check_id(check_id: str) -> tuple[str, str] | None:
    """(family id, case id) of a case check's id; None for a check that is not a case."""
    matched = _CASE_CHECK.fullmatch(check_id)
    return (matched.group(1), matched.group(2)) if matched else None


def family_of(check_id: str) -> str | None:
    """The family a check id belongs to, or None when it is not a dataset case."""
    parts = split_case_check_id(check_id)
    return parts[0] if parts else None
