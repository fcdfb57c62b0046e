"""A dataset row and where it came from, and what the format readers share: a problem told at a
file's line, UTF-8 decoding, JSON decoding for the .jsonl and .json readers, a list file's rows
and the nesting bound (`jsonlrows`, `jsonrows`, `csvrows` and `yamlrows` read the formats;
`reading` picks one by suffix).

Every bad row is collected, not only the first, so `eb validate` names them all in one pass.
Each row keeps where it came from (the file and its line or row) for the messages.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
import unicodedata
from collections.abc import Callable
from typing import Any, NamedTuple

from eval_banana.core.errors import DefinitionError
from eval_banana.core.jsonvalues import json_float, once_each, too_long_number
from eval_banana.core.lfs import FETCH_HINT, pointer_size, pointer_words
from eval_banana.core.readback import MAX_DEPTH
from eval_banana.core.textfiles import HEAD_BYTES, other_unicode
from eval_banana.datasets.render import json_kind
from eval_banana.datasets.suffixes import SUFFIXES as SUFFIXES  # the readers take it here

_FLATTEN = "flatten the rows: a case needs only a few levels of lists and mappings"


class TooManyRows(Exception):
    """A .jsonl or .csv file holds more rows than the family may: reading stopped turning lines
    into rows past the limit (a file of ten million rows would otherwise take gigabytes before
    being refused) and only counted them. Caught by the family, which tells the size."""

    def __init__(self, *, counted: int) -> None:
        super().__init__(counted)
        self.counted = counted


class ItemLines:
    """Where each item of a JSON or YAML list starts in its file, worked out only when a row of
    it has a problem (a node tree with positions costs many times the plain load). `under`: the
    list is the value of this key of the file's top-level mapping (a check file's `cases:`);
    `as_json`: a .json file's text, whose items are found by JSON's own rules (YAML does not
    read every JSON text: to it an escaped emoji, `\\ud83d\\ude00`, is no character)."""

    def __init__(self, text: str, *, under: str | None = None, as_json: bool = False) -> None:
        self._text = text
        self._under = under
        self._json = as_json
        self._places: list[tuple[int, int]] | None = None  # (1-based line, 0-based column)

    def _starts(self) -> list[tuple[int, int]]:
        if self._places is None:
            self._places = (
                _json_item_starts(self._text)
                if self._json
                else _item_starts(self._text, under=self._under)
            )
        return self._places

    def line_of(self, index: int) -> int | None:
        """The 1-based line the `index`th (1-based) item starts on, or None when unknown."""
        starts = self._starts()
        return starts[index - 1][0] if 0 < index <= len(starts) else None

    def item_at(self, *, line: int, column: int) -> int | None:
        """The 1-based index of the item whose text holds the place at `line` (1-based) and
        `column` (0-based): the last to start at or before it; None when unknown."""
        place = (line, column)
        index = bisect.bisect_right(self._starts(), place)
        return index or None

    def shared(self, index: int) -> bool:
        """Whether another item starts on the line of the `index`th (a list on one line)."""
        line = self.line_of(index)
        starts = self._starts()
        return line is not None and (
            (index > 1 and starts[index - 2][0] == line)
            or (index < len(starts) and starts[index][0] == line)
        )


def _item_starts(text: str, *, under: str | None) -> list[tuple[int, int]]:
    """The line and column each item of the top-level YAML list (or of the list at key `under`
    of the top-level mapping) starts at."""
    import yaml

    from eval_banana.core.yamlsafe import FastSafeLoader

    try:
        node = yaml.compose(text, Loader=FastSafeLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return []  # not YAML: the file's own reading tells it
    if under is not None and isinstance(node, yaml.MappingNode):
        node = next((value for key, value in node.value if key.value == under), None)
    if not isinstance(node, yaml.SequenceNode):
        return []
    return [(item.start_mark.line + 1, item.start_mark.column) for item in node.value]


def _json_item_starts(text: str) -> list[tuple[int, int]]:
    """The line and column each item of the JSON list `text` starts at."""
    places: list[tuple[int, int]] = []
    line, line_start, counted = 1, 0, 0  # newlines counted up to `counted`
    for start, _ in json_item_spans(text):
        newlines = text.count("\n", counted, start)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", counted, start) + 1
        counted = start
        places.append((line, start - line_start))
    return places


class Row(NamedTuple):
    """One dataset row as read, and where it is: `file` project-relative, `where` a phrase."""

    value: object
    file: str
    where: str
    line: int | None
    # Every key of the row is text: read from JSON or CSV, where it is by construction, or
    # from a YAML file none of whose mappings has another key (`{1: bad}`). Other rows are
    # walked for such a key.
    string_keys: bool = False
    # 0-based place in the check file's own `cases:` list; None for a row of a dataset file.
    # Its errors' field paths name it (`cases.2.id`), and the check file's line is found from
    # that only when there is an error.
    inline_index: int | None = None
    # A row of a JSON or YAML list file: its 1-based place there, and where its items start.
    item_index: int = 0
    item_lines: ItemLines | None = None
    # A CSV row: every value is text, read as the family's case_schema types it (celltypes).
    cells_are_text: bool = False


def row_line(row: Row) -> int | None:
    """The line of the row's file it starts on, when known (found now for a list file)."""
    if row.line is not None or row.item_lines is None:
        return row.line
    return row.item_lines.line_of(row.item_index)


def row_where(row: Row, *, in_parentheses: bool = False) -> str:
    """Where the row is, as a message says it: `line 4`, `item 2 (line 5)`, `item 2`; with
    `in_parentheses`, for a message that puts it in some, `item 2, line 5`."""
    if row.line is not None or row.item_lines is None:
        return row.where
    line = row_line(row)
    if line is None or row.item_lines.shared(row.item_index):
        return row.where  # a list written on one line: its line would tell nothing
    return f"{row.where}, line {line}" if in_parentheses else f"{row.where} (line {line})"


def dataset_problem(*, file: str, line: int | None, message: str, hint: str) -> DefinitionError:
    """A problem of a dataset file, told at its line when known (field `cases_from`)."""
    return DefinitionError(message, file=file, line=line, field_path="cases_from", hint=hint)


_SAVE_AS_UTF8 = "save the file as UTF-8 (in a spreadsheet: CSV UTF-8)"


def decode_dataset(*, data: bytes, file: str, offset: int = 0, number: int = 0) -> str:
    """`data` as text, without the byte order mark spreadsheet programs put first in a UTF-8
    CSV: left in, it would rename the first column (an `id` column no longer named the cases)
    and make a JSON file's first line unreadable. `offset` and `number`: the bytes and lines
    of the file before `data` (a block of a .jsonl file), for where a bad byte is."""
    head = data[:HEAD_BYTES] if offset == 0 else b""
    if offset == 0:
        _refuse_lfs_pointer(data=data, file=file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = number + data[: exc.start].count(b"\n") + 1
        at, byte = offset + exc.start, data[exc.start]
        raise _not_utf8(file=file, head=head, line=line, at=at, byte=byte) from None
    if b"\x00" in head:
        # UTF-16 of ASCII letters, without a byte order mark, is valid UTF-8 (a NUL after each
        # letter): read as such, each line would be one cell of a ragged row.
        said = other_unicode(head)
        if said is not None:
            raise dataset_problem(
                file=file, line=1, message=f"Dataset {file} {said}", hint=_SAVE_AS_UTF8
            )
    # A file saved twice by a tool that adds one may start with two: each would rename the
    # first column (`\ufeffid`), and the ids would be lost.
    return text.lstrip("\ufeff") if offset == 0 and text.startswith("\ufeff") else text


def _refuse_lfs_pointer(*, data: bytes, file: str) -> None:
    """A dataset checked out without its Git LFS content: its pointer file would read as
    three bad rows (a CSV header and two cases missing every field)."""
    size = pointer_size(data)
    if size is not None:
        raise dataset_problem(
            file=file,
            line=1,
            message=f"Dataset {file} is {pointer_words(size=size)}, not the dataset itself",
            hint=FETCH_HINT,
        )


def _not_utf8(*, file: str, head: bytes, line: int, at: int, byte: int) -> DefinitionError:
    """A file that is not UTF-8: a spreadsheet's "Unicode text" export is UTF-16, told by its
    first bytes (as UTF-32 is); anything else is told by its first bad byte."""
    said = other_unicode(head)
    if said is not None:
        return dataset_problem(
            file=file, line=1, message=f"Dataset {file} {said}", hint=_SAVE_AS_UTF8
        )
    return dataset_problem(
        file=file,
        line=line,
        message=f"Dataset {file} is not UTF-8 text (line {line}, byte {at}: 0x{byte:02X})",
        hint=_SAVE_AS_UTF8,
    )


# The fix for a row that names a key twice, in any format (yamlrows says it too).
REPEATED_KEY_HINT = "each key may appear once in a row; delete the repeated one"

# json.loads without its per-call type checks: a .jsonl file calls it once per line. A row
# that names a key twice is refused (RepeatedKey), as in YAML rows; a number that reads as 0
# but is not zero (`1e-400`) is kept as a TinyNumber, which the row's expansion tells.
_ROW_DECODER = json.JSONDecoder(object_pairs_hook=once_each, parse_float=json_float)
decode_json = _ROW_DECODER.decode
# What `decode_json` runs after its two whitespace matches: (value, where it ends), or
# StopIteration / ValueError. A line that is one value and nothing else (nearly every line of
# a .jsonl file) is read by it alone; any other line is left to decode_json.
scan_json: Callable[[str, int], tuple[Any, int]] = _ROW_DECODER.scan_once  # type: ignore[attr-defined]  # not in typeshed


def invisible(char: str) -> tuple[str, str] | None:
    """What the character JSON stopped at is, and the fix, when a viewer shows it as nothing:
    a byte order mark (a file joined from files saved with one keeps each, at the start of a
    middle line), a NUL or another control or format character."""
    if char == "\ufeff":
        return (
            "a byte order mark (U+FEFF)",
            "delete it: files saved with a byte order mark keep it when joined (save each as "
            "UTF-8 without one first)",
        )
    if not char or char in "\t\r\n" or unicodedata.category(char) not in ("Cc", "Cf"):
        return None
    name = "a NUL character" if char == "\x00" else "an invisible character"
    return f"{name} (U+{ord(char):04X})", "delete the character"


def _list_hint(*, value: object) -> str:
    """The fix; for an export that wraps its rows (`{"examples": [...]}`), where they are."""
    if isinstance(value, dict):
        wrapped = [key for key, item in value.items() if isinstance(item, list)]
        if len(wrapped) == 1:
            return (
                f"its key {str(wrapped[0])!r} holds a list of {len(value[wrapped[0]])}: make that "
                "list the whole file (or write one case per line in a .jsonl file)"
            )
        if value and all(isinstance(item, dict) for item in value.values()):
            # Cases keyed by their ids (`A1: {sku: A1}`), as a lookup table is written.
            keys = ", ".join(repr(str(key)) for key in itertools.islice(value, 3))
            more = ", ..." if len(value) > 3 else ""
            return (
                f"its keys ({keys}{more}) each hold a case: write the cases as a list, each "
                "key moved into its case as the field id"
            )
    return "write the cases as a list of mappings"


def listed_rows(*, value: object, file: str, kind: str, string_keys: bool, text: str) -> list[Row]:
    if value is None:
        return []  # an empty file (or only comments): the family says it has no cases
    if not isinstance(value, list):
        found = json_kind(value)
        raise dataset_problem(
            file=file,
            line=None,
            message=f"Dataset {file} must hold a {kind} list of cases, not {found}",
            hint=_list_hint(value=value),
        )
    lines = ItemLines(text, as_json=kind == "JSON")
    return [
        Row(
            value=item,
            file=file,
            where=f"item {index}",
            line=None,
            string_keys=string_keys,
            item_index=index,
            item_lines=lines,
        )
        for index, item in enumerate(value, start=1)
    ]


def too_deep(*, file: str, line: int | None, what: str) -> DefinitionError:
    # Checked before anything walks the rows: eb's own files hold each case a few levels down,
    # and a parser or encoder would otherwise run out of stack.
    return dataset_problem(
        file=file,
        line=line,
        message=f"{what} is nested deeper than {MAX_DEPTH} levels",
        hint=_FLATTEN,
    )


def number_too_long(*, file: str, line: int | None) -> DefinitionError:
    """A whole number longer than Python reads, in a .jsonl line or a .json file."""
    return dataset_problem(
        file=file,
        line=line,
        message=f"Dataset {file} {too_long_number(line=line)}",
        hint="quote it to keep it as text",
    )


def repeated_key_problem(*, row: Row, key: str, line: int | None = None) -> DefinitionError:
    """A row of a JSON or YAML list that names `key` twice (at `line`, when known): a problem
    of that row alone, as a .jsonl line's is."""
    at = f" at line {line}" if line is not None and line != row_line(row) else ""
    return dataset_problem(
        file=row.file,
        line=row_line(row) if line is None else line,
        message=f"Dataset {row.file} {row_where(row)} is a row with a duplicate key '{key}'{at}",
        hint=REPEATED_KEY_HINT,
    )


# json.loads keeping the last value of a repeated key: where the items of a list that holds
# one end, so each is decoded again on its own and only the rows that repeat a key are refused.
LENIENT_JSON = json.JSONDecoder(parse_float=json_float)
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def json_item_spans(text: str) -> list[tuple[int, int]]:
    """Where each item of the JSON list `text` starts and ends (character offsets); empty when
    `text` is no JSON list."""
    at = _past_space(text, 0)
    if not text.startswith("[", at):
        return []
    at = _past_space(text, at + 1)
    spans: list[tuple[int, int]] = []
    while not text.startswith("]", at):
        try:
            _, end = LENIENT_JSON.raw_decode(text, at)
        except ValueError:
            return []
        spans.append((at, end))
        at = _past_space(text, end)
        if text.startswith(",", at):
            at = _past_space(text, at + 1)
        elif not text.startswith("]", at):
            return []
    return spans


def _past_space(text: str, at: int) -> int:
    """The offset past the JSON whitespace at `at` in `text`."""
    found = _JSON_SPACE.match(text, at)
    return found.end() if found else at
