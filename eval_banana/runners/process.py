"""Run one child process with its output streamed straight to files.

The child writes to the files itself (no pipe, nothing held in memory), runs in its own
session so its whole process group can be ended, and gets /dev/null as stdin (D-21).
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
from typing import NamedTuple

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
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
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
            raise
    pgid = proc.pid  # start_new_session makes the child its own group leader
    done = threading.Event()
    verdict: dict[str, bool] = {"timed_out": False, "cancelled": False}

    def watch() -> None:
        deadline = None if not timeout_s else started + timeout_s
        while not done.wait(_POLL_SECONDS):
            if cancel.is_set():
                verdict["cancelled"] = True
            elif deadline is not None and time.monotonic() >= deadline:
                verdict["timed_out"] = True
            else:
                continue
            _end_group(pgid=pgid, proc=proc)
            return

    watcher = threading.Thread(target=watch, name=f"watch-{proc.pid}", daemon=True)
    watcher.start()
    try:
        exit_code = proc.wait()
    finally:
        done.set()
        watcher.join()
        # Children the check left behind in its group must not outlive it.
        _kill_group(pgid=pgid)
    return ProcessOutcome(
        exit_code=exit_code,
        timed_out=verdict["timed_out"],
        cancelled=verdict["cancelled"],
        stdout_path=_drop_if_empty(stdout_path),
        stderr_path=_drop_if_empty(stderr_path),
    )


TAIL_CHARS = 2000


def bounded_tail(*, path: Path | None, stream: str, location: str) -> str:
    """The contract's bounded tail (B-158): the whole text, or a banner and the last 2000 chars."""
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
