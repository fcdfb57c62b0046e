"""eb's files that a write through another name changes without a word from the folder watch.

inotify reports a write on the name written. A check that hard-links one of eb's files to a
name outside the watched folders and writes through that name changes the file, and the kernel
says nothing to the folder eb watches: not of the write, nor of the link (a link count is the
file's own attribute, told only to a watch on the file itself). So the files eb builds verdicts
on are noted before the first check and compared after the last:

- cache entries and kept runs, by inode, size and their first bytes, which hold the MAC over
  all the rest (a write that keeps the MAC leaves a file eb refuses to read anyway). Their
  times alone do not count: another eb run reusing an entry marks it as used. The first bytes
  are read again only of a file whose status-change time moved, which nothing else does.
- an earlier run folder's `report.json` and stage files, by inode, size, modification and
  status-change time: eb neither links nor marks them once they are written.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from typing import NamedTuple

# `{"mac": "hmac-sha256:<64 hex>", `: the MAC over the rest of an entry (core/mac.py).
SIGNED_HEAD = 89
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# The cache's signed files, two folders down (`entries/<2 hex>/<key>.json`, `runs/...`).
SIGNED_PARTS = ("entries", "runs")


class Signed(NamedTuple):
    """A signed file as it was: another file in its place, its size, its status-change time
    (when it did not move, nothing was written) and its first bytes."""

    inode: int
    size: int
    ctime_ns: int
    head: bytes


class Plain(NamedTuple):
    """A file eb never touches again once written: what any write changes."""

    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int


def _signed_files(cache: str) -> Iterator[str]:
    for part in SIGNED_PARTS:
        for group in _entries(os.path.join(cache, part)):
            if group.is_dir(follow_symlinks=False):
                yield from (entry.path for entry in _entries(group.path))


def _run_files(runs: Iterable[str]) -> Iterator[str]:
    for run in runs:
        yield os.path.join(run, "report.json")
        yield from (entry.path for entry in _entries(os.path.join(run, "stages")))


def _entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as found:
            return list(found)
    except OSError:
        return []


def _signed(path: str) -> Signed | None:
    """A regular file's identity and first bytes, read through one descriptor."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        head = os.pread(fd, SIGNED_HEAD, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    return Signed(inode=info.st_ino, size=info.st_size, ctime_ns=info.st_ctime_ns, head=head)


def _plain(path: str) -> Plain | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return Plain(
        inode=info.st_ino, size=info.st_size, mtime_ns=info.st_mtime_ns, ctime_ns=info.st_ctime_ns
    )


def _signed_changed(path: str, was: Signed) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return True
    if info.st_ctime_ns == was.ctime_ns:
        return info.st_ino != was.inode or info.st_size != was.size
    return _signed(path) != was._replace(ctime_ns=info.st_ctime_ns)


class InPlace:
    """eb's signed files and earlier run files as they were when the checks started."""

    def __init__(self, *, cache: str, runs: Iterable[str]) -> None:
        signed = ((path, _signed(path)) for path in _signed_files(cache))
        self._signed = {path: was for path, was in signed if was is not None}
        self._plain = {path: _plain(path) for path in _run_files(runs)}

    def changed(self) -> set[str]:
        """The noted files written (or replaced, or removed) since."""
        found = {path for path, was in self._plain.items() if _plain(path) != was}
        found.update(path for path, was in self._signed.items() if _signed_changed(path, was))
        return found
