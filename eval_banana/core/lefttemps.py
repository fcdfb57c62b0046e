"""Temporary files eb's atomic writes left behind: a writer killed between writing its
temporary sibling and renaming it into place (`kill -9`, the OOM killer, a CI runner's last
resort) leaves `.<name>.<pid>.<n>.tmp` beside the file it was writing. Whoever takes such a
folder over to write it again (`eb update`, `eb stage`) removes them.

Only a name of exactly that form, a regular file, whose writer is gone: no process has its pid,
or the process that has it now started after the file was last written (the pid was reused).
A file named so by anything else, or one a live writer may still rename, is never touched.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from eval_banana.core.files import TEMP_SIBLING_NAME

# A start time is known to a clock tick and the boot time to a second: a process that started
# within this long of a file's last write may have written it.
_CLOCK_SLACK_SECONDS = 2.0
# In /proc/<pid>/stat after the command's closing parenthesis: the state, then 18 fields to the
# start time (in clock ticks since boot). A zombie (or a dead task) writes nothing more.
_STATE_FIELD = 0
_START_FIELD = 19
_ENDED_STATES = frozenset({b"Z", b"X", b"x"})


def remove_left_temp_files(*, folders: Iterable[Path]) -> list[Path]:
    """Remove from each of `folders` (not from the folders below them, which hold what checks
    wrote) the temporary files a writer that is gone left there; the paths removed. A folder
    that cannot be listed, or a file that cannot be removed, is passed over: the writes that
    follow tell what is wrong with the folder."""
    removed: list[Path] = []
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if not _left_by_a_writer_gone(entry):
                continue
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _left_by_a_writer_gone(entry: os.DirEntry[str]) -> bool:
    found = TEMP_SIBLING_NAME.fullmatch(entry.name)
    if found is None:
        return False
    try:
        if not entry.is_file(follow_symlinks=False):
            return False
        written_at = entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        return False
    return _writer_gone(pid=int(found["pid"]), written_at=written_at)


def _writer_gone(*, pid: int, written_at: float) -> bool:
    """Whether the process `pid` that wrote a file last at `written_at` is gone. Where eb
    cannot tell (not a POSIX system: os.kill would end the process there), it is not."""
    if os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's: its start time tells whether it can be the writer
    except (OSError, OverflowError):
        return False
    state, started_at = _process_state(pid=pid)
    if state in _ENDED_STATES:
        return True
    return started_at is not None and started_at > written_at + _CLOCK_SLACK_SECONDS


def _process_state(*, pid: int) -> tuple[bytes | None, float | None]:
    """The state letter of process `pid` and when it started (seconds since the epoch), from
    Linux's /proc; (None, None) where the system does not say."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as own, open("/proc/stat", "rb") as system:
            fields = own.read().rsplit(b")", 1)[1].split()
            boot_lines = [line for line in system.read().splitlines() if line.startswith(b"btime ")]
        state = fields[_STATE_FIELD]
        ticks = int(fields[_START_FIELD])
        booted = int(boot_lines[0].split()[1])
        per_second = os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None, None
    return state, booted + ticks / per_second
