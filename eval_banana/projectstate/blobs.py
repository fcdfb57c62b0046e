"""Git blob ids: the hash git computes over `blob <size>\\0<content>` for one file.

A file is identified by the id git would give its content and the mode git records for it
(regular, executable, symbolic link), so the same file keys the same whether git already knows
it (committed, staged) or we hash it ourselves (modified, untracked, or a project that is not a
git repository).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from typing import Literal, NamedTuple

ObjectFormat = Literal["sha1", "sha256"]

# The modes git records for a path: what it is, and for a file whether it may be run.
REGULAR = "100644"
EXECUTABLE = "100755"
SYMLINK = "120000"
SUBMODULE = "160000"  # a gitlink: the id is the commit the submodule records


class FileIdentity(NamedTuple):
    """What a project file counts by: git's mode for it and its blob id."""

    mode: str
    id: str


def git_mode(info: os.stat_result) -> str:
    """The mode git records for a file or link with this status (git looks at the owner's
    execute bit only)."""
    if stat.S_ISLNK(info.st_mode):
        return SYMLINK
    return EXECUTABLE if info.st_mode & stat.S_IXUSR else REGULAR


_BLOCK = 1 << 20
# Files up to this size are read in one call; larger ones are streamed in blocks.
_READ_WHOLE = 4 * _BLOCK


def _hasher(object_format: ObjectFormat) -> hashlib._Hash:
    # Object ids, not security: usedforsecurity=False keeps FIPS builds working.
    return hashlib.new(object_format, usedforsecurity=False)


def blob_id(*, data: bytes, object_format: ObjectFormat = "sha1") -> str:
    """The git blob id of `data` (hex)."""
    digest = _hasher(object_format)
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def _regular_file_id(*, path: str, object_format: ObjectFormat) -> str | None:
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size <= _READ_WHOLE:
            return blob_id(data=handle.read(), object_format=object_format)
        digest = _hasher(object_format)
        digest.update(b"blob %d\0" % size)
        seen = 0
        while block := handle.read(_BLOCK):
            digest.update(block)
            seen += len(block)
    if seen != size:
        # The file changed while it was read: the header no longer matches, hash it again.
        return _regular_file_id(path=path, object_format=object_format)
    return digest.hexdigest()


def file_identity(*, path: str, object_format: ObjectFormat = "sha1") -> FileIdentity | None:
    """The mode and blob id git would store for the file at `path`, or None when it is not a
    file.

    A symbolic link is identified by the path it points to, as git stores it; directories,
    sockets and files that vanished give None.
    """
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            target = os.fsencode(os.readlink(path))
            return FileIdentity(SYMLINK, blob_id(data=target, object_format=object_format))
        if not stat.S_ISREG(info.st_mode):
            return None
        found = _regular_file_id(path=path, object_format=object_format)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return None if found is None else FileIdentity(git_mode(info), found)


def _followed_file(*, path: str, object_format: ObjectFormat) -> FileIdentity | None:
    """The mode and blob id of the file `path` leads to, every link on the way followed; None
    when it leads to nothing, to a folder or other non-file, or round a loop of links."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return None
        found = _regular_file_id(path=path, object_format=object_format)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    return None if found is None else FileIdentity(git_mode(info), found)


def followed_identity(
    *, path: str, link: FileIdentity, object_format: ObjectFormat = "sha1"
) -> FileIdentity:
    """A symbolic link at `path` (`link`: its identity as git has it, its text's blob id) as a
    reader of it sees it: its text, since a retargeted link is a change, and the file it leads
    to now, wherever that lies (`-` when it leads to no file). git identifies a link by its
    text alone, so a file rewritten behind an unchanged link would otherwise be no change."""
    target = _followed_file(path=path, object_format=object_format)
    behind = "-" if target is None else f"{target.mode}:{target.id}"
    return FileIdentity(SYMLINK, f"{link.id}>{behind}")


def read_identity(*, path: str, object_format: ObjectFormat = "sha1") -> FileIdentity | None:
    """What reading the file at `path` depends on: a file's own identity (`file_identity`), a
    symbolic link's text and the file it leads to (`followed_identity`); None when no file or
    link is there. What a check reads (an artifact, a script, a dataset, an input) counts so."""
    found = file_identity(path=path, object_format=object_format)
    if found is None or found.mode != SYMLINK:
        return found
    return followed_identity(path=path, link=found, object_format=object_format)


def file_blob_id(*, path: str, object_format: ObjectFormat = "sha1") -> str | None:
    """The blob id git would store for the file at `path`, or None when it is not a file."""
    found = file_identity(path=path, object_format=object_format)
    return None if found is None else found.id


def same_content(*, path: str, other: str, object_format: ObjectFormat = "sha1") -> bool:
    """Whether two files are the same as the project's state counts them: the same mode and
    blob id, so a file saved unchanged is no change and a chmod -x is one (watching the
    project in place compares what it recorded the same way). Two regular files of different
    sizes differ unread."""
    try:
        mine, theirs = os.lstat(path), os.lstat(other)
    except (FileNotFoundError, NotADirectoryError):
        return False
    regular = stat.S_ISREG(mine.st_mode) and stat.S_ISREG(theirs.st_mode)
    if regular and mine.st_size != theirs.st_size:
        return False
    found = file_identity(path=path, object_format=object_format)
    return found is not None and found == file_identity(path=other, object_format=object_format)
