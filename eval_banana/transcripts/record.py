"""Record one judge's transcript: its output files read by its dialect, written atomically."""

from __future__ import annotations

import json
import os
import re
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from eval_banana.core.files import write_bytes_atomic
from eval_banana.transcripts.dialects import PARSERS, Codex, Parser
from eval_banana.transcripts.reading import (
    HEAD_BYTES,
    WHOLE_BYTES,
    Line,
    forward,
    open_lines,
    tail_start,
)
from eval_banana.transcripts.sink import HEAD_EVENTS, TAIL_EVENTS, Event, Sink

TRANSCRIPT_SUFFIX = ".transcript.jsonl"
# stderr is read for the errors it reports, from its end only, and only a few of them.
_STDERR_TAIL = 64 << 10
_STDERR_ERRORS = 5
_ERRORISH = re.compile(r"(^|\W)(error|failed|failure|exception|unauthorized|denied)\b", re.I)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def _read(*, handle: BinaryIO, make: Callable[[Sink], Parser], sink: Sink) -> None:
    """Feed the file's lines to a parser: all of them, or its start and its end when long."""
    size = os.fstat(handle.fileno()).st_size
    parser = make(sink)
    if size <= WHOLE_BYTES:
        for line in forward(handle=handle, stop=None, budget=None):
            parser.feed(line)
        parser.finish()
        return
    head_full: Callable[[], bool] = lambda: len(sink.head) >= HEAD_EVENTS  # noqa: E731
    for line in forward(handle=handle, stop=head_full, budget=HEAD_BYTES):
        parser.feed(line)
    parser.finish()
    position = handle.tell()
    start = tail_start(handle=handle, size=size, floor=position)
    if start > position:
        sink.skip(start - position)
    handle.seek(start)
    # Only as many lines as the tail keeps events (a line gives one event or more) are parsed.
    lines: deque[Line] = deque(maxlen=TAIL_EVENTS)
    dropped = 0
    for line in forward(handle=handle, stop=None, budget=None):
        if len(lines) == TAIL_EVENTS:
            dropped += lines[0].size
        lines.append(line)
    if dropped:
        sink.skip(dropped)
    parser = make(sink)  # the end is read afresh: the state of the middle is unknown
    for line in lines:
        parser.feed(line)
    parser.finish()


def _stderr_errors(*, handle: BinaryIO, sink: Sink) -> None:
    """The last few lines of stderr that read like a failure, as error events."""
    size = os.fstat(handle.fileno()).st_size
    handle.seek(max(0, size - _STDERR_TAIL))
    lines = handle.read().decode("utf-8", errors="replace").splitlines()
    if size > _STDERR_TAIL:
        lines = lines[1:]  # the first may be a line's end
    found = [
        text for line in lines if (text := _ANSI.sub("", line).strip()) and _ERRORISH.search(text)
    ]
    for text in found[-_STDERR_ERRORS:]:
        sink.add("error", text=text, stream="stderr")


def _codex_answer(*, handle: BinaryIO, sink: Sink) -> None:
    """codex's stdout is its final message: the answer, unless its stderr already ended on it."""
    size = os.fstat(handle.fileno()).st_size
    handle.seek(max(0, size - 4 * sink.max_chars - 4))
    text = handle.read().decode("utf-8", errors="ignore").strip()
    clipped, cut = sink.clip(text, keep_end=True)
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
    sink.add("answer", text=text, cut=max(0, size - len(text.encode())) if cut else 0)


def transcript_events(
    *,
    dialect: str,
    stdout_path: Path | None,
    stderr_path: Path | None,
    max_chars: int,
    mask: Callable[[str], str],
) -> list[Event]:
    """The transcript of one run of an agent, from its stdout and stderr files."""
    sink = Sink(max_chars=max_chars, mask=mask)
    out, err = open_lines(stdout_path), open_lines(stderr_path)
    try:
        if dialect == "codex":
            if err is not None:
                _read(handle=err, make=lambda s: Codex(sink=s), sink=sink)
            if out is not None:
                _codex_answer(handle=out, sink=sink)
            return sink.events()
        parser = PARSERS.get(dialect, PARSERS["text"])
        if out is not None:
            _read(handle=out, make=lambda s: parser(sink=s), sink=sink)
        if err is not None:
            _stderr_errors(handle=err, sink=sink)
        return sink.events()
    finally:
        for handle in (out, err):
            if handle is not None:
                handle.close()


def record_transcript(
    *,
    dialect: str,
    stdout_path: Path | None,
    stderr_path: Path | None,
    target: Path,
    max_chars: int,
    mask: Callable[[str], str],
) -> int:
    """Write `target` (one JSON event per line, atomically); the number of events."""
    events = transcript_events(
        dialect=dialect,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
        max_chars=max_chars,
        mask=mask,
    )
    data = "".join(
        json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n" for event in events
    )
    write_bytes_atomic(path=target, data=data.encode("utf-8", errors="replace"))
    return len(events)
