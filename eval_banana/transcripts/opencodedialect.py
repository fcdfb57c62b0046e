"""opencode's dialect (`opencode run`, read beside text when a text agent's stderr opens with its
`> agent · model` header): its stderr's tool lines (an icon, the tool's title such as
`Read README.md` or `$ ls -a`), the output it prints under a block tool (shell, write, edit,
todos) as the tool's result, a failed tool's `Error:` line as its result, and other `Error:`
lines as errors; its stdout (every text part, the last one the verdict) stays the answer.
"""

from __future__ import annotations

import re

from eval_banana.transcripts.dialectbase import BoundedText, Parser
from eval_banana.transcripts.reading import Line
from eval_banana.transcripts.sink import Sink

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
        self.body: BoundedText | None = None  # the output of a block tool, or a failed tool's error
        self.failed = False  # the last tool line said `failed`: its Error line is its result
        self.error: BoundedText | None = None  # an error of the session, its lines so far

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
                self.error = BoundedText(limit=self.sink.keep_chars)
                self.error.add(match.group(1))
            return
        tool = _OC_TOOL.match(raw)
        error = _OC_ERROR.match(raw)
        if raw == _OC_RESET or tool is not None or error is not None:
            self._flush()
        if tool is not None:
            self._tool(icon=tool.group(1), rest=tool.group(2))
        elif error is not None:
            text = BoundedText(limit=self.sink.keep_chars)
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
        self.body = BoundedText(limit=self.sink.keep_chars)

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
