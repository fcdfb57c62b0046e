"""Keeping the cache folder within its size limit: the most recently used verdicts that fit stay.

Only eb's own files are counted and removed, each known by its place in the layout
(cache/store.py): entries (`entries/<2 hex>/<64 hex>.json`), kept runs (`runs/<2 hex>/<64
hex>.json`) and blobs (`blobs/<2 hex>/<64 hex>`). Anything else is never touched, whoever put
it there: the folder's mark and lock, the secret and the size ledger, and the user's own files
in a folder named as the cache that holds them too. A temporary file of eb's atomic writes in
one of those groups is removed once its writer is gone (core/lefttemps.py), as a folder eb
writes again drops them; one a live writer may still rename stays.

Which documents (entries and kept runs) stay: the most recently used first (a hit touches its
entry's modification time), each while it fits with the blobs it names that no newer one
already counts; one that does not fit goes, and older ones that still fit stay. So a kept run
naming more than the limit (it is only an accelerator: its entries replay it one by one) goes
alone instead of taking the whole cache with it. Then every blob no remaining document names
goes. The ledger spares the walk while the folder is far below its limit (cache/ledger.py).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from eval_banana.cache.ledger import known_size, remember_size, walk_needed
from eval_banana.cache.places import blob_file
from eval_banana.core.files import is_temp_file
from eval_banana.core.lefttemps import remove_left_temp_files
from eval_banana.core.readback import read_json

# The parts of the cache folder eviction takes from, and how a file of each is named in its
# group (`<2 hex>/`): the group is the name's first two digits.
_DOCUMENT_PARTS = ("entries", "runs")
_NAMES = {
    "entries": re.compile(r"(?P<hex>[0-9a-f]{64})\.json"),
    "runs": re.compile(r"(?P<hex>[0-9a-f]{64})\.json"),
    "blobs": re.compile(r"(?P<hex>[0-9a-f]{64})"),
}
_GROUP = re.compile(r"[0-9a-f]{2}")


class OwnFile(NamedTuple):
    path: str
    size: int
    modified: float  # last use, for an entry a hit touched


class OwnFiles(NamedTuple):
    """eb's files in a cache folder, by the layout: what eviction may remove."""

    documents: list[OwnFile]  # entries and kept runs
    blobs: dict[str, int]  # path: size
    temp_bytes: dict[str, int]  # temporary files of writes: path: size
    temp_groups: set[str]  # the group folders holding them


def evict_to_fit(*, folder: Path, max_bytes: int, added: int) -> int:
    """Delete least recently used entries until the folder fits; return bytes freed. `added`:
    the bytes written since the last eviction. Far below the limit (by the size ledger)
    nothing is walked."""
    now = time.time()
    known = known_size(folder=folder, now=now)
    if known is not None and not walk_needed(known=known, added=added, max_bytes=max_bytes):
        remember_size(folder=folder, size_bytes=known.size_bytes + added, walked_at=known.walked_at)
        return 0
    freed, left = _evict_walking(folder=folder, max_bytes=max_bytes)
    remember_size(folder=folder, size_bytes=left, walked_at=now)
    return freed


def _evict_walking(*, folder: Path, max_bytes: int) -> tuple[int, int]:
    """Walk eb's files in the folder and evict until they fit: (bytes freed, bytes left)."""
    found = own_files(folder=folder)
    # Writes a killed writer left are no one's: they go first, whatever the folder weighs.
    removed = remove_left_temp_files(folders=[Path(group) for group in found.temp_groups])
    freed = sum(found.temp_bytes.get(str(path), 0) for path in removed)
    unfinished = sum(found.temp_bytes.values()) - freed  # a live writer's: it stays
    total = unfinished + sum(item.size for item in found.documents) + sum(found.blobs.values())
    if total <= max_bytes:
        return freed, total
    names = {
        item.path: blobs_named(folder=folder, entry=Path(item.path)) for item in found.documents
    }
    doomed = least_recently_used_over(
        documents=found.documents,
        blob_sizes=found.blobs,
        names=names,
        max_bytes=max(0, max_bytes - unfinished),
    )
    left = unfinished
    for item in found.documents:
        if item.path in doomed:
            freed += _remove(item.path, item.size)
        else:
            left += item.size
    # Entries first, then their blobs: no entry is ever left naming a removed blob.
    named = {blob for path, blobs in names.items() if path not in doomed for blob in blobs}
    for path, size in found.blobs.items():
        if path in named:
            left += size
        else:
            freed += _remove(path, size)
    return freed, left


def own_files(*, folder: Path) -> OwnFiles:
    """eb's entries, kept runs, blobs and temporary files in the cache `folder`, known by
    their place in its layout; nothing else there is listed."""
    documents: list[OwnFile] = []
    blobs: dict[str, int] = {}
    temp_bytes: dict[str, int] = {}
    temp_groups: set[str] = set()
    for part, name in _NAMES.items():
        for group, entry in _group_files(folder=f"{folder}/{part}"):
            if is_temp_file(entry.name):
                size = _regular_size(entry)
                if size is not None:
                    temp_bytes[entry.path] = size
                    temp_groups.add(group)
                continue
            found = name.fullmatch(entry.name)
            if found is None or not entry.name.startswith(os.path.basename(group)):
                continue  # not a name eb gives: someone else's file
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # removed meanwhile
            if not stat.S_ISREG(info.st_mode):
                continue
            if part in _DOCUMENT_PARTS:
                documents.append(
                    OwnFile(path=entry.path, size=info.st_size, modified=info.st_mtime)
                )
            else:
                blobs[entry.path] = info.st_size
    return OwnFiles(
        documents=documents, blobs=blobs, temp_bytes=temp_bytes, temp_groups=temp_groups
    )


def _group_files(*, folder: str) -> list[tuple[str, os.DirEntry[str]]]:
    """The entries of each group folder (`<2 hex>`, no link) of a part: (group, entry)."""
    found: list[tuple[str, os.DirEntry[str]]] = []
    for group in _listing(folder=folder):
        if _GROUP.fullmatch(group.name) and group.is_dir(follow_symlinks=False):
            found.extend((group.path, entry) for entry in _listing(folder=group.path))
    return found


def _listing(*, folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []  # absent, or removed meanwhile


def _regular_size(entry: os.DirEntry[str]) -> int | None:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def blobs_named(*, folder: Path, entry: Path) -> list[str]:
    """The blob paths an entry or kept run of the cache `folder` names (none when it cannot
    be read)."""
    try:
        document = read_json(entry)
        items = [
            *document.get("files", []),
            *document.get("templates", []),
            document.get("result_file"),
        ]
        return [
            str(Path(blob_file(folder=folder, sha256=item["sha256"])))
            for item in items
            if isinstance(item, dict)
            and isinstance(item.get("sha256"), str)
            and item["sha256"].startswith("sha256:")
        ]
    except (OSError, ValueError, AttributeError, TypeError):
        return []


def _remove(path: str, size: int) -> int:
    try:
        os.unlink(path)
    except OSError:
        return 0  # another run removed it first, or it cannot be removed
    return size


def least_recently_used_over(
    *,
    documents: Iterable[tuple[str, int, float]],
    blob_sizes: Mapping[str, int],
    names: Mapping[str, list[str]],
    max_bytes: int,
) -> set[str]:
    """The documents (name, size, last use) to remove so that what is left, with the blobs it
    names (a blob counted once, however many name it), fits in `max_bytes`. The most recently
    used stay while they fit, each costing its size and the blobs no newer one kept names; one
    that does not fit goes, and older ones that still fit stay: a kept run naming more than
    the limit goes alone, never with every entry its blobs held back. `eb cache prune
    --max-mb` asks it of the local folder and of the shared cache alike."""
    newest_first = sorted(documents, key=lambda document: (document[2], document[0]), reverse=True)
    kept_bytes = 0
    counted: set[str] = set()
    doomed: set[str] = set()
    for name, size, _ in newest_first:
        new_blobs = {blob for blob in names[name] if blob not in counted}
        cost = size + sum(blob_sizes.get(blob, 0) for blob in new_blobs)
        if kept_bytes + cost > max_bytes:
            doomed.add(name)
            continue
        kept_bytes += cost
        counted |= new_blobs
    return doomed
