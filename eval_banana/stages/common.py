"""What every stage document shares: the envelope fields."""

from __future__ import annotations

from datetime import UTC, datetime

from eval_banana.version import tool_version

SCHEMA_BASE = "https://eval-banana.dev/schemas/"


def envelope(*, stage: str, run_id: str, inputs: dict[str, str]) -> dict[str, object]:
    """The envelope fields shared by every stage document, for a stage document being built now."""
    schema = "validate" if stage == "validate" else stage
    return {
        "$schema": f"{SCHEMA_BASE}stages/{schema}.schema.json",
        "schema_version": 1,
        "stage": stage,
        "tool_version": tool_version(),
        "run_id": run_id,
        "created_at": created_now(),
        "inputs": inputs,
    }


def created_now() -> str:
    """A stage document's `created_at`: now, in UTC, with microseconds and `Z`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
