"""What every dialect's parser shares: the base class that turns lines into events, and a text
kept bounded while it arrives in pieces."""

from __future__ import annotations

from typing import Any

from eval_banana.transcripts.jsonline import Loaded, Unread, load
from eval_banana.transcripts.reading import Line
from eval_banana.transcripts.sink import Sink

# Tool names remembered per call id, so a result can name its tool; bounded like everything.
_MAX_CALLS = 4096


class BoundedText:
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
