"""The .json reader: one list of objects, its rows that name a key twice told one by one, and
a file json does not read told as what it most likely is (JSON Lines in a .json file).
"""

from __future__ import annotations

import itertools
import json

from eval_banana.core.errors import DefinitionError
from eval_banana.core.jsonvalues import RepeatedKey, too_long_number_line
from eval_banana.core.readback import json_depth_exceeds
from eval_banana.datasets.rows import (
    LENIENT_JSON,
    Row,
    dataset_problem,
    decode_json,
    invisible,
    json_item_spans,
    listed_rows,
    number_too_long,
    repeated_key_problem,
    too_deep,
)


def json_rows(*, text: str, data: bytes, file: str, problems: list[DefinitionError]) -> list[Row]:
    """The rows of a .json dataset: one list of objects (`data`: the file's bytes, `text` as
    decoded; the nesting is measured on the bytes, not on the text encoded again). A row that
    names a key twice goes to `problems`, the other rows still read."""
    if json_depth_exceeds(data):
        raise too_deep(file=file, line=None, what=f"Dataset {file}")
    try:
        value = decode_json(text)
    except RepeatedKey:
        return _rows_without_repeated_keys(text=text, file=file, problems=problems)
    except ValueError as exc:
        raise _not_json(text=text, file=file, exc=exc) from None
    return listed_rows(value=value, file=file, kind="JSON", string_keys=True, text=text)


def _rows_without_repeated_keys(
    *, text: str, file: str, problems: list[DefinitionError]
) -> list[Row]:
    """The rows of a .json list some of whose rows name a key twice: those go to `problems`."""
    try:
        value = LENIENT_JSON.decode(text)
    except ValueError as exc:
        raise _not_json(text=text, file=file, exc=exc) from None
    rows = listed_rows(value=value, file=file, kind="JSON", string_keys=True, text=text)
    kept: list[Row] = []
    for row, (start, end) in zip(rows, json_item_spans(text), strict=True):
        try:
            decode_json(text[start:end])
        except RepeatedKey as exc:
            problems.append(repeated_key_problem(row=row, key=exc.key))
            continue
        kept.append(row)
    return kept


def _not_json(*, text: str, file: str, exc: ValueError) -> DefinitionError:
    """A .json dataset json does not read, told as what it most likely is."""
    if not isinstance(exc, json.JSONDecodeError):
        # int() refused a whole number longer than Python reads.
        return number_too_long(file=file, line=too_long_number_line(text))
    hidden = invisible(text[exc.pos : exc.pos + 1])
    if hidden is not None:
        what, fix = hidden
        return dataset_problem(
            file=file,
            line=exc.lineno,
            message=f"Dataset {file} is not JSON: it holds {what} at line {exc.lineno} column "
            f"{exc.colno}, which a viewer does not show",
            hint=fix,
        )
    if _json_lines(text):
        return dataset_problem(
            file=file,
            line=exc.lineno,
            message=f"Dataset {file} holds one JSON object per line (JSON Lines), not one "
            "list of objects",
            hint="name the file .jsonl, or make it one list: [ {...}, {...} ]",
        )
    return dataset_problem(
        file=file,
        line=exc.lineno,
        message=f"Dataset {file} is not JSON: {exc}",
        hint="a .json dataset is one list of objects",
    )


def _json_lines(text: str) -> bool:
    """Whether a .json file that is no JSON document opens with two lines that are each a
    whole object: rows written as JSON Lines, in a file named .json."""
    lines = (line for line in text.splitlines() if line.strip())
    opening = list(itertools.islice(lines, 2))
    try:
        return len(opening) == 2 and all(type(json.loads(line)) is dict for line in opening)
    except ValueError:
        return False
