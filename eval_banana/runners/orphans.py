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
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
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

_lock = threading.Lock()
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


def _kill(pid: int, *, own_child: bool) -> None:
    """SIGKILL a process, every process below it and the process group of each; reap it when
    it is our child, and those below it that became ours as their parents died."""
    below = _frozen_tree(root=pid)
    for victim in [pid, *below]:
        _kill_one(victim)
    if own_child:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        # Parents first: once one is reaped, its children are ours (eb is their subreaper).
        for victim in below:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(victim, 0)


def _kill_one(pid: int) -> None:
    """SIGKILL a process and, when it leads one, its process group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        pgid = os.getpgid(pid)
        if pgid == pid:  # a daemon that called setsid leads its own group
            os.killpg(pgid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _frozen_tree(*, root: int) -> list[int]:
    """Every process below `root` (`root` too is stopped), parents first, each stopped with
    SIGSTOP before its children are read: a chain of daemons, each the parent of the next,
    cannot fork another level while it is walked, and is ended whole at once instead of one
    level per scan."""
    below: list[int] = []
    seen = {root}
    waiting = [root] if _freeze(root) else []
    while waiting:
        for child in sorted(_children(of=waiting.pop()) - seen):
            seen.add(child)
            if _freeze(child):
                below.append(child)
                waiting.append(child)
    return below


def _freeze(pid: int) -> bool:
    """Stop a process and wait (briefly) until it has stopped; whether it could be signalled.
    A process eb may not signal is left alone: it may not be killed either."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except (ProcessLookupError, PermissionError):
        return False
    deadline = time.monotonic() + _FREEZE_WAIT
    while _state(pid) not in {"T", "t", "Z", "X", None} and time.monotonic() < deadline:
        time.sleep(0.001)
    return True


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
    found = 0
    for _ in _rounds(what="the processes a check left behind"):
        # Read outside the lock, which every check's start and end takes: with eight checks
        # at once, reading /proc under it queued them all behind each other. A child another
        # check starts meanwhile carries that check's token, so it is never taken for an orphan.
        children = _children()
        with _lock:
            candidates = children - _launched
        orphans = [pid for pid in candidates if _token_of(pid) == wanted]
        if not orphans:
            break
        for pid in orphans:
            _kill(pid, own_child=True)
        found += len(orphans)
    # After those: a killed daemon's own children, which carry no token, surface meanwhile.
    return found + _end_tokenless_leftovers()


def _rounds(*, what: str) -> Iterator[int]:
    """The scans of one search, up to _ROUNDS; the caller stops at one that finds nothing.
    Said when the bound is reached: something (`what`) may be left."""
    yield from range(_ROUNDS)
    logger.warning(
        "eb gave up ending %s after %d scans that each found more; some may still be running",
        what,
        _ROUNDS,
    )


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
    found = 0
    with _lock:
        if _active:
            return 0
        for _ in _rounds(what="the processes checks left behind"):
            leftovers = _tokenless_leftovers(children=_children())
            if not leftovers:
                break
            for pid in leftovers:
                _kill(pid, own_child=True)
            found += len(leftovers)
    return found


def _tokenless_leftovers(*, children: set[int]) -> list[int]:
    """Of eb's `children`, those in a session other than eb's that are neither a check's own
    process nor the guardian and carry no token: what a check left behind (see the module's
    docstring). A zombie among them is reaped by the kill."""
    session = os.getsid(0)
    own = set(_launched)
    if _guardian is not None:
        own.add(_guardian.pid)
    found: list[int] = []
    for pid in children - own:
        try:
            if os.getsid(pid) == session:
                continue  # git, a forked helper: eb's own
        except OSError:
            continue  # gone meanwhile
        if _token_of(pid) is None:
            found.append(pid)
    return found


def _kill_ended_checks_processes() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    prefix = _own_prefix()
    found = 0
    for _ in _rounds(what="the processes of the run's checks"):
        children = _children()
        with _lock:
            running = set(_launched)
            active = set(_active)
        victims = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if pid in running or pid == os.getpid():
                continue
            token = _token_of(pid)
            if token is not None and token.startswith(prefix) and token not in active:
                victims.append(pid)
        if not victims:
            break
        for pid in victims:
            _kill(pid, own_child=pid in children)
        found += len(victims)
    return found
