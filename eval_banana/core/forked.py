"""Work done in a forked copy of eb while eb goes on with the rest.

At 10,000 checks, report.html is a few tenths of a second of pure Python that needs nothing
but the report object, `eb merge` makes 10,000 hard links (system calls, which a thread could
not overlap: each one waits for the interpreter lock to come back), and a cached run restores
a few files per check. A forked child shares the parent's memory copy-on-write, so nothing is
sent to it: it does the work, and sends back only how that went and the work's (picklable)
return value, small next to the work. Forking is used only where it is safe and pays: Linux,
a second CPU, no other thread alive (a lock another thread held would stay held in the child),
and work big enough to be worth a fork. Everywhere else the same work runs in place, so the
outcome is the same either way.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any, Generic, NoReturn, TypeVar

from eval_banana.core.closer import finish_background_closes
from eval_banana.core.errors import EvalBananaError

# How the child ended, as its exit code: the work raised an OSError (a file it could not write;
# its message follows), one of eb's own errors (pickled, so it is raised again whole), or
# anything else (a bug; its type and message follow).
_OS_ERROR = 1
_BUG = 2
_EB_ERROR = 3
_MESSAGE_LIMIT = 64 * 1024

T = TypeVar("T")


class ForkedWorkError(EvalBananaError):
    """The forked work raised something other than an OSError or one of eb's own errors: a
    bug, shown with its type and message (exit 2, not a verdict)."""


class ForkedWorkStopped(ForkedWorkError):
    """The child was ended by a signal before it finished: Ctrl-C or a termination sent to
    eb's whole process group, or something killing it. The work is not done; a caller that
    can do it in place instead does so."""


class _Unset:
    """No value yet: `Pending.finish` was not called (or is being called now)."""


_UNSET = _Unset()

# Helpers that end a thread of theirs when it has nothing to do (the process runner's
# watchdog): a fork needs eb's only thread, and an idle helper is no reason to refuse one.
_IDLE_ENDERS: list[Callable[[], None]] = []


def end_when_idle(ender: Callable[[], None]) -> None:
    """Register `ender`: called before a fork, it ends its owner's thread if that thread has
    nothing to do, and returns once it has ended (a busy thread is left running)."""
    if ender not in _IDLE_ENDERS:
        _IDLE_ENDERS.append(ender)


class Pending(Generic[T]):
    """Work started by `start`: `finish` waits for it, returns what it returned and raises
    what it raised. (A plain class: importing dataclasses costs a run ten milliseconds.)"""

    def __init__(self, *, pid: int | None, reader: int | None, work: Callable[[], T] | None):
        self.pid = pid
        self.reader = reader
        self.work = work
        self.value: T | _Unset = _UNSET

    def finish(self) -> T:
        """Wait for the work (or do it now, when it was not forked) and return its value;
        raise what it raised: an OSError or one of eb's errors as such, anything else as a
        ForkedWorkError. A second call returns the same value."""
        if not isinstance(self.value, _Unset):
            return self.value
        if self.work is not None:
            work, self.work = self.work, None
            done = work()
            self.value = done
            return done
        if self.pid is None or self.reader is None:
            raise ForkedWorkError("The forked work was abandoned; it has no value.")
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
            value: T = _unpickled(pickled=message)
            self.value = value
            return value
        if code < 0:
            raise ForkedWorkStopped(
                f"The work eb forked to run beside the rest was ended by signal {-code}."
            )
        if code == _EB_ERROR:
            raise _eb_error(pickled=message)
        text = message.decode("utf-8", errors="replace")
        if code == _OS_ERROR:
            raise OSError(text)
        raise ForkedWorkError(
            f"The work eb forked to run beside the rest failed (exit {code}): "
            f"{text or 'no message'}"
        )

    def finish_or_redo(self, *, redo: Callable[[], T]) -> T:
        """`finish`, but when the child was ended by a signal (`ForkedWorkStopped`) do
        `redo` here instead: the work must bear being done again over what the child made."""
        try:
            return self.finish()
        except ForkedWorkStopped:
            done = redo()
            self.value = done
            return done

    def ready(self, *, stop: Callable[[], bool], every_s: float = 0.1) -> bool:
        """Wait until `finish` can be called without waiting on a child still at work: True
        once the child has sent how its work went (or closed its end by dying), and at once
        for work kept to be done in place; False as soon as `stop` says (asked every `every_s`
        seconds), the child left at work for the caller to `abandon`. A signal handler that
        only notes the signal (`eb merge`'s) then ends the wait, which a wait in `finish`
        would resume."""
        reader = self.reader
        if reader is None:
            return True
        while not stop():
            readable, _, _ = select.select([reader], [], [], every_s)
            if readable:
                return True
        return False

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
    if not (
        items >= threshold
        and sys.platform == "linux"
        and hasattr(os, "fork")
        and len(os.sched_getaffinity(0)) > 1
    ):
        return False
    end_idle_helpers()
    return threading.active_count() == 1


def end_idle_helpers() -> None:
    """Wait for the closes under way (they end soon), and end the helper threads that have
    nothing to do: what is left running is work a fork must not split."""
    finish_background_closes()
    for ender in _IDLE_ENDERS:
        ender()


def start(*, work: Callable[[], T], fork: bool, background: bool = False) -> Pending[T]:
    """Begin `work` in a forked child when `fork`, else keep it for `Pending.finish`.

    `background`: work nothing waits for soon, run at a lower priority, so that it takes
    the cores only when the parent and other children leave them free.
    """
    if not fork:
        return Pending(pid=None, reader=None, work=work)
    _pickle()  # loaded before the fork, so neither side loads it after
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        if background:
            with contextlib.suppress(OSError):
                os.nice(10)
        _run_child(work=work, writer=writer)
    os.close(writer)
    return Pending(pid=pid, reader=reader, work=None)


def _run_child(*, work: Callable[[], object], writer: int) -> NoReturn:
    """Do the work, tell the parent how it went, and leave: never back into the parent's code
    (os._exit also flushes no buffer the parent filled and runs none of its exit handlers)."""
    code = _BUG
    try:
        code, message = _outcome(work=work)
        while message:
            message = message[os.write(writer, message) :]
    finally:
        os._exit(code)


def _outcome(*, work: Callable[[], object]) -> tuple[int, bytes]:
    try:
        # The parent handles Ctrl-C and termination; the child just stops with them.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
        gc.disable()  # it lives for one piece of work; collecting would only copy pages
        pickle = _pickle()
        value = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
    except OSError as exc:
        return _OS_ERROR, _text(shown=str(exc))
    except EvalBananaError as exc:
        try:
            return _EB_ERROR, _pickle().dumps(exc)
        except Exception:  # an error holding something unpicklable still gets its message
            return _BUG, _text(shown=exc.render())
    except BaseException as exc:  # a bug: the parent reports it
        return _BUG, _text(shown=f"{type(exc).__name__}: {exc}")
    return 0, value


def _text(*, shown: str) -> bytes:
    return shown[:_MESSAGE_LIMIT].encode("utf-8", errors="replace")


def _eb_error(*, pickled: bytes) -> BaseException:
    """The error the child pickled: written by this same process image a moment ago."""
    error = _pickle().loads(pickled)  # noqa: S301 - our own child's bytes, through our own pipe
    if isinstance(error, EvalBananaError):
        return error
    return ForkedWorkError(f"The forked work ended with an unreadable error: {error!r}")


def _pickle() -> ModuleType:
    """The pickle module, loaded on first use: most runs fork nothing and need none of it."""
    import pickle

    return pickle


def _unpickled(*, pickled: bytes) -> Any:
    """The value the child's work returned, pickled by this same process image."""
    return _pickle().loads(pickled)  # noqa: S301 - our own child's bytes, through our own pipe


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
