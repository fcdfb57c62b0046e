"""An agent's output file read line by line, forwards or backwards from its end, in bounded
memory: a line too long to hold is never held, only which of some words it holds is noted."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import AnyStr, NamedTuple

# No event worth reading is this long; a longer line is noted, not held in memory.
MAX_EVENT_LINE = 8 << 20


class OverlongLine(NamedTuple):
    """A line longer than MAX_EVENT_LINE, dropped unread: which of the words asked for it holds."""

    holds: frozenset[str]


def _found(*, window: AnyStr, words: tuple[AnyStr, ...]) -> set[AnyStr]:
    return {word for word in words if word in window}


def lines(path: Path, *, words: tuple[str, ...]) -> Iterator[str | OverlongLine]:
    """The file's lines; a line longer than MAX_EVENT_LINE characters is an OverlongLine."""
    carry = max(map(len, words), default=1) - 1  # a word may straddle two pieces
    with path.open(encoding="utf-8", errors="replace") as handle:
        while line := handle.readline(MAX_EVENT_LINE):
            if len(line) < MAX_EVENT_LINE or line.endswith("\n"):
                yield line
                continue
            holds, tail = _found(window=line, words=words), line[len(line) - carry :]
            while rest := handle.readline(MAX_EVENT_LINE):  # the rest of the overlong line
                window = tail + rest
                holds |= _found(window=window, words=words)
                tail = window[len(window) - carry :]
                if rest.endswith("\n"):
                    break
            yield OverlongLine(holds=frozenset(holds))


_LINE_BREAK = re.compile(rb"[\r\n]")
_BLOCK = 1 << 16


class _Gathered:
    """A line read backwards, piece by piece: held while it is short enough, else only the
    words it holds are noted."""

    def __init__(self, *, max_line: int | None, words: tuple[bytes, ...]) -> None:
        self.max_line = max_line
        self.words = words
        self.carry = max(map(len, words), default=1) - 1
        self.pieces: list[bytes] = []  # newest piece first
        self.size = 0
        self.holds: set[bytes] = set()
        self.head = b""  # the start of what was gathered, where a word may straddle two pieces

    def prepend(self, piece: bytes) -> None:
        self.size += len(piece)
        if self.words:
            window = piece + self.head
            self.holds |= _found(window=window, words=self.words)
            self.head = window[: self.carry]
        if self.max_line is not None and self.size > self.max_line:
            self.pieces = []
        else:
            self.pieces.append(piece)

    def take(self) -> bytes | OverlongLine:
        if self.max_line is not None and self.size > self.max_line:
            return OverlongLine(holds=frozenset(word.decode() for word in self.holds))
        return b"".join(reversed(self.pieces))


def lines_from_end(
    *, path: Path, block: int = _BLOCK, max_line: int | None = None, words: tuple[str, ...] = ()
) -> Iterator[bytes | OverlongLine]:
    """The file's lines, newest first, read backwards in blocks.

    Lines end at `\\n` or `\\r`, as text-mode reading splits them (JSON text holds neither raw).
    A line longer than a block is gathered piece by piece and joined once, so the work stays
    linear in the bytes read. With `max_line`, a longer line is dropped while it is gathered
    (never held whole) and yielded as an OverlongLine noting which of `words` it holds.
    """
    encoded = tuple(word.encode() for word in words)
    with path.open("rb") as handle:
        position = handle.seek(0, os.SEEK_END)
        line = _Gathered(max_line=max_line, words=encoded)
        while position > 0:
            step = min(block, position)
            position -= step
            handle.seek(position)
            pieces = _LINE_BREAK.split(handle.read(step))
            line.prepend(pieces[-1])
            if len(pieces) == 1:
                continue
            yield line.take()
            yield from reversed(pieces[1:-1])
            line = _Gathered(max_line=max_line, words=encoded)
            line.prepend(pieces[0])
        yield line.take()
