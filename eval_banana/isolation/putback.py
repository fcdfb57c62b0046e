"""The calibration record as it stood before a run's checks (or a calibration's samples)
started, and put back so once the watch on eb's state saw it change meanwhile.

No eb process replaces the record while checks or samples run (`eb calibrate` waits for them
to end), so a change seen then is a check's or a judge's. Charging it makes that run fail, but
the file would stay for the next run's `require_calibration` gate to read: it is put back,
before the run lets another eb process write the record.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.errors import WriteFault
from eval_banana.core.files import write_bytes_atomic

# A record larger than this is no record eb wrote (a judge's entry is a few kilobytes): it is
# not held in memory, and is removed rather than put back if it changes.
_LARGEST = 64 * 1024 * 1024


class Saved(NamedTuple):
    """What stood at the record's path: `kind` "absent", "file" (its bytes and permission
    bits), "link" (its target) or "unknown" (a folder, an unreadable file: nothing to put
    back, so a change there ends with no record)."""

    kind: str
    data: bytes = b""
    mode: int = 0o644
    target: str = ""


def saved_record(*, path: str) -> Saved:
    """What stands at `path` now, the link itself rather than what it names."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return Saved(kind="absent")
    except OSError:
        return Saved(kind="unknown")
    if stat.S_ISLNK(info.st_mode):
        try:
            return Saved(kind="link", target=os.readlink(path))
        except OSError:
            return Saved(kind="unknown")
    if not stat.S_ISREG(info.st_mode) or info.st_size > _LARGEST:
        return Saved(kind="unknown")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return Saved(kind="unknown")
    try:
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError:
        return Saved(kind="unknown")
    finally:
        os.close(fd)
    return Saved(kind="file", data=b"".join(chunks), mode=stat.S_IMODE(info.st_mode))


def _remove(*, path: str) -> None:
    """Whatever stands at `path` (a folder whole), if anything."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def put_back(*, path: str, saved: Saved) -> str:
    """Make `path` hold `saved` again; what was done, as the run's warning says it (a failure
    included: the record may then still hold what a check wrote)."""
    try:
        if saved.kind == "file":
            if os.path.isdir(path) and not os.path.islink(path):
                _remove(path=path)
            write_bytes_atomic(path=Path(path), data=saved.data)
            os.chmod(path, saved.mode)
            return "put back as it was before they started"
        if saved.kind == "link":
            _remove(path=path)
            os.symlink(saved.target, path)
            return "put back (the link it was) as it was before they started"
        _remove(path=path)
    except (OSError, WriteFault) as exc:
        cause = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
        with contextlib.suppress(OSError):
            _remove(path=path)  # no record is safer than a forged one
        if not os.path.lexists(path):
            return (
                f"removed: it could not be put back as it was ({cause}); "
                "restore it from version control or run `eb calibrate`"
            )
        return (
            f"could NOT be put back or removed ({cause}): it may hold what a "
            "check wrote; restore it from version control or run `eb calibrate` before the "
            "next run"
        )
    if saved.kind == "absent":
        return "removed: there was none before they started"
    return "removed: what stood there before they started was no file eb could read back"
