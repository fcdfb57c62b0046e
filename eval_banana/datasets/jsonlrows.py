"""The .jsonl reader: one JSON object per line, read a block at a time, every bad line told.

The reading loop is on the measured path of `eb validate` over many rows: one decode per line,
and the few checks it needs inline.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import BinaryIO

from eval_banana.core.errors import DefinitionError
from eval_banana.core.jsonvalues import RepeatedKey
from eval_banana.core.readback import MAX_DEPTH, json_depth_exceeds
from eval_banana.datasets.rows import (
    REPEATED_KEY_HINT,
    Row,
    TooManyRows,
    dataset_problem,
    decode_dataset,
    decode_json,
    invisible,
    number_too_long,
    scan_json,
    too_deep,
)

# A .jsonl file is read this much at a time: its lines are decoded and split a block at once
# (as fast as reading it whole), and a file of a million rows is never held whole.
_BLOCK = 8 << 20


def _jsonl_lines(*, handle: BinaryIO, file: str) -> Iterator[str]:
    """A .jsonl file's lines as text, without their line ends. Lines end at "\n" (or "\r\n")
    alone: `str.splitlines` would also break at U+2028, U+2029 and U+0085, which a JSON string
    may hold as they are (text pasted from a web page)."""
    return itertools.chain.from_iterable(_line_blocks(handle=handle, file=file))


def _line_blocks(*, handle: BinaryIO, file: str) -> Iterator[list[str]]:
    """The file's lines, a block of them at a time (cut after a newline, so no character of
    several bytes is split); a line longer than a block is gathered whole first."""
    pieces: list[bytes] = []
    offset = number = 0  # the bytes and lines before the pending text
    while True:
        block = handle.read(_BLOCK)
        cut = block.rfind(b"\n") + 1
        if block and not cut:
            pieces.append(block)
            continue
        data = b"".join([*pieces, block[:cut] if block else b""])
        pieces = [block[cut:]] if block else []
        if data:
            lines = _decoded_lines(data=data, file=file, offset=offset, number=number)
            offset, number = offset + len(data), number + len(lines)
            yield lines
        if not block:
            return


def _decoded_lines(*, data: bytes, file: str, offset: int, number: int) -> list[str]:
    """`data` (whole lines, the file's last perhaps unended) as lines of text; `offset` and
    `number`: the bytes and lines of the file before it, for where a bad byte is."""
    text = decode_dataset(data=data, file=file, offset=offset, number=number)
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()  # the newline that ends the last line starts no line of its own
    return [line.removesuffix("\r") for line in lines] if "\r" in text else lines


def jsonl_rows(
    *, handle: BinaryIO, file: str, problems: list[DefinitionError], limit: int | None
) -> list[Row]:
    """The rows of a .jsonl file read from `handle`, a block at a time (bad lines go to
    `problems`); past `limit` rows, TooManyRows with their count."""
    return _jsonl(
        lines=_jsonl_lines(handle=handle, file=file), file=file, problems=problems, limit=limit
    )


def _jsonl(
    *, lines: Iterator[str], file: str, problems: list[DefinitionError], limit: int | None
) -> list[Row]:
    rows: list[Row] = []
    append = rows.append
    bad: list[DefinitionError] = []
    first: str | None = None
    scan = scan_json
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if limit is not None and len(rows) + len(bad) >= limit:
            rest = sum(1 for later in lines if later.strip())
            raise TooManyRows(counted=len(rows) + len(bad) + 1 + rest)
        if first is None:
            first = line.strip()
        # Too few brackets to nest that deep: the common, cheap answer (two counts per line).
        if line.count("[") + line.count("{") > MAX_DEPTH and json_depth_exceeds(
            line.encode("utf-8", errors="surrogatepass")
        ):
            bad.append(too_deep(file=file, line=number, what=f"Dataset {file} line {number}"))
            continue
        try:
            try:
                value, end = scan(line, 0)  # decode_json's value, without its frames
            except (StopIteration, ValueError):
                end = -1  # not a value at its start, or a bad one: decode_json says which
            if end != len(line):  # space or more after the value, or none read
                value = decode_json(line)
        except RepeatedKey as exc:
            bad.append(
                dataset_problem(
                    file=file,
                    line=number,
                    message=f"Dataset {file} line {number} has a row with a duplicate key "
                    f"'{exc.key}'",
                    hint=REPEATED_KEY_HINT,
                )
            )
            continue
        except ValueError as exc:
            bad.append(_jsonl_problem(file=file, number=number, line=line, exc=exc))
            continue
        append(Row(value, file, f"line {number}", number, True))  # positional: per line
    if bad and first in ("{", "["):
        # Pretty-printed JSON saved as .jsonl: every line of it fails; one error says why.
        bad = [
            dataset_problem(
                file=file,
                line=1,
                message=f"Dataset {file} holds JSON written over several lines (its first line "
                f"is {first!r}): a .jsonl file has one whole JSON object per line",
                hint="write each case on one line (`jq -c '.[]' cases.json > cases.jsonl`), or "
                "name the file .json if it is one list of cases",
            )
        ]
    problems.extend(bad)
    return rows


def _jsonl_problem(*, file: str, number: int, line: str, exc: ValueError) -> DefinitionError:
    """A line that is not JSON, with what it most likely is: a comment, a comma after the
    object (as between the items of a JSON list), or the decoder's own words."""
    where = f"Dataset {file} line {number}"
    stripped = line.strip()
    if stripped.startswith(("//", "#")):
        return dataset_problem(
            file=file,
            line=number,
            message=f"{where} is a comment, which JSON does not have",
            hint="remove the line (a case's notes can be a field of its own)",
        )
    if "\r" in line.removesuffix("\r"):
        # Lines ended by a carriage return alone (as classic Mac OS saved text) run together.
        return dataset_problem(
            file=file,
            line=number,
            message=f"{where} holds several lines ended by a carriage return alone (\\r), "
            "which a .jsonl file does not use",
            hint="save the file with LF (or CRLF) line ends",
        )
    if isinstance(exc, json.JSONDecodeError):
        hidden = invisible(line[exc.pos : exc.pos + 1])
        if hidden is not None:
            what, fix = hidden
            return dataset_problem(
                file=file,
                line=number,
                message=f"{where} is not JSON: it holds {what} at column {exc.colno}, which a "
                "viewer does not show",
                hint=fix,
            )
        rest = line[exc.pos :].strip()
        if exc.msg == "Extra data" and rest == ",":
            return dataset_problem(
                file=file,
                line=number,
                message=f"{where} ends with a comma after its object",
                hint="remove it: the lines of a .jsonl file are not separated by commas",
            )
        return dataset_problem(
            file=file,
            line=number,
            # "Unterminated string starting at" names where the string starts: that column.
            message=f"{where} is not JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}",
            hint="each line of a .jsonl file is one JSON object",
        )
    # Not a JSONDecodeError: int() refused a whole number longer than Python reads.
    return number_too_long(file=file, line=number)
