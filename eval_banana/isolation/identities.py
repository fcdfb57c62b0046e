"""What the state watch compares of a file when no kernel event can tell of a change: its
identity (inode, size and times), and the hard-linked files of a run folder by content
identity."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable

Identity = tuple[int, int, int, int] | None


# A linked file's content identity: inode, size and modification time.
Content = tuple[int, int, int] | None


# A check's stem at the start of a name in checks/ (core/stem.py: `<safe id>-<sha256 hex>`).
_STEM = re.compile(r".*?-[0-9a-f]{64}(?![0-9a-f])")


def identity(path: str) -> Identity:
    """What any write changes: inode, size, modification and status-change times. A folder
    counts by its inode alone: what changes in it is its own entries' business (a file added
    to a watched folder is that file's change, never the whole folder's)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        return (info.st_ino, 0, 0, 0)
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def linked_files(folder: str, *, running: frozenset[str] = frozenset()) -> dict[str, Content]:
    """Every regular file below `folder` that has another name too (a hard link), by identity,
    but those of the stems in `running` (`<stem>.*`, `<stem>/`): eb replaces a running check's
    files itself (a stage rerun runs checks again in a folder that reused them before)."""
    found: dict[str, Content] = {}
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                listed = list(entries)
        except OSError:
            continue
        if current == folder and running:
            listed = [entry for entry in listed if _stem_of(entry.name) not in running]
        for entry in listed:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                stack.append(entry.path)
            elif stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                found[entry.path] = (info.st_ino, info.st_size, info.st_mtime_ns)
    return found


def content(path: str) -> Content:
    """A linked file's inode, size and modification time; None when it is gone."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _stem_of(name: str) -> str:
    """The check stem a name of `checks/` belongs to: `<stem>.<output>`, `<stem>.s<k>.<output>`
    (a sample) or the folder `<stem>`; a stem ends in `-<sha256 hex of the id>`."""
    found = _STEM.match(name)
    return found.group(0) if found else name


def listing(*, folders: Iterable[str], files: Iterable[str]) -> dict[str, Identity]:
    """Every entry of the folders and every file, by identity (the fallback's snapshot)."""
    found: dict[str, Identity] = {path: identity(path) for path in files}
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                names = [entry.path for entry in entries]
        except OSError:
            found[folder] = None
            continue
        for path in names:
            found[path] = identity(path)
    return found
