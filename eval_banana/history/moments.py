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
    none."""
    return parse_moment(text).astimezone(UTC).isoformat(timespec="microseconds")
