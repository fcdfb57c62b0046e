"""What a row says of its own case: its id (given, or its place), its tags and its skip
reason, read as the dataset wrote them and checked."""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from eval_banana.core.caseid import (
    CASE_ID_PATTERN,
    MISSING_VALUE_WORDS,
    NO_REASON_WORDS,
    NUMBER_TEXT,
)

CASE_ID = re.compile(CASE_ID_PATTERN)


def row_case_id(*, value: dict[str, Any], position: int, width: int) -> str | None:
    """The case id a row names (its `id`, or its 1-based `position` zero-padded to `width`
    when it has none); None when its `id` names no case."""
    given = value.get("id")
    if given is None:
        return str(position).zfill(width)
    if type(given) is int and given >= 0:
        return str(given)
    if isinstance(given, str) and CASE_ID.fullmatch(given):
        return given
    return None


def bad_id_message(given: object) -> str:
    """Why a row's `id` names no case, in the dataset's own terms (YAML's `true`, not
    Python's `True`)."""
    rule = "an id is text of ASCII letters, digits, '_', '-', '.' (or a whole number from 0)"
    if isinstance(given, str):
        if not given:
            return f"case id '' is empty; {rule}"
        # The first character that is not allowed: 'café' has letters, but not ASCII ones.
        bad = next(char for char in given if not CASE_ID.fullmatch(char))
        what = "a space" if bad == " " else repr(bad)
        return f"case id {given!r} holds {what}; {rule}"
    shown = json.dumps(given, ensure_ascii=False, allow_nan=True)
    if isinstance(given, bool | int | float):
        what = "a boolean" if isinstance(given, bool) else "a number"
        return f'case id {shown} is {what}; {rule}: quote it ("{shown}") if that is what you meant'
    return f"case id {shown} is not text; {rule}"


# A CSV `tags` cell holds its tags as one text: `smoke, slow` or `smoke slow`.
_CELL_TAGS = re.compile(r"[\s,]+")
# Outside a CSV cell, a `tags` text is one tag: one word, no comma or space. `"smoke, slow"`
# reads as two tags to its writer (as a CSV cell splits it), but taken as one tag no `--tag
# slow` would select the case.
_ONE_TAG = re.compile(r"[^\s,]+")
# A `skip` that reads as a yes/no or a number (a spreadsheet's checkbox column exports TRUE and
# FALSE, a flag column 0 and 1), or holds no letter or digit (`-`, a check mark): no reason. Taken
# as one, `FALSE` would skip the very case it means to run.
_NO_REASON = re.compile(rf"(?i:{'|'.join(NO_REASON_WORDS)})|{NUMBER_TEXT}|\W*")
# A `skip` that is how SQL Server, pandas or a spreadsheet writes a missing value (`NULL`, `nan`,
# `N/A`): the cell was empty where it came from, so the case was meant to run.
_MISSING_VALUE = re.compile(f"(?i:{'|'.join(map(re.escape, MISSING_VALUE_WORDS))})")
_TAGS_HINT = "give tags a list of words (in a CSV cell: words separated by commas or spaces)"


class Refused(NamedTuple):
    """What is wrong with a row's tags or skip, the fix, and the row's field it is told at."""

    said: str
    hint: str
    field: str = "cases"


def case_tags(*, value: dict[str, Any], cells: bool) -> tuple[list[str], str | None] | Refused:
    """A case's own tags and skip reason, or what is wrong with them. `cells`: a CSV row, whose
    every column has a cell in every row: an empty `skip` or `tags` cell says none, as a row
    without the field does (a spreadsheet's `skip` column is empty for the cases that run)."""
    tags = value.get("tags")
    skip = value.get("skip")
    if tags is None:
        tags = []  # left out, or null: no tags of its own
    if cells and isinstance(tags, str):
        tags = [tag for tag in _CELL_TAGS.split(tags) if tag]
    if cells and isinstance(skip, str) and not skip.strip():
        skip = None  # an empty cell: the case runs
    if isinstance(tags, str):
        if not _ONE_TAG.fullmatch(tags):
            return _tags_text_refused(tags)
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        return Refused("tags must be a list of strings", _TAGS_HINT, "case.tags")
    if skip is None:
        return tags, None
    reason = skip.strip() if isinstance(skip, str) else ""
    said = _no_reason(reason)
    if said is not None:
        runs = "leave the skip cell empty" if cells else "leave skip out (or write null)"
        return Refused(
            said,
            f"{runs} for the case to run; write the reason to skip it (such as 'flaky upstream')",
            "case.skip",
        )
    return tags, reason


def _no_reason(reason: str) -> str | None:
    """Why a `skip` text (stripped) is no reason to skip its case; None when it is one."""
    if not reason:
        return "skip must be a non-empty reason"
    if _MISSING_VALUE.fullmatch(reason):
        return (
            f"skip {reason!r} is how a database, pandas or a spreadsheet writes a missing value, "
            "not the reason the case is skipped"
        )
    if _NO_REASON.fullmatch(reason):
        return (
            f"skip {reason!r} is a yes/no, a number or a mark, not the reason the case is skipped"
        )
    return None


def _tags_text_refused(tags: str) -> Refused:
    """A JSON or YAML row's `tags` text that is no one tag: empty, or words a CSV cell would
    split into several tags, which outside a cell would be one tag no `--tag` word selects."""
    words = [word for word in _CELL_TAGS.split(tags) if word]
    if not words:
        return Refused(
            f"tags {tags!r} names no tag",
            "leave tags out (or write null) for no tags of its own",
            "case.tags",
        )
    return Refused(
        f"tags {tags!r} is one text holding a comma or a space: outside a CSV cell that is one "
        f"tag, which --tag {words[-1]} does not select",
        f"write the tags as a list ({json.dumps(words, ensure_ascii=False, allow_nan=False)}); "
        'a tag that holds a space is one item of a list (["needs review"])',
        "case.tags",
    )
