"""Why an agent gave no verdict, in its own words: the error it reported, for `error_detail`.

The stream formats carry the error in their final event (Claude Code's `result` text and HTTP
status, Gemini's `result.error.message`); the other agents print it on stderr. Only a short
single line is kept, masked before it is cut (eval_banana.core.masking): the full streams stay in
`checks/<stem>.stdout.txt` and `.stderr.txt`.
"""

from __future__ import annotations

import re
from collections import deque
from pathlib import Path
from typing import Any

from eval_banana.core.masking import Masker, cut

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# An argument parser's or the program's own error line, e.g. `error: unknown option '--x'`,
# `Unknown arguments: x`, `Error: ...`; else any line that reads like a failure.
_ERROR_LINE = re.compile(
    r"(^|\W)error\s*[:!]|unknown (option|argument)|unexpected argument|unrecognized argument",
    re.IGNORECASE,
)
# The first line of an argument parser's usage text, which some CLIs print alone on a bad flag.
_USAGE_LINE = re.compile(r"^usage:|^\S+( \S+)? \[[a-z.]+\]", re.IGNORECASE)
_ERRORISH = re.compile(
    r"\b(error|failed|failure|unauthorized|denied|invalid|unknown)\b", re.IGNORECASE
)
_LIMIT = 300
_TAIL_LINES = 80


def _short(text: str, *, masker: Masker) -> str:
    line = " ".join(_ANSI.sub("", text).split())
    kept, over = cut(line, masker=masker, limit=_LIMIT)
    return kept if not over else kept[:-1] + "…"


def _from_error_event(*, event: dict[str, Any] | None, masker: Masker) -> str | None:
    """OpenHands' `ConversationErrorEvent` (`code`, `detail`) or `AgentErrorEvent` (`error`)."""
    if event is None:
        return None
    parts = [
        value
        for value in (event.get("code"), event.get("detail"), event.get("error"))
        if isinstance(value, str) and value.strip()
    ]
    return _short(": ".join(parts), masker=masker) if parts else None


def _from_event(*, dialect: str, event: dict[str, Any] | None, masker: Masker) -> str | None:
    if event is None:
        return None
    if dialect == "gemini":
        error = event.get("error")
        if event.get("status") != "success" and isinstance(error, dict):
            message = error.get("message")
            return (
                _short(message, masker=masker)
                if isinstance(message, str) and message.strip()
                else None
            )
        return None
    if event.get("is_error") is not True:
        return None
    parts: list[str] = []
    result = event.get("result")
    if isinstance(result, str) and result.strip():
        parts.append(result)
    errors = event.get("errors")
    if isinstance(errors, list):
        parts.extend(item for item in errors if isinstance(item, str) and item.strip())
    status = event.get("api_error_status")
    if type(status) is int:
        parts.append(f"(HTTP {status})")
    return _short(" ".join(parts), masker=masker) if parts else None


def _with_object(*, lines: list[str], index: int) -> str:
    """The line at `index`, with the object it opens (`Error: {` ... `}`) joined to it."""
    text = lines[index]
    if not text.endswith(("{", "[")):
        return text
    for following in lines[index + 1 :]:
        text += " " + following
        if following.startswith(("}", "]")) or len(text) > _LIMIT:
            break
    return text


def _from_stream(*, path: Path | None, masker: Masker) -> str | None:
    """The last error line of a stream, else a usage text's first line, else the last line that
    reads like a failure, else its last non-empty line."""
    if path is None:
        return None
    tail: deque[str] = deque(maxlen=_TAIL_LINES)
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            text = _ANSI.sub("", line).strip()
            if text:
                tail.append(text)
    lines = list(tail)
    # Stack frames and closing brackets of dumped objects say nothing about the cause.
    candidates = [
        index for index, text in enumerate(lines) if not text.startswith(("at ", "}", "]", ")"))
    ]
    for index in reversed(candidates):
        if _ERROR_LINE.search(lines[index]):
            return _short(_with_object(lines=lines, index=index), masker=masker)
    usage = next((lines[index] for index in candidates if _USAGE_LINE.search(lines[index])), None)
    if usage is not None:
        return _short(
            f"it printed its usage text ({usage}): it did not accept its arguments", masker=masker
        )
    for index in reversed(candidates):
        if _ERRORISH.search(lines[index]):
            return _short(_with_object(lines=lines, index=index), masker=masker)
    return _short(lines[candidates[-1]], masker=masker) if candidates else None


def agent_error(
    *,
    dialect: str,
    event: dict[str, Any] | None,
    stderr_path: Path | None,
    exited_nonzero: bool,
    error_event: dict[str, Any] | None = None,
    masker: Masker,
    stdout_path: Path | None = None,
) -> str | None:
    """The agent's own account of its failure, one short line (masked, then cut), or None.

    An error event, or a final event that reports an error, is believed whenever there is one.
    stderr is read only when the agent also exited non-zero: a successful agent's stderr holds
    warnings, not causes. An agent that failed with nothing on stderr may have said why on
    stdout (OpenHands does).
    """
    found = _from_error_event(event=error_event, masker=masker) or _from_event(
        dialect=dialect, event=event, masker=masker
    )
    if found is None and exited_nonzero:
        found = _from_stream(path=stderr_path, masker=masker) or _from_stream(
            path=stdout_path, masker=masker
        )
    return found
