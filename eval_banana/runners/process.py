"""Run one child process with its output streamed straight to files.

The child writes to the files itself (no pipe, nothing held in memory), runs in its own
session so its whole process group can be ended, and gets /dev/null as stdin (an inherited
stdin can hang a run).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple

from eval_banana.core.errors import WriteFault
from eval_banana.runners import orphans
from eval_banana.runners.faults import capture_fault

GRACE_SECONDS = 2.0
_POLL_SECONDS = 0.05


class ProcessOutcome(NamedTuple):
    exit_code: int | None
    timed_out: bool
    cancelled: bool
    stdout_path: Path | None  # None when the stream was empty (the file is removed)
    stderr_path: Path | None


def _end_group(*, pgid: int, proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the group, give it a short grace, then SIGKILL whatever is left."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=GRACE_SECONDS)
    _kill_group(pgid=pgid)


def _kill_group(*, pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _drop_if_empty(path: Path) -> Path | None:
    try:
        if path.stat().st_size == 0:
            path.unlink()
            return None
    except FileNotFoundError:
        return None
    return path


class _Watch:
    """One running child as the watchdog sees it."""

    def __init__(
        self,
        *,
        proc: subprocess.Popen[bytes],
        deadline: float | None,
        cancel: threading.Event,
    ) -> None:
        self.proc = proc
        self.deadline = deadline
        self.cancel = cancel
        self.timed_out = False
        self.cancelled = False
        self.ender: threading.Thread | None = None


class _Watchdog:
    """One thread that ends the groups of children past their deadline or cancelled.

    Shared by every check of the process: a watcher thread per child cost more to start and
    stop than a trivial check costs to run. Ending a group (grace, then SIGKILL) happens on its
    own thread, so one slow group never delays the others' deadlines.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._watches: set[_Watch] = set()
        self._thread: threading.Thread | None = None

    def add(self, watch: _Watch) -> None:
        with self._lock:
            self._watches.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="eb-watchdog", daemon=True)
                self._thread.start()
            self._lock.notify()

    def remove(self, watch: _Watch) -> None:
        with self._lock:
            self._watches.discard(watch)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._watches:
                    self._lock.wait()
                due = [watch for watch in self._watches if self._is_due(watch)]
                for watch in due:
                    self._watches.discard(watch)
                    watch.ender = threading.Thread(
                        target=_end_group,
                        kwargs={"pgid": watch.proc.pid, "proc": watch.proc},
                        name=f"end-{watch.proc.pid}",
                        daemon=True,
                    )
                    watch.ender.start()
            time.sleep(_POLL_SECONDS)

    @staticmethod
    def _is_due(watch: _Watch) -> bool:
        if watch.cancel.is_set():
            watch.cancelled = True
        elif watch.deadline is not None and time.monotonic() >= watch.deadline:
            watch.timed_out = True
        return watch.cancelled or watch.timed_out


_WATCHDOG = _Watchdog()


def run_process(
    *,
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    stdout_path: Path,
    stderr_path: Path,
    timeout_s: float | None,
    cancel: threading.Event,
) -> ProcessOutcome:
    """Run `argv` to completion, timeout or cancellation; raises OSError if it cannot start."""
    started = time.monotonic()
    out, err = _open_captures(stdout_path=stdout_path, stderr_path=stderr_path)
    # Every process of this check inherits the token, so its orphans can be found at the end.
    token = orphans.start_check()
    child_env = {**env, orphans.TOKEN_VAR: token}
    with out, err:
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except BaseException:
            out.close()
            err.close()
            stdout_path.unlink(missing_ok=True)
            stderr_path.unlink(missing_ok=True)
            orphans.end_check(token=token)
            raise
        orphans.launched(proc.pid)
    watch = _Watch(proc=proc, deadline=started + timeout_s if timeout_s else None, cancel=cancel)
    _WATCHDOG.add(watch)
    try:
        exit_code = proc.wait()
    finally:
        orphans.reaped(proc.pid)
        _WATCHDOG.remove(watch)
        if watch.ender is not None:
            watch.ender.join()
        # Children the check left behind in its group must not outlive it
        # (start_new_session makes the child its own group leader)...
        _kill_group(pgid=proc.pid)
        # ...nor daemons that left the group with setsid and were reparented to eb.
        orphans.end_check(token=token)
    for path in (stdout_path, stderr_path):
        fault = capture_fault(path=path)
        if fault is not None:
            raise fault  # the check's output may be cut short: no verdict can come from it
    return ProcessOutcome(
        exit_code=exit_code,
        timed_out=watch.timed_out,
        cancelled=watch.cancelled,
        stdout_path=_drop_if_empty(stdout_path),
        stderr_path=_drop_if_empty(stderr_path),
    )


def _open_captures(*, stdout_path: Path, stderr_path: Path) -> tuple[BinaryIO, BinaryIO]:
    """The check's two output files, new and empty; a folder eb cannot write is a WriteFault."""
    target = stdout_path
    try:
        stdout_path.parent.mkdir(parents=True, exist_ok=True)
        # Evidence may be hard-linked from another run folder (eb merge): write new files
        # instead of rewriting the shared ones.
        stdout_path.unlink(missing_ok=True)
        stderr_path.unlink(missing_ok=True)
        out = stdout_path.open("wb")
        target = stderr_path
        try:
            err = stderr_path.open("wb")
        except BaseException:
            out.close()
            raise
    except OSError as exc:
        raise WriteFault.of(path=target, exc=exc) from None
    return out, err


TAIL_CHARS = 2000


def bounded_tail(*, path: Path | None, stream: str, location: str) -> str:
    """eval-banana's bounded tail: the whole text, or a banner and the last 2000 chars.

    See docs/compatibility.md#report-json.
    """
    if path is None:
        return ""
    size = path.stat().st_size
    # UTF-8 needs at most 4 bytes per character, so this window always holds 2000 characters.
    window = 4 * TAIL_CHARS + 8
    with path.open("rb") as handle:
        if size > window:
            handle.seek(size - window)
        text = handle.read().decode("utf-8", errors="replace")
    if size <= window and len(text) <= TAIL_CHARS:
        return text
    return (
        f"[eval-banana: {stream} truncated to the last {TAIL_CHARS} characters; "
        f"full output at {location}]\n" + text[-TAIL_CHARS:]
    )
