"""Recorded moments read back: ISO 8601 times, as UTC when they name no zone (eb writes its
own with `+00:00`; records imported from other runners and older files may name none)."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_moment(text: str) -> datetime:
    """An ISO date or time as an aware datetime (UTC when no zone is given); ValueError else."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def moment_or_none(text: str) -> datetime | None:
    """`parse_moment`, or None for text that is no ISO time."""
    try:
        return parse_moment(text)
    except ValueError:
        return None
