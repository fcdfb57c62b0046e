"""One piece of pure work done in a forked copy of eb while eb goes on with the rest.

report.html for 10,000 checks is a few tenths of a second of pure Python that needs nothing
but the report object, and the rest of the report stage (report.json, report.md, JUnit) takes
about as long again. A forked child shares the parent's memory copy-on-write, so nothing is
pickled or sent: it does the work, writes its file atomically, and tells the parent only
whether that worked. Forking is used only where it is safe and pays: Linux, a second CPU, no
other thread alive (a lock another thread held would stay held in the child), and work big
enough to be worth a fork. Everywhere else the same work runs in place, so the result is the
same file either way.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from eval_banana.errors import EvalBananaError

# What the child says when the work raised an OSError (a file it could not write), and when it
# raised anything else (a bug): the parent turns the first into the caller's typed error.
_OS_ERROR = 1
_BUG = 2
_MESSAGE_LIMIT = 64 * 1024


class ForkedWorkError(EvalBananaError):
    """The forked work raised something other than an OSError: a bug, shown with its trace."""


@dataclass
class Pending:
    """Work started by `start`: `finish` waits for it and raises what it raised."""

    pid: int | None
    reader: int | None
    work: Callable[[], None] | None

    def finish(self) -> None:
        """Wait for the work (or do it now, when it was not forked); OSError as raised."""
        if self.work is not None:
            work, self.work = self.work, None
            work()
            return
        if self.pid is None or self.reader is None:
            return
        pid, reader = self.pid, self.reader
        self.pid = self.reader = None
        try:
            message = _read_all(fd=reader)
            _, status = os.waitpid(pid, 0)
        except BaseException:
            _stop(pid=pid)
            raise
        finally:
            os.close(reader)
        code = os.waitstatus_to_exitcode(status)
        if code == 0:
            return
        text = message.decode("utf-8", errors="replace")
        if code == _OS_ERROR:
            raise OSError(text)
        raise ForkedWorkError(
            f"The work eb forked to run beside the report stage failed (exit {code}): "
            f"{text or 'no message'}"
        )

    def abandon(self) -> None:
        """Stop forked work whose result is no longer wanted (the caller is failing anyway)."""
        self.work = None
        if self.pid is not None:
            _stop(pid=self.pid)
            self.pid = None
        if self.reader is not None:
            os.close(self.reader)
            self.reader = None


def worth_forking(*, items: int, threshold: int) -> bool:
    """Whether a fork can run `items` worth of work beside the parent, safely and for a gain."""
    return (
        items >= threshold
        and sys.platform == "linux"
        and hasattr(os, "fork")
        and len(os.sched_getaffinity(0)) > 1
        and threading.active_count() == 1
    )


def start(*, work: Callable[[], None], fork: bool) -> Pending:
    """Begin `work` in a forked child when `fork`, else keep it for `Pending.finish`."""
    if not fork:
        return Pending(pid=None, reader=None, work=work)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: do the work, say how it went, and leave without any cleanup
        # (os._exit flushes no buffer the parent filled and runs no exit handler of its).
        os.close(reader)
        _run_child(work=work, writer=writer)
    os.close(writer)
    return Pending(pid=pid, reader=reader, work=None)


def _run_child(*, work: Callable[[], None], writer: int) -> None:
    code, message = 0, b""
    try:
        # The parent handles Ctrl-C and termination; the child just stops with them.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        gc.disable()  # it lives for one piece of work; collecting would only copy pages
        work()
    except OSError as exc:
        code, message = _OS_ERROR, str(exc).encode("utf-8", errors="replace")
    except BaseException as exc:  # a bug: the parent reports it, the child must not go on
        code, message = _BUG, f"{type(exc).__name__}: {exc}".encode("utf-8", errors="replace")
    with contextlib.suppress(OSError):
        os.write(writer, message[:_MESSAGE_LIMIT])
    os._exit(code)


def _read_all(*, fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _stop(*, pid: int) -> None:
    """Kill and reap the child: no process eb started outlives it."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
