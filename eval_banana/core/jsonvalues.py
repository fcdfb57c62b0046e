"""What JSON can say: a case's values go into plan.json and a script's context file, which
programs in any language read, so they must be JSON, not merely what Python's json writes."""

from __future__ import annotations

import functools
import math
import re
import sys
from typing import Any, NamedTuple

from eval_banana.core.words import SURROGATES


class Unsayable(NamedTuple):
    """Where a value JSON cannot say is (a field path), what it is, and how to write it;
    `why` follows `what` in a message."""

    field: str
    what: str
    fix: str
    why: str = "which JSON cannot say"


class TinyNumber:
    """A JSON number too close to zero for a program to read as anything but 0 (`1e-400`),
    though it is not zero: a dataset row keeps its text in this, so the row is told at its
    field, where reading it as 0.0 would grade against a number nobody wrote."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class HugeNumber:
    """A number beyond the largest a program reads (about 1.8e308, `1.0e+999`): read, it would
    be Infinity, which JSON cannot say, where YAML's own `.inf` says what it means. A check file
    keeps its text in this, so it is told at its field as written, not as `null`."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def too_large(text: str) -> str:
    """What a HugeNumber `text` is, after "holds the number ...": `-Infinity` for a negative."""
    infinity = "-Infinity" if text.lstrip().startswith("-") else "Infinity"
    return (
        "beyond the largest number a program reads from JSON (about 1.8e308): read, it would be "
        f"{infinity}, which JSON cannot say"
    )


TOO_LARGE_FIX = "write a smaller number, or quote the number to keep it as text"


def json_float(text: str) -> float | TinyNumber:
    """A JSON number with a fraction or an exponent, as json's `parse_float` reads it; a
    TinyNumber for one that reads as 0.0 but is not zero. Only a zero looks at its text."""
    value = float(text)
    return TinyNumber(text) if value == 0.0 and underflows(text) else value


def underflows(text: str) -> bool:
    """Whether the number `text`, which reads as 0.0, is not zero: its digits before any
    exponent are not all 0 (`1e-400`, not `0.0e5`; YAML and TOML may group them, `0_0.0`)."""
    mantissa = text.lower().partition("e")[0]
    return mantissa.strip("+-0._") != ""


# What a TinyNumber is, after "holds the number ...", and its fix.
TOO_SMALL = (
    "below the smallest number a program reads from JSON (about 5e-324): read, it would be 0"
)
TOO_SMALL_FIX = "write 0 if zero is meant, or quote the number to keep it as text"


_QUOTE_IT = "quote the value to make it a string"
_WRITE_THE_CHARACTER = (
    "write the character itself, or both halves of its escape pair (\\ud83d\\ude00 for one "
    "beyond U+FFFF)"
)


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in `text`, as the JSON escape that wrote it, or None. JSON's
    `\\ud800` names half of a UTF-16 pair; alone it is no character, and no UTF-8 file (every
    file eb writes) can hold it."""
    if text.isascii():
        return None
    found = SURROGATES.search(text)
    return None if found is None else f"\\u{ord(found.group()):04x}"


# A JSON escape of a surrogate (`\ud800`): the only way a JSON text decoded from UTF-8 can
# hold one. Texts without it need no walk of what they decode to.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def _may_hold_lone_surrogate(text: str | bytes) -> bool:
    """Whether the JSON text `text` may decode to a lone surrogate (it escapes a surrogate)."""
    if isinstance(text, bytes):
        return b"\\u" in text and _SURROGATE_ESCAPE_BYTES.search(text) is not None
    return "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None


def lone_surrogate_in(*, text: str | bytes, document: Any) -> Unsayable | None:
    """Where `document`, decoded from the JSON `text`, holds what JSON cannot say (a lone
    surrogate first of all); walked only when the text escapes a surrogate, the one way a
    JSON text decoded from UTF-8 can hold one."""
    return unsayable(document) if _may_hold_lone_surrogate(text) else None


def without_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate as U+FFFD, the replacement character, as a decoder
    writes a byte that is no character: an agent's words cut inside an emoji stay words."""
    return text if text.isascii() else SURROGATES.sub("\ufffd", text)


def lone_surrogates_replaced(value: Any) -> Any:
    """`value` (decoded JSON) with each lone surrogate of its texts and keys as U+FFFD."""
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, dict):
        return {
            lone_surrogates_replaced(key): lone_surrogates_replaced(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [lone_surrogates_replaced(item) for item in value]
    return value


def unsayable(value: object, *, path: str = "") -> Unsayable | None:
    """The first place in a case that JSON cannot say: a date, a set, binary data, NaN,
    Infinity, a key that is not text, or text with a lone surrogate escape. None when there is
    none."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                shown = _key_shown(key)
                return Unsayable(
                    path,
                    f"the key {shown} (not text)",
                    f"quote the key ('{shown}') to make it text",
                )
            escape = lone_surrogate(key)
            if escape is not None:
                return Unsayable(path, f"a key with {_half(escape)}", _WRITE_THE_CHARACTER)
            found = unsayable(item, path=f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = unsayable(item, path=f"{path}.{index}")
            if found is not None:
                return found
        return None
    if isinstance(value, str):
        escape = lone_surrogate(value)
        if escape is None:
            return None
        return Unsayable(path, _half(escape), _WRITE_THE_CHARACTER)
    if isinstance(value, float) and not math.isfinite(value):
        infinity = "-Infinity" if value < 0 else "Infinity"
        return Unsayable(path, "NaN" if math.isnan(value) else infinity, _QUOTE_IT)
    if value is None or isinstance(value, int | float):
        return None
    if type(value) is TinyNumber:
        return Unsayable(path, f"the number {value.text}", TOO_SMALL_FIX, why=TOO_SMALL)
    if type(value) is HugeNumber:
        return Unsayable(path, f"the number {value.text}", TOO_LARGE_FIX, why=too_large(value.text))
    if type(value) is tuple:  # YAML's !!omap and !!pairs build a list of them
        return Unsayable(path, "pairs (a !!omap or !!pairs tag)", "write a mapping without the tag")
    kinds = {"date": "a date", "datetime": "a date", "set": "a set", "bytes": "binary data"}
    return Unsayable(path, kinds.get(type(value).__name__, f"a {type(value).__name__}"), _QUOTE_IT)


def _key_shown(key: object) -> str:
    """A key that is not text as YAML (where such keys come from) writes it: `true`, `null`."""
    if isinstance(key, bool) or key is None:
        return "null" if key is None else str(key).lower()
    return str(key)


def _half(escape: str) -> str:
    return f"the escape {escape} (half of a UTF-16 surrogate pair, alone)"


def longest_whole_number() -> int:
    """How many digits Python turns into a whole number (int() refuses longer text, a guard
    against quadratic time); 0 when this interpreter sets no limit."""
    return sys.get_int_max_str_digits()


def longer_than_written(value: int) -> bool:
    """Whether the whole number `value` has more decimal digits than Python writes (str() and
    json refuse it, as int() refuses such text). A YAML 1.1 hexadecimal, octal, binary or
    base-60 number reads at any length: only writing it, later, would fail."""
    limit = longest_whole_number()
    if not limit:
        return False
    magnitude = abs(value)
    # 10**limit takes more than 3 * limit bits: a number of fewer bits needs no power.
    return magnitude.bit_length() > 3 * limit and magnitude >= _power_of_ten(limit)


@functools.cache
def _power_of_ten(exponent: int) -> int:
    return int(10**exponent)


def too_long_number_line(text: str) -> int | None:
    """The 1-based line of the first whole number in `text` longer than Python reads, or None."""
    limit = longest_whole_number()
    if not limit:
        return None
    found = re.search(rf"\d{{{limit + 1},}}", text)
    return text.count("\n", 0, found.start()) + 1 if found else None


def too_long_json_number_place(text: str) -> tuple[int, int] | None:
    """The 1-based line and column of the first whole number of the JSON `text` longer than
    Python reads, or None. Strings are stepped over (digits inside one are text), and so is a
    number with a fraction or an exponent (a float, which Python reads at any length). Linear:
    a digit run is taken whole (possessive) from its first digit only."""
    limit = longest_whole_number()
    if not limit:
        return None
    token = re.compile(
        rf'"(?:[^"\\]|\\.)*+"|(?<![\d.eE])(?<![eE][+-])(\d{{{limit + 1},}}+)(?![.eE])'
    )
    for found in token.finditer(text):
        if found.group(1) is None:
            continue
        start = found.start(1)
        line_start = text.rfind("\n", 0, start) + 1
        return text.count("\n", 0, start) + 1, start - line_start + 1
    return None


def too_long_number(*, line: int | None, column: int | None = None) -> str:
    """What is wrong with such a number, for a message that names the file."""
    where = f"line {line}: " if line is not None else ""
    if line is not None and column is not None:
        where = f"line {line}, column {column}: "
    limit = longest_whole_number()
    return f"{where}a whole number longer than {limit:,} digits, which eb does not read"


class RepeatedKey(ValueError):
    """A JSON object that names a key twice. json keeps the last value silently, so which of
    the two its author meant is unknown: eb refuses it, as YAML does (an artifact, a dataset
    row)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A json `object_pairs_hook`: the object, or RepeatedKey for its first repeated key. The
    common case costs one dict and a length test (about 0.2 µs per object)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKey(key)
            seen.add(key)
    return value
