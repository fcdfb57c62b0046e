"""The files eb's own output goes to.

`eb run > eb.log 2>&1` sends eb's progress lines into a file that may sit inside the project:
eb writes it whenever a check ends, so a watch on the project must count it as eb's own, never
as a judge's change. A pipe (`eb run | tee eb.log`) hides the file behind another process, and a
terminal is no file: neither is found here.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

# eb's stdout and stderr.
_STREAMS = (1, 2)
Identity = tuple[int, int]


def _identity(status: os.stat_result) -> Identity:
    return (status.st_dev, status.st_ino)


def _stream_identities() -> dict[int, Identity]:
    """Each of stdout and stderr that is open on a regular file: its device and inode."""
    found: dict[int, Identity] = {}
    for fd in _STREAMS:
        with contextlib.suppress(OSError):
            status = os.fstat(fd)
            if stat.S_ISREG(status.st_mode):
                found[fd] = _identity(status)
    return found


def _named_path(fd: int) -> str | None:
    """The path the system names for an open descriptor (Linux's /proc, macOS's F_GETPATH)."""
    with contextlib.suppress(OSError):
        return os.readlink(f"/proc/self/fd/{fd}")
    if sys.platform == "darwin":
        import fcntl

        with contextlib.suppress(OSError, AttributeError):
            raw = fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024))
            return os.fsdecode(raw.split(b"\0", 1)[0])
    return None


def _is_file(path: str, identity: Identity) -> bool:
    """Whether `path` is the file `identity` names (a renamed or deleted one is not)."""
    try:
        return _identity(os.stat(path)) == identity
    except OSError:
        return False


def stream_files(*, among: Callable[[], Iterable[Path]] = tuple) -> list[Path]:
    """The regular files eb's stdout and stderr are open on, where the system names them; those
    it cannot name are looked for in `among()` (e.g. the project's files) by device and inode."""
    found: list[Path] = []
    unnamed: set[Identity] = set()
    for fd, identity in _stream_identities().items():
        path = _named_path(fd)
        if path is not None and _is_file(path, identity):
            found.append(Path(path))
        else:
            unnamed.add(identity)
    if unnamed:
        for candidate in among():
            with contextlib.suppress(OSError):
                if _identity(candidate.stat()) in unnamed:
                    found.append(candidate)
    return found


def own_stream_at(*, path: Path) -> int | None:
    """eb's own stdout or stderr (descriptor 1 or 2) when the file at `path`, its links
    followed, is the very file that stream is open on (`--result-out /dev/stdout` with eb's
    stdout sent to a file, or that file named itself); None otherwise."""
    try:
        target = _identity(os.stat(path))
    except OSError:
        return None
    for fd in _STREAMS:
        with contextlib.suppress(OSError):
            if _identity(os.fstat(fd)) == target:
                return fd
    return None


def flush_own_streams() -> None:
    """What eb has printed so far, out of Python's buffers: a report then written straight to
    the same descriptor comes after it. A stream that cannot take it says so in the write
    that follows (or, as stdout, raises its own fault)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
