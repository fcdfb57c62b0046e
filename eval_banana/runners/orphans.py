"""No process outlives its check, even one that double-forks a daemon and calls setsid.

Ending a check's process group (runners/process.py) misses a daemon: it left the group with
`setsid` and lost its parent. On Linux, eb makes itself a child subreaper for the run, so such
orphans become eb's own children instead of init's. Every check's processes inherit a token in
their environment; when a check ends, eb's orphaned children carrying that check's token are
killed (with their own process groups and every process below them, however deep), and when
the run ends, every process still carrying a token of this eb process is, wherever it is.
Elsewhere only the process group is ended, as before.

A daemon started with an environment of its own (`env={"PATH": ...}`) carries no token. It is
told from eb's own children by its session: every process eb starts for itself (git, its
forked helpers) stays in eb's session, except the checks and the guardian, whose pids eb
knows; a check runs in a session of its own, and nothing it starts can join eb's. So a child of
eb in another session that is neither is something a check left behind. Which check, eb cannot
tell while several run, so such a process is ended when a check ends while no other check is
running (the check that ran alone, or the last of the run), and before the subreaper role is
given up, so none is handed to init. Should eb itself be killed (SIGKILL, which it cannot
handle), its guardian ends what its checks left where it can (runners/guardian.py).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from eval_banana.core.log import Logger
from eval_banana.core.readback import read_regular
from eval_banana.runners import guardian

logger = Logger("eval_banana.runners.orphans")

TOKEN_VAR = "EVAL_BANANA_CHECK_TOKEN"
_PR_SET_CHILD_SUBREAPER = 36
# Scans until one finds nothing: a leftover is ended with every process below it, and what
# escaped that (a child forked before its parent was frozen) surfaces as eb's on the next scan.
# Bounded so that a check forking without end cannot hold its end forever.
_ROUNDS = 64
_FREEZE_WAIT = 0.05  # seconds a process is given to stop once sent SIGSTOP
_END_WAIT = 2.0  # seconds the processes of one killed tree are given to end before reaping

_lock = threading.Lock()
_reaping = threading.Lock()  # reaping by pid, where the kernel has no pidfds (see _Pinned)
_counter = itertools.count(1)
_launched: set[int] = set()  # check processes started by run_process and not yet reaped
_active: set[bytes] = set()  # tokens of checks that are still running
_runs = 0  # runs in progress in this process; the subreaper role lasts while one is
_subreaper = False  # whether this process is a child subreaper now
_guardian: guardian.Guardian | None = None  # ends the checks should eb be killed, while runs are


def _set_subreaper(*, on: bool) -> bool:
    """Turn the subreaper role on or off (Linux); False where the system has none."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def enable_subreaper() -> bool:
    """Make this process a child subreaper until the matching `end_run` (Linux).

    Scoped to runs, not to the process: a program that calls eb through its Python API (or a
    test runner that forks workers) must not keep collecting strangers' orphans once the run
    is over. Runs in one process at once share the role; the last to end gives it up.
    """
    global _runs, _subreaper, _guardian
    with _lock:
        _runs += 1
        if _runs == 1:
            _subreaper = _set_subreaper(on=True)
            _guardian = guardian.start(token_prefix=_own_prefix().decode())
        return _subreaper


def _release_subreaper() -> None:
    global _runs, _subreaper, _guardian
    with _lock:
        _runs = max(0, _runs - 1)
        if _runs == 0 and _guardian is not None:
            _guardian.close()
            _guardian = None
        if _runs == 0 and _subreaper:
            _set_subreaper(on=False)
            _subreaper = False


def start_check() -> str:
    """A token for a check about to start, unique to this eb process: `<eb pid>:<n>`."""
    token = f"{os.getpid()}:{next(_counter)}"
    with _lock:
        _active.add(_entry(token))
    return token


def _entry(token: str) -> bytes:
    return f"{TOKEN_VAR}={token}".encode()


def _own_prefix() -> bytes:
    return f"{TOKEN_VAR}={os.getpid()}:".encode()


def launched(pid: int) -> None:
    """A check's process started, leading a process group of its own."""
    with _lock:
        _launched.add(pid)
        if _guardian is not None:
            _guardian.watch(pgid=pid)


def group_ended(pgid: int) -> None:
    """The process group of a check was ended: the guardian need not end it."""
    with _lock:
        if _guardian is not None:
            _guardian.forget(pgid=pgid)


def reaped(pid: int) -> None:
    with _lock:
        _launched.discard(pid)


def _children(*, of: int | str = "self") -> set[int]:
    """The direct children (every thread's) of this process, or of the process `of`, from
    /proc.

    Read at every check's end, with plain os calls: a glob through pathlib and text decoding
    cost each check about ten times as much, all of it holding the interpreter lock."""
    pids: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{of}/task")
    except OSError:
        return pids
    for task in tasks:
        # A thread that ended meanwhile: its children are read on the next scan.
        with contextlib.suppress(OSError):
            pids.update(
                int(word) for word in read_regular(f"/proc/{of}/task/{task}/children").split()
            )
    return pids


def _token_of(pid: int) -> bytes | None:
    """The eb token in a process's environment, or None (gone, unreadable, or none set)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    marker = TOKEN_VAR.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(marker):
            return entry
    return None


class _Pinned:
    """One process, held so that eb signals and reaps that process and no other.

    A pid alone may name another process by the time eb acts on it: a leftover another thread
    reaped first, its number taken by a new check's process or by one of eb's helpers. Waiting
    on that number stole the new child's exit status from its own waiter (which then read 0: a
    pass). So each process is pinned with a pidfd (Linux 5.3+), checked to be the one found
    only once pinned, then signalled and reaped through the pidfd, never waited for. Where the
    kernel has no pidfds, signals go by pid and a process is reaped only once it is a zombie
    child of eb, under a lock all reaping here takes: only this module reaps a leftover (no
    waiter of eb's knows its pid), so no other thread can reap it first."""

    def __init__(self, *, pid: int, fd: int | None) -> None:
        self.pid = pid
        self.fd = fd

    @classmethod
    def pin(cls, *, pid: int, is_it: Callable[[int], bool]) -> _Pinned | None:
        """The process `pid`, if `is_it` holds of it once pinned and it can be signalled."""
        try:
            fd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:
            return None
        except (OSError, AttributeError):
            fd = None  # a kernel without pidfds
        pinned = cls(pid=pid, fd=fd)
        # Asked once pinned, and the process still there after the answer: the answer was
        # about the pinned process, not about one that took its number since.
        if is_it(pid) and pinned.signal(0):
            return pinned
        pinned.close()
        return None

    def signal(self, signum: int) -> bool:
        """Send `signum`; whether the process was there (and eb allowed) to take it."""
        try:
            if self.fd is not None:
                signal.pidfd_send_signal(self.fd, signum)
            else:
                os.kill(self.pid, signum)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def kill(self) -> None:
        """SIGKILL the process and, when it leads one, its process group."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            # A daemon that called setsid leads its own group; asked while it is alive, so
            # the group's number is still its own.
            if os.getpgid(self.pid) == self.pid and self.signal(0):
                os.killpg(self.pid, signal.SIGKILL)
        self.signal(signal.SIGKILL)

    def ended(self) -> bool:
        if self.fd is not None:  # a pidfd reads ready once its process has ended
            return bool(select.select([self.fd], [], [], 0)[0])
        return _state(self.pid) in {"Z", "X", None}

    def reap(self) -> None:
        """Collect the process's exit when it has ended and is eb's child; never wait."""
        if self.fd is not None:
            try:
                os.waitid(os.P_PIDFD, self.fd, os.WEXITED | os.WNOHANG)
                return
            except ChildProcessError:
                return  # not eb's, or reaped already
            except OSError:
                pass  # Linux 5.3 has pidfds but cannot wait on one: as without them
        with _reaping:
            if _state(self.pid) == "Z" and _parent_of(self.pid) == os.getpid():
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(self.pid, os.WNOHANG)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _kill(pid: int, *, is_it: Callable[[int], bool]) -> bool:
    """SIGKILL a process that `is_it` (asked once it is pinned), every process below it and
    the process group of each, and reap those that are, or became, eb's children; whether
    it was there to kill."""
    root = _Pinned.pin(pid=pid, is_it=is_it)
    if root is None:
        return False
    tree = [root, *_frozen_tree(root=root)]
    try:
        for process in tree:
            process.kill()
        _wait_ended(processes=tree)
        # Each that ended handed its children to eb (their subreaper), so all can be reaped.
        for process in tree:
            process.reap()
    finally:
        for process in tree:
            process.close()
    return True


def _wait_ended(*, processes: list[_Pinned]) -> None:
    """Wait, at most _END_WAIT, until every process has ended: a killed process is gone within
    a moment, but one stuck in the kernel may take longer (a later scan reaps it)."""
    deadline = time.monotonic() + _END_WAIT
    for process in processes:
        while not process.ended() and time.monotonic() < deadline:
            time.sleep(0.001)


def _frozen_tree(*, root: _Pinned) -> list[_Pinned]:
    """Every process below `root` (`root` too is stopped), parents first, each stopped with
    SIGSTOP before its children are read: a chain of daemons, each the parent of the next,
    cannot fork another level while it is walked, and is ended whole at once instead of one
    level per scan. A child is pinned, then checked to be the child of the process whose
    children named it: its number may have been taken meanwhile."""
    below: list[_Pinned] = []
    seen = {root.pid}
    waiting = [root] if _freeze(root) else []
    while waiting:
        parent = waiting.pop()
        for pid in sorted(_children(of=parent.pid) - seen):
            seen.add(pid)
            child = _Pinned.pin(pid=pid, is_it=functools.partial(_has_parent, parent=parent.pid))
            if child is None:
                continue
            if _freeze(child):
                below.append(child)
                waiting.append(child)
            else:
                child.close()
    return below


def _has_parent(pid: int, *, parent: int) -> bool:
    return _parent_of(pid) == parent


def _freeze(process: _Pinned) -> bool:
    """Stop a process and wait (briefly) until it has stopped; whether it could be signalled.
    A process eb may not signal is left alone: it may not be killed either."""
    if not process.signal(signal.SIGSTOP):
        return False
    deadline = time.monotonic() + _FREEZE_WAIT
    while _state(process.pid) not in {"T", "t", "Z", "X", None} and time.monotonic() < deadline:
        time.sleep(0.001)
    return True


def _parent_of(pid: int) -> int | None:
    """A process's parent's pid, from /proc, or None when it is gone."""
    try:
        stat = read_regular(f"/proc/{pid}/stat")
    except OSError:
        return None
    return int(stat.rsplit(b")", 1)[1].split()[1])


def _state(pid: int) -> str | None:
    """A process's state letter from /proc (`T`: stopped, `Z`: ended), or None when gone."""
    try:
        stat = read_regular(f"/proc/{pid}/stat")
    except OSError:
        return None
    return stat.rsplit(b")", 1)[1].split()[0].decode()


def end_check(*, token: str) -> int:
    """Kill the orphans of the check that carried `token`, and those no token names when no
    other check runs; return how many were found."""
    wanted = _entry(token)
    with _lock:
        _active.discard(wanted)
    if not _subreaper:
        return 0

    def scan() -> int:
        # Read outside the lock, which every check's start and end takes: with eight checks
        # at once, reading /proc under it queued them all behind each other. A child another
        # check starts meanwhile carries that check's token, so it is never taken for an orphan.
        children = _children()
        with _lock:
            candidates = children - _launched
        carries_it = functools.partial(_carries, token=wanted)
        return sum(_kill(pid, is_it=carries_it) for pid in candidates if carries_it(pid))

    found = _scan_until_none(scan=scan, what="the processes a check left behind")
    # After those: a killed daemon's own children, which carry no token, surface meanwhile.
    return found + _end_tokenless_leftovers()


def _carries(pid: int, *, token: bytes) -> bool:
    return _token_of(pid) == token


def _scan_until_none(*, scan: Callable[[], int], what: str) -> int:
    """Run `scan` (which ends what it finds and says how many) until one finds nothing, up to
    _ROUNDS times; how many were ended. Said when the last scan allowed still found some:
    something (`what`) may be left."""
    found = 0
    for _ in range(_ROUNDS):
        ended = scan()
        if not ended:
            return found
        found += ended
    logger.warning(
        "eb gave up ending %s after %d scans that each found more; some may still be running",
        what,
        _ROUNDS,
    )
    return found


def end_run() -> int:
    """Kill every process carrying a token of an ended check of this eb process, and the
    leftovers no token names when no check runs; return how many.

    Called when a run's checks are done, once for each `enable_subreaper`; checks of another
    run in this process are still active and keep theirs.
    """
    try:
        return _kill_ended_checks_processes() + (_end_tokenless_leftovers() if _subreaper else 0)
    finally:
        _release_subreaper()


def _end_tokenless_leftovers() -> int:
    """Kill eb's children that a check left behind with no token in their environment, when
    no check is running (one that is may have left them, or be starting one: a child between
    its fork and its exec has no token yet); how many there were. The lock is held meanwhile,
    so no check starts while eb looks."""
    with _lock:
        if _active:
            return 0
        return _scan_until_none(
            scan=_kill_tokenless_leftovers, what="the processes checks left behind"
        )


def _kill_tokenless_leftovers() -> int:
    """Kill those of eb's children in a session other than eb's that are neither a check's own
    process nor the guardian and carry no token: what a check left behind (see the module's
    docstring); how many. A zombie among them is reaped by the kill. Called with the lock held."""
    is_it = functools.partial(_left_without_token, session=os.getsid(0), own=_own_children())
    return sum(_kill(pid, is_it=is_it) for pid in _children() if is_it(pid))


def _own_children() -> set[int]:
    """The children of eb a check did not leave: the checks' own processes, the guardian."""
    own = set(_launched)
    if _guardian is not None:
        own.add(_guardian.pid)
    return own


def _left_without_token(pid: int, *, session: int, own: set[int]) -> bool:
    """Whether `pid` is a child of eb a check left with no token (see _kill_tokenless_leftovers).
    Asked again once the process is pinned: its number may since name another process, eb's
    own or none of eb's."""
    if pid in own or _parent_of(pid) != os.getpid():
        return False
    try:
        if os.getsid(pid) == session:
            return False  # git, a forked helper: eb's own
    except OSError:
        return False  # gone meanwhile
    return _token_of(pid) is None


def _kill_ended_checks_processes() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    prefix = _own_prefix()

    def scan() -> int:
        with _lock:
            running = set(_launched)
            active = set(_active)
        is_it = functools.partial(_of_an_ended_check, prefix=prefix, active=active)
        victims = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if pid in running or pid == os.getpid():
                continue
            if is_it(pid):
                victims.append(pid)
        return sum(_kill(pid, is_it=is_it) for pid in victims)

    return _scan_until_none(scan=scan, what="the processes of the run's checks")


def _of_an_ended_check(pid: int, *, prefix: bytes, active: set[bytes]) -> bool:
    """Whether `pid` carries the token of a check of this eb process that has ended."""
    token = _token_of(pid)
    return token is not None and token.startswith(prefix) and token not in active
