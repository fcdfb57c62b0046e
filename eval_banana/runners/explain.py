"""Why a deterministic check failed, in one line: what its script raised or said last.

pytest shows the exception of a failed test in its short summary; a failed check should say as
much wherever its reason is shown (console, report.md, HTML, JUnit, annotations). The full stderr
stays in `checks/<stem>.stderr.txt`; this reads that file once, line by line, in bounded memory.
"""

from __future__ import annotations

import signal
from pathlib import Path

MAX_REASON_CHARS = 300
# Longer lines are read in pieces of this size; only a line's first piece can be a reason.
_LINE_LIMIT = 64 * 1024
_TRACEBACK_HEADERS = ("Traceback (most recent call last):", "Exception Group Traceback")


def _one_line(text: str) -> str:
    collapsed = " ".join(text.split())
    if len(collapsed) <= MAX_REASON_CHARS:
        return collapsed
    return collapsed[: MAX_REASON_CHARS - 1] + "…"


def _exit_text(exit_code: int | None) -> str:
    # Minus a signal number is a death by that signal; a larger negative code (sys.exit(-256))
    # is one the script asked for.
    if exit_code is not None and -signal.NSIG < exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        return f"exit code {exit_code} (killed by {name})"
    return f"exit code {exit_code}"


def _last_words(stderr_path: Path) -> tuple[str | None, str | None]:
    """(the exception line of the last traceback, the last non-empty line) of a stderr file."""
    exception: str | None = None
    last: str | None = None
    in_traceback = False
    continuing = False  # the previous piece ended mid-line
    with stderr_path.open("rb") as handle:
        while piece := handle.readline(_LINE_LIMIT):
            whole = piece.endswith(b"\n")
            if continuing:
                continuing = not whole
                continue
            continuing = not whole
            line = piece.decode("utf-8", errors="replace").rstrip("\r\n")
            if not line.strip():
                continue
            last = line
            stripped = line.lstrip(" +|")
            if stripped.startswith(_TRACEBACK_HEADERS):
                in_traceback = True
            elif in_traceback and not line[0].isspace():
                # The first unindented line after the frames: `ExceptionType: message`.
                exception = line
                in_traceback = False
    return exception, last


def failure_reason(*, stderr_path: Path | None, exit_code: int | None) -> str:
    """The last exception line raised, else the last non-empty stderr line, else `exit code N`."""
    if stderr_path is not None:
        try:
            exception, last = _last_words(stderr_path)
        except OSError:
            exception = last = None
        if exception or last:
            return _one_line(exception or last or "")
    return _exit_text(exit_code)
