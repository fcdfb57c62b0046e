"""One parser per output dialect: the agent's lines in, transcript events out (into a Sink).

What each reads (docs/agents.md#transcripts):
- claude (stream-json): assistant text and tool_use blocks, the user turn's tool_result blocks,
  the final `result` event (the answer, or an error) and its usage;
- gemini (stream-json): the assistant's message deltas joined, tool_use / tool_result events,
  error events, the `result` event's error and stats;
- openhands (--json): MessageEvent, ActionEvent (the finish action is the answer),
  ObservationEvent, ConversationErrorEvent / AgentErrorEvent; its plain lines are not events;
- codex: its human transcript on stderr (user, thinking, codex, exec, tool, ERROR lines and the
  `tokens used` total; a command's output runs to codex's next item, its ERROR and tool lines
  included); its stdout is the answer;
- text (grok, opencode, pi, custom agents): stdout's text is the answer; a line that is a
  claude event (an assistant or user turn with its message, a result or a system event) is read
  as claude's, any other line (JSON of other shapes included) as text;
- opencode (`opencode run`, read beside text when a text agent's stderr opens with its
  `> agent · model` header): its stderr's tool lines (an icon, the tool's title such as
  `Read README.md` or `$ ls -a`), the output it prints under a block tool (shell, write, edit,
  todos) as the tool's result, a failed tool's `Error:` line as its result, and other `Error:`
  lines as errors; its stdout (every text part, the last one the verdict) stays the answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from eval_banana.core.digits import grouped_whole
from eval_banana.transcripts.jsonline import Loaded, Unread, load, texts
from eval_banana.transcripts.reading import Line
from eval_banana.transcripts.sink import Sink

# Tool names remembered per call id, so a result can name its tool; bounded like everything.
_MAX_CALLS = 4096


class _Text:
    """A text that arrives in pieces (deltas, plain lines), kept bounded: its start and end.

    Each is kept `limit` long (the sink's keep_chars) and masked by the sink before it is cut
    to max_chars; the edge where it was cut from the rest is marked open, so a secret cut in
    two there is left out (eval_banana.core.masking)."""

    def __init__(self, *, limit: int) -> None:
        self.limit = limit
        self.head = ""
        self.end = ""
        self.total = 0

    def add(self, piece: str) -> None:
        self.total += len(piece)
        if len(self.head) < self.limit:
            self.head += piece[: self.limit - len(self.head)]
        self.end = (self.end[-self.limit :] + piece[-self.limit :])[-self.limit :]

    def add_line(self, line: Line) -> None:
        """A plain line; of one too long to read, its start and its end, the middle counted."""
        if not line.cut:
            self.add(line.text + "\n")
            return
        self.add(line.text)
        self.total += max(0, line.size - len(line.text) - len(line.end))
        self.add(line.end + "\n")

    def whole(self) -> tuple[str, int, bool]:
        """The text if it was kept whole, else its end, with how much was left out and whether
        its start is open (cut from the rest)."""
        if self.total <= len(self.head):
            return self.head, 0, False
        return self.end, self.total - len(self.end), True

    def start(self) -> tuple[str, int, bool]:
        """Its start, with how much was left out and whether its end is open."""
        left_out = max(0, self.total - len(self.head))
        return self.head, left_out, left_out > 0


class Parser:
    """The base: a dialect turns each line into events (`feed`), then flushes (`finish`)."""

    def __init__(self, *, sink: Sink) -> None:
        self.sink = sink
        self.tools: dict[str, str] = {}
        # Of the line being read, if it was too long to hold: its string joined across the
        # middle that was never read.
        self.unread: Unread | None = None

    def load(self, line: Line) -> dict[str, Any] | None:
        """The object the line holds (jsonline.load), noting what of it was never read."""
        loaded = load(line)
        self.take(loaded)
        return None if loaded is None else loaded.event

    def take(self, loaded: Loaded | None) -> None:
        self.unread = None if loaded is None else loaded.unread

    def left_out(self, text: str | None) -> int:
        """How many characters of `text` were never read (it holds the joined string)."""
        unread = self.unread
        if unread is None or text is None or unread.text not in text:
            return 0
        return unread.chars

    def feed(self, line: Line) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        return None

    def cut_off(self) -> None:
        """The stream goes on, unread by this parser: flush what is open as text that is not the
        answer (the answer is in the stream's end), so it keeps its start."""
        self.finish()

    def call(self, *, name: object, call_id: object, arguments: object) -> None:
        tool = str(name) if name is not None else None
        key = str(call_id) if call_id is not None else None
        if key is not None and tool is not None and len(self.tools) < _MAX_CALLS:
            self.tools[key] = tool
        text, cut = self.sink.arguments(arguments if arguments is not None else {})
        self.sink.add("tool_call", tool=tool, call_id=key, arguments=text, cut=cut)

    def result(
        self,
        *,
        call_id: object,
        text: str | None,
        tool: object = None,
        cut: int = 0,
        open_end: bool = False,
    ) -> None:
        key = str(call_id) if call_id is not None else None
        name = str(tool) if tool is not None else self.tools.get(key or "")
        self.sink.add(
            "tool_result", text=text or "", tool=name, call_id=key, cut=cut, open_end=open_end
        )


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
            self.sink.add("message", role="system", text=json.dumps(event))

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
        if isinstance(usage, dict):
            found = _numbers(
                usage,
                (
                    "input_tokens",
                    "output_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                ),
            )
            cost = event.get("total_cost_usd")
            if isinstance(cost, int | float) and not isinstance(cost, bool):
                found["cost_usd"] = cost
            if found:
                self.sink.add("usage", usage=found)


def _add_message(*, sink: Sink, text: _Text, last: bool, strip: bool = False) -> None:
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
    return {key: source[key] for key in keys if type(source.get(key)) is int}


class Gemini(Parser):
    def __init__(self, *, sink: Sink) -> None:
        super().__init__(sink=sink)
        self.answer: _Text | None = None

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
                    self.answer = _Text(limit=self.sink.keep_chars)
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
            self.sink.add("error", text=str(event.get("message") or json.dumps(event)))
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


# codex exec's human transcript: a line naming the section, then its text.
_CODEX_SECTIONS = {"user", "codex", "thinking", "exec", "tool", "tokens used"}
_CODEX_EXIT = re.compile(r"^\s*(succeeded|exited \d+|failed)\b.*:\s*$")
# Codex prints a command's output whole after its exit line, with no mark where it ends. Only
# these, which codex prints after an item, end it: an `ERROR:` line or a bare `tool` there is
# the command's own (pip, logging, `ls`), and codex prints `user` only before the first item.
_CODEX_AFTER_OUTPUT = {"codex", "thinking", "exec", "tokens used"}


class Codex(Parser):
    """Its stderr: the header between two `--------` lines, then the sections."""

    def __init__(self, *, sink: Sink) -> None:
        super().__init__(sink=sink)
        self.section: str | None = None
        self.text = _Text(limit=sink.keep_chars)
        self.rules = 0
        self.calls = 0
        self.command: str | None = None
        # `ERROR:` lines in a command's output, held until what follows them tells whose they are.
        self.held_errors: list[str] = []

    def feed(self, line: Line) -> None:
        text = line.text
        if self.rules < 2:
            self.rules += text.strip() == "--------"
            return
        stripped = text.strip()
        if self.section == "exec-output":
            self._output_line(line)
            return
        if stripped in _CODEX_SECTIONS and not line.cut:
            self._flush()
            self.section = stripped
            return
        if stripped.startswith("ERROR:"):
            self._flush()
            self.section = None
            self.sink.add("error", text=stripped[len("ERROR:") :].strip(), stream="stderr")
            return
        if self.section == "exec" and self.command is None:
            self.command = stripped
            return
        if self.section == "exec" and _CODEX_EXIT.match(text) and self.text.total == 0:
            self._call()
            self.section = "exec-output"
            self.text.add(stripped + "\n")
            return
        if self.section == "tokens used":
            told = grouped_whole(stripped)
            if told is not None:
                self.sink.add("usage", usage={"total_tokens": told}, stream="stderr")
            self.section = None
            return
        if self.section is not None:
            self.text.add(text + "\n")

    def _output_line(self, line: Line) -> None:
        """A line after a command's exit line: its output, until codex's next item."""
        stripped = line.text.strip()
        if line.cut or not (stripped.startswith("ERROR:") or stripped in _CODEX_AFTER_OUTPUT):
            self._release_held_errors()
            self.text.add(line.text + "\n")
            return
        if stripped.startswith("ERROR:"):
            self.held_errors.append(stripped)
            return
        # Errors right before the usage total are codex's own (a failed turn ends so).
        if stripped != "tokens used":
            self._release_held_errors()
        self._flush()
        self._report_held_errors()
        self.section = stripped

    def _release_held_errors(self) -> None:
        """The held `ERROR:` lines were the command's output after all."""
        for held in self.held_errors:
            self.text.add(held + "\n")
        self.held_errors = []

    def _report_held_errors(self) -> None:
        for held in self.held_errors:
            self.sink.add("error", text=held[len("ERROR:") :].strip(), stream="stderr")
        self.held_errors = []

    def _call(self) -> None:
        self.calls += 1
        command = self.command or ""
        self.call(name="exec", call_id=f"exec-{self.calls}", arguments={"command": command})
        self.command = None

    def _flush(self) -> None:
        section = self.section
        text, cut, open_end = self.text.start()
        text = text.rstrip("\n")
        self.text = _Text(limit=self.sink.keep_chars)
        if section == "exec" and self.command is not None:
            self._call()
        elif section == "exec-output":
            self.result(call_id=f"exec-{self.calls}", text=text, cut=cut, open_end=open_end)
        elif section == "tool" and text:
            name, _, rest = text.partition("(")
            self.calls += 1
            self.call(
                name=name.strip(),
                call_id=f"tool-{self.calls}",
                arguments=("(" + rest) if rest else "",
            )
        elif section in ("user", "codex", "thinking") and text:
            role = {"user": "user", "codex": "assistant", "thinking": "thinking"}[section]
            self.sink.add(
                "message", role=role, text=text, cut=cut, open_end=open_end, stream="stderr"
            )

    def finish(self) -> None:
        self._flush()
        self._report_held_errors()  # the stream's last lines: codex's, as a failed turn ends


class Text(Parser):
    """Plain text; claude's JSON event lines among it are read as claude's."""

    def __init__(self, *, sink: Sink) -> None:
        super().__init__(sink=sink)
        self.text: _Text | None = None
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
            self.text = _Text(limit=self.sink.keep_chars)
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


# opencode's `run` output on stderr: its fixed styles (reset, dim, bold red) mark the lines.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_OC_RESET = "\x1b[0m"
_OC_HEADER = re.compile(r"^> \S+ \u00b7 \S")
_OC_TOOL = re.compile(r"^\x1b\[0m(\S{1,2}) \x1b\[0m(.*)$")
_OC_ERROR = re.compile(r"^(?:\x1b\[[0-9;]*m)*Error: (?:\x1b\[0m)?(.*)$")
_OC_DIM = "\x1b[90m"
# Lines before the header that may still be opencode's own (a warning, an early error).
_OC_PROBE_LINES = 8


class OpenCode(Parser):
    """`opencode run`'s stderr: one line per finished tool, a block's output under it."""

    def __init__(self, *, sink: Sink) -> None:
        super().__init__(sink=sink)
        self.seen_header = False
        self.probed = 0
        self.calls = 0
        self.body: _Text | None = None  # the output of a block tool, or a failed tool's error
        self.failed = False  # the last tool line said `failed`: its Error line is its result
        self.error: _Text | None = None  # an error of the session, its lines so far

    @property
    def rejected(self) -> bool:
        """Its first lines showed no opencode header: not opencode's output."""
        return not self.seen_header and self.probed >= _OC_PROBE_LINES

    def feed(self, line: Line) -> None:
        raw = line.text
        plain = _ANSI.sub("", raw)
        if not self.seen_header:
            self.probed += plain.strip() != ""
            # Its header, or (the end of a long stream, read afresh) one of its tool lines.
            self.seen_header = bool(_OC_HEADER.match(plain) or _OC_TOOL.match(raw))
            if self.seen_header and _OC_TOOL.match(raw):
                self.feed(line)
                return
            if not self.seen_header and (match := _OC_ERROR.match(raw)):
                self._flush()
                self.error = _Text(limit=self.sink.keep_chars)
                self.error.add(match.group(1))
            return
        tool = _OC_TOOL.match(raw)
        error = _OC_ERROR.match(raw)
        if raw == _OC_RESET or tool is not None or error is not None:
            self._flush()
        if tool is not None:
            self._tool(icon=tool.group(1), rest=tool.group(2))
        elif error is not None:
            text = _Text(limit=self.sink.keep_chars)
            text.add(("Error: " if self.failed else "") + error.group(1))
            if self.failed:
                self.body = text
            else:
                self.error = text
            self.failed = False
        elif raw != _OC_RESET:
            target = self.body if self.body is not None else self.error
            if target is not None:
                target.add("\n" + plain)

    def _tool(self, *, icon: str, rest: str) -> None:
        title, _, description = rest.partition(_OC_DIM)
        title = _ANSI.sub("", title).strip()
        description = _ANSI.sub("", description).strip()
        self.failed = icon == "\u2717" and title.endswith(" failed")
        if self.failed:
            title = title[: -len(" failed")]
        if icon == "$":
            name, arguments = "bash", title
        elif icon in ("\u2713", "\u2022"):
            name, arguments = "task", title
        else:
            name, _, arguments = title.partition(" ")
        if description:
            arguments = f"{arguments} {description}".strip()
        self.calls += 1
        shown: object = {"command": arguments} if name == "bash" else arguments
        self.call(name=name, call_id=f"opencode-{self.calls}", arguments=shown)
        # A block tool prints its output under its line; an inline one prints nothing more.
        self.body = _Text(limit=self.sink.keep_chars)

    def _flush(self) -> None:
        if self.body is not None:
            text, cut, open_end = self.body.start()
            if text.strip() or cut:
                self.result(
                    call_id=f"opencode-{self.calls}",
                    text=text.strip("\n"),
                    cut=cut,
                    open_end=open_end,
                )
            self.body = None
        if self.error is not None:
            text, cut, open_end = self.error.start()
            self.sink.add("error", text=text.strip(), cut=cut, open_end=open_end, stream="stderr")
            self.error = None

    def finish(self) -> None:
        self._flush()


PARSERS: dict[str, type[Parser]] = {
    "claude": Claude,
    "gemini": Gemini,
    "openhands": OpenHands,
    "codex": Text,  # its stdout is the final message; its stderr goes through Codex
    "text": Text,
}
