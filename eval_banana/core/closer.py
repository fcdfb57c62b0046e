"""Closing a descriptor whose close blocks, beside the work that follows it.

Closing an inotify descriptor that holds watches waits in the kernel for the watches to be torn
down (about 10 ms each, one descriptor after another), the last thing a run does before its
reports. `os.close` lets other threads run meanwhile, so the close goes to a thread of its own
and the reports are written while it waits. Nothing reads a descriptor once it is handed here.
"""

from __future__ import annotations

import contextlib
import os
import threading

_closing: list[threading.Thread] = []
_lock = threading.Lock()


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):  # already gone: nothing was left to release
        os.close(fd)


def close_in_background(fd: int) -> None:
    """Close `fd` on a daemon thread; the caller must not use the number again."""
    thread = threading.Thread(target=_close, args=(fd,), name="eb-close", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no new threads (the interpreter is shutting down): close in place
        _close(fd)
        return
    with _lock:
        _closing[:] = [pending for pending in _closing if pending.is_alive()]
        _closing.append(thread)


def finish_background_closes() -> None:
    """Wait until every handed-over descriptor is closed (before a fork wants one thread)."""
    with _lock:
        pending, _closing[:] = list(_closing), []
    for thread in pending:
        thread.join()
