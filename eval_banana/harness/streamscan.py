"""Step B over text that arrives in pieces (a file, an agent's messages): the scan of
harness/scan.py run window by window, in bounded memory, with an object too long to read
followed to its end."""

from __future__ import annotations

from pathlib import Path

from eval_banana.harness.overlong import Followers
from eval_banana.harness.scan import scan_window
from eval_banana.harness.verdictobjects import Harvest, ScanResult, scan_result

# The streaming scan keeps STEP + REACH characters: every candidate is decoded with REACH
# characters of what follows it, so an object longer than REACH (2 Mi characters: far beyond any
# real verdict) is not read whole. Memory stays bounded whatever the agent printed; such an
# object is followed to its end (overlong.Followers), and if it may be a verdict and ends after
# the last verdict read, the scan gives none.
STREAM_STEP = 2 << 20
STREAM_REACH = 2 << 20


class StreamScanner:
    """Step B over text that arrives in pieces (a file, an agent's messages), in bounded memory.

    The text is scanned in windows: each window's candidates are those starting in its first
    `step` characters, decoded with up to `reach` characters after them. Windows advance by
    `step`, so every `{` is a candidate exactly once and the work stays linear.
    """

    def __init__(self, *, step: int = STREAM_STEP, reach: int = STREAM_REACH) -> None:
        self.step = step
        self.reach = reach
        self._pending: list[str] = []
        self._pending_chars = 0
        self._buffer = ""
        self._base = 0
        self._best = Harvest()
        self._unread = Followers(reach=reach)

    def feed(self, text: str) -> None:
        self._pending.append(text)
        self._pending_chars += len(text)
        if len(self._buffer) + self._pending_chars >= self.step + self.reach:
            self._absorb()
            while len(self._buffer) >= self.step + self.reach:
                self._scan(limit=self.step, final=False)
                self._buffer = self._buffer[self.step :]
                self._base += self.step

    def _absorb(self) -> None:
        self._buffer += "".join(self._pending)
        self._pending.clear()
        self._pending_chars = 0

    def _scan(self, *, limit: int, final: bool) -> None:
        window = Harvest()
        scan_window(text=self._buffer, limit=limit, harvest=window, offset=self._base)
        if not final:  # at the end, an object cut short never closes, so it is no object
            self._unread.start(text=self._buffer, base=self._base, positions=window.cut_short)
        self._unread.advance(text=self._buffer, base=self._base, to=self._base + limit)
        best = self._best
        if window.answer is not None and window.answer_at >= best.answer_at:
            best.answer, best.answer_at = window.answer, window.answer_at
        if window.rejected is not None and window.rejected_at >= best.rejected_at:
            best.rejected, best.rejected_at = window.rejected, window.rejected_at
            best.repeated = window.repeated

    def finish(self) -> ScanResult:
        """The right-most valid verdict of everything fed (or why there is none)."""
        self._absorb()
        self._scan(limit=len(self._buffer), final=True)
        return scan_result(self._best, unread=self._unread)


_READ_BYTES = 1 << 20


def scan_file(path: Path) -> ScanResult:
    """Step B over a file, read in blocks (UTF-8, undecodable bytes replaced)."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    scanner = StreamScanner()
    with path.open("rb") as handle:
        while block := handle.read(_READ_BYTES):
            scanner.feed(decoder.decode(block))
    scanner.feed(decoder.decode(b"", final=True))
    return scanner.finish()
