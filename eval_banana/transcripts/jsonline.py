"""One output line as a JSON object, also when only its start was read."""

from __future__ import annotations

import json
from typing import Any

from eval_banana.transcripts.reading import Line
from eval_banana.transcripts.repair import repair

# How much of a line too long to hold is made whole again (enough for its kind, its tool and
# the start of its text, whatever transcript_max_chars is).
REPAIR_CHARS = 64 << 10


def load(line: Line) -> dict[str, Any] | None:
    """The object the line holds (its start made whole when the line was cut), else None."""
    text = line.text.strip()
    if not text.startswith("{"):
        return None
    if line.cut:
        return repair(text[:REPAIR_CHARS])
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return repair(text[:REPAIR_CHARS])
    return value if isinstance(value, dict) else None


def texts(value: object) -> str | None:
    """The text of a content value: a string, or the `text` parts of a list, joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        found = [
            part["text"]
            for part in value
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return "\n".join(found) if found else None
    return None
