"""The six assertion operators on JSON data; each returns None or why it failed.

Each operator's verdict alone is in VERDICTS: a `[*]` path over a large array tells only its
first few failing elements, and judges the rest without writing down why each one fails.
An operator that cannot look at the value found raises NotEvaluated instead of failing it.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal, NamedTuple, Protocol

from eval_banana.core.lookalike import Reveal, alike_note, json_quoted, reveal_for
from eval_banana.core.yamlsafe import YAML12_EXPONENT_NUMBER

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
    # Where the check file writes the value, or a part of it, as a plain scalar YAML 1.1 read as
    # no text (`NO`, `01234`, `~`): its path relative to the value ("" for the whole) -> the
    # scalar as written. None: not known (a plan by an eb that did not record it).
    plain_words: Mapping[str, str] | None = None


def op_equals(*, found: Any, value: Any, expected_from: ExpectedFrom | None = None) -> str | None:
    """`expected_from`: where `value` was written, for the fix of a number written as text."""
    if equals_holds(found=found, value=value):
        return None
    difference = first_difference(found=found, value=value)
    if difference is None:  # not reached: json_equal said they differ
        return f"found {describe(value=found)}"
    there, expected = difference.found, difference.expected
    if difference.what == "value" and isinstance(there, str) and isinstance(expected, str):
        apart = told_apart(expected=expected, found=there)
        if apart is not None and not difference.trail:
            return f"found the string {apart.found}, not {apart.expected} ({apart.note})"
        if apart is not None:
            return (
                f"found {describe(value=found)}, whose {_place(trail=difference.trail)} is the "
                f"string {apart.found}, not {apart.expected} ({apart.note})"
            )
    told = _difference_text(difference=difference)
    if difference.what != "value":
        return f"found {describe(value=found)}{told}"
    # The hints are about the value that differs, however deep in the two it is.
    hint = _text_for_number(found=there, value=expected, expected_from=expected_from)
    hint = hint or _text_for_word(found=there, value=expected, expected_from=expected_from)
    hint = hint or _plain_in_check_file(
        found=there, value=expected, expected_from=expected_from, trail=difference.trail
    )
    return f"found {describe(value=found)}{told}{hint}"


class Difference(NamedTuple):
    """Where two values first differ, in document order: `trail` leads there from the top
    (keys and indexes), where `found` is not `expected`; `missing` and `unexpected` name a key
    one object lacks or has over the other, `length` says two arrays' lengths differ.
    `agreed`: how many values inside the two were found equal before (how near they are)."""

    trail: tuple[Any, ...]
    found: Any
    expected: Any
    what: Literal["value", "length", "missing", "unexpected"]
    key: Any = None
    agreed: int = 0


# A step of a trail: an array's index, or an object's key (wrapped, since keys need not be text).
class KeyStep(NamedTuple):
    key: Any


# A trail as the walk builds it: (step, the trail above), shared by siblings, so that a step
# costs one tuple however deep it is (copying whole paths would be quadratic on deep nesting).
_Link = tuple[Any, Any] | None
_NO_KEY = object()
# Scalars of these exact types are equal exactly when `==` says so (bool is not int here, and
# 1 against 1.0 takes the general path): the walk compares them without a step of its own.
_SAME_TYPE_SCALARS = (str, int, float)


def first_difference(*, found: Any, value: Any) -> Difference | None:
    """The first place, in document order, where `found` and `value` differ under
    `json_equal`'s rules; None when they are equal. An object is walked in `value`'s key order
    (a key `found` lacks is told where it comes), then any key `found` has over it. One walk,
    with an explicit stack of the arrays and objects entered: linear in the values compared,
    whatever their depth."""
    entered: list[_Entered] = []
    difference = _enter(one=found, other=value, link=None, entered=entered)
    compared = 0
    while difference is None and entered:
        frame = entered[-1]
        child = next(frame.children, None)
        if child is None:
            entered.pop()
            difference = _unexpected_key(frame=frame)
            continue
        step, one, other = child
        if one is _NO_KEY:
            difference = Difference(
                _trail(link=frame.link), frame.one, frame.other, "missing", step.key
            )
            continue
        compared += 1
        kind = type(one)
        if kind is type(other) and kind in _SAME_TYPE_SCALARS and one == other:
            continue
        difference = _enter(one=one, other=other, link=(step, frame.link), entered=entered)
    if difference is None:
        return None
    return difference._replace(agreed=compared)


class _Entered(NamedTuple):
    """An array or object pair being compared: its children still to compare, and where."""

    children: Iterator[tuple[Any, Any, Any]]
    link: _Link
    one: Any
    other: Any


def _enter(*, one: Any, other: Any, link: _Link, entered: list[_Entered]) -> Difference | None:
    """How `one` and `other` differ on their own (type, length, scalar value); when they are
    arrays or objects alike, their children are put on `entered` to compare next."""
    kind = json_kind(value=one)
    if kind != json_kind(value=other):
        return Difference(_trail(link=link), one, other, "value")
    if kind == "array":
        if len(one) != len(other):
            return Difference(_trail(link=link), one, other, "length")
        entered.append(_Entered(zip(itertools.count(), one, other), link, one, other))
    elif kind == "object":
        children = ((KeyStep(key), one.get(key, _NO_KEY), other[key]) for key in other)
        entered.append(_Entered(children, link, one, other))
    elif kind.startswith("non-JSON") or one != other:
        return Difference(_trail(link=link), one, other, "value")
    return None


def _unexpected_key(*, frame: _Entered) -> Difference | None:
    """A key an object found has beyond those expected, once all those were compared alike."""
    one, other = frame.one, frame.other
    if not isinstance(one, dict) or len(one) <= len(other):
        return None  # an array, or every key of `one` was among those of `other`
    key = next(key for key in one if key not in other)
    return Difference(_trail(link=frame.link), one, other, "unexpected", key)


def _trail(*, link: _Link) -> tuple[Any, ...]:
    steps: list[Any] = []
    while link is not None:
        step, link = link
        steps.append(step)
    return tuple(reversed(steps))


# A path written as eb's assertions write it: `a.b[2].c`. A key the syntax cannot write (empty,
# holding `.`, `[` or `]`, or not text) is written in brackets as JSON writes it: `a["x.y"]`.
_PLAIN_KEY = re.compile(r"[^.\[\]]+")
# How much of a path a reason shows: a trail thousands of steps deep is cut in its middle.
_HEAD_STEPS = 4
_TAIL_STEPS = 8
_KEY_CHARS = 40


def trail_text(*, trail: tuple[Any, ...], bounded: bool = True) -> str:
    """`trail` in eb's path syntax; `bounded`: cut to a few steps and short keys for a reason
    (unbounded, it is the exact text a check file's value is located by)."""
    steps = list(trail)
    cut = bounded and len(steps) > _HEAD_STEPS + _TAIL_STEPS
    if cut:
        steps = [*steps[:_HEAD_STEPS], None, *steps[-_TAIL_STEPS:]]
    parts: list[str] = []
    for step in steps:
        if step is None:
            parts.append("…")
        elif isinstance(step, KeyStep):
            parts.append(_key_step_text(key=step.key, first=not parts, bounded=bounded))
        else:
            parts.append(f"[{step}]")
    text = "".join(parts)
    return f"{text} ({len(trail)} levels down)" if cut else text


def _key_step_text(*, key: Any, first: bool, bounded: bool) -> str:
    if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) and not (first and key == "$"):
        shown = key if not bounded or len(key) <= _KEY_CHARS else f"{key[:_KEY_CHARS]}…"
        return shown if first else f".{shown}"
    quoted = json.dumps(key, ensure_ascii=False, allow_nan=True, default=str)
    if bounded and len(quoted) > _KEY_CHARS:
        quoted = f"{quoted[:_KEY_CHARS]}…"
    return f"[{quoted}]"


def _difference_text(*, difference: Difference) -> str:
    """What a reason adds to `found <the value>` about where and how it differs; nothing when
    the value itself is the difference (the headline shows the expected one)."""
    trail, found, expected = difference.trail, difference.found, difference.expected
    if difference.what == "missing":
        key = operand_text(value=difference.key)
        return (
            f", whose {_place(trail=trail)} has no key {key}"
            if trail
            else f", without the key {key}"
        )
    if difference.what == "unexpected":
        key = _key_text(key=difference.key)
        if not trail:
            return f", with the key {key} not expected"
        return f", whose {_place(trail=trail)} has the key {key}, not expected"
    if difference.what == "length":
        elements = _plural(count=len(expected), noun="element")
        if not trail:
            return f", not {elements}"
        return f", whose {_place(trail=trail)} is {describe(value=found)}, not {elements}"
    if not trail:
        return ""
    return (
        f", whose {_place(trail=trail)} is {describe(value=found)}, "
        f"not {operand_text(value=expected)}"
    )


def _place(*, trail: tuple[Any, ...]) -> str:
    """A place inside the value found, as a reason names it: `a.b[2].c`, `element [2].c`."""
    text = trail_text(trail=trail)
    return f"element {text}" if isinstance(trail[0], int) else text


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


def _plain_in_check_file(
    *, found: Any, value: Any, expected_from: ExpectedFrom | None, trail: tuple[Any, ...] = ()
) -> str:
    """Why `value: NO` is not "NO": written plain in the check file, it was read by YAML 1.1 as
    another type (`false`, the octal `01234` as 668, `~` as null). `trail`: where in the value
    they differ. Told from the plan's record of what the file writes there, whatever text the
    artifact holds; never from that text alone (`value: 668` against "01234" wrote no 01234)."""
    if not isinstance(found, str) or isinstance(value, str):
        return ""
    written = _written_at(expected_from=expected_from, trail=trail)
    return "" if written is None else _quote_it(value=value, written=written)


def _written_at(*, expected_from: ExpectedFrom | None, trail: tuple[Any, ...]) -> str | None:
    """What the check file writes at `trail` in the value, when YAML 1.1 read it as another
    value than that text (the plan's record); None when it wrote nothing so, or it is unknown."""
    if expected_from is None or expected_from.format != "check file":
        return None
    written = expected_from.plain_words
    return None if written is None else written.get(trail_text(trail=trail, bounded=False))


def _quote_it(*, value: Any, written: str) -> str:
    """The fix for `written`, a plain scalar in the check file that YAML 1.1 read as `value`."""
    if written:
        what, fix = f"a plain {written}", f'quote it there ("{written}") to expect the text'
    else:  # `value:` with nothing after it
        what, fix = "a value left empty", "write the text there, quoted, to expect it"
    return (
        f"; the expected value is {describe(value=value)}, not text: YAML 1.1, which eb's reader "
        f"follows, reads {what} in a check file as {json.dumps(value, allow_nan=True)}, so {fix}"
    )


def _word_among_text(*, found: Any, value: Any, expected_from: ExpectedFrom | None) -> str:
    """`_plain_in_check_file` for `contains`: its value written plain and read as no text (a
    boolean, a number, null), where the value found holds text (a string, an array with a
    string, an object's keys)."""
    if isinstance(value, str):
        return ""
    written = _written_at(expected_from=expected_from, trail=())
    kind = json_kind(value=found)
    holds_text = kind in ("string", "object") or (
        kind == "array" and any(isinstance(element, str) for element in found)
    )
    if not holds_text or written is None:
        return ""
    return _quote_it(value=value, written=written)


def contains_holds(*, found: Any, value: Any) -> bool:
    kind = json_kind(value=found)
    if kind == "array":
        return any(json_equal(left=element, right=value) for element in found)
    # A string holds text, an object keys (its own: dict membership has no inherited member).
    return kind in ("string", "object") and isinstance(value, str) and value in found


def op_contains(*, found: Any, value: Any, expected_from: ExpectedFrom | None = None) -> str | None:
    """`expected_from`: where `value` was written, for the fix of a word YAML read otherwise."""
    if contains_holds(found=found, value=value):
        return None
    failure = _contains_failure(found=found, value=value, expected_from=expected_from)
    return failure + _word_among_text(found=found, value=value, expected_from=expected_from)


def _contains_failure(*, found: Any, value: Any, expected_from: ExpectedFrom | None) -> str:
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
            return failure + _nearest_element(
                elements=found, value=value, expected_from=expected_from
            )
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


def _nearest_element(*, elements: list[Any], value: Any, expected_from: ExpectedFrom | None) -> str:
    """How the element nearest `value` differs from it, when `value` is an array or an object:
    "none equal to" a large object alone does not say which of its fields no element has. The
    nearest is the one that agrees with `value` longest in document order (the first of those
    that agree as long). Each element's walk stops within it, so all of them are linear in the
    array."""
    kind = json_kind(value=value)
    if kind not in ("array", "object"):
        return ""
    nearest: tuple[int, Difference] | None = None
    for position, element in enumerate(elements):
        if json_kind(value=element) != kind:
            continue
        difference = first_difference(found=element, value=value)
        if difference is not None and (nearest is None or difference.agreed > nearest[1].agreed):
            nearest = (position, difference)
    if nearest is None:
        return ""
    position, difference = nearest
    hint = ""
    if difference.what == "value":
        hint = _plain_in_check_file(
            found=difference.found,
            value=difference.expected,
            expected_from=expected_from,
            trail=difference.trail,
        )
    return (
        f": its nearest {kind}, element [{position}], is {describe(value=elements[position])}"
        f"{_difference_text(difference=difference)}{hint}"
    )


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
    if op == "contains" and expected_from is not None:
        return functools.partial(op_contains, expected_from=expected_from)
    return OPERATORS[op]
