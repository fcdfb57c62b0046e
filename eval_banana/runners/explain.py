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
_TRACEBACK_HEADER = "Traceback (most recent call last):"
# An exception group's traceback is drawn in a box: `  + Exception Group Traceback ...`, then its
# frames and its own `ExceptionGroup: ...` line behind `  | `, then a box per sub-exception.
_GROUP_HEADER = "+ Exception Group Traceback (most recent call last):"


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


def _box_opened(line: str) -> str | None:
    """The prefix of the lines of the traceback `line` opens at the top level ("" for a plain
    one, "  | " for an exception group), else None (a sub-exception's traceback included)."""
    if line.startswith(_TRACEBACK_HEADER):
        return ""
    unindented = line.lstrip(" ")
    if unindented.startswith(_GROUP_HEADER):
        return f"{line[: len(line) - len(unindented)]}| "
    return None


def _last_words(stderr_path: Path) -> tuple[str | None, str | None]:
    """(the exception line of the last top-level traceback, the last non-empty line) of a
    stderr file; an exception group's line is its own, not one of its sub-exceptions'."""
    exception: str | None = None
    last: str | None = None
    box: str | None = None  # the line prefix of the traceback being read, if any
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
            opened = _box_opened(line)
            if opened is not None:
                box = opened
            elif box is not None and line.startswith(box):
                inside = line[len(box) :]
                if inside and not inside[0].isspace():
                    # The first line in the box not indented past it: `ExceptionType: message`.
                    exception = inside
                    box = None
    return exception, last


def failure_reason(*, stderr_path: Path | None, exit_code: int | None, exited: bool = False) -> str:
    """The exception line the script's traceback ended with, else the last non-empty stderr
    line, else `exit code N`. `exited`: it ended through sys.exit, so no traceback it printed
    (a handled exception it logged) was its last word."""
    if stderr_path is not None:
        try:
            exception, last = _last_words(stderr_path)
        except OSError:
            exception = last = None
        if exited:
            exception = None
        if exception or last:
            return _one_line(exception or last or "")
    return _exit_text(exit_code)
