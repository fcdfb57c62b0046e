"""What JSON can say: a case's values go into plan.json and a script's context file, which
programs in any language read, so they must be JSON, not merely what Python's json writes."""

from __future__ import annotations

import math


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
