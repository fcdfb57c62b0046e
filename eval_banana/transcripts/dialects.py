"""One parser per output dialect: the agent's lines in, transcript events out (into a Sink).

What each reads (docs/agents.md#transcripts):
- claude (stream-json): assistant text and tool_use blocks, the user turn's tool_result blocks,
  the final `result` event (the answer, or an error) and its usage;
- gemini (stream-json): the assistant's message deltas joined, tool_use / tool_result events,
  error events, the `result` event's error and stats;
- openhands (--json): MessageEvent, ActionEvent (the finish action is the answer),
  ObservationEvent, ConversationErrorEvent / AgentErrorEvent; its plain lines are not events;
- codex: its stdout is the answer, read as text; its stderr is read by codexdialect.Codex;
- text (grok, opencode, pi, custom agents): stdout's text is the answer; a line that is a
  claude event (an assistant or user turn with its message, a result or a system event) is read
  as claude's, any other line (JSON of other shapes included) as text;
- opencode: its stderr is read beside text by opencodedialect.OpenCode.
"""

from __future__ import annotations

import json
from typing import Any

from eval_banana.harness.usage import reported_cost, reported_count
from eval_banana.transcripts.dialectbase import BoundedText, Parser
from eval_banana.transcripts.jsonline import load, texts
from eval_banana.transcripts.reading import Line
from eval_banana.transcripts.sink import Sink


def is_claude_event(event: dict[str, Any]) -> bool:
    """Whether `Claude.event` reads this object: a message turn, the result or a system event
    (other JSON a text agent prints, such as its own `{"type": "progress"}` lines, is text)."""
    kind = event.get("type")
    if kind in ("assistant", "user"):
        return isinstance(event.get("message"), dict)
    return kind in ("result", "system")


class Claude(Parser):
    def feed(self, line: Line) -> None:
        event = self.load(line)
        if event is not None:
            self.event(event)

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        message = event.get("message")
        if kind in ("assistant", "user") and isinstance(message, dict):
            self._message(role=str(kind), content=message.get("content"))
        elif kind == "result":
            self._result(event)
        elif kind == "system" and event.get("subtype") not in ("init", None):
            self.sink.add("message", role="system", text=json.dumps(event, allow_nan=True))

    def _message(self, *, role: str, content: object) -> None:
        if isinstance(content, str):
            self.sink.add("message", role=role, text=content)
            return
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                text = block["text"]
                self.sink.add("message", role=role, text=text, cut=self.left_out(text))
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                text = block["thinking"]
                self.sink.add("message", role="thinking", text=text, cut=self.left_out(text))
            elif kind == "tool_use":
                self.call(
                    name=block.get("name"), call_id=block.get("id"), arguments=block.get("input")
                )
            elif kind == "tool_result":
                text = texts(block.get("content"))
                self.result(call_id=block.get("tool_use_id"), text=text, cut=self.left_out(text))

    def _result(self, event: dict[str, Any]) -> None:
        text = event.get("result")
        if event.get("is_error") is True or event.get("subtype") not in ("success", None):
            parts = [text] if isinstance(text, str) and text else []
            errors = event.get("errors")
            if isinstance(errors, list):
                parts += [item for item in errors if isinstance(item, str)]
            status = event.get("api_error_status")
            if type(status) is int:
                parts.append(f"(HTTP {status})")
            subtype = event.get("subtype")
            self.sink.add("error", text=" ".join(parts) or f"result: {subtype}")
        elif isinstance(text, str):
            self.sink.add("answer", text=text, cut=self.left_out(text))
        usage = event.get("usage")
        found = (
            _numbers(
                usage,
                (
                    "input_tokens",
                    "output_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                ),
            )
            if isinstance(usage, dict)
            else {}
        )
        # Only a cost eb can read, with the tokens or without them: NaN or an infinity is no
        # JSON, and the line would be none either (a negative amount is no cost);
        # details.usage reads it the same way.
        cost = reported_cost(event.get("total_cost_usd"))
        if cost is not None:
            found["cost_usd"] = cost
        if found:
            self.sink.add("usage", usage=found)


def _add_message(*, sink: Sink, text: BoundedText, last: bool, strip: bool = False) -> None:
    """The assistant's message: a long one keeps its end if it may be the answer (`last`), else
    its start; `strip`: a blank text is no message and its final line break is dropped."""
    if last:
        kept, cut, open_start = text.whole()
        open_end = False
    else:
        kept, cut, open_end = text.start()
        open_start = False
    if strip and not kept.strip():
        return
    sink.add(
        "message",
        role="assistant",
        text=kept.rstrip("\n") if strip else kept,
        cut=cut,
        open_start=open_start,
        open_end=open_end,
    )


def _numbers(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, int | float]:
    """The token counts of `keys` that read as counts (whole numbers, 0 or more)."""
    return {key: source[key] for key in keys if reported_count(source.get(key)) is not None}


class Gemini(Parser):
    def __init__(self, *, sink: Sink) -> None:
        super().__init__(sink=sink)
        self.answer: BoundedText | None = None

    def _flush(self, *, last: bool = True) -> None:
        """The message so far; `last`: it may be the answer, so a long one keeps its end."""
        if self.answer is not None:
            _add_message(sink=self.sink, text=self.answer, last=last)
            self.answer = None

    def feed(self, line: Line) -> None:
        event = self.load(line)
        if event is None:
            return
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            content = event.get("content")
            if isinstance(content, str):
                if self.answer is None:
                    self.answer = BoundedText(limit=self.sink.keep_chars)
                self.answer.add(content)
                self.answer.total += self.left_out(content)
            return
        self._flush()
        if kind == "message" and isinstance(event.get("content"), str):
            self.sink.add("message", role=str(event.get("role") or "user"), text=event["content"])
        elif kind == "tool_use":
            self.call(
                name=event.get("tool_name"),
                call_id=event.get("tool_id"),
                arguments=event.get("parameters"),
            )
        elif kind == "tool_result":
            output = event.get("output")
            error = event.get("error")
            if not isinstance(output, str) and isinstance(error, dict):
                output = error.get("message")
            self.result(
                call_id=event.get("tool_id"), text=output if isinstance(output, str) else None
            )
        elif kind == "error":
            self.sink.add(
                "error", text=str(event.get("message") or json.dumps(event, allow_nan=True))
            )
        elif kind == "result":
            self._result(event)

    def _result(self, event: dict[str, Any]) -> None:
        error = event.get("error")
        if event.get("status") != "success":
            message = error.get("message") if isinstance(error, dict) else None
            self.sink.add("error", text=str(message or f"result status {event.get('status')}"))
        stats = event.get("stats")
        if isinstance(stats, dict):
            found = _numbers(stats, ("input_tokens", "output_tokens", "total_tokens"))
            if found:
                self.sink.add("usage", usage=found)

    def finish(self) -> None:
        self._flush()

    def cut_off(self) -> None:
        self._flush(last=False)


_OPENHANDS_ERRORS = ("ConversationErrorEvent", "AgentErrorEvent")


class OpenHands(Parser):
    def feed(self, line: Line) -> None:
        if '"kind"' not in line.text:
            return
        event = self.load(line)
        if event is None:
            return
        kind = event.get("kind")
        if kind == "MessageEvent":
            llm = event.get("llm_message")
            text = texts(llm.get("content")) if isinstance(llm, dict) else None
            role = "assistant" if event.get("source") == "agent" else "user"
            if text is not None:
                self.sink.add("message", role=role, text=text, cut=self.left_out(text))
        elif kind == "ActionEvent":
            self._action(event)
        elif kind == "ObservationEvent":
            observation = event.get("observation")
            if isinstance(observation, dict) and observation.get("kind") != "FinishObservation":
                text = texts(observation.get("content"))
                self.result(
                    call_id=event.get("tool_call_id"),
                    tool=event.get("tool_name"),
                    text=text,
                    cut=self.left_out(text),
                )
        elif kind in _OPENHANDS_ERRORS:
            parts = [
                value
                for value in (event.get("code"), event.get("detail"), event.get("error"))
                if isinstance(value, str) and value
            ]
            self.sink.add("error", text=": ".join(parts) or str(kind))

    def _action(self, event: dict[str, Any]) -> None:
        thought = texts(event.get("thought"))
        if thought:
            self.sink.add("message", role="thinking", text=thought)
        action = event.get("action")
        if not isinstance(action, dict):
            return
        if event.get("tool_name") == "finish" or action.get("kind") == "FinishAction":
            message = action.get("message")
            text = message if isinstance(message, str) else ""
            self.sink.add("answer", text=text, cut=self.left_out(text))
            return
        arguments = {key: value for key, value in action.items() if key != "kind"}
        self.call(
            name=event.get("tool_name"), call_id=event.get("tool_call_id"), arguments=arguments
        )


class Text(Parser):
    """Plain text; claude's JSON event lines among it are read as claude's."""

    def __init__(self, *, sink: Sink) -> None:
        super().__init__(sink=sink)
        self.text: BoundedText | None = None
        self.claude = Claude(sink=sink)

    def feed(self, line: Line) -> None:
        if line.text.lstrip().startswith("{"):
            loaded = load(line)
            if loaded is not None and is_claude_event(loaded.event):
                self._flush()
                self.claude.take(loaded)
                self.claude.event(loaded.event)
                return
        if self.text is None:
            self.text = BoundedText(limit=self.sink.keep_chars)
        self.text.add_line(line)

    def _flush(self, *, last: bool = True) -> None:
        """The text so far; `last`: it may be the answer, so a long one keeps its end."""
        if self.text is not None:
            _add_message(sink=self.sink, text=self.text, last=last, strip=True)
            self.text = None

    def finish(self) -> None:
        self._flush()

    def cut_off(self) -> None:
        self._flush(last=False)


PARSERS: dict[str, type[Parser]] = {
    "claude": Claude,
    "gemini": Gemini,
    "openhands": OpenHands,
    "codex": Text,  # its stdout is the final message; its stderr goes through Codex
    "text": Text,
}
