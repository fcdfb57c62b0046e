"""Run one child process with its output streamed straight to files.

The child writes to the files itself (no pipe, nothing held in memory), runs in its own
session so its whole process group can be ended, and gets /dev/null as stdin (an inherited
stdin can hang a run). A caller that wants the output as it comes (a judge's transcript) passes
an `OutputReader`: eb then reads both files while they grow and hands it every new piece, the
last ones once the child and its group are gone.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple, Protocol

from eval_banana.core.errors import ResourceFault, WriteFault, out_of_files
from eval_banana.runners import orphans
from eval_banana.runners.faults import capture_fault
from eval_banana.runners.watchdog import WATCHDOG, Watch, kill_group

# How long a check whose child died of a signal waits to learn whether the run is stopping: eb
# notes a SIGTERM or Ctrl-C on its main thread, which passes it on to the checks every 0.2 s.
STOP_NOTICE_SECONDS = 1.0
# How long a follower waits for the child when its files had nothing new, and how much of a
# file it reads at once.
_FOLLOW_SECONDS = 0.02
_FOLLOW_CHUNK = 1 << 20


class ProcessOutcome(NamedTuple):
    exit_code: int | None
    timed_out: bool
    cancelled: bool
    stdout_path: Path | None  # None when the stream was empty (the file is removed)
    stderr_path: Path | None


class OutputReader(Protocol):
    """Takes a child's output piece by piece while it runs (eval_banana.transcripts.live)."""

    def stdout(self, data: bytes) -> None: ...

    def stderr(self, data: bytes) -> None: ...

    def idle(self) -> bool:
        """Nothing new came: time for deferred work; whether there was any."""
        ...


class _Follower:
    """Reads the two output files as the child writes them, from the check's own thread."""

    def __init__(self, *, reader: OutputReader, stdout_path: Path, stderr_path: Path) -> None:
        self.reader = reader
        self.handles: list[tuple[BinaryIO, Callable[[bytes], None]]] = []
        try:
            for path, into in ((stdout_path, reader.stdout), (stderr_path, reader.stderr)):
                self.handles.append((path.open("rb"), into))
        except OSError as exc:
            self.close()
            if out_of_files(exc):  # a file eb reads, never one it failed to write
                raise ResourceFault.met(exc=exc, doing=f"opening {path} to read it") from None
            raise WriteFault.of(path=path, exc=exc) from None

    def pump(self) -> bool:
        """Hand over what is new in either file; whether there was anything."""
        moved = False
        for handle, into in self.handles:
            data = handle.read(_FOLLOW_CHUNK)
            if data:
                into(data)
                moved = True
        return moved

    def wait(self, proc: subprocess.Popen[bytes]) -> int:
        """Read while the child runs; its exit code."""
        exited = _exit_descriptor(pid=proc.pid)
        try:
            while True:
                moved = self.pump()
                code = proc.poll()
                if code is not None:
                    return code
                if moved or self.reader.idle():
                    continue
                if exited is None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        return proc.wait(timeout=_FOLLOW_SECONDS)
                else:
                    # Wakes the moment the child exits: Popen.wait(timeout=) polls with
                    # sleeps of up to 8 ms within a 20 ms window, which every judge paid.
                    select.select([exited], [], [], _FOLLOW_SECONDS)
        finally:
            if exited is not None:
                os.close(exited)

    def drain(self) -> None:
        """Everything left (the child and whatever it left behind are gone by now)."""
        while self.pump():
            pass

    def close(self) -> None:
        for handle, _ in self.handles:
            handle.close()
        self.handles = []


def _exit_descriptor(*, pid: int) -> int | None:
    """A descriptor that becomes readable when the child exits (Linux's pidfd), or None where
    the system has none; the child is not reaped yet, so its pid is still its own."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


def _drop_if_empty(path: Path) -> Path | None:
    """`path`, or None once it is removed for holding nothing (or gone). A removal the folder
    refuses (made read-only or immutable while the check ran) is a fault of the run that says
    so, never the check's own failure to start: the check ran."""
    try:
        if path.stat().st_size != 0:
            return path
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise WriteFault.of(path=path, exc=exc) from None
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        cause = exc.strerror or str(exc) or type(exc).__name__
        raise WriteFault(path=str(path), cause=cause, action="remove the empty file") from None
    return None


def run_process(
    *,
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    stdout_path: Path,
    stderr_path: Path,
    timeout_s: float | None,
    cancel: threading.Event,
    follow: OutputReader | None = None,
) -> ProcessOutcome:
    """Run `argv` to completion, timeout or cancellation; raises OSError if it cannot start
    (a ResourceFault when the system has no open file left for it).

    With `follow`, the output is handed to it while the child runs, and all of it by the time
    this returns."""
    started = time.monotonic()
    out, err = _open_captures(stdout_path=stdout_path, stderr_path=stderr_path)
    follower = None
    if follow is not None:
        try:
            follower = _Follower(reader=follow, stdout_path=stdout_path, stderr_path=stderr_path)
        except BaseException:
            out.close()
            err.close()
            raise
    try:
        exit_code, watch = _run(
            argv=argv,
            cwd=cwd,
            env=env,
            out=out,
            err=err,
            paths=(stdout_path, stderr_path),
            deadline=started + timeout_s if timeout_s else None,
            cancel=cancel,
            follower=follower,
        )
        if follower is not None:
            follower.drain()
    finally:
        if follower is not None:
            follower.close()
    for path in (stdout_path, stderr_path):
        fault = capture_fault(path=path)
        if fault is not None:
            raise fault  # the check's output may be cut short: no verdict can come from it
    return ProcessOutcome(
        exit_code=exit_code,
        timed_out=watch.timed_out,
        cancelled=watch.cancelled or _died_with_the_run(exit_code=exit_code, watch=watch),
        stdout_path=_drop_if_empty(stdout_path),
        stderr_path=_drop_if_empty(stderr_path),
    )


def _run(
    *,
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    out: BinaryIO,
    err: BinaryIO,
    paths: tuple[Path, Path],
    deadline: float | None,
    cancel: threading.Event,
    follower: _Follower | None,
) -> tuple[int, Watch]:
    """Start the child, wait for it (reading its output with a follower), end its group."""
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
        except BaseException as exc:
            out.close()
            err.close()
            for path in paths:
                path.unlink(missing_ok=True)
            orphans.end_check(token=token)
            # No pipe or null device left to start the child with: eb's fault, not the check's.
            fault = ResourceFault.during(exc=exc, doing=f"starting {argv[0]}")
            if fault is not None:
                raise fault from None
            raise
        orphans.launched(proc.pid)
    watch = Watch(proc=proc, deadline=deadline, cancel=cancel)
    WATCHDOG.add(watch)
    try:
        exit_code = proc.wait() if follower is None else follower.wait(proc)
    finally:
        orphans.reaped(proc.pid)
        WATCHDOG.remove(watch)
        if watch.ender is not None:
            watch.ender.join()
        # Children the check left behind in its group must not outlive it
        # (start_new_session makes the child its own group leader)...
        kill_group(pgid=proc.pid)
        orphans.group_ended(proc.pid)
        # ...nor daemons that left the group with setsid and were reparented to eb.
        orphans.end_check(token=token)
    return exit_code, watch


def _died_with_the_run(*, exit_code: int, watch: Watch) -> bool:
    """Whether a child killed by a signal was stopped with the run that signal stopped.

    A CI runner that cancels a job (or systemd stopping a service) signals eb and the check's
    process at once; the child may die before eb has noted the stop, let alone ended its group,
    and its death is then no verdict on the subject. A child that killed itself with a signal
    in a run that goes on is still failed: the run's stop does not come within the wait.
    """
    if exit_code >= 0 or watch.timed_out:
        return False
    return watch.cancel.wait(timeout=STOP_NOTICE_SECONDS)


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
