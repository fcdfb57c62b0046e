"""Read a judge's verdict from its stdout file, one parser per output dialect.

Every dialect reads the file in bounded memory, whatever the agent printed. `claude`, `text` and
`codex` read it backwards from the end, since only the newest result event counts, and scan it
forwards in windows (streamscan.StreamScanner) only when no result event was printed at all;
`gemini` and `openhands` read it line by line and keep only the assistant's final answer.

An event line longer than MAX_EVENT_LINE is never held: only the words it holds are noted. One
that may be the final result or answer leaves no verdict (an earlier one never stands in for it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.harness.eventlines import MAX_EVENT_LINE, OverlongLine, lines, lines_from_end
from eval_banana.harness.scan import scan_text
from eval_banana.harness.streamscan import StreamScanner, scan_file
from eval_banana.harness.verdictobjects import ScanResult, Verdict

__all__ = ["Extraction", "extract_verdict", "extract_from_text"]


class Extraction(NamedTuple):
    """What the judge said: a verdict, or why there is none; plus the event holding usage."""

    verdict: Verdict | None
    problem: str | None
    usage_event: dict[str, Any] | None = None
    # An event in which the agent reported its own failure (openhands' error events).
    error_event: dict[str, Any] | None = None
    # The answer's last verdict was malformed (verdictobjects): the judge answered, unreadably.
    malformed: bool = False


def _shown(value: object) -> str:
    """A field of the agent's event as it wrote it, for a message."""
    return json.dumps(value, allow_nan=True)


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
    """The last line that is a JSON object with `"type": "result"`."""
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
    """Step A, stricter than eval-banana: only the newest result event counts; it must succeed."""
    if event.get("subtype") != "success" or event.get("is_error") is not False:
        return Extraction(
            verdict=None,
            problem=(
                "the agent's final result event is not a success (subtype "
                f"{_shown(event.get('subtype'))}, is_error {_shown(event.get('is_error'))})"
            ),
            usage_event=event,
        )
    result = event.get("result")
    if not isinstance(result, str):
        return Extraction(
            verdict=None, problem="the final result event has no result text", usage_event=event
        )
    scanned = scan_text(result)
    structured = event.get("structured_output")
    if scanned.verdict is None and not scanned.malformed and isinstance(structured, dict):
        # --json-schema: the constrained answer, when the result text does not hold one (a
        # malformed verdict there is the judge's answer too: nothing stands in for it).
        scanned = scan_text(json.dumps(structured, allow_nan=True))
    problem = None if scanned.problem is None else f"in the final result text, {scanned.problem}"
    return Extraction(
        verdict=scanned.verdict, problem=problem, usage_event=event, malformed=scanned.malformed
    )


def extract_from_text(text: str) -> Extraction:
    """Two steps, as in eval-banana: the newest result event if there is one, else Step B."""
    event = _newest_result_event(text)
    if event is not None:
        return _from_result_event(event)
    scanned: ScanResult = scan_text(text)
    return Extraction(verdict=scanned.verdict, problem=scanned.problem, malformed=scanned.malformed)


_RESULT_KEY = '"result"'


class _NewestResult(NamedTuple):
    event: dict[str, Any] | None  # the newest result event that could be read
    unread_after: bool  # a line after it, too long to read, may be a newer result event


def _newest_result_event_in_file(path: Path) -> _NewestResult:
    """The newest result event of a file: read from the end, so a result event on the last line (the
    normal case) is found without reading megabytes of transcript before it."""
    unread_after = False
    for line in lines_from_end(path=path, max_line=MAX_EVENT_LINE, words=(_RESULT_KEY,)):
        if isinstance(line, OverlongLine):
            unread_after = unread_after or bool(line.holds)
            continue
        if b'"result"' in line:
            event = _loads_object(line.decode("utf-8", errors="replace"))
            if event is not None and event.get("type") == "result":
                return _NewestResult(event=event, unread_after=unread_after)
    return _NewestResult(event=None, unread_after=unread_after)


def _too_long(*, holding: str, final: str) -> str:
    """Why no verdict is given when a line too long to read may be the final event."""
    return (
        f"a line holding {holding} is longer than the {MAX_EVENT_LINE:,} characters an event "
        f"line is read whole from: it may be the {final}, and no earlier one stands in for it; "
        "ask the agent for a shorter final answer, with the verdict as a small JSON object at "
        "its end"
    )


def _claude(path: Path) -> Extraction:
    """The newest result event; Step B over the whole stdout only if there is none."""
    newest = _newest_result_event_in_file(path)
    if newest.event is not None and newest.unread_after:
        # A result event may follow the one read: the older one is no verdict.
        return Extraction(
            verdict=None, problem=_too_long(holding=_RESULT_KEY, final="final result event")
        )
    if newest.event is not None:
        return _from_result_event(newest.event)
    # No result event at all (the agent stopped early): Step B over stdout.
    scanned = scan_file(path)
    return Extraction(verdict=scanned.verdict, problem=scanned.problem, malformed=scanned.malformed)


# Words that tell a gemini line too long to read may be the assistant's answer or the result.
_GEMINI_WORDS = ('"assistant"', _RESULT_KEY)


def _ends_a_message(line: str | OverlongLine) -> bool:
    """Whether a gemini line that is no assistant delta closes the assistant's message: any
    event (a tool call, its result, an error, the result) and any line too long to read, as
    the transcript splits the answer into one message per turn at the same lines."""
    return isinstance(line, OverlongLine) or line.lstrip().startswith("{")


class _GeminiEnd:
    """Where a gemini stream ended: the assistant's last message (scanned as it streams), its
    result event, and whether a line too long to read may have been either."""

    def __init__(self) -> None:
        # The answer can be long: its deltas go to a streaming scan, not into one string. A new
        # message starts a new scan, so a verdict in an earlier turn is never read.
        self.answer = StreamScanner()
        self.message_open = False
        self.answer_unread = False
        self.result: dict[str, Any] | None = None
        self.result_unread = False

    def see(self, line: str | OverlongLine) -> None:
        if isinstance(line, OverlongLine):
            self.answer_unread = self.answer_unread or '"assistant"' in line.holds
            self.result_unread = self.result_unread or _RESULT_KEY in line.holds
            self.message_open = False
            return
        event = _loads_object(line) if '"assistant"' in line or '"result"' in line else None
        kind = None if event is None else event.get("type")
        if event is not None and kind == "message" and event.get("role") == "assistant":
            content = event.get("content")
            if isinstance(content, str):
                if not self.message_open:
                    self.answer, self.message_open = StreamScanner(), True
                    self.answer_unread = False
                self.answer.feed(content)
            return
        if kind == "result":
            self.result, self.result_unread = event, False
        if _ends_a_message(line):
            self.message_open = False


def _gemini(path: Path) -> Extraction:
    """gemini: the verdict is read from the assistant's last message (its deltas since the last
    other event) only; an unsuccessful `result` is no verdict."""
    end = _GeminiEnd()
    for line in lines(path, words=_GEMINI_WORDS):
        end.see(line)
    result = end.result
    if end.result_unread and result is not None:
        return Extraction(
            verdict=None,
            problem=_too_long(holding=_RESULT_KEY, final="final result event"),
        )
    if result is not None and result.get("status") != "success":
        error = result.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        return Extraction(
            verdict=None,
            problem=f"the agent's result event has status {_shown(result.get('status'))}"
            + (f": {message}" if isinstance(message, str) else ""),
            usage_event=result,
        )
    if end.answer_unread:
        return Extraction(
            verdict=None,
            problem=_too_long(holding='"assistant"', final="assistant's last message"),
            usage_event=result,
        )
    scanned = end.answer.finish()
    problem = scanned.problem
    if problem is not None:
        problem = f"in the assistant's last message, {problem}"
        if result is None:
            problem += " (and no result event was printed)"
    return Extraction(
        verdict=scanned.verdict, problem=problem, usage_event=result, malformed=scanned.malformed
    )


def _openhands_answer(event: dict[str, Any]) -> str | None:
    """The final answer an openhands event carries, if it is a finish action or agent message."""
    kind = event.get("kind")
    if _is_finish(event):
        message = event["action"].get("message")
        return message if isinstance(message, str) else None
    if kind == "MessageEvent" and event.get("source") == "agent":
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


# Words that tell an openhands line too long to read may be an answer (a message or a finish).
_OPENHANDS_ANSWER_WORDS = ('"MessageEvent"', '"FinishAction"', '"finish"')

# Events in which OpenHands reports a failure (it still exits 0 after an LLM error).
_OPENHANDS_ERRORS = ("ConversationErrorEvent", "AgentErrorEvent")


def _is_finish(event: dict[str, Any]) -> bool:
    action = event.get("action")
    return (
        event.get("kind") == "ActionEvent"
        and isinstance(action, dict)
        and (event.get("tool_name") == "finish" or action.get("kind") == "FinishAction")
    )


class _OpenHandsEnd:
    """Where an openhands conversation ended, read event by event: its last answer, and
    whether an error event or an action of the agent came after it."""

    def __init__(self) -> None:
        self.answer: str | None = None
        self.finished = False  # the answer is a finish action's message
        self.error: dict[str, Any] | None = None
        self.ended_in_error = False
        self.acted_after = False  # the agent went on working after its message
        self.unread = False  # the last answer may be a line too long to read

    def see_unread(self, line: OverlongLine) -> None:
        """A line too long to read: if it may be an answer, no earlier one counts."""
        if line.holds:
            self.answer, self.finished, self.unread = None, False, True
            self.ended_in_error = self.acted_after = False

    def see(self, event: dict[str, Any]) -> None:
        if event.get("kind") in _OPENHANDS_ERRORS:
            self.error, self.ended_in_error = event, True
            return
        found = _openhands_answer(event)
        if found is not None:
            self.answer, self.finished = found, _is_finish(event)
            self.ended_in_error = self.acted_after = self.unread = False
        elif event.get("kind") == "ActionEvent" and self.answer is not None:
            # A message followed by a tool call was not the final answer; a finish action is.
            self.acted_after = not self.finished

    def problem(self) -> str | None:
        """Why the conversation's end holds no answer to read, or None."""
        if self.unread:
            return _too_long(holding='"MessageEvent" or "finish"', final="agent's final message")
        if self.answer is None:
            return "no finish action or agent message event was printed"
        if self.ended_in_error:
            kind = self.error.get("kind") if self.error is not None else None
            # As a failed final result after a successful one: the conversation failed.
            return f"the conversation ended in an error event ({kind}) after the agent's answer"
        if self.acted_after:
            return "the agent acted after its last message and printed no finish action"
        return None


def _openhands(path: Path) -> Extraction:
    """openhands: JSON event lines among plain lines; the verdict is in the last finish message
    (or the agent's last message), and only when the conversation did not end in an error."""
    end = _OpenHandsEnd()
    for line in lines(path, words=_OPENHANDS_ANSWER_WORDS):
        if isinstance(line, OverlongLine):
            end.see_unread(line)
            continue
        if '"kind"' not in line:
            continue
        event = _loads_object(line)
        if event is not None:
            end.see(event)
    problem = end.problem()
    if problem is not None or end.answer is None:
        return Extraction(verdict=None, problem=problem, error_event=end.error)
    scanned = scan_text(end.answer)
    problem = (
        None if scanned.problem is None else f"in the agent's final message, {scanned.problem}"
    )
    return Extraction(
        verdict=scanned.verdict,
        problem=problem,
        error_event=end.error,
        malformed=scanned.malformed,
    )


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
    # text and codex (stdout is only the final message): the same two steps as claude's, the
    # newest result event first, then Step B streaming over the file in bounded memory.
    return _claude(stdout_path)
