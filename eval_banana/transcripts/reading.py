"""An output stream cut into lines as it arrives, in bounded memory: each line's first LINE_CAP
bytes and its size (and, of a longer line, its last bytes).

The bytes come in whatever pieces the reader got (a pipe's or a growing file's chunks), so a
line may arrive in many pieces; only its start and its end are kept, never a whole long line.
"""

from __future__ import annotations

from typing import NamedTuple

from eval_banana.core.masking import Masker, masked, masked_and_left_out

LINE_CAP = 1 << 20
# A stream up to WHOLE_BYTES is parsed whole. Of a longer one only the start (until the
# transcript's head is full, or HEAD_BYTES were read) and its last TAIL_BYTES are parsed.
WHOLE_BYTES = 4 << 20
HEAD_BYTES = 512 << 10
TAIL_BYTES = 512 << 10
# A long line's end is kept in blocks of this size: its last one or two blocks (64 to 128 KB).
END_BLOCK = 1 << 16


class Line(NamedTuple):
    text: str  # at most LINE_CAP bytes of the line, decoded, without its line break
    size: int  # the line's whole length in bytes
    cut: bool = False  # only the line's start was read
    end: str = ""  # for a cut line: its last bytes (a plain text's answer is at its end)
    gap: int = 0  # for a cut line: about how many characters between its start and end were
    # never read (the middle's bytes, and what masking left out at its edges)


class RawLine(NamedTuple):
    """A line as bytes, decoded only when it is parsed (most lines of a long stream never are)."""

    start: bytes  # the whole line, or its first LINE_CAP bytes
    size: int
    end: bytes | None = None  # of a line longer than LINE_CAP: its last bytes

    def line(self, *, masker: Masker) -> Line:
        """The line decoded, its secrets masked before any parser cuts it; of a long line, the
        secrets its start and its end were cut in are left out (eval_banana.core.masking)."""
        if self.end is None:
            text = self.start.decode("utf-8", errors="replace").rstrip("\r\n")
            return Line(text=masked(text, masker=masker), size=self.size)
        # A character cut in two at either edge is dropped, not shown as a replacement mark.
        start, start_left = masked_and_left_out(
            self.start.decode("utf-8", errors="ignore"), masker=masker, open_end=True
        )
        end, end_left = masked_and_left_out(
            self.end.decode("utf-8", errors="ignore").rstrip("\r\n"), masker=masker, open_start=True
        )
        # What the masking left out at the edges of the middle is left out with it.
        gap = self.size - len(self.start) - len(self.end) + start_left + end_left
        return Line(text=start, size=self.size, cut=True, end=end, gap=gap)


def _end_from(rest: int) -> int:
    """Where in a long line's rest (what follows its first LINE_CAP bytes, `rest` bytes long)
    the kept end starts: the start of its last block but one."""
    blocks = -(-rest // END_BLOCK)
    return max(0, (blocks - 2) * END_BLOCK)


def raw_line(data: bytes) -> RawLine:
    """A whole line (its line break included) as the splitter would give it."""
    size = len(data)
    if size <= LINE_CAP:
        return RawLine(start=data, size=size)
    return RawLine(
        start=data[:LINE_CAP], size=size, end=data[LINE_CAP + _end_from(size - LINE_CAP) :]
    )


class LineSplitter:
    """Bytes in, whole lines out; the line not yet ended is held as its start and its end."""

    def __init__(self) -> None:
        self.start = bytearray()
        self.size = 0
        self.rest = bytearray()  # the end of what follows the start (of a long line)
        self.rest_at = 0  # where in that rest `self.rest` begins

    def feed(self, data: bytes) -> list[RawLine]:
        lines: list[RawLine] = []
        pos, length = 0, len(data)
        while pos < length:
            newline = data.find(b"\n", pos)
            stop = length if newline < 0 else newline + 1
            if newline >= 0 and not self.size and stop - pos <= LINE_CAP:
                lines.append(RawLine(start=data[pos:stop], size=stop - pos))
            else:
                self._add(memoryview(data)[pos:stop])
                if newline >= 0:
                    lines.append(self._take())
            pos = stop
        return lines

    def close(self) -> RawLine | None:
        """The last line, when the stream did not end with a line break."""
        return self._take() if self.size else None

    def _add(self, piece: memoryview) -> None:
        self.size += len(piece)
        room = LINE_CAP - len(self.start)
        if room > 0:
            self.start += piece[:room]
            piece = piece[room:]
        if not len(piece):
            return
        self.rest += piece
        keep = _end_from(self.size - LINE_CAP)
        if len(self.rest) > 4 * END_BLOCK and keep > self.rest_at:
            del self.rest[: keep - self.rest_at]
            self.rest_at = keep

    def _take(self) -> RawLine:
        size = self.size
        if size <= LINE_CAP:
            line = RawLine(start=bytes(self.start), size=size)
        else:
            end = self.rest[_end_from(size - LINE_CAP) - self.rest_at :]
            line = RawLine(start=bytes(self.start), size=size, end=bytes(end))
        self.start = bytearray()
        self.size = 0
        self.rest = bytearray()
        self.rest_at = 0
        return line
