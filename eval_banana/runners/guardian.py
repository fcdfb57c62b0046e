"""The guardian: a tiny process that ends a run's checks when eb itself is killed.

eb ends every process a check starts, however the check ends and however eb is stopped, as
long as eb can act (runners/orphans.py). SIGKILL leaves it no chance: its checks and judges
would run on, reparented to init. So while a run's checks execute, eb keeps one guardian
process: a plain Python script, started with the standard library only (`-I -S`) in a session
of its own, reading a pipe from eb. eb writes `+<pgid>` when a check's process group starts
and `-<pgid>` once it has ended it. When the pipe reaches its end while groups are listed, eb
is gone (the kernel closes a killed process's end of the pipe): the guardian SIGKILLs the
listed groups and, on Linux, every process whose environment carries a check token of that
eb process (a daemon that left its group), then exits. When the run ends normally, eb kills
the guardian first; it never acts on a living eb.

A pipe rather than Linux's parent-death signal: that signal follows the thread that started
the child, and eb starts checks from worker threads that end before the run does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


class Guardian:
    """eb's end of one guardian process: what it tells it, and how it ends it."""

    def __init__(self, *, token_prefix: str) -> None:
        import subprocess

        reader, self._writer = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", __file__, token_prefix],
                stdin=reader,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                # Its own session: Ctrl-C and a closed terminal reach eb, which ends its
                # checks itself; the guardian ends only with eb's end of the pipe.
                start_new_session=True,
            )
        except BaseException:
            os.close(self._writer)
            raise
        finally:
            os.close(reader)
        # A guardian that stopped reading must never block a check's start.
        os.set_blocking(self._writer, False)

    @property
    def pid(self) -> int:
        return self._process.pid

    def watch(self, *, pgid: int) -> None:
        self._say(f"+{pgid}\n")

    def forget(self, *, pgid: int) -> None:
        self._say(f"-{pgid}\n")

    def _say(self, line: str) -> None:
        # A guardian that is gone (killed with the rest of a container) changes nothing here.
        with contextlib.suppress(OSError):
            os.write(self._writer, line.encode("ascii"))

    def close(self) -> None:
        """The run ended normally: end the guardian before its pipe, so it never acts."""
        with contextlib.suppress(OSError):
            self._process.kill()
        self._process.wait()
        os.close(self._writer)


def start(*, token_prefix: str) -> Guardian | None:
    """A guardian for this process's checks, or None where it cannot start (no interpreter to
    run it, no processes left): the run goes on as it did without one."""
    try:
        return Guardian(token_prefix=token_prefix)
    except OSError:
        return None


# -- the guardian process itself (standard library only: run with -I -S, by path) ---------------


def _guard(*, token_prefix: bytes) -> None:
    groups: set[int] = set()
    for line in sys.stdin.buffer:
        word = line.strip()
        with contextlib.suppress(ValueError):
            if word.startswith(b"+"):
                groups.add(int(word[1:]))
            elif word.startswith(b"-"):
                groups.discard(int(word[1:]))
    # The end of the pipe with no kill first: eb is gone.
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    for _ in range(5):  # a killed daemon's own children may surface on the next look
        if not _kill_token_holders(token_prefix=token_prefix):
            break


def _kill_token_holders(*, token_prefix: bytes) -> int:
    """SIGKILL every process whose environment holds a token starting with `token_prefix`
    (and the group it leads); how many there were. Nothing where there is no /proc."""
    found = 0
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as file:
                    entries = file.read().split(b"\0")
            except OSError:
                continue
            if any(entry.startswith(token_prefix) for entry in entries):
                pid = int(name)
                with contextlib.suppress(OSError):
                    if os.getpgid(pid) == pid:
                        os.killpg(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                found += 1
    return found


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _guard(token_prefix=sys.argv[1].encode())
