"""How eb runs sharing a folder take turns: a lock (the cache's `<cache>/.lock` file, an
output folder's own descriptor) that a run holds shared while its checks execute, and that a
run wanting to change the folder takes alone, never waiting. A run folder's own descriptor is
held alone by the one eb process writing it, for as long as it writes it.

A run's watch takes any change to eb's own files while its checks execute for a check's doing
(docs/fail-closed.md). Another eb run's writes would look the same: the verdicts it stores in a
shared cache, the old run folders `[core] keep_runs` deletes from a shared output folder. So
those are made only while no run's checks execute there, and otherwise left to a later run.
The cache folder itself too: a run whose checks execute while it is missing watches for it to
appear, and holds the folder it would be made in shared (`made_in_turn`). A cache folder there
without its lock file, which a run that stores nothing does not make, is held by the folder
itself (`sharing`), which a change to the cache takes too (`alone`).

A record eb rewrites whole at every run's end, which no watch counts (`lastfailed.json`), is
taken in turns by the file itself (`holding_file`): never by the folder, which every run's
checks hold shared, nor by a lock file, which would be one more file in the project. Only
while a link to no file stands in the record's place, which opens as no file to lock, is a
turn file beside it (a temporary file's name) held by the one process replacing the link.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from eval_banana.core.files import (
    OWNER_ONLY_FOLDER,
    make_folders,
    write_bytes_atomic,
    write_bytes_if_none,
)

try:
    import fcntl
except ImportError:  # no flock on this system: runs do not take turns
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".lock"
# How long a run's end waits for another process's turn at a record it rewrites whole
# (`holding_file`): another eb takes milliseconds; past this, something else holds it.
FILE_TURN_SECONDS = 30.0

# The folders (device, inode) this process holds alone by `waiting_alone_in_folder`: its own
# checks executing beside them share that turn already, and a shared lock taken on a second
# descriptor would wait for this process's own exclusive one forever.
_HELD_ALONE: set[tuple[int, int]] = set()


def nearest_folder(folder: Path) -> Path:
    """The folder `folder` would be made in: itself or its nearest ancestor that is there."""
    folder = folder.absolute()
    for candidate in (folder, *folder.parents):
        if candidate.is_dir():
            return candidate
    return Path(folder.anchor)


def made_in_turn(*, folder: Path) -> bool:
    """`folder` (a verdict cache), made when missing, with its lock file: owner-only, whatever
    the umask. A process whose checks execute while it is missing holds the folder it would be
    made in shared (`sharing`), and watches for it to appear: a cache appearing then is no
    check's to make, and goes whole. So it is made only while that folder is held alone, never
    waiting; False (nothing made) while another process's checks execute there, or this
    process's own (it holds that folder shared)."""
    if folder.is_dir():
        return True
    above = nearest_folder(folder)
    fd, busy = None, False
    with contextlib.suppress(OSError):
        if _identity(os.stat(above)) not in _HELD_ALONE:
            fd, busy = _lock_folder(folder=above, exclusive=True)
    if busy:
        return False
    with _closing(fd), contextlib.suppress(OSError):
        make_folders(folder=folder, mode=OWNER_ONLY_FOLDER)
        _make_lock_file(path=folder / LOCK_NAME)
    return True


def _make_lock_file(*, path: Path) -> None:
    os.close(_opened_lock_file(path=path))


def _opened_lock_file(*, path: Path) -> int:
    """The lock file at `path`, opened for reading (so holding it never looks like a write),
    made empty first when missing. O_CREAT without O_EXCL: processes making it at once each
    open the one file the first of them made, never a file of their own. OSError where the
    folder is missing or the file cannot be made."""
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)


def _open_lock(*, folder: Path, create: bool) -> int | None:
    """The folder's lock file, opened for reading; None without the folder or where it cannot
    be opened, and without the lock file unless `create`: the folder made when missing, in its
    turn (`made_in_turn`: None while another process's checks watch for it), and the lock
    file."""
    path = folder / LOCK_NAME
    try:
        if not create:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        if not made_in_turn(folder=folder):
            return None
        return _opened_lock_file(path=path)
    except OSError:
        return None


def _flock(*, folder: Path, create: bool, exclusive: bool) -> int | None:
    """The lock taken: shared (waiting for a writer) or exclusive (never waiting), on the lock
    file as it stands once taken (eviction may have removed the one opened); None if not."""
    if fcntl is None:
        return None
    for _ in range(5):
        fd = _open_lock(folder=folder, create=create)
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_SH)
            if os.fstat(fd).st_ino == os.stat(folder / LOCK_NAME).st_ino:
                return fd
        except OSError:
            pass
        os.close(fd)
        if exclusive:
            return None
    return None


def _lock_folder(
    *, folder: Path, exclusive: bool, wait: bool = False, make: bool = False
) -> tuple[int | None, bool]:
    """A lock on `folder` itself (flock on its descriptor: no file is added to it), shared or
    exclusive, waiting for it or not: (the descriptor holding it, or None; whether another
    run holds it). `make`: a missing folder is made first (as every other folder is, by the
    umask): a folder not there holds no lock, so two processes would each take a turn nobody
    shares, and the folder one of them makes meanwhile would be a change under the other."""
    if fcntl is None:
        return None, False
    try:
        if make:
            folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None, False
    try:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        fcntl.flock(fd, mode if wait else mode | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        return None, isinstance(exc, BlockingIOError)
    return fd, False


@contextlib.contextmanager
def _closing(fd: int | None) -> Iterator[None]:
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def sharing_folder(
    *, folder: Path, waits: Callable[[], None] = lambda: None
) -> contextlib.AbstractContextManager[None]:
    """Held (shared) on `folder` itself while a run's checks execute beside its contents
    (waiting while another run changes them, which `waits` says first); an output folder holds
    run folders only, so its lock is the folder, not a file in it. A folder not there yet is
    made first (the config folder of a project that has none: every run's end writes there).
    Nothing is taken where this process holds the folder alone already."""
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
    return _closing(_folder_shared(folder=folder, waits=waits))


def _folder_shared(*, folder: Path, waits: Callable[[], None]) -> int | None:
    """`folder` itself held shared, waiting while another process holds it alone (`waits` says
    so first): the descriptor holding it; None where the folder is not there (nothing is made
    here) or this process holds it alone already."""
    with contextlib.suppress(OSError):
        if _identity(os.stat(folder)) in _HELD_ALONE:
            return None
    fd, busy = _lock_folder(folder=folder, exclusive=False)
    if busy:
        waits()
        fd, _ = _lock_folder(folder=folder, exclusive=False, wait=True)
    return fd


def _folder_alone(*, folder: Path) -> tuple[int | None, bool]:
    """`folder` itself taken alone, never waiting: (the descriptor holding it, or None;
    whether another process holds it). Nothing is taken where this process holds it alone
    already."""
    with contextlib.suppress(OSError):
        if _identity(os.stat(folder)) in _HELD_ALONE:
            return None, False
    return _lock_folder(folder=folder, exclusive=True)


def _identity(status: os.stat_result) -> tuple[int, int]:
    return status.st_dev, status.st_ino


@contextlib.contextmanager
def alone_in_folder(*, folder: Path) -> Iterator[bool]:
    """Held (exclusive) on `folder` itself while eb changes its contents outside any run's
    checks; yields False, never waiting, while another run's checks execute beside them (and
    True where there is no lock to take: the changes say themselves why they fail)."""
    fd, busy = _lock_folder(folder=folder, exclusive=True)
    with _closing(fd):
        yield not busy


@contextlib.contextmanager
def waiting_alone_in_folder(
    *, folder: Path, waits: Callable[[], None], stop: Callable[[], bool] = lambda: False
) -> Iterator[None]:
    """Held (exclusive) on `folder` itself while eb changes a file in it that must not be left
    unwritten (a calibration measured at a cost); while another run's checks execute beside it,
    `waits` is called once and the turn is awaited (an interrupt ends the wait). Once `stop()`
    says the run is stopping (a signal its handler only notes), the wait ends without the
    turn: the file is written at once rather than never. A folder not there yet is made first,
    as `sharing_folder` makes it: the file is written into it anyway."""
    fd = _await_alone(folder=folder, waits=waits, stop=stop)
    with _closing(fd), _registered(fd=fd):
        yield


@contextlib.contextmanager
def turn_alone_in_folder(
    *, folder: Path, waits: Callable[[], None], stop: Callable[[], bool]
) -> Iterator[None]:
    """`waiting_alone_in_folder` for changes better not made than made in a stopping run (a
    run folder rebuilt from what is still there): once `stop()` says the run is stopping,
    while the turn is awaited or as it is taken, InterruptedError (an OSError) is raised and
    nothing is held."""
    fd = _await_alone(folder=folder, waits=waits, stop=stop)
    if stop():
        if fd is not None:
            os.close(fd)
        raise InterruptedError(
            errno.EINTR, "interrupted while waiting for its turn at the folder", str(folder)
        )
    with _closing(fd), _registered(fd=fd):
        yield


def _await_alone(
    *, folder: Path, waits: Callable[[], None], stop: Callable[[], bool]
) -> int | None:
    """`folder` taken alone, waiting while another process holds it (`waits` said once): its
    descriptor, or None where there is no lock to take or once `stop()` ends the wait."""
    told = False
    while True:
        fd, busy = _lock_folder(folder=folder, exclusive=True, make=True)
        if not busy or stop():
            return fd
        if not told:
            waits()
            told = True
        time.sleep(0.1)


@contextlib.contextmanager
def _registered(*, fd: int | None) -> Iterator[None]:
    """`fd`'s folder among those this process holds alone, while held."""
    if fd is None:
        yield
        return
    held = _identity(os.fstat(fd))
    _HELD_ALONE.add(held)
    try:
        yield
    finally:
        _HELD_ALONE.discard(held)


@contextlib.contextmanager
def sharing(
    *, folder: Path, create: bool, waits: Callable[[], None] = lambda: None
) -> Iterator[None]:
    """Held (shared) while a run's checks execute beside `folder`'s contents; `create`: make
    its lock file when missing, and the folder (`made_in_turn`: which the caller does first,
    before it holds the folder the cache would be made in). While the folder is missing, the
    folder it would be made in is held shared too (`sharing_folder`, `waits` said first while
    another process makes it): no other eb process makes it meanwhile, which this run's watch
    would take for a check's doing. A folder that is there without its lock file (a CI cache
    restored without it, a folder made by hand), which a process that stores nothing does not
    make (`--cache off`, `read-only`, `eb calibrate`: nothing in the folder is created), or that
    cannot be made, is held by the folder itself, shared: `alone` takes it too."""
    with contextlib.ExitStack() as stack:
        if not folder.is_dir():
            stack.enter_context(sharing_folder(folder=nearest_folder(folder), waits=waits))
        # Made meanwhile (awaited above), it is held as one found there.
        fd = _flock(folder=folder, create=create, exclusive=False)
        if fd is None:
            fd = _folder_shared(folder=folder, waits=waits)
        stack.enter_context(_closing(fd))
        yield


@contextlib.contextmanager
def alone(*, folder: Path) -> Iterator[bool]:
    """Held (exclusive) while eb changes `folder` outside any run's checks; yields False, never
    waiting, while another run's checks execute (then the change is left to a later run), and
    while the folder is missing and may not be made (`made_in_turn`). Both turns are taken:
    the lock file, and the folder itself, which checks that found no lock file hold
    (`sharing`)."""
    if not made_in_turn(folder=folder):
        yield False
        return
    held, busy = _folder_alone(folder=folder)
    with _closing(held):
        if busy:
            yield False
            return
        with _lock_file_alone(folder=folder) as ours:
            yield ours


@contextlib.contextmanager
def _lock_file_alone(*, folder: Path) -> Iterator[bool]:
    """`alone` on the folder's lock file (made when missing), never waiting."""
    fd = _open_lock(folder=folder, create=True)
    if fd is None or fcntl is None:
        if fd is not None:
            os.close(fd)
        yield True  # no lock to take: the changes say themselves why they fail, if they do
        return
    os.close(fd)
    fd = _flock(folder=folder, create=True, exclusive=True)
    with _closing(fd):
        yield fd is not None


def written_elsewhere(*, folder: Path) -> bool:
    """Whether another process holds `folder` itself alone right now (the eb process writing
    a run folder): a probe that keeps nothing, and never waits."""
    if fcntl is None:
        return False
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing the descriptor lets go of the probe's shared lock
    return False


def holder_pid(*, folder: Path) -> int | None:
    """The process holding `folder` itself alone, as the kernel lists its locks (Linux's
    /proc/locks); None where it does not say."""
    try:
        status = os.stat(folder)
        with open("/proc/locks", encoding="ascii", errors="replace") as listing:
            lines = listing.readlines()
    except OSError:
        return None
    # `<n>: FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF`; a process waiting
    # for the lock has a `->` line, which holds nothing.
    wanted = f"{os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}:{status.st_ino}"
    for line in lines:
        fields = line.split()
        if fields[1:4] == ["FLOCK", "ADVISORY", "WRITE"] and fields[5:6] == [wanted]:
            return int(fields[4]) if fields[4].isdigit() else None
    return None


@contextlib.contextmanager
def holding_file(
    *, path: Path, first: Callable[[], bytes], stop: Callable[[], bool] = lambda: False
) -> Iterator[None]:
    """Held (exclusive, waiting) on the file at `path` itself while eb reads it, changes it and
    replaces it whole by a rename (readers never see half of it): two eb processes ending
    together each read what the other wrote. No file is added: a missing one is first put
    there whole as `first()` gives it (a valid record of nothing); a symbolic link there to no
    file is replaced by it, as the rename of every rewrite replaces a link (`_replace_dangling`).
    A lock taken on a file replaced meanwhile is let go and taken on the new one. flock dies
    with the process, so an interrupted run leaves nothing locked. Every wait ends:
    TimeoutError (an OSError) when the file is not held by FILE_TURN_SECONDS (another process
    holds it, or it keeps changing), InterruptedError (an OSError) once `stop()` says the run
    is stopping (SIGTERM, Ctrl-C), and OSError when it cannot be made."""
    if fcntl is None:  # no flock on this system: the rename still keeps each file whole
        yield
        return
    deadline = time.monotonic() + FILE_TURN_SECONDS
    with _held(path=path, first=first, deadline=deadline, stop=stop, replaces_links=True):
        yield


@contextlib.contextmanager
def _held(
    *,
    path: Path,
    first: Callable[[], bytes],
    deadline: float,
    stop: Callable[[], bool],
    replaces_links: bool,
) -> Iterator[None]:
    """`holding_file` by `deadline`; `replaces_links`: a link to no file at `path` is replaced
    (else waited on: the turn file of that replacement is never one)."""
    while True:
        fd = _open_or_put(
            path=path, first=first, deadline=deadline, stop=stop, replaces_links=replaces_links
        )
        try:
            _take_turn(fd=fd, path=path, deadline=deadline, stop=stop)
            if _identity(os.fstat(fd)) == _identity(os.stat(path)):
                break
        except FileNotFoundError:
            pass  # removed since it was opened: open the one there now, or put one there
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        _pause(path=path, deadline=deadline, stop=stop)
    with _closing(fd):
        yield


def _open_or_put(
    *,
    path: Path,
    first: Callable[[], bytes],
    deadline: float,
    stop: Callable[[], bool],
    replaces_links: bool,
) -> int:
    """The file at `path`, opened for reading (holding it never looks like a write); a missing
    one put there first (never over one another process put there meanwhile), a link to no
    file replaced by it first (`replaces_links`)."""
    while True:
        try:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            pass
        if write_bytes_if_none(path=path, data=first()):
            continue
        # Something is there that opens as no file: a link to none, which `os.link` will not
        # replace. The record replaces it, as the record's own rewrite would (`>` through it
        # would make a file at its target, but the next rewrite renames over the link anyway).
        if replaces_links:
            _replace_dangling(path=path, first=first, deadline=deadline, stop=stop)
        _pause(path=path, deadline=deadline, stop=stop)


def turn_file(*, path: Path) -> Path:
    """The file whose holder alone may replace a link to no file at `path` (`_replace_dangling`):
    named as a temporary file beside `path`, which no watch counts, and there only meanwhile."""
    return path.with_name(f".{path.name}.turn.tmp")


def _replace_dangling(
    *, path: Path, first: Callable[[], bytes], deadline: float, stop: Callable[[], bool]
) -> None:
    """`path`, a symbolic link whose target is missing, replaced by the record `first()` gives
    (renamed over it). Whether it is such a link and its replacement are one step for every eb
    process: each takes them in the turn of `turn_file`, so a record another process put there
    meanwhile (and may have rewritten already) is never replaced: while the link is there, no
    other eb process can put or change anything at `path`, and only the turn's holder removes
    it. The turn file goes once the link is replaced; a process that opened it meanwhile finds
    it gone once its turn comes, and looks again. A looping link is left: opening it says
    ELOOP, an error of its own."""
    turn = turn_file(path=path)
    with _held(path=turn, first=lambda: b"", deadline=deadline, stop=stop, replaces_links=False):
        if _dangling(path=path):
            write_bytes_atomic(path=path, data=first())
        with contextlib.suppress(FileNotFoundError):
            os.unlink(turn)


def _dangling(*, path: Path) -> bool:
    """Whether `path` is a symbolic link whose target is missing."""
    try:
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            return False
    except FileNotFoundError:
        return False
    try:
        os.stat(path)
    except FileNotFoundError:
        return True
    return False


def _pause(
    *, path: Path, deadline: float, stop: Callable[[], bool], why: str = "it kept changing"
) -> None:
    """A short sleep before trying `path` again; TimeoutError past `deadline` (`why`: what
    went on meanwhile), InterruptedError once `stop()`."""
    if stop():
        raise InterruptedError(
            errno.EINTR, "interrupted while waiting for its turn at the file", str(path)
        )
    if time.monotonic() >= deadline:
        raise TimeoutError(
            errno.ETIMEDOUT,
            f"{why} for {FILE_TURN_SECONDS:.0f} s",
            str(path),
        )
    time.sleep(0.01)


def _take_turn(*, fd: int, path: Path, deadline: float, stop: Callable[[], bool]) -> None:
    """flock `fd` alone, waiting until `deadline` or `stop()` (`_pause`)."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            _pause(path=path, deadline=deadline, stop=stop, why="another process held it")
