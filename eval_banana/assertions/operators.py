"""The six assertion operators on JSON data; each returns None or why it failed.

Each operator's verdict alone is in VERDICTS: a `[*]` path over a large array tells only its
first few failing elements, and judges the rest without writing down why each one fails.
An operator that cannot look at the value found raises NotEvaluated instead of failing it.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any, Literal, NamedTuple, Protocol

from eval_banana.core.lookalike import Reveal, alike_note, json_quoted, reveal_for
from eval_banana.core.yamlsafe import YAML12_EXPONENT_NUMBER, plain_yaml_reading

MAX_PATTERN_CHARS = 200
MAX_MATCH_INPUT_BYTES = 100 * 1024
_PREVIEW_CHARS = 60


class PatternError(ValueError):
    """A `matches` pattern that is too long or that RE2 cannot compile (definition error)."""


class NotEvaluated(Exception):
    """The value found could not be looked at (too long to search, not valid Unicode, a pattern
    RE2 refuses): the assertion fails without saying anything of the artifact, so a control
    (expect: fail) cannot count it as a caught defect. The message says why."""


class Operator(Protocol):
    """`found` is the value at the path; `value` the assertion's operand. None means it holds."""

    def __call__(self, *, found: Any, value: Any) -> str | None: ...


class Verdict(Protocol):
    """Whether an operator holds for `found`: exactly when the operator returns None."""

    def __call__(self, *, found: Any, value: Any) -> bool: ...


def json_kind(*, value: Any) -> str:
    """The JSON type name of a loaded value; bool is checked before int on purpose."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return f"non-JSON value ({type(value).__name__})"


def _plural(*, count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _short_string(*, text: str, reveal: Reveal = "none") -> str:
    # The quoted form of a bounded slice: a huge artifact string never becomes a huge message.
    if len(text) <= _PREVIEW_CHARS:
        return json_quoted(text, reveal=reveal)
    head = json_quoted(text[:_PREVIEW_CHARS], reveal=reveal)
    return f'{head[:-1]}…" ({len(text)} characters)'


class Apart(NamedTuple):
    """Two texts that differ though they print alike, quoted so that the difference shows."""

    found: str
    expected: str
    note: str  # why they look as they do


def told_apart(*, expected: str, found: str, within: bool = False) -> Apart | None:
    """`found` and `expected` quoted apart when `found` differs from `expected` (`within`:
    does not hold it) though they print alike; None when the difference already shows."""
    reveal = reveal_for(expected=expected, found=found, within=within)
    if reveal == "none":
        return None
    return Apart(
        found=_short_string(text=found, reveal=reveal),
        expected=_short_string(text=expected, reveal=reveal),
        note=alike_note(reveal),
    )


def _alike_among(*, items: Any, expected: str) -> Apart | None:
    """`told_apart` for the first text among `items` that prints like `expected`."""
    for item in items:
        if isinstance(item, str):
            apart = told_apart(expected=expected, found=item)
            if apart is not None:
                return apart
    return None


def describe(*, value: Any) -> str:
    """A bounded, typed description such as `the string "abc"` or `an array of 3 elements`."""
    kind = json_kind(value=value)
    if kind == "null":
        return "null"
    if kind == "boolean":
        return f"the boolean {'true' if value else 'false'}"
    if kind == "number":
        return f"the number {_number_text(number=value)}"
    if kind == "string":
        return f"the string {_short_string(text=value)}"
    if kind == "array":
        return f"an array of {_plural(count=len(value), noun='element')}"
    if kind == "object":
        return f"an object with {_plural(count=len(value), noun='key')}"
    return f"a {kind}"


def _number_text(*, number: int | float) -> str:
    if isinstance(number, float) and not math.isfinite(number):
        return str(number)
    text = repr(number)
    return text if len(text) <= _PREVIEW_CHARS else f"{text[:_PREVIEW_CHARS]}…"


def operand_text(*, value: Any) -> str:
    """The operand as shown in messages: compact JSON, cut to a bounded length."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = describe(value=value)
    return text if len(text) <= _PREVIEW_CHARS else f"{text[:_PREVIEW_CHARS]}…"


def json_equal(*, left: Any, right: Any) -> bool:
    """Equality with JSON types kept apart: `true` is not `1`, `1` equals `1.0`."""
    # An explicit stack: deep documents cannot exhaust the interpreter's recursion limit, and
    # the walk is bounded by the (finite, tree-shaped) operand even when YAML aliases loop.
    pending: list[tuple[Any, Any]] = [(left, right)]
    while pending:
        one, other = pending.pop()
        kind = json_kind(value=one)
        if kind != json_kind(value=other):
            return False
        if kind == "array":
            if len(one) != len(other):
                return False
            pending.extend(zip(one, other, strict=True))
        elif kind == "object":
            if len(one) != len(other) or any(key not in other for key in one):
                return False
            pending.extend((one[key], other[key]) for key in one)
        elif kind.startswith("non-JSON") or one != other:
            return False
    return True


def exists_holds(*, found: Any, value: Any) -> bool:
    return True


def op_exists(*, found: Any, value: Any) -> str | None:
    """Holds whenever the path resolved, even to JSON null."""
    return None


def equals_holds(*, found: Any, value: Any) -> bool:
    return json_equal(left=found, right=value)


class ExpectedFrom(NamedTuple):
    """Where an assertion's expected value was written: in the check file, or (a family's
    whole `{{ case.<field> }}` placeholder) in `field` of a dataset row read from a file of
    `format` (a check file's own `cases:` are YAML)."""

    format: Literal["check file", "csv", "json", "yaml"]
    field: str | None = None


def op_equals(*, found: Any, value: Any, expected_from: ExpectedFrom | None = None) -> str | None:
    """`expected_from`: where `value` was written, for the fix of a number written as text."""
    if equals_holds(found=found, value=value):
        return None
    if isinstance(found, str) and isinstance(value, str):
        apart = told_apart(expected=value, found=found)
        if apart is not None:
            return f"found the string {apart.found}, not {apart.expected} ({apart.note})"
    hint = _text_for_number(found=found, value=value, expected_from=expected_from)
    hint = hint or _text_for_word(found=found, value=value, expected_from=expected_from)
    hint = hint or _plain_in_check_file(found=found, value=value, expected_from=expected_from)
    return f"found {describe(value=found)}{_first_difference(found=found, value=value)}{hint}"


def _first_difference(*, found: Any, value: Any) -> str:
    """Where two arrays or two objects first differ, and what is there: `an array of 3
    elements` alone does not say which element is wrong."""
    kind = json_kind(value=found)
    if kind != json_kind(value=value):
        return ""
    if kind == "array":
        if len(found) != len(value):
            return f", not {_plural(count=len(value), noun='element')}"
        for position, (one, other) in enumerate(zip(found, value, strict=True)):
            if not json_equal(left=one, right=other):
                return _differs_at(place=f"element [{position}]", found=one, value=other)
    if kind == "object":
        for key, expected in value.items():
            if key not in found:
                return f", without the key {operand_text(value=key)}"
            if not json_equal(left=found[key], right=expected):
                return _differs_at(
                    place=f"key {operand_text(value=key)}", found=found[key], value=expected
                )
        for key in found:
            if key not in value:
                return f", with the key {_key_text(key=key)} not expected"
    return ""


def _differs_at(*, place: str, found: Any, value: Any) -> str:
    return f", whose {place} is {describe(value=found)}, not {operand_text(value=value)}"


def _key_text(*, key: Any) -> str:
    """A key as a message names it: quoted text, or what else YAML made of it (`the number 1`)."""
    return operand_text(value=key) if isinstance(key, str) else describe(value=key)


def _fix_in_row(*, expected_from: ExpectedFrom, number: str) -> str:
    """How to make the row's field the number `number`, in its file's own syntax."""
    field = f"field {expected_from.field}" if expected_from.field else "the field"
    if expected_from.format == "csv":
        # A CSV cell is always text: only the family's schema makes it a number.
        return (
            f"it comes from {field} of a CSV dataset, whose cells are text: give {field} a "
            "number type in the family's case_schema"
        )
    if expected_from.format == "json":
        return f"it comes from {field} of the case's JSON row: write {number} there, unquoted"
    return f"it comes from {field} of the case's YAML row: write {number} there, unquoted"


def _text_for_number(*, found: Any, value: Any, expected_from: ExpectedFrom | None) -> str:
    """Why "3" is not 3, when that is all that differs: the expected value is text (quoted, or
    a CSV cell, which is always text) where the artifact holds a number; the fix is told for
    where it was written (both places' when that is not known)."""
    if not isinstance(value, str) or not isinstance(found, int | float) or isinstance(found, bool):
        return ""
    number = json.dumps(found, allow_nan=True)
    in_row = expected_from is not None and expected_from.format != "check file"
    if value.strip() == number:
        if expected_from is not None and in_row:
            return "; the expected value is text, not a number: " + _fix_in_row(
                expected_from=expected_from, number=number
            )
        if expected_from is not None:
            return (
                "; the expected value is text, not a number: it is quoted in the check file, "
                "unquote it"
            )
        return (
            "; the expected value is text, not a number: written in the check file, unquote it; "
            "from a CSV dataset (whose cells are text), give the field a number type in the "
            "family's case_schema"
        )
    if YAML12_EXPONENT_NUMBER.fullmatch(value) and float(value) == found:
        said = f"; the expected value is the text {value!r}, not a number: "
        if expected_from is not None and in_row:
            return said + _fix_in_row(expected_from=expected_from, number=number)
        # `value: 1e3` unquoted: YAML 1.1 wants a dot and a signed exponent for a number.
        unquoted = (
            f"YAML 1.1, which eb's reader follows, reads a plain {value} in a check file as "
            f"text, so write {number} there"
        )
        if expected_from is not None:
            return said + unquoted
        return (
            f"{said}{unquoted}; from a CSV dataset, give the field a number type in the "
            "family's case_schema"
        )
    return ""


def _text_for_word(*, found: Any, value: Any, expected_from: ExpectedFrom | None) -> str:
    """Why "true" is not true and "null" not null: the expected value is text (quoted, or a CSV
    cell, which is always text) where the artifact holds JSON's word; the fix is told for
    where it was written (both places' when that is not known)."""
    if not isinstance(value, str) or not (found is None or isinstance(found, bool)):
        return ""
    word = json.dumps(found, allow_nan=True)
    if value.strip().lower() != word:
        return ""
    kind = "null" if found is None else "a boolean"
    said = f"; the expected value is text, not {kind}: "
    field = "the field"
    if expected_from is not None and expected_from.field:
        field = f"field {expected_from.field}"
    typed = (
        f"give {field} the null type in the family's case_schema and leave its cell empty"
        if found is None
        else f"give {field} a boolean type in the family's case_schema"
    )
    if expected_from is None:
        return (
            f"{said}written in the check file, unquote it; from a CSV dataset (whose cells are "
            f"text), {typed}"
        )
    if expected_from.format == "check file":
        return f"{said}it is quoted in the check file, unquote it"
    if expected_from.format == "csv":
        return f"{said}it comes from {field} of a CSV dataset, whose cells are text: {typed}"
    row = "JSON" if expected_from.format == "json" else "YAML"
    return f"{said}it comes from {field} of the case's {row} row: write {word} there, unquoted"


def _plain_in_check_file(*, found: Any, value: Any, expected_from: ExpectedFrom | None) -> str:
    """Why `value: NO` is not "NO": written plain in the check file, text the artifact holds was
    read by YAML 1.1 as another type (`false`, the octal `01234` as 668)."""
    if not isinstance(found, str) or isinstance(value, str):
        return ""
    if expected_from is not None and expected_from.format != "check file":
        return ""
    reading = plain_yaml_reading(text=found)
    if reading is None or not json_equal(left=reading.value, right=value):
        return ""
    as_json = json.dumps(value, allow_nan=True)
    if found == as_json:
        return ""  # written as JSON writes it: `value: 1` meant the number
    return (
        f"; the expected value is {describe(value=value)}, not text: YAML 1.1, which eb's reader "
        f"follows, reads a plain {found} in a check file as {as_json}, so quote it "
        f'there ("{found}") to expect the text'
    )


def contains_holds(*, found: Any, value: Any) -> bool:
    kind = json_kind(value=found)
    if kind == "array":
        return any(json_equal(left=element, right=value) for element in found)
    # A string holds text, an object keys (its own: dict membership has no inherited member).
    return kind in ("string", "object") and isinstance(value, str) and value in found


def op_contains(*, found: Any, value: Any) -> str | None:
    if contains_holds(found=found, value=value):
        return None
    kind = json_kind(value=found)
    if kind == "string":
        if not isinstance(value, str):
            return f"found {describe(value=found)}; a string can only contain a string"
        apart = told_apart(expected=value, found=found, within=True)
        if apart is None:
            return f"found {describe(value=found)}"
        return (
            f"found the string {apart.found}, which does not hold {apart.expected} ({apart.note})"
        )
    if kind == "array":
        failure = f"found {describe(value=found)}, none equal to {operand_text(value=value)}"
        apart = _alike_among(items=found, expected=value) if isinstance(value, str) else None
        if apart is None:
            return failure
        return f"{failure}: its element {apart.found} is not {apart.expected} ({apart.note})"
    if kind == "object":
        if not isinstance(value, str):
            return f"found {describe(value=found)}; object keys are strings"
        failure = f"found {describe(value=found)}, which has no key {operand_text(value=value)}"
        apart = _alike_among(items=found, expected=value)
        if apart is None:
            return failure + _key_of_another_type(keys=found, expected=value)
        return f"{failure}: its key {apart.found} is not {apart.expected} ({apart.note})"
    return f"contains needs a string, array or object, found {describe(value=found)}"


def _key_of_another_type(*, keys: Any, expected: str) -> str:
    """A key that is not text but is written as `expected` (a YAML artifact's `1: ok` has the
    number 1 as its key): said, since "no key "1"" alone reads as if nothing were there."""
    for key in keys:
        if not isinstance(key, str) and _key_spelling(key=key) == expected:
            return (
                f" (it has {describe(value=key)} as a key, which is not text: keys a YAML "
                "artifact writes plain as numbers or booleans are read as such; have it quote them)"
            )
    return ""


def _key_spelling(*, key: Any) -> str:
    if key is None or isinstance(key, bool):
        return json.dumps(key, allow_nan=True)
    return str(key)


def _length(*, found: Any) -> int | None:
    if json_kind(value=found) in ("string", "array", "object"):
        return len(found)
    return None


def length_at_least_holds(*, found: Any, value: Any) -> bool:
    length = _length(found=found)
    return length is not None and length >= value


def length_at_most_holds(*, found: Any, value: Any) -> bool:
    length = _length(found=found)
    return length is not None and length <= value


def op_length_at_least(*, found: Any, value: Any) -> str | None:
    if length_at_least_holds(found=found, value=value):
        return None
    length = _length(found=found)
    if length is None:
        return f"a length needs a string, array or object, found {describe(value=found)}"
    return f"length is {length} ({describe(value=found)})"


def op_length_at_most(*, found: Any, value: Any) -> str | None:
    if length_at_most_holds(found=found, value=value):
        return None
    length = _length(found=found)
    if length is None:
        return f"a length needs a string, array or object, found {describe(value=found)}"
    return f"length is {length} ({describe(value=found)})"


def _utf8_size_over(*, text: str, limit: int) -> int | None:
    """The UTF-8 size of `text` when it exceeds `limit`, else None (encodes only when needed)."""
    if len(text) * 4 <= limit:
        return None
    if len(text) > limit:
        return len(text.encode("utf-8", errors="surrogatepass"))
    size = len(text.encode("utf-8", errors="surrogatepass"))
    return size if size > limit else None


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> Any:
    """Compile with RE2 (linear time); raise PatternError for long or unsupported patterns."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(
            f"pattern is {len(pattern)} characters long; the limit is {MAX_PATTERN_CHARS}"
        )
    # Loaded on the first pattern: most runs and every `eb validate` without one are spared
    # its import (some 4 to 7 ms of start-up).
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    # RE2 otherwise logs every rejected pattern to the process's stderr.
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", errors="replace")
        raise PatternError(f"pattern is not supported by RE2: {detail}") from None


def _search(*, found: str, value: Any) -> bool:
    """Whether the pattern `value` finds a match in `found`; NotEvaluated when it cannot look."""
    size = _utf8_size_over(text=found, limit=MAX_MATCH_INPUT_BYTES)
    if size is not None:
        raise NotEvaluated(
            f"the string is {size} bytes long; matches reads at most "
            f"{MAX_MATCH_INPUT_BYTES} bytes, so it was not evaluated"
        )
    try:
        compiled = compile_pattern(value)
    except PatternError as exc:
        raise NotEvaluated(str(exc)) from None
    try:
        return compiled.search(found) is not None
    except UnicodeEncodeError:
        # Lone surrogates (possible from JSON escapes) cannot reach RE2; fail closed.
        raise NotEvaluated("the string holds characters that are not valid Unicode") from None


def matches_holds(*, found: Any, value: Any) -> bool:
    return isinstance(found, str) and _search(found=found, value=value)


def op_matches(*, found: Any, value: Any) -> str | None:
    if not isinstance(found, str):
        return f"matches needs a string, found {describe(value=found)}"
    return None if _search(found=found, value=value) else f"found {describe(value=found)}"


OPERATORS: dict[str, Operator] = {
    "exists": op_exists,
    "equals": op_equals,
    "contains": op_contains,
    "matches": op_matches,
    "lengthAtLeast": op_length_at_least,
    "lengthAtMost": op_length_at_most,
}
VERDICTS: dict[str, Verdict] = {
    "exists": exists_holds,
    "equals": equals_holds,
    "contains": contains_holds,
    "matches": matches_holds,
    "lengthAtLeast": length_at_least_holds,
    "lengthAtMost": length_at_most_holds,
}


def operator_for(*, op: str, expected_from: ExpectedFrom | None) -> Operator:
    """The operator `op`, told where its expected value was written when that words a fix."""
    if op == "equals" and expected_from is not None:
        return functools.partial(op_equals, expected_from=expected_from)
    return OPERATORS[op]
