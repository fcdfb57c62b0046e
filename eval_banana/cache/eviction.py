"""Keeping the cache folder within its size limit: least recently used entries go first.

When the folder grows past its limit, the least recently used entries and kept runs go first
(a hit touches its entry's modification time), then the blobs no remaining entry names; stray
files take their turn by age too. The secret and the size ledger stay. The ledger spares the
walk while the folder is far below its limit (cache/ledger.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from eval_banana.cache.ledger import is_ledger, known_size, remember_size, walk_needed
from eval_banana.cache.places import blob_file
from eval_banana.core.files import entries_below
from eval_banana.core.mac import SECRET_NAME
from eval_banana.core.readback import read_json


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
    """Walk the whole folder and evict until it fits: (bytes freed, bytes left)."""
    # The secret stays: without it every entry is a miss. The ledger is no stray file.
    files = [item for item in _files(folder) if not _is_secret(item[0]) and not is_ledger(item[0])]
    total = sum(size for _, size, _ in files)
    if total <= max_bytes:
        return 0, total
    blobs_root = folder / "blobs"
    blobs = {str(path): size for path, size, _ in files if _within(path, blobs_root)}
    references: dict[str, int] = {}
    entry_blobs: dict[str, list[str]] = {}
    for path, _, _ in files:
        if path.suffix == ".json" and (
            _within(path, folder / "entries") or _within(path, folder / "runs")
        ):
            named = blobs_named(folder=folder, entry=path)
            entry_blobs[str(path)] = named
            for blob in named:
                references[blob] = references.get(blob, 0) + 1
    freed = 0
    # Oldest first: entries, stray files and blobs no entry names all take their turn.
    candidates = sorted(
        (item for item in files if str(item[0]) not in blobs or not references.get(str(item[0]))),
        key=lambda item: item[2],
    )
    for path, size, _ in candidates:
        if total - freed <= max_bytes:
            break
        freed += _remove(path, size)
        for blob in entry_blobs.get(str(path), []):
            references[blob] -= 1
            if references[blob] == 0 and blob in blobs:
                freed += _remove(Path(blob), blobs[blob])
    return freed, total - freed


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


def _is_secret(path: Path) -> bool:
    return path.name == SECRET_NAME or path.name.startswith(f".{SECRET_NAME}.")


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
    for entry in entries_below(folder):
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # removed meanwhile (another run's eviction)
        yield Path(entry.path), info.st_size, info.st_mtime


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
