"""CSV datasets: a header row naming the fields, then one row per case, every cell text.

What a spreadsheet leaves in a file is told as what it is: another delimiter, Excel's `sep=`
line, a header column without a name, a row with more or fewer cells than the header.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from eval_banana.core.errors import DefinitionError
from eval_banana.core.words import visible
from eval_banana.datasets.rows import Row, TooManyRows, dataset_problem

if TYPE_CHECKING:
    from _csv import Reader

_OTHER_DELIMITERS = {";": "semicolons", "\t": "tabs", "|": "bars"}


def _other_delimiter(*, names: list[str]) -> str | None:
    """What separates a header that holds one column with another delimiter in its name."""
    if len(names) != 1:
        return None
    found = [word for char, word in _OTHER_DELIMITERS.items() if char in names[0]]
    return found[0] if found else None


# How much of a refused row its error quotes.
_SHOWN = 60
# A quote that opens a cell: at the start of the text, or after a comma or a line end (a quote
# anywhere else in a cell is text, as the csv module reads it).
_CELL_QUOTE = re.compile(r'(?:^|(?<=[,\r\n]))"')


def _unclosed_quote(rest: str) -> bool:
    """Whether `rest` (a row's text) opens a quoted cell it never closes."""
    position = 0
    while True:
        opening = _CELL_QUOTE.search(rest, position)
        if opening is None:
            return False
        position = opening.end()
        while True:  # inside the cell: `""` is a quote, a lone `"` closes it
            close = rest.find('"', position)
            if close < 0:
                return True
            if not rest.startswith('"', close + 1):
                position = close + 1
                break
            position = close + 2


def csv_rows(
    *, text: str, file: str, problems: list[DefinitionError], limit: int | None
) -> list[Row]:
    """The rows of a .csv dataset (a header row naming the fields; every cell text): ragged
    rows go to `problems`, a file-wide problem is raised; past `limit` rows, TooManyRows."""
    try:
        return _csv_rows(text=text, file=file, problems=problems, limit=limit)
    except csv.Error as exc:
        raise dataset_problem(
            file=file,
            line=None,
            message=f"Dataset {file} is not CSV that can be read: {exc}",
            hint="save it as comma-separated CSV (in a spreadsheet: CSV UTF-8, comma "
            "delimited), or convert it to JSONL",
        ) from None


def _csv_rows(
    *, text: str, file: str, problems: list[DefinitionError], limit: int | None
) -> list[Row]:
    # A cell may be as long as the file (a whole article to judge): the csv module's default
    # limit, 128 KiB, would refuse it. The limit is the process's, and only ever raised here.
    if len(text) >= csv.field_size_limit():
        csv.field_size_limit(len(text) + 1)
    handle = io.StringIO(text, newline="")
    # Strict: the lenient reader takes a quote left open as a cell running to the next quote,
    # or to the end of the file, and text after a closing quote as part of the cell
    # (`"5" screen"`): rows silently lost or mangled. Each is told at its row instead.
    reader = csv.reader(handle, strict=True)
    header = next(reader, None)
    if header is None or not text.strip():
        return []  # empty, or blank lines alone: the family says it has no cases
    if header == []:
        # The csv module reads a blank line as a row of no cells: the header would be that.
        raise dataset_problem(
            file=file,
            line=reader.line_num,
            message=f"Dataset {file} starts with a blank line, not a header row naming the fields",
            hint="delete the blank lines before the header row",
        )
    header_quote = _spaced_quote(header)
    if header_quote is not None:
        raise dataset_problem(
            file=file,
            line=1,
            message=f"Dataset {file} header row {_SPACED_SAID} ({header_quote}): {_SPACED_WHY}",
            hint=_SPACED_HINT,
        )
    names = [name.strip() for name in header]
    if len(names) <= 2 and names[0].lower().startswith("sep=") and not any(names[1:]):
        # Excel's "sep=," line names the delimiter for Excel alone; read as the header, it is
        # one column and an empty one.
        first_line = text.split("\n", 1)[0].rstrip("\r")
        raise dataset_problem(
            file=file,
            line=1,
            message=f"Dataset {file} starts with Excel's delimiter line {first_line!r}, not a "
            "header row naming the fields",
            hint="delete that first line, so that the header row comes first",
        )
    other = _other_delimiter(names=names)
    if other is not None:
        # A spreadsheet set to a European locale saves "CSV" with semicolons: read with commas,
        # the whole header is one column and every row's field is missing.
        raise dataset_problem(
            file=file,
            line=1,
            message=f"Dataset {file} is separated by {other}, not commas: its header row is "
            f"one column named {names[0]!r}",
            hint="save it as comma-separated CSV (in a spreadsheet: CSV UTF-8, comma "
            "delimited), or convert it to JSONL",
        )
    # Counted once: `names.count` per name was quadratic in the columns (40,000 took 14 s).
    repeated = sorted(name for name, count in Counter(names).items() if name and count > 1)
    if repeated:
        raise dataset_problem(
            file=file,
            line=1,
            message=f"Dataset {file} has a header row with repeated columns "
            + ", ".join(visible(name) for name in repeated),
            hint="the first row names each column once",
        )
    unnamed = [str(number) for number, name in enumerate(names, start=1) if not name]
    if unnamed:
        last = unnamed == [str(len(names))]
        raise dataset_problem(
            file=file,
            line=1,
            message=f"Dataset {file} has a header row whose "
            + (
                f"column {unnamed[0]} has"
                if len(unnamed) == 1
                else f"columns {', '.join(unnamed)} have"
            )
            + " no name"
            + (" (the header ends with a comma)" if last else ""),
            hint="name every column in the first row"
            + (
                "; or delete the comma that ends it, and the one that ends each row" if last else ""
            ),
        )
    rows: list[Row] = []
    seen = 0
    # Rows are looked at for a space before a cell's quote only in a file that has one.
    spaced = ' "' in text or '\t"' in text
    reads = _reads(reader=reader, handle=handle, text=text, header_ended=reader.line_num)
    for read in reads:
        line = read.line
        if read.cells is None:
            problems.append(_bad_quote(file=file, line=line, row=read.text, lines=read.ended))
            continue
        if limit is not None and seen >= limit:
            raise TooManyRows(counted=seen + 1 + sum(1 for _ in reads))
        seen += 1
        cells = read.cells
        if not cells and len(names) > 1:
            problems.append(
                dataset_problem(
                    file=file,
                    line=line,
                    message=f"Dataset {file} row at line {line} is an empty line; the header "
                    f"has {len(names)} columns",
                    hint="delete the empty line (a row of empty cells is written with the "
                    "commas between them: ',')",
                )
            )
            continue
        # A one-column sheet's empty cell is saved as an empty line: a case whose cell is empty.
        cells = cells or [""]
        spaced_quote = _spaced_quote(cells) if spaced else None
        if spaced_quote is not None:
            problems.append(
                dataset_problem(
                    file=file,
                    line=line,
                    message=f"Dataset {file} row at line {line} {_SPACED_SAID} "
                    f"({spaced_quote}): {_SPACED_WHY}",
                    hint=_SPACED_HINT,
                )
            )
            continue
        if len(cells) != len(names):
            problems.append(
                dataset_problem(
                    file=file,
                    line=line,
                    message=f"Dataset {file} row at line {line} has {len(cells)} cells; the "
                    f"header has {len(names)}",
                    hint="give every row one cell per header column (quote cells holding commas)",
                )
            )
            continue
        rows.append(
            Row(
                value=dict(zip(names, cells, strict=True)),
                file=file,
                where=f"line {line}",
                line=line,
                string_keys=True,
                cells_are_text=True,
            )
        )
    return rows


class _Read(NamedTuple):
    """One row after the header, as the strict reader read it."""

    line: int  # the line it starts on
    cells: list[str] | None  # [] for an empty line; None for a row the reader refused
    text: str  # a refused row's text, to where the reader stopped
    ended: int  # the line the reader stopped on


def _reads(*, reader: Reader, handle: io.StringIO, text: str, header_ended: int) -> Iterator[_Read]:
    """The rows after the header, every empty line among them one (a one-column sheet saves an
    empty cell as an empty line, and dropping it would shift every positional id after it);
    empty lines after the last row are none: no spreadsheet writes an empty row at the end (it
    is one of the endless empty rows of the sheet), an editor leaves them."""
    # A quoted cell may hold line breaks: a row is told at the line it starts on, one after
    # the last line the previous row ended on.
    ended = header_ended
    empty: list[_Read] = []  # empty lines not yet known to come before a row
    while True:
        start = handle.tell()
        try:
            cells = next(reader, None)
        except csv.Error:
            # The reader goes on at the next line: every bad row is told in one pass.
            line, ended = ended + 1, reader.line_num
            yield from empty
            empty.clear()
            yield _Read(line=line, cells=None, text=text[start : handle.tell()], ended=ended)
            continue
        if cells is None:
            return
        line, ended = ended + 1, reader.line_num
        read = _Read(line=line, cells=cells, text="", ended=ended)
        if not cells:
            empty.append(read)
            continue
        yield from empty
        empty.clear()
        yield read


_SPACED_SAID = "has a space before a quote meant to open a cell"
_SPACED_WHY = "a CSV reader takes that quote as text, and a comma inside it splits the cell"
_SPACED_HINT = "remove the space after the comma: a quoted cell starts with its quote"


def _spaced_quote(cells: list[str]) -> str | None:
    """The first cell (quoted for a message) that starts with spaces and then a quote: written
    `a, "b, c"` by hand, the quote is text to a CSV reader and the comma inside splits it."""
    for cell in cells:
        if cell[:1] in (" ", "\t") and cell.lstrip(" \t")[:1] == '"':
            shown = cell if len(cell) <= _SHOWN else cell[: _SHOWN - 1] + "…"
            return f"'{visible(shown)}'"
    return None


def _bad_quote(*, file: str, line: int, row: str, lines: int) -> DefinitionError:
    """The problem of a row the strict reader refused (`row`: its text, to where the reader
    stopped; `lines`: the line it stopped on): a quoted cell never closed, or text after a
    closing quote."""
    if _unclosed_quote(row):
        rest = lines - line + 1
        return dataset_problem(
            file=file,
            line=line,
            message=f"Dataset {file} row at line {line} opens a quoted cell that is never closed"
            + (
                f": the {rest:,} lines from there to the end of the file would be read as that "
                "one cell"
                if rest > 1
                else ""
            ),
            hint='close the quote; a quote inside a quoted cell is written twice ("")',
        )
    # The line the reader stopped on holds the closing quote and the text after it.
    last = row.rstrip("\r\n").rsplit("\n", 1)[-1].rstrip("\r")
    shown = last if len(last) <= _SHOWN else last[: _SHOWN - 1] + "…"
    return dataset_problem(
        file=file,
        line=line,
        message=f"Dataset {file} row at line {line} has text after the closing quote of a "
        "quoted cell: " + (f"line {lines} is " if lines != line else "") + f"'{visible(shown)}'",
        hint='a quote inside a quoted cell is written twice ("5"" screen"); a cell that does '
        'not start with a quote holds quotes as they are (5" screen)',
    )
