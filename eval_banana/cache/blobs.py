"""The cache folder's blobs: stored output files, named by their SHA-256 and kept once however
often they are stored (`<dir>/blobs/<2 hex>/<64 hex>`).

A blob is read only after its digest is checked; one that does not match is damaged, and a
reader may discard it so the next store writes a sound copy. A blob is put back at its place
in a run folder as a hard link where the file system allows it, which is why a blob at the
file system's link limit is stored again as a file of its own.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, NamedTuple

from eval_banana.cache.places import (
    TAKEN,
    SlotTaken,
    blob_file,
    has_size,
    link_or_copy,
    make_cache_folder,
    replace_with,
    store_again,
    temp_sibling,
    write_into,
)
from eval_banana.core.errors import WriteFault
from eval_banana.core.files import sha256_and_size, sha256_bytes
from eval_banana.core.readback import NotRegularFile, open_regular
from eval_banana.core.turns import alone

_BLOCK = 1 << 20
EMPTY_SHA256 = "sha256:" + hashlib.sha256(b"").hexdigest()


class Blob(NamedTuple):
    sha256: str  # "sha256:<hex>"
    size: int


# A blob's file as its digest was checked: device, inode, size and modification time. A file
# that still shows the same four was not replaced or written to since (a write moves the time).
Identity = tuple[int, int, int, int]


def _identity(found: os.stat_result) -> Identity:
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)


class BlobStore:
    """The blobs of one cache folder."""

    def __init__(self, *, folder: Path) -> None:
        self.folder = folder
        # Bytes this store wrote since its last eviction (check threads store concurrently).
        self._added = 0
        self._added_lock = threading.Lock()
        # Blobs a restore found at the link limit while checks ran: stored again later.
        self._crowded: set[str] = set()

    def _grew(self, *, size: int) -> None:
        with self._added_lock:
            self._added += size

    def _take_added(self) -> int:
        with self._added_lock:
            added, self._added = self._added, 0
        return added

    def blob_path(self, *, sha256: str) -> Path:
        return Path(self._blob_file(sha256=sha256))

    def _blob_file(self, *, sha256: str) -> str:
        return blob_file(folder=self.folder, sha256=sha256)

    def put(self, *, source: Path, link: bool = True) -> Blob:
        """Store a file's content as a blob, named by its SHA-256 (kept once however often),
        read as a stream. `link`: the blob may be a hard link to `source`; False: always a copy
        (the source stays the only name of its file)."""
        sha256, size = sha256_and_size(path=str(source))
        blob = Blob(sha256=sha256, size=size)
        target = self.blob_path(sha256=blob.sha256)
        if size == 0 or has_size(target, size):
            return blob
        temp = temp_sibling(target)
        try:
            make_cache_folder(target.parent)
            if link:
                link_or_copy(source=source, target=temp)
            else:
                shutil.copyfile(source, temp)
            os.replace(temp, target)
        except TAKEN:
            raise SlotTaken(path=target) from None
        finally:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)
        self._grew(size=size)
        return blob

    def put_bytes(self, *, data: bytes) -> Blob:
        """Store `data` as a blob (kept once however often)."""
        blob = Blob(sha256=sha256_bytes(data=data), size=len(data))
        target = self.blob_path(sha256=blob.sha256)
        if not has_size(target, blob.size):
            write_into(path=target, data=data)
            self._grew(size=blob.size)
        return blob

    def receive(self, *, blob: Blob, fill: Callable[[BinaryIO], str | None]) -> str | None:
        """Store a blob whose content `fill` writes, in chunks, into a new temporary file
        beside its place. `fill` checks what it wrote and gives the problem that keeps it out,
        or None: only then is the file renamed into place. The temporary file never stays,
        whatever `fill` gives or raises. A local write that fails is a WriteFault."""
        target = self.blob_path(sha256=blob.sha256)
        temp = temp_sibling(target)
        try:
            try:
                make_cache_folder(target.parent)
                with open(temp, "xb") as file:
                    problem = fill(file)
                if problem is None:
                    os.replace(temp, target)
                    self._grew(size=blob.size)
            except TAKEN:
                raise SlotTaken(path=target) from None
            except OSError as exc:
                raise WriteFault(path=str(target), cause=exc.strerror or str(exc)) from None
            return problem
        finally:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)

    def open_blob(self, *, blob: Blob) -> BinaryIO | str:
        """A blob's file, open at its start after its digest was checked by reading it in
        blocks, or the problem (as `restore` says it). The caller closes it."""
        try:
            file = os.fdopen(_open_blob(self._blob_file(sha256=blob.sha256)), "rb")
        except NotRegularFile:
            return f"its stored file {blob.sha256} is damaged"
        except OSError as exc:
            return _unreadable(blob=blob, exc=exc)
        try:
            found = _digest_of(file=file)
            if found != (blob.sha256, blob.size):
                file.close()
                return f"its stored file {blob.sha256} is damaged"
            file.seek(0)
        except OSError as exc:
            file.close()
            return _unreadable(blob=blob, exc=exc)
        return file

    def restore(
        self,
        *,
        blob: Blob,
        target: str,
        discard_damaged: bool = False,
        checked: bool = False,
        renew: bool = False,
        seen: dict[str, Identity] | None = None,
    ) -> str | None:
        """Put a blob's content at `target` after checking its digest; the problem, or None.
        `checked`: the caller has just read this blob whole and matched its digest, so only
        its size is looked at again. `renew`: no check runs meanwhile, so a blob linked as
        often as the file system allows may be stored again now (`_link_renewing`); else it is
        copied, and stored again by `renew_crowded` once the checks have ended. `seen`: the
        blobs this caller's restores have checked so far, by their file's identity; a blob
        whose file is still that one is not read again (a replay links one blob for each of
        the 1,000 cases that printed alike), any other is checked and noted.

        `target`'s folder must exist. The file is a hard link to the blob where the file
        system allows it: creating a file costs many times a link, and a cached run restores
        one or two files per check. A file already at `target` is removed first, and the
        execute stage removes a check's output files before the check runs, so nothing ever
        writes through such a link into the cache.
        """
        if blob.size == 0 and blob.sha256 == EMPTY_SHA256:
            replace_with(target=target, place=lambda: open(target, "xb").close())
            return None
        source = self._blob_file(sha256=blob.sha256)
        try:
            if checked:
                info = os.lstat(source)
                if not stat.S_ISREG(info.st_mode) or info.st_size != blob.size:
                    return self._damaged(blob=blob, source=source, discard=discard_damaged)
            elif seen is None:
                if _checked_identity(path=source)[0] != (blob.sha256, blob.size):
                    return self._damaged(blob=blob, source=source, discard=discard_damaged)
            elif blob.sha256 not in seen or _identity(os.lstat(source)) != seen[blob.sha256]:
                found, identity = _checked_identity(path=source)
                if found != (blob.sha256, blob.size):
                    return self._damaged(blob=blob, source=source, discard=discard_damaged)
                seen[blob.sha256] = identity
            replace_with(
                target=target,
                place=lambda: self._link_renewing(source=source, target=target, renew=renew),
            )
        except NotRegularFile:
            # A link or another kind of file in a blob's place: never brought into a run.
            return self._damaged(blob=blob, source=source, discard=discard_damaged)
        except OSError as exc:
            return _unreadable(blob=blob, exc=exc)
        return None

    def _link_renewing(self, *, source: str, target: str, renew: bool) -> None:
        """`link_or_copy`, except for a blob at the file system's link limit (ext4: 65,000).
        A family's cases that print the same output share one blob, and every kept run folder
        holds a link to it: 65 runs of a 1,000-case family reach the limit. From then on each of
        those files was copied, run after run. The blob is stored again as a file of its own
        (run folders keep the old one), and links work for as long again: now with `renew`,
        else by `renew_crowded`."""
        try:
            os.link(source, target)
            return
        except FileExistsError:
            raise  # never copy onto a file that is there: it may be a link into the cache
        except OSError as exc:
            at_limit = exc.errno == errno.EMLINK
        if at_limit and renew:
            # A change in the cache: made only while no eb run's checks execute beside it.
            with alone(folder=self.folder) as mine, contextlib.suppress(OSError):
                if mine:
                    store_again(path=source)
                    os.link(source, target)
                    return
        elif at_limit:
            with self._added_lock:
                self._crowded.add(source)
        shutil.copyfile(source, target)

    @property
    def crowded(self) -> bool:
        """Whether a restore found a blob at the link limit while checks ran."""
        return bool(self._crowded)

    def renew_crowded(self) -> None:
        """Store again each blob a restore found at the link limit while checks ran, that
        still holds its digest. The caller holds the cache's turn (no run's checks execute)."""
        with self._added_lock:
            crowded, self._crowded = sorted(self._crowded), set()
        for path in crowded:
            with contextlib.suppress(OSError):
                if _checked_identity(path=path)[0][0] == "sha256:" + os.path.basename(path):
                    store_again(path=path)

    def read_blob(self, *, blob: Blob, discard_damaged: bool = False) -> bytes | str:
        """A blob's content after checking its digest, or the problem (as `restore` says it)."""
        source = self._blob_file(sha256=blob.sha256)
        try:
            data = _read_sized(path=source, size=blob.size)
        except NotRegularFile:
            return self._damaged(blob=blob, source=source, discard=discard_damaged)
        except OSError as exc:
            return _unreadable(blob=blob, exc=exc)
        if len(data) != blob.size or sha256_bytes(data=data) != blob.sha256:
            return self._damaged(blob=blob, source=source, discard=discard_damaged)
        return data

    def _damaged(self, *, blob: Blob, source: str, discard: bool) -> str:
        """Why a blob cannot be used; `discard`: remove it, so the next store writes a sound
        copy, in the cache's turn only (another run's watch takes any removal meanwhile for
        one of its checks', and a later reuse finds the damage again)."""
        if discard:
            with alone(folder=self.folder) as mine:
                if mine:
                    # A folder in its place is never removed (SlotTaken tells it on storing).
                    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                        os.unlink(source)
        return f"its stored file {blob.sha256} is damaged"


def _digest_of(*, file: BinaryIO) -> tuple[str, int]:
    """`sha256:<hex>` and the size of what is left to read of `file`, read in blocks."""
    digest = hashlib.sha256()
    size = 0
    while block := file.read(_BLOCK):
        digest.update(block)
        size += len(block)
    return f"sha256:{digest.hexdigest()}", size


def _read_sized(*, path: str, size: int) -> bytes:
    """A regular file's bytes, read as one piece when it holds the `size` expected (else one
    byte more than that at most, which is enough to refuse it): a replay's stage files and
    reports are megabytes each, and reading them in blocks joined them into a second copy."""
    fd = _open_blob(path)
    try:
        data = os.read(fd, size + 1)
        while 0 < len(data) <= size:  # a short read: what is left, and the end of the file
            more = os.read(fd, size + 1 - len(data))
            if not more:
                break
            data += more
    finally:
        os.close(fd)
    return data


def _checked_identity(*, path: str) -> tuple[tuple[str, int], Identity]:
    """`sha256:<hex>` and the size of a file, and its identity as it was read."""
    with os.fdopen(_open_blob(path), "rb") as file:
        # Taken before the read: a write while it reads moves the time, so the next restore
        # reads the blob again.
        identity = _identity(os.fstat(file.fileno()))
        return _digest_of(file=file), identity


def _open_blob(path: str) -> int:
    """A stored file's descriptor: a regular file of the cache, its link never followed (a
    link to a file outside the cache with the same content would be brought into run
    folders); NotRegularFile otherwise."""
    return open_regular(path, follow_links=False)


def _unreadable(*, blob: Blob, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"its stored file {blob.sha256} is missing"
    return f"its stored file {blob.sha256} cannot be read ({exc.strerror or exc})"
