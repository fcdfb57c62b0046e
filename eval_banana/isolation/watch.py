"""Which files of a tree were touched since the last look, from Linux's inotify.

Reading a 60,000-file project's state again after every judge costs a `git status` (every file
stat'ed). The kernel can say instead which paths were written, created, removed or moved (and,
when asked, which had their attributes changed: a chmod changes the mode git records): a watch
per folder is set once, and each look drains the events since the previous one. Callers confirm
a touched path by its content (a file saved unchanged is no change).

Where inotify is missing or refuses (the per-user watch limit), `TreeWatcher.open` returns None
and callers read the whole state instead; an event-queue overflow makes one look answer None
for the same reason.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import sys
import threading
from collections.abc import Iterable
from typing import Any

from eval_banana.core.closer import close_in_background

_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_MODIFY, _ATTRIB, _CLOSE_WRITE = 0x2, 0x4, 0x8
_MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF = 0x400, 0x800
_Q_OVERFLOW, _IGNORED, _ISDIR = 0x4000, 0x8000, 0x40000000
_ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK = 0x01000000, 0x02000000, 0x04000000
_MASK = (
    _MODIFY | _CLOSE_WRITE | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE | _DELETE_SELF
    | _MOVE_SELF | _ONLYDIR | _DONT_FOLLOW | _EXCL_UNLINK
)  # fmt: skip
_EVENT = struct.Struct("iIII")


def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1  # noqa: B018 - probe that the symbol exists
        return libc
    except (OSError, AttributeError):
        return None


class TreeWatcher:
    """inotify watches on a set of folders below `root`; `touched()` drains what changed."""

    def __init__(self, *, libc: Any, fd: int, root: str, mask: int = _MASK) -> None:
        self._libc = libc
        self._fd = fd
        self.root = root
        self._mask = mask
        self._folders: dict[int, str] = {}  # watch descriptor -> root-relative folder ("" = root)
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._lost = False

    @classmethod
    def open(
        cls,
        *,
        root: str,
        folders: Iterable[str],
        watch_root: bool = True,
        attributes: bool = False,
    ) -> TreeWatcher | None:
        """Watch each root-relative folder, and `root` itself unless `watch_root` is False;
        None where inotify cannot serve. `attributes`: a chmod (any change of a file's
        attributes, a `touch` too) touches it."""
        libc = _libc()
        if libc is None:
            return None
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        watcher = cls(libc=libc, fd=fd, root=root, mask=(_MASK | _ATTRIB) if attributes else _MASK)
        for folder in sorted({"", *folders} if watch_root else set(folders)):
            if not watcher._watch(folder):
                watcher.close()
                return None
        return watcher

    def _watch(self, folder: str) -> bool:
        """Add one folder; False only when the system refuses more watches."""
        path = os.path.join(self.root, folder) if folder else self.root
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), self._mask)
        if wd < 0:
            import ctypes

            code = ctypes.get_errno()
            # A folder gone meanwhile is no loss; a full watch table is.
            return code in (errno.ENOENT, errno.ENOTDIR, errno.EACCES)
        self._folders[wd] = folder
        return True

    def _walk_new_folder(self, folder: str) -> None:
        """A folder created (or moved in) after the watches: watch it and all that is in it."""
        stack = [folder]
        while stack:
            current = stack.pop()
            if not self._watch(current):
                self._lost = True
                return
            with contextlib.suppress(OSError), os.scandir(os.path.join(self.root, current)) as it:
                for entry in it:
                    relative = f"{current}/{entry.name}"
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(relative)
                    else:
                        self._pending.add(relative)

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                self._lost = True
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
                offset += _EVENT.size + length
                self._event(wd=wd, mask=mask, name=os.fsdecode(raw.rstrip(b"\0")))

    def _event(self, *, wd: int, mask: int, name: str) -> None:
        if mask & _Q_OVERFLOW:
            self._lost = True
            return
        folder = self._folders.get(wd)
        if folder is None or mask & _IGNORED:
            return
        if not name:
            if mask & (_DELETE_SELF | _MOVE_SELF):
                self._pending.add(folder)  # the folder itself went: everything in it
            return
        relative = f"{folder}/{name}" if folder else name
        if mask & _ISDIR:
            if mask & (_CREATE | _MOVED_TO):
                self._walk_new_folder(relative)
            else:
                self._pending.add(relative)  # removed or moved away: all it held
            return
        self._pending.add(relative)

    def touched(self) -> set[str] | None:
        """Root-relative paths touched since the last call (files, or folders that went);
        None when events were lost and the caller must read the whole state."""
        with self._lock:
            self._drain()
            lost, pending = self._lost, self._pending
            self._lost, self._pending = False, set()
        return None if lost else pending

    def close(self) -> None:
        # The kernel's teardown of the watches is slow: it overlaps what eb does next.
        fd, self._fd = self._fd, -1
        if fd >= 0:
            close_in_background(fd)
