"""Tokens a judge reported about itself (D-5), read per dialect as agents.md documents them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# codex prints `tokens used` and then the blended total, e.g. `12,480` (older builds: same line).
_CODEX_LABEL = re.compile(r"^tokens used\b\W*(.*)$", re.IGNORECASE)


def _int(value: object) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _claude(event: dict[str, Any]) -> dict[str, Any] | None:
    usage = event.get("usage")
    if not isinstance(usage, dict):
        return None
    inputs, outputs = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
    if inputs is None or outputs is None:
        return None
    return {"input_tokens": inputs, "output_tokens": outputs, "total_tokens": inputs + outputs}


def _gemini(event: dict[str, Any]) -> dict[str, Any] | None:
    stats = event.get("stats")
    if not isinstance(stats, dict):
        return None
    inputs, outputs = _int(stats.get("input_tokens")), _int(stats.get("output_tokens"))
    if inputs is not None and outputs is not None:
        return {"input_tokens": inputs, "output_tokens": outputs, "total_tokens": inputs + outputs}
    total = _int(stats.get("total_tokens"))
    return None if total is None else {"total_tokens": total}


def _codex(stderr_path: Path | None) -> dict[str, Any] | None:
    """The last `tokens used` total on stderr; read line by line, the line after the label."""
    if stderr_path is None:
        return None
    total: int | None = None
    pending = False
    with stderr_path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            text = line.strip()
            if pending and text:
                pending = False
                digits = re.sub(r"[,_.\s]", "", text)
                if digits.isdigit():
                    total = int(digits)
                    continue
            match = _CODEX_LABEL.match(text)
            if match is None:
                continue
            digits = re.sub(r"[,_.\s]", "", match.group(1))
            if digits.isdigit():
                total = int(digits)
            else:
                pending = True  # the number is on the next non-empty line
    return None if total is None else {"total_tokens": total}


def read_usage(
    *, dialect: str, usage_event: dict[str, Any] | None, stderr_path: Path | None
) -> dict[str, Any] | None:
    """`details.usage`: what the agent reported, with the dialect it was read from, or None."""
    found: dict[str, Any] | None = None
    if dialect == "codex":
        found = _codex(stderr_path)
    elif dialect == "gemini" and usage_event is not None:
        found = _gemini(usage_event)
    elif dialect in ("claude", "text") and usage_event is not None:
        # A text-dialect agent may print a claude-compatible result event (e.g. grok's
        # streaming-messages-json); its usage is read the same way.
        found = _claude(usage_event)
    if found is None:
        return None
    return {"dialect": dialect, **found}


def usage_tokens(usage: dict[str, Any] | None) -> int | None:
    """The number the token fuse counts: input plus output, or the only total reported."""
    if usage is None:
        return None
    total = usage.get("total_tokens")
    return total if isinstance(total, int) else None
