"""The cache folder on disk: entries, content-addressed blobs, LRU eviction by size.

    <dir>/entries/<2 hex>/<64 hex>.json   one verdict, named by its key
    <dir>/blobs/<2 hex>/<64 hex>          stored output files, named by their SHA-256
    <dir>/runs/<2 hex>/<64 hex>.json      a fully cached run, replayed whole (cache/replay.py)
    <dir>/secret.key                      the key of the MAC entries and runs carry (cache/mac.py)
    <dir>/size.json                       the folder's size as last known (cache/ledger.py)

Every file is written through a temporary sibling and a rename, so a reader never sees half a
file and two runs storing the same entry at once leave one valid entry. A hit touches its
entry's modification time; when the folder grows past its limit, the least recently used
entries go first, then the blobs no remaining entry names (the size ledger spares that walk
while the folder is far below its limit). An entry or kept run is read only with a valid MAC:
anything else is a miss, with the reason.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import json
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from eval_banana.cache.ledger import is_ledger, known_size, remember_size, walk_needed
from eval_banana.cache.mac import (
    SECRET_NAME,
    SecretUnusable,
    load_secret,
    mac_problem,
    secret_path,
    signed_text,
)
from eval_banana.core.errors import WriteFault
from eval_banana.core.files import read_bytes, sha256_and_size, sha256_bytes, write_bytes_atomic
from eval_banana.core.readback import TooDeep, loads_json, open_regular, read_json
from eval_banana.core.turns import alone

_TEMP_NAMES = itertools.count()
_BLOCK = 1 << 20
EMPTY_SHA256 = "sha256:" + hashlib.sha256(b"").hexdigest()


class SlotTaken(OSError):
    """Something that is not the cache's own file holds the place of one: a folder where an
    entry or a blob goes, a file where a group folder goes. Damaged content, not a machine
    that cannot write: the verdict is not stored and the run goes on (the caller warns). eb
    deletes nothing it did not write, so the warning names the path to remove."""

    def __init__(self, *, path: Path) -> None:
        found = "a folder" if path.is_dir() else "something other than a file"
        for folder in path.parents:
            if folder.exists() and not folder.is_dir():
                path, found = folder, "a file"
                break
        self.path = path  # what is in the way
        super().__init__(
            f"{path} is {found} where the cache keeps its own "
            f"{'folder' if found == 'a file' else 'file'}; remove it"
        )


# What writing into a place another kind of file holds raises (a folder in the way, a file
# where a folder should be, a parent folder that cannot be made for a file in its place).
_TAKEN = (IsADirectoryError, NotADirectoryError, FileExistsError)


class Blob(NamedTuple):
    sha256: str  # "sha256:<hex>"
    size: int


class EntryRead(NamedTuple):
    """An entry as read: its document, or why it could not be used (None, None: absent).
    `unverifiable`: the problem is the cache's secret, the same for every entry."""

    document: Any
    problem: str | None
    unverifiable: bool = False


class FileState(NamedTuple):
    """What tells a stored file changed: another file in its place, its size, its change time
    (which no one can set back)."""

    inode: int
    size: int
    ctime_ns: int


def _hex(digest: str) -> str:
    return digest.split(":", 1)[1]


def _temp_sibling(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{next(_TEMP_NAMES)}.tmp")


class CacheStore:
    """One cache folder."""

    def __init__(self, *, folder: Path, max_bytes: int) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self._secret: bytes | str | None = None  # loaded once, when first needed
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

    def secret(self, *, create: bool) -> bytes | str:
        """The key of the MACs, or why there is none; `create`: make it when absent."""
        if isinstance(self._secret, bytes):
            return self._secret
        if self._secret is None or (create and self._secret == "is missing"):
            self._secret = load_secret(folder=self.folder, create=create)
        return self._secret

    def _key(self) -> bytes:
        """The key to sign with, made on the first write to this cache."""
        found = self.secret(create=True)
        if isinstance(found, str):
            raise SecretUnusable(f"its secret {secret_path(folder=self.folder)} {found}")
        return found

    def entry_path(self, *, key: str) -> Path:
        return Path(self.entry_file(key=key))

    def blob_path(self, *, sha256: str) -> Path:
        return Path(self._blob_file(sha256=sha256))

    # Plain strings on the hot path: a cached run of 1,000 checks built 20,000 Path objects.
    def entry_file(self, *, key: str) -> str:
        """`entry_path` as a string (cheaper on the path every lookup takes)."""
        hex_key = _hex(key)
        return f"{self.folder}/entries/{hex_key[:2]}/{hex_key}.json"

    def replay_path(self, *, key: str) -> Path:
        hex_key = _hex(key)
        return self.folder / "runs" / hex_key[:2] / f"{hex_key}.json"

    def _blob_file(self, *, sha256: str) -> str:
        hex_digest = _hex(sha256)
        return f"{self.folder}/blobs/{hex_digest[:2]}/{hex_digest}"

    # -- entries ---------------------------------------------------------------------------

    def read(self, *, key: str) -> EntryRead:
        return self._read_signed(path=self.entry_file(key=key))

    def read_replay(self, *, key: str) -> EntryRead:
        return self._read_signed(path=str(self.replay_path(key=key)))

    def write(self, *, key: str, document: dict[str, Any]) -> str:
        """Store a verdict entry with its MAC; the digest of the bytes written."""
        data = json.dumps(document, indent=1, ensure_ascii=False).encode("utf-8") + b"\n"
        return self._write_signed(path=self.entry_path(key=key), text=data)

    def write_replay(self, *, key: str, document: dict[str, Any]) -> str:
        """Store a kept run with its MAC; the digest of the bytes written."""
        data = json.dumps(document, ensure_ascii=False).encode("utf-8") + b"\n"
        return self._write_signed(path=self.replay_path(key=key), text=data)

    def _write_signed(self, *, path: Path, text: bytes) -> str:
        data = signed_text(key=self._key(), text=text)
        _write_into(path=path, data=data)
        self._grew(size=len(data))
        return sha256_bytes(data=data)

    def read_at(self, *, path: str) -> EntryRead:
        """The entry or kept run stored at `path` (as `read` checks it)."""
        return self._read_signed(path=path)

    def _read_signed(self, *, path: str) -> EntryRead:
        """A stored document whose MAC holds, or why it cannot be used (None, None: absent)."""
        try:
            data = read_bytes(path=path)
        except FileNotFoundError:
            return EntryRead(document=None, problem=None)
        except OSError as exc:
            return EntryRead(document=None, problem=f"cannot be read ({exc.strerror or exc})")
        key = self.secret(create=False)
        if isinstance(key, str):
            problem = (
                f"cannot be checked: the cache's secret {secret_path(folder=self.folder)} {key}"
            )
            return EntryRead(document=None, problem=problem, unverifiable=True)
        forged = mac_problem(key=key, data=data)
        if forged is not None:
            return EntryRead(document=None, problem=forged)
        try:
            return EntryRead(document=loads_json(data), problem=None)
        except TooDeep as exc:
            return EntryRead(document=None, problem=f"is {exc}")
        except ValueError:
            return EntryRead(document=None, problem="is not valid JSON (truncated or foreign)")

    def drop(self, *, path: Path) -> bool:
        """Delete a stored entry or kept run (it is not to be trusted); whether it was there."""
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    def states(self) -> dict[str, FileState]:
        """Every stored entry and kept run now, and the secret, by path: what `states` later
        is compared to."""
        found: dict[str, FileState] = {}
        secret = str(secret_path(folder=self.folder))
        with contextlib.suppress(OSError):
            found[secret] = _state(os.stat(secret, follow_symlinks=False))
        for part in ("entries", "runs"):
            for path, info in _stats(self.folder / part):
                found[path] = _state(info)
        return found

    def touch(self, *, key: str) -> None:
        """Mark an entry as just used (least-recently-used eviction reads this)."""
        self.mark_used(key=key, touch=True)

    def mark_used(self, *, key: str, touch: bool) -> bool:
        """Whether an entry is stored; `touch`: also mark it as just used."""
        path = self.entry_file(key=key)
        try:
            if touch:
                os.utime(path)
            else:
                os.stat(path)
        except OSError:
            return False
        return True

    # -- blobs -----------------------------------------------------------------------------

    def put(self, *, source: Path, link: bool = True) -> Blob:
        """Store a file's content as a blob, named by its SHA-256 (kept once however often),
        read as a stream. `link`: the blob may be a hard link to `source`; False: always a copy
        (the source stays the only name of its file)."""
        sha256, size = sha256_and_size(path=str(source))
        blob = Blob(sha256=sha256, size=size)
        target = self.blob_path(sha256=blob.sha256)
        if size == 0 or _has_size(target, size):
            return blob
        temp = _temp_sibling(target)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if link:
                _link_or_copy(source=source, target=temp)
            else:
                shutil.copyfile(source, temp)
            os.replace(temp, target)
        except _TAKEN:
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
        if not _has_size(target, blob.size):
            _write_into(path=target, data=data)
            self._grew(size=blob.size)
        return blob

    def receive(self, *, blob: Blob, fill: Callable[[BinaryIO], str | None]) -> str | None:
        """Store a blob whose content `fill` writes, in chunks, into a new temporary file
        beside its place. `fill` checks what it wrote and gives the problem that keeps it out,
        or None: only then is the file renamed into place. The temporary file never stays,
        whatever `fill` gives or raises. A local write that fails is a WriteFault."""
        target = self.blob_path(sha256=blob.sha256)
        temp = _temp_sibling(target)
        try:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(temp, "xb") as file:
                    problem = fill(file)
                if problem is None:
                    os.replace(temp, target)
                    self._grew(size=blob.size)
            except _TAKEN:
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
            file = os.fdopen(open_regular(self._blob_file(sha256=blob.sha256)), "rb")
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
        keep_existing: bool = False,
    ) -> str | None:
        """Put a blob's content at `target` after checking its digest; the problem, or None.
        `checked`: the caller has just read this blob whole and matched its digest, so only
        its size is looked at again. `renew`: no check runs meanwhile, so a blob linked as
        often as the file system allows may be stored again now (`_link_renewing`); else it is
        copied, and stored again by `renew_crowded` once the checks have ended.
        `keep_existing`: a file already at `target` is left as it is and FileExistsError
        raised (two processes bringing one list from its two ends meet there).

        `target`'s folder must exist. The file is a hard link to the blob where the file
        system allows it: creating a file costs many times a link, and a cached run restores
        one or two files per check. A file already at `target` is removed first, and the
        execute stage removes a check's output files before the check runs, so nothing ever
        writes through such a link into the cache.
        """
        place_at = _create_only if keep_existing else _replace_with
        if blob.size == 0 and blob.sha256 == EMPTY_SHA256:
            place_at(target=target, place=lambda: open(target, "xb").close())
            return None
        source = self._blob_file(sha256=blob.sha256)
        try:
            if checked:
                if os.stat(source).st_size != blob.size:
                    return _damaged(blob=blob, source=source, discard=discard_damaged)
            elif sha256_and_size(path=source) != (blob.sha256, blob.size):
                return _damaged(blob=blob, source=source, discard=discard_damaged)
            place_at(
                target=target,
                place=lambda: self._link_renewing(source=source, target=target, renew=renew),
            )
        except OSError as exc:
            if keep_existing and isinstance(exc, FileExistsError):
                raise
            return _unreadable(blob=blob, exc=exc)
        return None

    def _link_renewing(self, *, source: str, target: str, renew: bool) -> None:
        """`_link_or_copy`, except for a blob at the file system's link limit (ext4: 65,000).
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
                    _store_again(path=source)
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
                if sha256_and_size(path=path)[0] == "sha256:" + os.path.basename(path):
                    _store_again(path=path)

    def read_blob(self, *, blob: Blob, discard_damaged: bool = False) -> bytes | str:
        """A blob's content after checking its digest, or the problem (as `restore` says it)."""
        source = self._blob_file(sha256=blob.sha256)
        try:
            data = read_bytes(path=source)
        except OSError as exc:
            return _unreadable(blob=blob, exc=exc)
        if len(data) != blob.size or sha256_bytes(data=data) != blob.sha256:
            return _damaged(blob=blob, source=source, discard=discard_damaged)
        return data

    # -- eviction --------------------------------------------------------------------------

    def evict(self) -> int:
        """Delete least recently used entries until the folder fits; return bytes freed.
        Far below the limit (by the size ledger) nothing is walked."""
        now = time.time()
        added = self._take_added()
        known = known_size(folder=self.folder, now=now)
        if known is not None and not walk_needed(
            known=known, added=added, max_bytes=self.max_bytes
        ):
            remember_size(
                folder=self.folder, size_bytes=known.size_bytes + added, walked_at=known.walked_at
            )
            return 0
        freed, left = self._evict_walking()
        remember_size(folder=self.folder, size_bytes=left, walked_at=now)
        return freed

    def _evict_walking(self) -> tuple[int, int]:
        """Walk the whole folder and evict until it fits: (bytes freed, bytes left)."""
        # The secret stays: without it every entry is a miss. The ledger is no stray file.
        files = [
            item
            for item in _files(self.folder)
            if not _is_secret(item[0]) and not is_ledger(item[0])
        ]
        total = sum(size for _, size, _ in files)
        if total <= self.max_bytes:
            return 0, total
        blobs_root = self.folder / "blobs"
        blobs = {str(path): size for path, size, _ in files if _within(path, blobs_root)}
        references: dict[str, int] = {}
        entry_blobs: dict[str, list[str]] = {}
        for path, _, _ in files:
            if path.suffix == ".json" and (
                _within(path, self.folder / "entries") or _within(path, self.folder / "runs")
            ):
                named = self._blobs_named(entry=path)
                entry_blobs[str(path)] = named
                for blob in named:
                    references[blob] = references.get(blob, 0) + 1
        freed = 0
        # Oldest first: entries, stray files and blobs no entry names all take their turn.
        candidates = sorted(
            (
                item
                for item in files
                if str(item[0]) not in blobs or not references.get(str(item[0]))
            ),
            key=lambda item: item[2],
        )
        for path, size, _ in candidates:
            if total - freed <= self.max_bytes:
                break
            freed += _remove(path, size)
            for blob in entry_blobs.get(str(path), []):
                references[blob] -= 1
                if references[blob] == 0 and blob in blobs:
                    freed += _remove(Path(blob), blobs[blob])
        return freed, total - freed

    def blobs_named(self, *, entry: Path) -> list[str]:
        """The blob paths an entry or kept run names (none when it cannot be read)."""
        return self._blobs_named(entry=entry)

    def _blobs_named(self, *, entry: Path) -> list[str]:
        try:
            document = read_json(entry)
            items = [
                *document.get("files", []),
                *document.get("templates", []),
                document.get("result_file"),
            ]
            return [
                str(self.blob_path(sha256=item["sha256"]))
                for item in items
                if isinstance(item, dict)
                and isinstance(item.get("sha256"), str)
                and item["sha256"].startswith("sha256:")
            ]
        except (OSError, ValueError, AttributeError, TypeError):
            return []


def _digest_of(*, file: BinaryIO) -> tuple[str, int]:
    """`sha256:<hex>` and the size of what is left to read of `file`, read in blocks."""
    digest = hashlib.sha256()
    size = 0
    while block := file.read(_BLOCK):
        digest.update(block)
        size += len(block)
    return f"sha256:{digest.hexdigest()}", size


def _damaged(*, blob: Blob, source: str, discard: bool) -> str:
    if discard:  # so the next store writes a sound copy
        with contextlib.suppress(FileNotFoundError):
            os.unlink(source)
    return f"its stored file {blob.sha256} is damaged"


def _unreadable(*, blob: Blob, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"its stored file {blob.sha256} is missing"
    return f"its stored file {blob.sha256} cannot be read ({exc.strerror or exc})"


def _state(info: os.stat_result) -> FileState:
    return FileState(inode=info.st_ino, size=info.st_size, ctime_ns=info.st_ctime_ns)


def _is_secret(path: Path) -> bool:
    return path.name == SECRET_NAME or path.name.startswith(f".{SECRET_NAME}.")


def _stats(folder: Path) -> Iterator[tuple[str, os.stat_result]]:
    """The regular files below `folder` (two levels: <2 hex>/<name>) and their stat."""
    try:
        with os.scandir(folder) as found:
            groups = [entry.path for entry in found if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for group in groups:
        try:
            with os.scandir(group) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        info = entry.stat(follow_symlinks=False)
                        yield entry.path, info
        except OSError:
            continue


def _has_size(path: Path, size: int) -> bool:
    """Whether a file of `size` bytes is stored at `path` (a folder of that size is not)."""
    try:
        info = path.stat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size == size


def _write_into(*, path: Path, data: bytes) -> None:
    """`write_bytes_atomic` into the cache: SlotTaken when another kind of file is in the way."""
    try:
        write_bytes_atomic(path=path, data=data)
    except _TAKEN:
        raise SlotTaken(path=path) from None


def _replace_with(*, target: str, place: Callable[[], None]) -> None:
    """Create `target` by `place`; a file already there (an earlier execution's) is removed
    first, never written through: it may be a link to the cache's own copy."""
    try:
        place()
    except FileExistsError:
        os.unlink(target)
        place()


def _create_only(*, target: str, place: Callable[[], None]) -> None:
    """Create `target` by `place`; a file already there stays, and FileExistsError is raised."""
    place()


def _store_again(*, path: str) -> None:
    """`path` as a new file with the same content (under the same name, atomically)."""
    temp = _temp_sibling(Path(path))
    try:
        shutil.copyfile(path, temp)
        os.replace(temp, path)
    finally:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)


def _link_or_copy(*, source: str | Path, target: str | Path) -> None:
    """A hard link where possible (same file system), else a copy."""
    try:
        os.link(source, target)
    except FileExistsError:
        raise  # never copy onto a file that is there: it may be a link into the cache
    except OSError:
        shutil.copyfile(source, target)


def _within(path: Path, folder: Path) -> bool:
    return folder in path.parents


def _remove(path: Path, size: int) -> int:
    try:
        path.unlink()
    except FileNotFoundError:
        return 0  # another run removed it first
    except OSError:
        return 0
    return size


def _files(folder: Path) -> Iterator[tuple[Path, int, float]]:
    """Every file below `folder`: (path, size, last use)."""
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                else:
                    info = entry.stat(follow_symlinks=False)
                    yield Path(entry.path), info.st_size, info.st_mtime
            except OSError:
                continue
