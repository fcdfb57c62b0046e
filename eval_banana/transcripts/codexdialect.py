"""codex's dialect: its human transcript on stderr (user, thinking, codex, exec, tool, ERROR lines
and the `tokens used` total; a command's output runs to codex's next item, its ERROR and tool
lines included); its stdout, the answer, is read as text (dialects.Text).
"""

from __future__ import annotations

import re

from eval_banana.core.digits import grouped_whole
from eval_banana.transcripts.dialectbase import BoundedText, Parser
from eval_banana.transcripts.reading import Line
from eval_banana.transcripts.sink import Sink

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
        self.text = BoundedText(limit=sink.keep_chars)
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
        self.text = BoundedText(limit=self.sink.keep_chars)
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
