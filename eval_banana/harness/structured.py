"""Structured verdicts: the verdict's JSON Schema handed to an agent CLI that can hold its
answer to it (Claude Code's `--json-schema`, Codex's `--output-schema <file>`).

A template asks for it with a placeholder in its `command` or `shared_flags`:
`{verdict_schema_path}` becomes the path of a file holding the schema (written once per run,
in the run folder: never in the project, so judge isolation sees nothing), `{verdict_schema}`
the schema itself as one line of JSON. The CLI's answer is still read by our own strict reader:
a CLI may ignore the option, and `details.structured_output` says whether it held.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eval_banana.models.config import AgentTemplate

SCHEMA_PATH_PLACEHOLDER = "{verdict_schema_path}"
SCHEMA_PLACEHOLDER = "{verdict_schema}"
# The run folder's copy of the schema, for `{verdict_schema_path}`.
SCHEMA_FILE_NAME = "verdict.schema.json"
# What OpenAI's strict structured outputs require too: every property required, no others.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "enum": [0, 1]},
        "reason": {"type": "string"},
    },
    "required": ["score", "reason"],
    "additionalProperties": False,
}
# An answer longer than this is not one small JSON object: it is not read whole.
_ANSWER_LIMIT = 64 * 1024


def schema_text() -> str:
    """The schema as one line of JSON (the same bytes every run)."""
    return json.dumps(VERDICT_SCHEMA, separators=(",", ":"), sort_keys=True, allow_nan=False)


def requests_schema(*, template: AgentTemplate) -> bool:
    """Whether the template passes the verdict schema to its CLI."""
    return any(
        SCHEMA_PATH_PLACEHOLDER in token or SCHEMA_PLACEHOLDER in token
        for token in (*template.command, *template.shared_flags)
    )


def fill_schema(*, token: str, path: Path | None) -> str:
    """One argv token with the placeholders filled (left as written when `path` is None, as
    the verdict cache's key holds them)."""
    if path is None:
        return token
    return token.replace(SCHEMA_PATH_PLACEHOLDER, str(path)).replace(
        SCHEMA_PLACEHOLDER, schema_text()
    )


def unfill_schema(*, token: str, path: Path | None) -> str:
    """The token as recorded in results: the run's path and the schema back as placeholders."""
    if path is None:
        return token
    return token.replace(str(path), SCHEMA_PATH_PLACEHOLDER).replace(
        schema_text(), SCHEMA_PLACEHOLDER
    )


def _schema_shaped(value: object) -> bool:
    """Exactly the schema's object: `score` 0 or 1 (an integer), `reason` a string, no more."""
    if not isinstance(value, dict) or set(value) != {"score", "reason"}:
        return False
    score = value["score"]
    return type(score) is int and score in (0, 1) and isinstance(value["reason"], str)


def _whole_answer(path: Path | None) -> object:
    """stdout as one JSON value, or None when it is not (or too long to be one verdict)."""
    if path is None:
        return None
    try:
        if path.stat().st_size > _ANSWER_LIMIT:
            return None
        return json.loads(path.read_text(encoding="utf-8", errors="replace").strip())
    except (OSError, ValueError, RecursionError):
        return None


def honoured(
    *, dialect: str, result_event: dict[str, Any] | None, stdout_path: Path | None
) -> bool:
    """Whether the answer came back in the schema's shape.

    Claude Code puts the constrained answer in its result event's `structured_output`; for
    the other dialects the final answer (all of stdout for codex and text) must be exactly one
    object of the schema.
    """
    if dialect == "claude":
        return result_event is not None and _schema_shaped(result_event.get("structured_output"))
    return _schema_shaped(_whole_answer(stdout_path))
