"""A judge's transcript built while its output is read, in bounded memory.

The reader hands over each piece of stdout and stderr as it gets it (`TranscriptBuilder.stdout`,
`.stderr`); the lines are parsed by the dialect as they complete, and `events()` finishes the
transcript once the agent is done. Nothing reads the output files again afterwards.

One stream is parsed line by line (stdout; codex's stderr, where its transcript is); of the other
only its last bytes are kept (stderr's end for its error lines; codex's stdout, its answer).
A text agent's stderr is also parsed line by line as opencode's until its first lines show it is
not (`opencode run` prints its tool calls there, its text on stdout): if it is, its events come
before stdout's, which still hold the answer, and they replace the error lines of stderr's end.

What is parsed of a long stream does not depend on when it is read: a stream of up to
WHOLE_BYTES is parsed whole; of a longer one, the lines until the transcript's head is full (or
HEAD_BYTES were read), then only its last lines (TAIL_BYTES at most, and no more lines than the
transcript's end keeps events). As the length is known only at the end, the head is parsed as
it arrives and then set aside (a copy); the whole reading goes on with the lines after it
whenever the output pauses (`idle`), until the stream passes WHOLE_BYTES and it is dropped. A
fast burst of output thus never pays for parsing lines that are thrown away. The lines after
the head are also held as bytes in a ring bounded by TAIL_BYTES and parsed, for a long stream,
once it ends. The middle of a 50 MB stream is only searched for its line breaks, never parsed
or decoded.
"""

from __future__ import annotations

import copy
import re
from collections import deque
from collections.abc import Callable

from eval_banana.core.masking import Masker
from eval_banana.transcripts.codexdialect import Codex
from eval_banana.transcripts.dialectbase import Parser
from eval_banana.transcripts.dialects import PARSERS
from eval_banana.transcripts.opencodedialect import OpenCode
from eval_banana.transcripts.reading import (
    HEAD_BYTES,
    TAIL_BYTES,
    WHOLE_BYTES,
    LineSplitter,
    RawLine,
    raw_line,
)
from eval_banana.transcripts.sink import HEAD_EVENTS, TAIL_EVENTS, Event, Sink

# stderr is read for the errors it reports, from its end only, and only a few of them.
_STDERR_TAIL = 64 << 10
_STDERR_ERRORS = 5
_ERRORISH = re.compile(r"(^|\W)(error|failed|failure|exception|unauthorized|denied)\b", re.I)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

MakeParser = Callable[[Sink], Parser]
# Past the head of a long stream, what arrives is skimmed in pieces of about this size: a
# line break search per piece, not per line.
_SKIM_BYTES = 1 << 20
# How much of the backlog one pause of the output parses before eb looks for more output.
_IDLE_BYTES = 64 << 10


class _Reading:
    """A parser and the sink it fills."""

    def __init__(self, *, sink: Sink, parser: Parser) -> None:
        self.sink = sink
        self.parser = parser

    def fork(self) -> _Reading:
        """A copy that reads on independently (the parser's state and the events so far)."""
        sink = self.sink.fork()
        parser = copy.deepcopy(self.parser, {id(self.sink): sink})
        return _Reading(sink=sink, parser=parser)


class _Lines:
    """One stream parsed line by line as it arrives."""

    def __init__(self, *, make: MakeParser, sink: Sink) -> None:
        self.make = make
        self.splitter = LineSplitter()
        self.size = 0
        # Every line so far; given up once the stream is longer than WHOLE_BYTES.
        self.whole: _Reading | None = _Reading(sink=sink, parser=make(sink))
        # The head, set aside where it ends (the reading used if the stream turns out long).
        self.head: _Reading | None = None
        # The lines after the head that may still be in the stream's last TAIL_BYTES, with
        # where each ends; what falls out is counted (left out of the transcript), not kept.
        # A line skimmed past the head is kept as a view of its piece, made a RawLine at the end.
        self.ring: deque[tuple[int, RawLine | memoryview]] = deque()
        self.ring_bytes = 0
        self.left_out = 0
        # Lines after the head that the whole reading has yet to parse (at most WHOLE_BYTES).
        self.backlog: deque[RawLine] = deque()
        # Past the head of a long stream, pieces are gathered to be skimmed a few at a time.
        self.pending: list[bytes] = []
        self.pending_bytes = 0

    def feed(self, data: bytes) -> None:
        if self.whole is None and self.head is not None:
            self.pending.append(data)
            self.pending_bytes += len(data)
            if self.pending_bytes >= _SKIM_BYTES:
                self._skim_pending()
            return
        for raw in self.splitter.feed(data):
            self._line(raw)

    def catch_up(self, *, budget: int | None) -> bool:
        """Parse lines of the backlog (about `budget` bytes; None: all); whether there were any."""
        whole = self.whole
        if whole is None or not self.backlog:
            return False
        done = 0
        while self.backlog and (budget is None or done < budget):
            raw = self.backlog.popleft()
            whole.parser.feed(raw.line(masker=whole.sink.masker))
            done += raw.size
        return True

    def _skim_pending(self) -> None:
        if self.pending:
            data = b"".join(self.pending)
            self.pending = []
            self.pending_bytes = 0
            self._skim(data)

    def _skim(self, data: bytes) -> None:
        """Past the head of a long stream: only lines that may be in its end are taken apart;
        those before them in this piece are counted at once (the middle is never split)."""
        first = data.find(b"\n")
        if first < 0:
            self.splitter.feed(data)  # the line in progress goes on
            return
        for raw in self.splitter.feed(data[: first + 1]):
            self._line(raw)
        last = data.rfind(b"\n")
        if last > first:
            self._skim_lines(data=data, start=first + 1, stop=last + 1)
        if last + 1 < len(data):
            self.splitter.feed(data[last + 1 :])

    def _skim_lines(self, *, data: bytes, start: int, stop: int) -> None:
        """The whole lines of data[start:stop]: the last ones into the ring, the rest counted."""
        at = self.size
        self.size += stop - start
        floor = self.size - TAIL_BYTES
        kept: list[tuple[int, RawLine | memoryview]] = []
        view = memoryview(data)
        pos = stop
        while pos > start and len(kept) < TAIL_EVENTS and at + pos - start > floor:
            begin = max(start, data.rfind(b"\n", start, pos - 1) + 1)
            kept.append((at + pos - start, view[begin:pos]))
            pos = begin
        self.left_out += pos - start
        self.ring.extend(reversed(kept))
        self.ring_bytes += stop - pos
        self._trim()

    def live(self) -> Sink:
        return self._reading().sink

    def parser(self) -> Parser:
        """The parser reading on (the whole reading's, or the head's)."""
        return self._reading().parser

    def _reading(self) -> _Reading:
        reading = self.whole if self.whole is not None else self.head
        assert reading is not None
        return reading

    def _line(self, raw: RawLine) -> None:
        at = self.size
        self.size += raw.size
        if self.head is None and self.whole is not None and self._head_ends(at=at):
            if at > WHOLE_BYTES:  # already too long to be parsed whole: nothing to fork
                self.head, self.whole = self.whole, None
            else:
                self.head = self.whole.fork()
            self.head.parser.cut_off()
        if self.head is not None:
            self._keep(raw)
        if self.whole is None:
            return
        if self.head is None:
            self.whole.parser.feed(raw.line(masker=self.whole.sink.masker))  # the head, at once
        elif self.size > WHOLE_BYTES:
            self.whole = None  # too long to be parsed whole: the head and the end will be
            self.backlog.clear()
        else:
            self.backlog.append(raw)  # parsed when the output pauses (catch_up) or ends

    def _head_ends(self, *, at: int) -> bool:
        assert self.whole is not None
        return len(self.whole.sink.head) >= HEAD_EVENTS or at >= HEAD_BYTES

    def _keep(self, raw: RawLine) -> None:
        self.ring.append((self.size, raw))
        self.ring_bytes += raw.size
        # Trimmed now and then, not per line: what it holds stays within twice the bounds.
        if len(self.ring) > 2 * TAIL_EVENTS or self.ring_bytes > 2 * TAIL_BYTES:
            self._trim()

    def _trim(self) -> None:
        ring = self.ring
        floor = self.size - TAIL_BYTES
        while ring and (len(ring) > TAIL_EVENTS or ring[0][0] <= floor):
            item = ring.popleft()[1]
            size = item.size if isinstance(item, RawLine) else len(item)
            self.left_out += size
            self.ring_bytes -= size

    def close(self) -> Sink:
        """The sink holding the stream's events, all of them parsed and flushed."""
        self._skim_pending()
        last = self.splitter.close()
        if last is not None:
            self._line(last)
        if self.size <= WHOLE_BYTES:
            assert self.whole is not None
            self.catch_up(budget=None)
            if self.size:
                self.whole.parser.finish()
            return self.whole.sink
        head = self.head
        if head is None:  # the head took the whole stream (one very long line)
            assert self.whole is not None
            head = self.whole
            head.parser.finish()
        sink = head.sink
        self._trim()
        if self.left_out:
            sink.skip(self.left_out)
        parser = self.make(sink)  # the end is read afresh: the state of the middle is unknown
        for _, item in self.ring:
            raw = item if isinstance(item, RawLine) else raw_line(bytes(item))
            parser.feed(raw.line(masker=sink.masker))
        parser.finish()
        self.ring.clear()
        return sink


class _Tail:
    """The last `keep` bytes of a stream, and its length."""

    def __init__(self, *, keep: int) -> None:
        self.keep = keep
        self.data = bytearray()
        self.size = 0

    def feed(self, data: bytes) -> None:
        self.size += len(data)
        self.data += data
        if len(self.data) > 2 * self.keep:
            del self.data[: len(self.data) - self.keep]

    def last(self) -> bytes:
        return bytes(self.data[-self.keep :])


def _stderr_errors(*, tail: _Tail, sink: Sink) -> None:
    """The last few lines of stderr that read like a failure, as error events."""
    lines = tail.last().decode("utf-8", errors="replace").splitlines()
    if tail.size > tail.keep:
        lines = lines[1:]  # the first may be a line's end
    found = [
        text for line in lines if (text := _ANSI.sub("", line).strip()) and _ERRORISH.search(text)
    ]
    for text in found[-_STDERR_ERRORS:]:
        sink.add("error", text=text, stream="stderr")


def _codex_answer(*, tail: _Tail, sink: Sink) -> None:
    """codex's stdout is its final message: the answer, unless its stderr already ended on it."""
    text = tail.last().decode("utf-8", errors="ignore").strip()
    open_start = tail.size > tail.keep  # its start was cut from the rest of the stream
    clipped, cut = sink.clip(text, keep_end=True, open_start=open_start)
    last = next(
        (
            event
            for event in reversed([*sink.head, *sink.tail])
            if event["kind"] == "message" and event.get("role") == "assistant"
        ),
        None,
    )
    if last is not None and last.get("text") == clipped:
        last["kind"] = "answer"
        return
    sink.add(
        "answer",
        text=text,
        cut=max(0, tail.size - len(text.encode())) if cut else 0,
        open_start=open_start,
    )


class TranscriptBuilder:
    """One run of an agent: its output in (`stdout`, `stderr`, any piece size), events out."""

    def __init__(self, *, dialect: str, max_chars: int, masker: Masker) -> None:
        self.codex = dialect == "codex"
        kind = Codex if self.codex else PARSERS.get(dialect, PARSERS["text"])

        def make(sink: Sink) -> Parser:
            return kind(sink=sink)

        self.lines = _Lines(make=make, sink=Sink(max_chars=max_chars, masker=masker))
        # codex's stdout holds only its final message: its end is enough (4 bytes a character,
        # and what a secret cut at its start reaches into it).
        keep = 4 * (max_chars + masker.reach) + 4
        self.tail = _Tail(keep=keep if self.codex else _STDERR_TAIL)
        # A text agent's stderr may be opencode's: read as such until it shows it is not.
        self.side: _Lines | None = None
        if dialect == "text":
            self.side = _Lines(make=_opencode, sink=Sink(max_chars=max_chars, masker=masker))
        self.done: list[Event] | None = None

    def stdout(self, data: bytes) -> None:
        (self.tail if self.codex else self.lines).feed(data)

    def stderr(self, data: bytes) -> None:
        (self.lines if self.codex else self.tail).feed(data)
        side = self.side
        if side is not None:
            side.feed(data)
            if _not_opencode(side):
                self.side = None  # not opencode's output: stderr's end is read as before

    def idle(self) -> bool:
        """The output paused: parse some of what waits; whether there was anything."""
        side = self.side
        moved = side is not None and side.catch_up(budget=_IDLE_BYTES)
        return self.lines.catch_up(budget=_IDLE_BYTES) or moved

    def seen(self) -> list[Event]:
        """The events parsed so far, while the output is still being read."""
        side = self.side
        if side is not None and _is_opencode(side):
            return [*side.live().seen(), *self.lines.live().seen()]
        return self.lines.live().seen()

    def events(self) -> list[Event]:
        """The finished transcript (the output has ended; called once, then remembered)."""
        if self.done is not None:
            return self.done
        sink = self.lines.close()
        side = self.side
        if side is not None:
            side_sink = side.close()  # flushes its parser, which may now know
            if _is_opencode(side):
                self.done = [*side_sink.events(), *sink.events()]
                return self.done
        if self.tail.size:
            if self.codex:
                _codex_answer(tail=self.tail, sink=sink)
            else:
                _stderr_errors(tail=self.tail, sink=sink)
        self.done = sink.events()
        return self.done


def _opencode(sink: Sink) -> Parser:
    return OpenCode(sink=sink)


def _is_opencode(lines: _Lines) -> bool:
    parser = lines.parser()
    return isinstance(parser, OpenCode) and parser.seen_header


def _not_opencode(lines: _Lines) -> bool:
    parser = lines.parser()
    return isinstance(parser, OpenCode) and parser.rejected
