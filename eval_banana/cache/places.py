"""Places in the cache folder, and how a file gets into one.

A blob's place is named by its digest (`blobs/<2 hex>/<64 hex>`). A file comes in through a
temporary sibling and a rename, or as a hard link where the file system allows it (a copy
else); a file already at a place outside the cache is removed, never written through, for it
may be a link to the cache's own copy. A place another kind of file holds is `SlotTaken`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from eval_banana.core.files import OWNER_ONLY_FOLDER, make_folders, write_bytes_atomic

_TEMP_NAMES = itertools.count()


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
TAKEN = (IsADirectoryError, NotADirectoryError, FileExistsError)


def hex_of(digest: str) -> str:
    return digest.split(":", 1)[1]


def blob_file(*, folder: Path, sha256: str) -> str:
    """Where the blob of digest `sha256` is kept in the cache `folder` (a plain string: the
    path every restore takes)."""
    hex_digest = hex_of(sha256)
    return f"{folder}/blobs/{hex_digest[:2]}/{hex_digest}"


def temp_sibling(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{next(_TEMP_NAMES)}.tmp")


def make_cache_folder(folder: Path) -> None:
    """A folder of the cache, and its missing parents, made owner-only whatever the umask."""
    make_folders(folder=folder, mode=OWNER_ONLY_FOLDER)


def has_size(path: Path, size: int) -> bool:
    """Whether a file of `size` bytes is stored at `path` (a folder or a symbolic link of
    that size is not)."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size == size


def write_into(*, path: Path, data: bytes) -> None:
    """`write_bytes_atomic` into the cache (the folders it makes owner-only): SlotTaken when
    another kind of file is in the way."""
    try:
        write_bytes_atomic(path=path, data=data, folder_mode=OWNER_ONLY_FOLDER)
    except TAKEN:
        raise SlotTaken(path=path) from None


def replace_with(*, target: str, place: Callable[[], None]) -> None:
    """Create `target` by `place`; a file already there (an earlier execution's) is removed
    first, never written through: it may be a link to the cache's own copy."""
    try:
        place()
    except FileExistsError:
        os.unlink(target)
        place()


def store_again(*, path: str) -> None:
    """`path` as a new file with the same content (under the same name, atomically)."""
    temp = temp_sibling(Path(path))
    try:
        shutil.copyfile(path, temp)
        os.replace(temp, path)
    finally:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)


def link_or_copy(*, source: str | Path, target: str | Path) -> None:
    """A hard link where possible (same file system), else a copy."""
    try:
        os.link(source, target)
    except FileExistsError:
        raise  # never copy onto a file that is there: it may be a link into the cache
    except OSError:
        shutil.copyfile(source, target)
