"""What JSON can say: a case's values go into plan.json and a script's context file, which
programs in any language read, so they must be JSON, not merely what Python's json writes."""

from __future__ import annotations

import math
import re
import sys


def unsayable(value: object, *, path: str = "") -> tuple[str, str] | None:
    """The first place in a case that JSON cannot say, as (field path, what is there): a date,
    a set, binary data, NaN, Infinity or a key that is not text. None when there is none."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return path, f"the key {key!r} (not text)"
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
    if isinstance(value, float) and not math.isfinite(value):
        return path, "NaN" if math.isnan(value) else "Infinity"
    if value is None or isinstance(value, str | int | float):
        return None
    kinds = {"date": "a date", "datetime": "a date", "set": "a set", "bytes": "binary data"}
    return path, kinds.get(type(value).__name__, f"a {type(value).__name__}")


def longest_whole_number() -> int:
    """How many digits Python turns into a whole number (int() refuses longer text, a guard
    against quadratic time); 0 when this interpreter sets no limit."""
    return sys.get_int_max_str_digits()


def too_long_number_line(text: str) -> int | None:
    """The 1-based line of the first whole number in `text` longer than Python reads, or None."""
    limit = longest_whole_number()
    if not limit:
        return None
    found = re.search(rf"\d{{{limit + 1},}}", text)
    return text.count("\n", 0, found.start()) + 1 if found else None


def too_long_number(*, line: int | None) -> str:
    """What is wrong with such a number, for a message that names the file."""
    where = f"line {line}: " if line is not None else ""
    limit = longest_whole_number()
    return f"{where}a whole number longer than {limit:,} digits, which eb does not read"
