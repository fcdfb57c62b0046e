"""codex's dialect: its human transcript on stderr (user, thinking, codex, exec, MCP tool calls,
ERROR lines and the `tokens used` total; a command's output runs to codex's next item, its ERROR
lines included); its stdout, the answer, is read as text (dialects.Text).
"""

from __future__ import annotations

import json
import re

from eval_banana.core.digits import grouped_whole
from eval_banana.transcripts.dialectbase import BoundedText, Parser
from eval_banana.transcripts.reading import Line
from eval_banana.transcripts.sink import Sink

# codex exec's human transcript: a line naming the section, then its text.
_CODEX_SECTIONS = {"user", "codex", "thinking", "exec", "tokens used"}
_CODEX_EXIT = re.compile(r"^\s*(succeeded|exited \d+|failed)\b.*:\s*$")
# Codex prints a command's output whole after its exit line, with no mark where it ends. Only
# these, which codex prints after an item, end it (and its MCP tool lines): an `ERROR:` line or
# a bare `tool` there is the command's own (pip, logging, `ls`), and codex prints `user` only
# before the first item.
_CODEX_AFTER_OUTPUT = {"codex", "thinking", "exec", "tokens used"}
# Its sections of free text: an `ERROR:` line in one is codex's own only where codex prints its
# errors, after the item's whole text, so one that more text follows is the text's.
_CODEX_TEXT_SECTIONS = {"user", "codex", "thinking"}
# An MCP tool call. Older codex prints `tool server.tool({"a":1})` as it starts, then
# `server.tool({"a":1}) success in 12ms:` (or `failed`) and the result's JSON; newer codex
# prints `mcp: server/tool started`, then `mcp: server/tool (completed)` (or `(failed)` and
# the error's message), and no arguments or result.
_CODEX_TOOL_START = re.compile(r"^tool (?P<name>[^\s(]+)\((?P<arguments>.*)\)$")
_CODEX_TOOL_END = re.compile(r"^(?:success|failed) in .+:$")
_CODEX_MCP = re.compile(
    r"^mcp: (?P<name>\S+/\S+) (?:started|\((?P<status>completed|failed|in_progress)\))$"
)
# Calls started and not yet ended, remembered so an end line finds its call; bounded.
_MAX_OPEN_CALLS = 256


class Codex(Parser):
    """Its stderr: the header between two `--------` lines, then the sections."""

    def __init__(self, *, sink: Sink) -> None:
        super().__init__(sink=sink)
        self.section: str | None = None
        self.text = BoundedText(limit=sink.keep_chars)
        self.rules = 0
        self.calls = 0
        self.command: str | None = None
        # `ERROR:` lines in a command's output or a text section, held until what follows them
        # tells whose they are.
        self.held_errors: list[str] = []
        # Open tool calls: what codex prints of the call (its invocation, or `server/tool`) to
        # their call ids, oldest first; and the call whose result is being read (`output`).
        self.open_calls: dict[str, list[str]] = {}
        self.output_call: str | None = None

    def feed(self, line: Line) -> None:
        text = line.text
        if self.rules < 2:
            self.rules += text.strip() == "--------"
            return
        stripped = text.strip()
        if self.section == "output":
            self._output_line(line)
            return
        if self._text_error_line(line):
            return
        if stripped in _CODEX_SECTIONS and not line.cut:
            self._flush()
            self.section = stripped
            return
        if not line.cut and self._tool_line(stripped):
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
            self._start_output(call_id=f"exec-{self.calls}", first=stripped)
            return
        if self.section == "tokens used":
            told = grouped_whole(stripped)
            if told is not None:
                self.sink.add("usage", usage={"total_tokens": told}, stream="stderr")
            self.section = None
            return
        if self.section is not None:
            self.text.add(text + "\n")

    def _text_error_line(self, line: Line) -> bool:
        """In a text section, hold an `ERROR:` line; the next line tells whose the held ones are:
        codex's next item (they were codex's errors) or more text (they were the text's)."""
        stripped = line.text.strip()
        if self.section not in _CODEX_TEXT_SECTIONS:
            return False
        if stripped.startswith("ERROR:") and not line.cut:
            self.held_errors.append(stripped)
            return True
        if self.held_errors:
            if not line.cut and (stripped in _CODEX_SECTIONS or self._is_item(stripped)):
                self._flush()
                self._report_held_errors()
            else:
                self._release_held_errors()
        return False

    def _output_line(self, line: Line) -> None:
        """A line after a command's exit line or a tool's end line: its output, until codex's
        next item."""
        stripped = line.text.strip()
        item = not line.cut and self._is_item(stripped)
        if line.cut or not (stripped.startswith("ERROR:") or item):
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
        self.section = None
        self.feed(line)

    def _is_item(self, stripped: str) -> bool:
        """Whether codex prints this line after an item: the next item's first line."""
        return (
            stripped in _CODEX_AFTER_OUTPUT
            or _CODEX_TOOL_START.match(stripped) is not None
            or _CODEX_MCP.match(stripped) is not None
            or self._ended_call(stripped) is not None
        )

    def _tool_line(self, stripped: str) -> bool:
        """An MCP tool call's start or end line, in either shape codex prints them."""
        if start := _CODEX_TOOL_START.match(stripped):
            self._flush()
            self.section = None  # codex prints nothing more until the call's end line
            self._start_tool(
                key=stripped[len("tool ") :],
                name=start["name"],
                arguments=_arguments(start["arguments"]),
            )
            return True
        if ended := self._ended_call(stripped):
            key, status = ended
            self._flush()
            self._start_output(call_id=self._end_tool(key=key, name=key), first=status)
            return True
        mcp = _CODEX_MCP.match(stripped)
        if mcp is None:
            return False
        self._flush()
        name, status = mcp["name"], mcp["status"]
        if status is None:
            self._start_tool(key=name, name=name, arguments=None)
        elif status == "failed":
            self._start_output(call_id=self._end_tool(key=name, name=name), first=status)
            return True  # the error's message follows, if codex has one
        else:
            self.result(call_id=self._end_tool(key=name, name=name), text=status)
        # Newer codex prints its reasoning with no line before it; after this line, which ends
        # what codex prints of the call, text with no line naming it is that.
        self.section = "thinking"
        return True

    def _ended_call(self, stripped: str) -> tuple[str, str] | None:
        """Older codex's end line of an open call: `<its invocation> success in 12ms:`."""
        for key in self.open_calls:
            if stripped.startswith(key + " "):
                status = stripped[len(key) + 1 :]
                if _CODEX_TOOL_END.match(status):
                    return key, status
        return None

    def _start_tool(self, *, key: str, name: str, arguments: object) -> None:
        self.calls += 1
        call_id = f"tool-{self.calls}"
        self.call(name=name, call_id=call_id, arguments=arguments)
        if sum(len(ids) for ids in self.open_calls.values()) < _MAX_OPEN_CALLS:
            self.open_calls.setdefault(key, []).append(call_id)

    def _end_tool(self, *, key: str, name: str) -> str:
        """The id of the oldest open call printed as `key`; a call of its own if none is open
        (its start was not read)."""
        ids = self.open_calls.get(key)
        if not ids:
            self._start_tool(key=key, name=name, arguments=None)
            ids = self.open_calls.get(key)
            if not ids:
                return f"tool-{self.calls}"
        call_id = ids.pop(0)
        if not ids:
            del self.open_calls[key]
        return call_id

    def _start_output(self, *, call_id: str, first: str) -> None:
        self.section = "output"
        self.output_call = call_id
        self.text.add(first + "\n")

    def _release_held_errors(self) -> None:
        """The held `ERROR:` lines were the command's output or the section's text after all."""
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
        self.text = BoundedText(limit=self.sink.keep_chars)
        if section == "exec" and self.command is not None:
            self._call()
        elif section == "output":
            self.result(call_id=self.output_call, text=text, cut=cut, open_end=open_end)
        elif section in _CODEX_TEXT_SECTIONS and text:
            role = {"user": "user", "codex": "assistant", "thinking": "thinking"}[section or ""]
            self.sink.add(
                "message", role=role, text=text, cut=cut, open_end=open_end, stream="stderr"
            )

    def finish(self) -> None:
        self._flush()
        self._report_held_errors()  # the stream's last lines: codex's, as a failed turn ends


def _arguments(printed: str) -> object:
    """Older codex prints a call's arguments as compact JSON: the object, else the text."""
    if not printed:
        return {}
    try:
        return json.loads(printed)
    except ValueError:
        return printed
