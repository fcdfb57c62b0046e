"""An output file's lines in bounded memory: each line's first LINE_CAP bytes and its size.

A file up to WHOLE_BYTES is read to its end. A longer one is read from its start until the
transcript's head is full (or HEAD_BYTES are read), then only its last TAIL_BYTES: the middle
of a 50 MB stream is never read, so the time to record a transcript does not grow with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

LINE_CAP = 1 << 20
WHOLE_BYTES = 4 << 20
HEAD_BYTES = 512 << 10
TAIL_BYTES = 512 << 10
_SKIP_BLOCK = 1 << 16


class Line(NamedTuple):
    text: str  # at most LINE_CAP bytes of the line, decoded, without its line break
    size: int  # the line's whole length in bytes
    cut: bool = False  # only the line's start was read
    end: str = ""  # for a cut line: its last bytes (a plain text's answer is at its end)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def _read_line(handle: BinaryIO) -> Line:
    """The next line's first LINE_CAP bytes and its full size (the rest is read, not kept)."""
    raw = handle.readline(LINE_CAP)
    size = len(raw)
    if raw.endswith(b"\n") or len(raw) < LINE_CAP:
        return Line(text=_decode(raw), size=size)
    last = previous = b""
    while rest := handle.readline(_SKIP_BLOCK):
        size += len(rest)
        previous, last = last, rest
        if rest.endswith(b"\n"):
            break
    if size == len(raw):
        return Line(text=_decode(raw), size=size)
    # A character cut in two at either edge is dropped, not shown as a replacement mark.
    return Line(
        text=raw.decode("utf-8", errors="ignore"),
        size=size,
        cut=True,
        end=(previous + last).decode("utf-8", errors="ignore").rstrip("\r\n"),
    )


def forward(
    *, handle: BinaryIO, stop: Callable[[], bool] | None, budget: int | None
) -> Iterator[Line]:
    """Lines from the handle's position until its end, `stop()` or `budget` bytes read."""
    read = 0
    while budget is None or read < budget:
        if stop is not None and stop():
            return
        line = _read_line(handle)
        if not line.size:
            return
        read += line.size
        yield line


def _line_start(*, handle: BinaryIO, position: int, floor: int) -> int:
    """Where the line holding `position` starts (not before `floor`), searched backwards."""
    while position > floor:
        step = min(_SKIP_BLOCK, position - floor)
        handle.seek(position - step)
        block = handle.read(step)
        newline = block.rfind(b"\n")
        if newline >= 0:
            return position - step + newline + 1
        position -= step
    return floor


def tail_start(*, handle: BinaryIO, size: int, floor: int) -> int:
    """Where the last TAIL_BYTES of the file begin, moved back to the start of a line."""
    start = max(floor, size - TAIL_BYTES)
    if start == floor:
        return start
    return _line_start(handle=handle, position=start, floor=floor)


def open_lines(path: Path | None) -> BinaryIO | None:
    if path is None:
        return None
    try:
        return path.open("rb")
    except OSError:
        return None
