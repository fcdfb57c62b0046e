"""The times a run record holds: ISO-8601, read as UTC when they name no zone.

eb writes them in one form, UTC with microseconds and `+00:00`: a record's file name is made of
its start time's digits, so records sort by name, by start time and in time alike only when
every record's times are in that form (`eb history import` puts other runners' in it).
"""

from __future__ import annotations

from datetime import UTC

from eval_banana.core.moments import parse_moment

# What a record's time looks like, for the messages that refuse one.
EXAMPLE = "2026-03-01T12:00:00+00:00"


def utc_text(text: str) -> str:
    """The ISO time `text` in eb's form (UTC, microseconds, `+00:00`); ValueError when it is
    none, or when it lies outside years 1 to 9999 once made UTC (`0001-01-01T00:00:00+05:00`
    is a valid ISO time five hours before the first moment a datetime holds)."""
    try:
        return parse_moment(text).astimezone(UTC).isoformat(timespec="microseconds")
    except OverflowError:
        raise ValueError(f"{text!r} is out of range once made UTC") from None


def time_problem(*, field: str, text: str) -> str | None:
    """Why the record time `text` (its field `field`) cannot be read, and the fix; None when
    it can. Every reader orders and windows by these times, and import stores them in UTC."""
    try:
        parse_moment(text)
    except ValueError:
        return f"its {field} {text!r} is not an ISO-8601 time; write it as one, such as {EXAMPLE}"
    try:
        utc_text(text)
    except ValueError:
        return (
            f"its {field} {text!r} lies outside years 1 to 9999 once made UTC; write a time "
            f"in those years, such as {EXAMPLE}"
        )
    return None
