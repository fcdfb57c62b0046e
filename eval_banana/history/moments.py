"""The times a run record holds: ISO-8601, read as UTC when they name no zone.

Every reader orders and windows records by them, so a record whose times are not ISO-8601 is
no record.
"""

from __future__ import annotations

from datetime import UTC, datetime

# What a record's time looks like, for the messages that refuse one.
EXAMPLE = "2026-03-01T12:00:00+00:00"


def parse_moment(text: str) -> datetime:
    """An ISO date or time as an aware datetime (UTC when no zone is given); ValueError else."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
