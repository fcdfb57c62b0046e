"""Files on disk: atomic writes and digests (reading a stage file back: stagefiles.py)."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import os
import re
import select
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple, NoReturn

from eval_banana.core import canonjson
from eval_banana.core.errors import ResourceFault, WriteFault
from eval_banana.core.readback import open_regular, read_regular
from eval_banana.core.realpaths import real_path
from eval_banana.core.record import Record
from eval_banana.core.streams import flush_own_streams, own_stream_at

_TEMP_NAMES = itertools.count()
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
_BLOCK = 1 << 20
# Opening a device or FIFO a report is written into: never through a link, never making a
# terminal eb's controlling one, never creating anything (a file there is replaced instead).
_INTO_FLAGS = os.O_WRONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
# The mode of a folder only its owner may change: the verdict cache's. Another user who can
# write a folder can put their own files in place of eb's there (docs/fail-closed.md).
OWNER_ONLY_FOLDER = 0o700


# A check's output files in checks/: <stem>.stdout.txt, <stem>.stderr.txt, <stem>.prompt.txt,
# and a judge's <stem>.transcript.jsonl.
CHECK_OUTPUT_NAMES = ("stdout.txt", "stderr.txt", "prompt.txt", "transcript.jsonl")


def remove_check_outputs(
    *, checks_dir: Path, stem: str, names: tuple[str, ...] = CHECK_OUTPUT_NAMES
) -> None:
    """Remove `checks/<stem>.<name>` for each of `names` that is there (never written through:
    a restored file is a link to the verdict cache's copy)."""
    for name in names:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{checks_dir}/{stem}.{name}")


class OutputClearer:
    """Clears a check's output files before it runs, asking the file system only about those
    that can be there: the files `checks/` held when it was listed, and every output of a stem
    cleared before (an earlier attempt under it wrote them). A run of 10,000 in-process checks
    otherwise spent 40,000 failing `unlink` calls on files that never existed.

    List it once nothing but the checks themselves will write into `checks/`: after the
    verdict cache has placed what it restores.
    """

    def __init__(self, *, checks_dir: Path) -> None:
        self._checks_dir = checks_dir
        with os.scandir(checks_dir) as entries:
            self._listed = frozenset(entry.name for entry in entries)
        self._cleared: set[str] = set()
        self._lock = threading.Lock()

    def clear(self, *, stem: str) -> None:
        """Remove `checks/<stem>.<name>` for each output name that may be there."""
        with self._lock:
            again = stem in self._cleared
            self._cleared.add(stem)
        names: tuple[str, ...] = CHECK_OUTPUT_NAMES
        if not again:
            names = tuple(name for name in names if f"{stem}.{name}" in self._listed)
        remove_check_outputs(checks_dir=self._checks_dir, stem=stem, names=names)


def write_bytes_atomic(*, path: Path, data: bytes, folder_mode: int = 0o777) -> None:
    """Write `data` to `path` through a temporary sibling and a rename, never half a file.

    Plain descriptor calls, and the folder is made only when it is missing: a run writes one
    result file per check, and the buffered file object's extra system calls and a `mkdir` per
    file were most of what each write cost. `folder_mode`: the mode of each folder made
    (the umask takes bits away from it).
    """
    _write_atomic(path=path, fill=lambda fd: _write_all(fd=fd, data=data), folder_mode=folder_mode)


def write_bytes_if_none(*, path: Path, data: bytes) -> bool:
    """Put `data` at `path` whole unless a file is there already (or is put there meanwhile by
    another process): a temporary sibling linked into place, which fails rather than replace
    anything, so a reader sees no file or all of it. Whether this call put it there."""
    fd, tmp_name = _create_temp_sibling(path=path, folder_mode=0o777)
    try:
        try:
            _write_all(fd=fd, data=data)
        finally:
            os.close(fd)
        os.link(tmp_name, path)
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
    return True


def copy_file_atomic(*, source: str, target: str, temp_folder: str | None = None) -> None:
    """`source` copied to `target` through a temporary file renamed into place, never half a
    copy under `target`'s name; an OSError as it comes (the caller words it).

    The temporary file is named as every atomic write names it (`_create_temp_sibling`), so
    one a copier killed before its rename left is found and removed (core/lefttemps.py).
    `temp_folder`: where it goes instead of beside `target` (on the same file system), for a
    target in a folder that is not eb's own to clean."""
    place = Path(target) if temp_folder is None else Path(temp_folder) / os.path.basename(target)
    fd, tmp_name = _create_temp_sibling(path=place, folder_mode=0o777)
    try:
        try:
            with open(source, "rb", buffering=0) as readable:
                while block := readable.read(_BLOCK):
                    _write_all(fd=fd, data=block)
        finally:
            os.close(fd)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


def never_stop() -> bool:
    """The `stop` of a caller that has no way to be stopped: a wait with it waits for good."""
    return False


# How often a write into a FIFO looks again for a reader (or for room in the pipe), and so
# how soon it sees the run stopping.
_READER_POLL_SECONDS = 0.05


def write_named_file(
    *,
    path: Path,
    data: bytes,
    fix: str | None = None,
    stop: Callable[[], bool] = never_stop,
    opened: int | None = None,
) -> None:
    """Write a report to the path a user named (`--junit-xml`, `--result-out`): a regular file,
    or none yet, is replaced atomically (`write_bytes_atomic`); a character device or a FIFO
    there (`/dev/null`, a terminal, a pipe a reader waits on) is written into, as a shell's `>`
    writes, never replaced by a file. A link there is followed, as `>` follows it: its target
    is written (and the link kept), never the link replaced by a file (`--junit-xml
    /dev/stdout` as root replaced the system's link). A device or FIFO behind a link is opened
    through the link: `/dev/stdout` ends in a link of /proc's that names a pipe, which no path
    names (`pipe:[N]`). The very file eb's own stdout or stderr is open on (`--result-out
    /dev/stdout > out.txt`) is written through that descriptor, at its position, as `>` gives
    it: never replaced, which would lose what eb printed before and send what it prints after
    to a file no name reaches. A write that fails is a WriteFault naming `path`, whose hint is
    `fix`; the file an earlier run left there goes with it (`_replace_named`). The wait for a
    FIFO's reader, and for room in its pipe, ends once `stop()` says the run is stopping (a
    signal its handler only notes): a WriteFault then, nothing more written (`open_into`).
    `opened`: the descriptor `open_into` gave for `path` already (left open), written into."""
    if opened is not None:
        try:
            write_into(path=path, fd=opened, data=data, stop=stop)
        except OSError as exc:
            _raise_write_error(path=path, exc=exc)
        return
    stream = own_stream_at(path=path)
    if stream is not None:
        flush_own_streams()  # what eb printed before the report comes first
        try:
            _write_all(fd=stream, data=data)
        except OSError as exc:
            _raise_write_error(path=path, exc=exc)
        return
    link = path.is_symlink()
    if link and link_loop(path=path):  # made a loop since it was checked: `>` refuses it
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))
    # The file a link names, replaced whole; a device or FIFO is opened through the link.
    named = real_path(path) if link else path
    if not _written_into(path=path):
        _replace_named(named=named, link=link, data=data, fix=fix)
        return
    try:
        fd = _open_waiting(path=path, link=link, stop=stop)
    except FileNotFoundError:  # gone meanwhile: the report becomes a file of its own
        _replace_named(named=named, link=link, data=data, fix=fix)
        return
    except OSError as exc:
        _raise_write_error(path=path, exc=exc)
    try:
        # A regular file put in its place meanwhile is replaced whole, never written over.
        replace = stat.S_ISREG(os.fstat(fd).st_mode)
        if not replace:
            write_into(path=path, fd=fd, data=data, stop=stop)
    except OSError as exc:
        _raise_write_error(path=path, exc=exc)
    finally:
        os.close(fd)
    if replace:
        _replace_named(named=named, link=link, data=data, fix=fix)


def open_into(*, path: Path, stop: Callable[[], bool] = never_stop) -> int | None:
    """The descriptor a report is written into at `path` (`write_named_file(opened=...)`):
    the character device or FIFO there (a link followed), opened once a FIFO has a reader;
    None where the report is a file replaced whole or eb's own stdout or stderr. The wait for
    a reader is a loop that looks again every few hundredths of a second, not a blocking open
    (which Python retries after each signal, PEP 475): it ends with InterruptedError (an
    OSError) once `stop()` is true, a signal eb's handler only noted. Taken before the
    project's turn (reporting/projectturn.py), so no other run waits on a reader that never
    comes. The caller closes it."""
    if own_stream_at(path=path) is not None or not _written_into(path=path):
        return None
    try:
        fd = _open_waiting(path=path, link=path.is_symlink(), stop=stop)
    except InterruptedError:
        raise
    except OSError:
        return None  # `write_named_file` opens it again, and says what is wrong in its words
    if stat.S_ISREG(os.fstat(fd).st_mode):  # a file put there meanwhile: replaced, as above
        os.close(fd)
        return None
    return fd


def _open_waiting(*, path: Path, link: bool, stop: Callable[[], bool]) -> int:
    """The device or FIFO at `path` opened to write, non-blocking: a FIFO nobody reads yet
    (ENXIO) is opened again until a reader has it, or `stop()` (InterruptedError)."""
    flags = (_INTO_FLAGS & ~os.O_NOFOLLOW if link else _INTO_FLAGS) | os.O_NONBLOCK
    while True:
        try:
            return os.open(path, flags)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
        if stop():
            raise _stopped_waiting(path=path)
        time.sleep(_READER_POLL_SECONDS)


def _stopped_waiting(*, path: Path) -> InterruptedError:
    return InterruptedError(
        errno.EINTR,
        "the run was stopped while this report waited for a reader to take it",
        str(path),
    )


def write_into(*, path: Path, fd: int, data: bytes | memoryview, stop: Callable[[], bool]) -> None:
    """`data` written whole into the non-blocking `fd` that `open_into` gave for `path`; a
    full pipe waited on (its reader reads slowly) until `stop()` (InterruptedError, an
    OSError: the reader got part of it)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
            continue
        except BlockingIOError:
            pass
        if stop():
            raise _stopped_waiting(path=path)
        room = select.poll()
        room.register(fd, select.POLLOUT)
        room.poll(int(_READER_POLL_SECONDS * 1000))


def _replace_named(*, named: Path, link: bool, data: bytes, fix: str | None) -> None:
    """`write_bytes_atomic` of a report at the regular file `named` (a link's target when
    `link`). When it fails, the file an earlier run left there is removed (a link's target
    emptied, the link kept, as `>` keeps it): a JUnit file a green run left would otherwise
    be read by CI as this run's result. The fault says what became of it."""
    try:
        write_bytes_atomic(path=named, data=data)
    except WriteFault as fault:
        raise fault_clearing_earlier(fault=fault, path=named, keep_name=link, fix=fix) from None


class StaleFile(NamedTuple):
    """What became of the file an earlier run left where a report could not be written:
    `state` is none (no file was there), removed, emptied or kept (`cause`: why)."""

    state: Literal["none", "removed", "emptied", "kept"]
    cause: str = ""

    def told(self) -> str:
        """The words a fault tells after its cause ("" when no file was there)."""
        if self.state == "none":
            return ""
        if self.state == "kept":
            return (
                f"the earlier file there could not be removed or emptied either "
                f"({self.cause}), and it is not this run's: remove it"
            )
        return f"the earlier file there was {self.state}, so it is not read as this run's"


def fault_clearing_earlier(
    *, fault: WriteFault, path: Path, keep_name: bool = False, fix: str | None = None
) -> WriteFault:
    """`fault`, a report that could not be written at `path`, once the file an earlier run
    left there is cleared (`clear_stale_file`): told with what became of that file (the one
    place every report's fault says it), its hint `fix`; its class and what eb failed to do
    are kept. A ResourceFault is told as it is: what eb was doing, with its own fix."""
    earlier = clear_stale_file(path=path, keep_name=keep_name)
    if isinstance(fault, ResourceFault):
        return fault
    return fault.with_earlier(earlier=earlier.told(), hint=fix)


def clear_stale_file(*, path: Path, keep_name: bool = False) -> StaleFile:
    """Remove the regular file at `path` (with `keep_name`, or when it cannot be removed,
    empty it instead); what became of it. Never follows a link or opens anything else there."""
    if not keep_name:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return StaleFile(state="none")
        except OSError:
            pass  # a folder eb may not change: the file itself may still be emptied
        else:
            return StaleFile(state="removed")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return StaleFile(state="none")
    except OSError as exc:
        return StaleFile(state="kept", cause=exc.strerror or str(exc))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return StaleFile(state="none")  # no report of an earlier run: left as it is
        os.ftruncate(fd, 0)
    except OSError as exc:
        return StaleFile(state="kept", cause=exc.strerror or str(exc))
    finally:
        os.close(fd)
    return StaleFile(state="emptied")


def _written_into(*, path: Path) -> bool:
    """Whether `path` is a character device or a FIFO, or a link to one."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def link_loop(*, path: Path) -> bool:
    """Whether following `path` meets a symbolic link that leads back to itself (ELOOP): a
    shell's `>` refuses it ("Too many levels of symbolic links"), and no file is there to
    write, so a report named so is refused before a run, never renamed over the link."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


LOOP_FIX = "remove the link or point it at a file (a shell's `>` refuses it too)"


def never_written(*, path: Path) -> str | None:
    """What `path` is when no report may be written there, or None: a socket cannot be opened
    as a file, and a block device is a disk, never a report's place (checked before a run).
    A link is followed, as the write follows it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISBLK(mode):
        return "a block device (a disk)"
    return None


def write_parts_atomic(*, path: Path, parts: Iterable[bytes | memoryview]) -> None:
    """`write_bytes_atomic` of the bytes `parts` make, written one part after another."""

    def fill(fd: int) -> None:
        for part in parts:
            _write_all(fd=fd, data=part)

    _write_atomic(path=path, fill=fill)


def write_parts_digested(*, path: Path, parts: Iterable[bytes | memoryview]) -> str:
    """`write_parts_atomic`, returning the digest of the bytes written (hashed as each part
    goes out, never read back)."""
    digest = hashlib.sha256()

    def fill(fd: int) -> None:
        for part in parts:
            digest.update(part)
            _write_all(fd=fd, data=part)

    _write_atomic(path=path, fill=fill)
    return f"sha256:{digest.hexdigest()}"


def sha256_parts(*, parts: Iterable[bytes | memoryview]) -> str:
    """`sha256_bytes` of the bytes `parts` make, without joining them."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return f"sha256:{digest.hexdigest()}"


def write_pieces_atomic(*, path: Path, pieces: Iterable[str]) -> str:
    """Write the text `pieces` make, atomically, one piece encoded at a time (a character
    UTF-8 cannot hold, a lone surrogate, is written as '?'); return the digest of its bytes."""
    return write_parts_digested(
        path=path, parts=(piece.encode("utf-8", errors="replace") for piece in pieces)
    )


def _write_atomic(*, path: Path, fill: Callable[[int], None], folder_mode: int = 0o777) -> None:
    """`write_bytes_atomic`, the bytes written by `fill` into the temporary file's descriptor."""
    try:
        fd, tmp_name = _create_temp_sibling(path=path, folder_mode=folder_mode)
    except OSError as exc:
        _raise_write_error(path=path, exc=exc)
    try:
        try:
            fill(fd)
        finally:
            os.close(fd)
        os.replace(tmp_name, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError):
            _raise_write_error(path=path, exc=exc)
        raise


# A path that cannot name a file (a folder in the way, a file where a folder should be): the
# caller's setup error, which it words itself, not a fault of the machine.
_WRONG_PLACE = frozenset({errno.EISDIR, errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP})


def _raise_write_error(*, path: Path, exc: OSError) -> NoReturn:
    """Disk full, an I/O error, a read-only or forbidden folder are infrastructure: they abort
    the run naming the file (WriteFault), never a verdict or a traceback."""
    if exc.errno in _WRONG_PLACE:
        # Named by `path`: a failed rename names the temporary file first, whose name tells
        # the user nothing (`.<name>.<pid>.<n>.tmp`, "Is a directory", which it never was).
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    raise WriteFault.at(path=path, exc=exc) from None


def is_temp_sibling(*, name: str, of: str) -> bool:
    """Whether the file name `name` is a temporary file an atomic write of the file named `of`
    makes beside it (`.<of>.<pid>.<n>.tmp`) before renaming it into place."""
    return name.startswith(f".{of}.") and name.endswith(".tmp")


# The name `_create_temp_sibling` gives the temporary sibling of the file `<name>`, as
# `.<name>.<pid>.<n>.tmp` (a pid is never 0): how a leftover one tells which process wrote it.
TEMP_SIBLING_NAME = re.compile(
    r"\.(?P<name>.+)\.(?P<pid>[1-9][0-9]{0,9})\.(?:0|[1-9][0-9]{0,18})\.tmp"
)


def is_temp_file(name: str) -> bool:
    """Whether the file name `name` is a temporary file of any of eb's atomic writes."""
    return name.startswith(".") and name.endswith(".tmp")


def _create_temp_sibling(*, path: Path, folder_mode: int) -> tuple[int, str]:
    """A new, empty temporary file beside `path` (its folder made if missing, each folder
    made with `folder_mode`): (fd, name)."""
    made_folder = False
    while True:
        # Named as is_temp_sibling expects: watchers of the project tell it from a project file.
        tmp_name = f"{path.parent}/.{path.name}.{os.getpid()}.{next(_TEMP_NAMES)}.tmp"
        # Created with 0666 so the umask applies, as for any file the user writes (mkstemp
        # would make it 0600 and need a chmod); O_EXCL, so a clash with another writer is
        # retried under the next name.
        try:
            return os.open(tmp_name, _CREATE_FLAGS, 0o666), tmp_name
        except FileExistsError:
            continue
        except FileNotFoundError:
            if made_folder:
                raise
            make_folders(folder=path.parent, mode=folder_mode)
            made_folder = True


def make_folders(*, folder: Path, mode: int) -> None:
    """`folder` and those of its parents that are missing, each made with `mode` (which the
    umask can only take bits from: 0o700 stays owner-only under any umask). A file where a
    folder goes raises FileExistsError or NotADirectoryError, as `Path.mkdir` does."""
    try:
        os.mkdir(folder, mode)
    except FileNotFoundError:
        if folder.parent == folder:
            raise
        make_folders(folder=folder.parent, mode=mode)
        try:
            os.mkdir(folder, mode)
        except FileExistsError:
            if not folder.is_dir():
                raise
    except FileExistsError:
        if not folder.is_dir():
            raise


def entries_below(folder: Path) -> Iterator[os.DirEntry[str]]:
    """Every entry below `folder` that is no folder (files, links, FIFOs...), depth first;
    links to folders are not followed, and a folder that cannot be listed is passed over."""
    stack = [str(folder)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            else:
                yield entry


def _write_all(*, fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_bytes(*, path: str) -> bytes:
    """A whole (small) regular file's bytes through plain descriptor calls (a FIFO, socket or
    device is refused at once: readback.NotRegularFile, an OSError)."""
    return read_regular(path)


def sha256_and_size(*, path: str) -> tuple[str, int]:
    """`sha256:<hex>` and the size of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    size = 0
    fd = open_regular(path)
    try:
        while block := os.read(fd, _BLOCK):
            digest.update(block)
            size += len(block)
    finally:
        os.close(fd)
    return f"sha256:{digest.hexdigest()}", size


def write_text_atomic(*, path: Path, text: str) -> None:
    write_bytes_atomic(path=path, data=text.encode("utf-8"))


def stage_json_bytes(
    *, document: dict[str, Any] | Record, rendered: canonjson.Rendered | None = None
) -> bytes:
    """Canonical stage-file bytes: sorted keys, two-space indent, trailing newline.

    A Record is written as its `model_dump(mode="json", by_alias=True)` would be; `rendered`
    holds texts of Records inside it that are already known (see `canonjson.dumps`).
    """
    return (canonjson.dumps(document, sort_keys=True, rendered=rendered) + "\n").encode()


def sha256_file(*, path: Path) -> str:
    """`sha256:<hex>` of a file's exact bytes, read in blocks."""
    return sha256_and_size(path=str(path))[0]


def sha256_bytes(*, data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def write_model(*, path: Path, model: Record, rendered: canonjson.Rendered | None = None) -> str:
    """Write a stage document atomically, as `stage_json_bytes` gives it; return the digest of
    the bytes written."""
    return write_json_atomic(path=path, document=model, sort_keys=True, rendered=rendered)


def write_json_atomic(
    *,
    path: Path,
    document: Any,
    sort_keys: bool = False,
    rendered: canonjson.Rendered | None = None,
    end: str = "\n",
) -> str:
    """Write `canonjson.dumps(document)` and `end` atomically, piece by piece (the text of
    10,000 checks is never held whole); return the digest of the bytes written."""
    digest = hashlib.sha256()

    def fill(fd: int) -> None:
        def emit(text: str) -> None:
            data = text.encode()
            digest.update(data)
            _write_all(fd=fd, data=data)

        if not canonjson.dump(document, emit=emit, sort_keys=sort_keys, rendered=rendered):
            raise _OnlyJsonDumps
        emit(end)

    try:
        _write_atomic(path=path, fill=fill)
    except _OnlyJsonDumps:
        # Something in it only json.dumps writes (the temporary file is gone): its whole text.
        data = (canonjson.dumps(document, sort_keys=sort_keys, rendered=rendered) + end).encode()
        write_bytes_atomic(path=path, data=data)
        return sha256_bytes(data=data)
    return f"sha256:{digest.hexdigest()}"


class _OnlyJsonDumps(Exception):
    """A document the piecewise writer leaves to `json.dumps`."""
