"""Reading files back: only regular files, and JSON no deeper than a fixed bound.

Every file eb reads again (stage files, cache entries, kept runs, calibration records, check
files, the config) goes through `read_regular`: a FIFO in place of one would block the open
or the read forever, and a device or socket is no file eb wrote. `loads_json` refuses JSON
nested deeper than `OWN_FILES_DEPTH` before parsing it, in linear time, instead of letting the
parser run out of stack (a `RecursionError`). Both failures subclass the exceptions their
callers already turn into errors naming the file (OSError, ValueError).
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import stat
from typing import Any

from eval_banana.core.jsonvalues import lone_surrogate_in

# How deep what a user writes may nest: a check file, a dataset file, one line of a .jsonl file.
MAX_DEPTH = 200
# eb's own files hold those values a few levels down (plan.json: its checks, a check, the
# check's definition or case), so reading them back allows a margin over what was accepted.
OWN_FILES_DEPTH = MAX_DEPTH + 32
_BLOCK = 1 << 20
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotRegularFile(OSError):
    """A path eb reads names a FIFO, socket, device or folder, not a regular file."""


class TooDeep(ValueError):
    """A JSON document is nested deeper than the bound it is read with."""


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is ("a FIFO", "a folder", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str | os.PathLike[str], *, follow_links: bool = True) -> int:
    """A read-only descriptor of `path` when it is a regular file; NotRegularFile otherwise.

    Opened without blocking (a FIFO with no writer opens at once) and checked on the open
    descriptor, so nothing can swap the file between the check and the read. `follow_links`
    False: a symbolic link at `path` is no regular file either (a cache's stored file must be
    the cache's own, never one outside it a link names).
    """
    if follow_links:
        fd = os.open(path, _OPEN_FLAGS)
    else:
        try:
            fd = os.open(path, _OPEN_FLAGS | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise NotRegularFile(
                errno.ELOOP, "not a regular file (a symbolic link)", str(path)
            ) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"not a regular file ({file_kind(mode)})", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, _BLOCK):
        chunks.append(chunk)
    return b"".join(chunks)


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The whole content of a regular file (see `open_regular`)."""
    fd = open_regular(path)
    try:
        return _read_all(fd)
    finally:
        os.close(fd)


# What identifies a file's content without reading it: device, inode, size, and modification
# and change times in nanoseconds (what git's index trusts).
Stamp = tuple[int, int, int, int, int]


def _stamp_of(found: os.stat_result) -> Stamp:
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def path_stamp(path: str | os.PathLike[str]) -> Stamp | None:
    """The stamp of the file at `path` now, or None when it cannot be stat'ed."""
    try:
        return _stamp_of(os.stat(path))
    except OSError:
        return None


def read_regular_stamped(path: str | os.PathLike[str]) -> tuple[bytes, Stamp | None]:
    """`read_regular`, with the stamp of the file read: None when the file changed while it
    was read (the bytes may then be no version of it that ever was whole)."""
    fd = open_regular(path)
    try:
        before = _stamp_of(os.fstat(fd))
        data = _read_all(fd)
        after = _stamp_of(os.fstat(fd))
    finally:
        os.close(fd)
    return data, after if before == after and after[2] == len(data) else None


_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
# An opener one level down (1), a closer one up (0xff, which a signed byte reads as -1).
_DEPTH_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def _outside_strings(data: bytes) -> bytes:
    """`data` without the contents of its JSON strings (whose brackets are no nesting).

    Escaped backslashes go first, then escaped quotes: every quote left delimits a string, so
    every other piece between quotes is outside one. Plain bytes operations, no regex walk.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(data.split(b'"')[0::2])


def json_depth_exceeds(data: bytes, *, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text `data` nests deeper than `limit`, in one pass linear in its length.

    Strings are taken out first (their brackets are no nesting); the depth at a bracket is
    then the openers before it not yet closed. Openers after the last closer (a nest cut
    short, `[[[[`) are left to the parser, which says the text is not JSON. (The passes this
    replaces, each removing the innermost pairs, took 20 s per MB of 198-deep nests.)
    """
    if data.count(b"[") + data.count(b"{") <= limit:
        return False  # too few brackets to be that deep (the common, cheap answer)
    brackets = _outside_strings(data).translate(None, _NOT_BRACKETS).rstrip(b"[{")
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    return _opened_beyond(brackets=brackets, limit=limit)


# Brackets a block of the depth scan holds: a block that cannot reach the limit is counted
# whole (two C calls); only one that may is stepped through.
_DEPTH_BLOCK = 64


def _opened_beyond(*, brackets: bytes, limit: int) -> bool:
    """Whether some prefix of `brackets` (only `[]{}`) opens more than `limit` brackets it
    does not close. Block by block: the depth at a block's start plus its openers bounds the
    depth within it, and only a block whose bound passes `limit` is added up bracket by
    bracket (`accumulate`, in C)."""
    steps = memoryview(brackets.translate(_DEPTH_STEPS))
    depth = 0
    for start in range(0, len(brackets), _DEPTH_BLOCK):
        block = brackets[start : start + _DEPTH_BLOCK]
        opened = block.count(b"[") + block.count(b"{")
        if depth + opened > limit:
            inside = steps[start : start + _DEPTH_BLOCK].cast("b")
            if max(itertools.accumulate(inside, initial=depth)) > limit:
                return True
        depth += 2 * opened - len(block)
    return False


class ForeignValue(ValueError):
    """A JSON document holding what eb never writes: half a surrogate pair alone (`\\ud800`,
    which no UTF-8 file can hold, so the first file eb wrote with it would fail), or NaN."""


def loads_json(data: bytes | str, *, limit: int = OWN_FILES_DEPTH) -> Any:
    """`json.loads`, refusing a document nested beyond `limit` (TooDeep) or holding half a
    surrogate pair alone (ForeignValue); both are ValueErrors, as text that is not JSON is."""
    raw = data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else data
    if json_depth_exceeds(raw, limit=limit):
        raise TooDeep(f"nested deeper than {limit} levels")
    try:
        document = json.loads(data)
    except RecursionError:
        raise TooDeep(f"nested deeper than {limit} levels") from None
    found = lone_surrogate_in(text=raw, document=document)
    if found is not None:
        raise ForeignValue(f"holds {found.what}")
    return document


def read_json(path: str | os.PathLike[str]) -> Any:
    """A regular file's JSON document (NotRegularFile: an OSError; TooDeep: a ValueError)."""
    return loads_json(read_regular(path))
