"""Read a judge's verdict from its stdout file, one parser per output dialect (D-20, B-129..B-136).

`text` and `codex` read the file once into memory and scan it in place; `gemini` and
`openhands` stream it line by line and keep only the assistant's answer text; `claude` reads it
backwards from the end, since only the newest result event counts (and it reads the whole file
only when no result event was printed at all, for the contract's plain-text fallback).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.harness.scan import ScanResult, Verdict, scan_text

__all__ = ["Extraction", "Verdict", "extract_verdict", "extract_from_text"]


class Extraction(NamedTuple):
    """What the judge said: a verdict, or why there is none; plus the event holding usage."""

    verdict: Verdict | None
    problem: str | None
    usage_event: dict[str, Any] | None = None
    # An event in which the agent reported its own failure (openhands' error events).
    error_event: dict[str, Any] | None = None


def _loads_object(line: str) -> dict[str, Any] | None:
    stripped = line.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _newest_result_event(text: str) -> dict[str, Any] | None:
    """B-129/B-133: the last line that is a JSON object with `"type": "result"`."""
    newest: dict[str, Any] | None = None
    pos = 0
    while True:
        hit = text.find('"result"', pos)
        if hit < 0:
            return newest
        start = text.rfind("\n", 0, hit) + 1
        end = text.find("\n", hit)
        end = len(text) if end < 0 else end
        event = _loads_object(text[start:end])
        if event is not None and event.get("type") == "result":
            newest = event
        pos = end + 1


def _from_result_event(event: dict[str, Any]) -> Extraction:
    """Step A, improved by B-133: only the newest result event counts, and it must succeed."""
    if event.get("subtype") != "success" or event.get("is_error") is not False:
        return Extraction(
            verdict=None,
            problem=(
                "the agent's final result event is not a success (subtype "
                f"{json.dumps(event.get('subtype'))}, is_error {json.dumps(event.get('is_error'))})"
            ),
            usage_event=event,
        )
    result = event.get("result")
    if not isinstance(result, str):
        return Extraction(
            verdict=None, problem="the final result event has no result text", usage_event=event
        )
    scanned = scan_text(result)
    problem = None if scanned.problem is None else f"in the final result text, {scanned.problem}"
    return Extraction(verdict=scanned.verdict, problem=problem, usage_event=event)


def extract_from_text(text: str) -> Extraction:
    """The contract's two steps: the newest result event if there is one, else Step B."""
    event = _newest_result_event(text)
    if event is not None:
        return _from_result_event(event)
    scanned: ScanResult = scan_text(text)
    return Extraction(verdict=scanned.verdict, problem=scanned.problem)


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        yield from handle


_LINE_BREAK = re.compile(rb"[\r\n]")
_BLOCK = 1 << 16


def lines_from_end(*, path: Path, block: int = _BLOCK) -> Iterator[bytes]:
    """The file's lines, newest first, read backwards in blocks.

    Lines end at `\\n` or `\\r`, as text-mode reading splits them (JSON text holds neither raw).
    A line longer than a block is gathered piece by piece and joined once, so the work stays
    linear in the bytes read.
    """
    with path.open("rb") as handle:
        position = handle.seek(0, os.SEEK_END)
        pending: list[bytes] = []  # pieces of the line being gathered, newest piece first
        while position > 0:
            step = min(block, position)
            position -= step
            handle.seek(position)
            pieces = _LINE_BREAK.split(handle.read(step))
            if len(pieces) == 1:
                pending.append(pieces[0])
                continue
            yield pieces[-1] + b"".join(reversed(pending))
            yield from reversed(pieces[1:-1])
            pending = [pieces[0]]
        yield b"".join(reversed(pending))


def _newest_result_event_in_file(path: Path) -> dict[str, Any] | None:
    """B-129/B-133 over a file: read from the end, so a result event on the last line (the
    normal case) is found without reading megabytes of transcript before it."""
    for line in lines_from_end(path=path):
        if b'"result"' in line:
            event = _loads_object(line.decode("utf-8", errors="replace"))
            if event is not None and event.get("type") == "result":
                return event
    return None


def _claude(path: Path) -> Extraction:
    """The newest result event; Step B over the whole stdout only if there is none."""
    newest = _newest_result_event_in_file(path)
    if newest is not None:
        return _from_result_event(newest)
    # No result event at all (the agent stopped early): the contract's Step B over stdout.
    scanned = scan_text(path.read_text(encoding="utf-8", errors="replace"))
    return Extraction(verdict=scanned.verdict, problem=scanned.problem)


def _gemini(path: Path) -> Extraction:
    """D-24/B-136: join the assistant `message` deltas; an unsuccessful `result` is no verdict."""
    parts: list[str] = []
    result: dict[str, Any] | None = None
    for line in _lines(path):
        if '"assistant"' not in line and '"result"' not in line:
            continue
        event = _loads_object(line)
        if event is None:
            continue
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            content = event.get("content")
            if isinstance(content, str):
                parts.append(content)
        elif kind == "result":
            result = event
    if result is not None and result.get("status") != "success":
        error = result.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        return Extraction(
            verdict=None,
            problem=f"the agent's result event has status {json.dumps(result.get('status'))}"
            + (f": {message}" if isinstance(message, str) else ""),
            usage_event=result,
        )
    scanned = scan_text("".join(parts))
    problem = scanned.problem
    if problem is not None:
        problem = f"in the assistant's messages, {problem}"
        if result is None:
            problem += " (and no result event was printed)"
    return Extraction(verdict=scanned.verdict, problem=problem, usage_event=result)


def _openhands_answer(event: dict[str, Any]) -> str | None:
    """The final answer an openhands event carries, if it is a finish action or agent message."""
    kind = event.get("kind")
    if kind == "ActionEvent":
        action = event.get("action")
        if isinstance(action, dict) and (
            event.get("tool_name") == "finish" or action.get("kind") == "FinishAction"
        ):
            message = action.get("message")
            return message if isinstance(message, str) else None
    elif kind == "MessageEvent" and event.get("source") == "agent":
        llm_message = event.get("llm_message")
        content = llm_message.get("content") if isinstance(llm_message, dict) else None
        if isinstance(content, list):
            texts = [
                part["text"]
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            ]
            return "\n".join(texts)
    return None


# Events in which OpenHands reports a failure (it still exits 0 after an LLM error).
_OPENHANDS_ERRORS = ("ConversationErrorEvent", "AgentErrorEvent")


def _openhands(path: Path) -> Extraction:
    """D-25: JSON event lines among plain lines; the verdict is in the last finish message."""
    answer: str | None = None
    error: dict[str, Any] | None = None
    for line in _lines(path):
        if '"kind"' not in line:
            continue
        event = _loads_object(line)
        if event is None:
            continue
        if event.get("kind") in _OPENHANDS_ERRORS:
            error = event
            continue
        found = _openhands_answer(event)
        if found is not None:
            answer = found
    if answer is None:
        return Extraction(
            verdict=None,
            problem="no finish action or agent message event was printed",
            error_event=error,
        )
    scanned = scan_text(answer)
    problem = (
        None if scanned.problem is None else f"in the agent's final message, {scanned.problem}"
    )
    return Extraction(verdict=scanned.verdict, problem=problem, error_event=error)


def extract_verdict(*, dialect: str, stdout_path: Path | None) -> Extraction:
    """Read `stdout_path` (None: the agent printed nothing) the way `dialect` prescribes."""
    if stdout_path is None:
        return Extraction(verdict=None, problem="the agent printed nothing on stdout")
    if dialect == "gemini":
        return _gemini(stdout_path)
    if dialect == "openhands":
        return _openhands(stdout_path)
    if dialect == "claude":
        return _claude(stdout_path)
    # text (Step A, then Step B) and codex (stdout is only the final message, D-26).
    text = stdout_path.read_text(encoding="utf-8", errors="replace")
    return extract_from_text(text)
