"""The files eb wrote into the project beside its run folders, remembered across runs.

A run that writes a JUnit file, a `--result-out` document or the GitHub step summary inside the
project knows them as its own (`ConfigDoc.outputs`); the next run, started without those flags,
would not, and every check that reads the whole project would miss the verdict cache. So each
run notes, in `written.json` beside `lastfailed.json`, the path, size and git blob id of each
such file it wrote; a later run counts a noted file as eb's while it holds those bytes. Edited
by anyone else, it is a project file again. Only the newest `KEPT` files are noted, and reading
them costs at most that many stats (a file is read only when its size is still eb's).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from eval_banana.core.errors import WriteFault
from eval_banana.core.files import write_model
from eval_banana.core.readback import loads_json, read_regular
from eval_banana.core.realpaths import real_path
from eval_banana.core.version import tool_version
from eval_banana.models.stages import ConfigDoc
from eval_banana.models.written import WRITTEN_SCHEMA, WrittenFile, WrittenFilesDoc
from eval_banana.projectstate.blobs import file_blob_id

WRITTEN_FILE = "written.json"
# The newest files noted: a CI job writes two or three; more only when their paths change.
KEPT = 32
_CONFIG_FOLDER = ".eval-banana"
# (path, device, inode, size, mtime, ctime) -> blob id: each file is hashed once per process
# however often a run asks which files are eb's.
_Stat = tuple[str, int, int, int, int, int]
_HASHED: dict[_Stat, str | None] = {}


def written_record_path(*, config: ConfigDoc) -> Path:
    """Beside the config file in use, else `<project root>/.eval-banana/written.json`."""
    if config.config_file:
        return Path(config.config_file).parent / WRITTEN_FILE
    return Path(config.project_root) / _CONFIG_FOLDER / WRITTEN_FILE


def still_written(*, config: ConfigDoc) -> list[Path]:
    """The noted files that still hold, byte for byte, what eb wrote there (absolute)."""
    root = Path(config.project_root)
    found: list[Path] = []
    for entry in _noted(path=written_record_path(config=config)):
        path = root / entry.path
        if _blob_of(path=path, size=entry.size) == entry.blob_id:
            found.append(path)
    return found


def remember_written(*, config: ConfigDoc, paths: Iterable[str | Path]) -> None:
    """Note the files among `paths` that lie inside the project as eb's, as they are now
    (atomically; the newest `KEPT` kept). A record that cannot be written costs only the
    next run's reuse of verdicts: it is never an error."""
    root = real_path(config.project_root)
    fresh: dict[str, WrittenFile] = {}
    for path in paths:
        noted = _as_written(path=Path(path), root=root)
        if noted is not None:
            fresh[noted.path] = noted
    if not fresh:
        return
    record = written_record_path(config=config)
    kept = [entry for entry in _noted(path=record) if entry.path not in fresh]
    document = WrittenFilesDoc(
        tool_version=tool_version(),
        updated_at=datetime.now(UTC).isoformat(timespec="microseconds"),
        files=[*kept, *fresh.values()][-KEPT:],
    )
    with contextlib.suppress(OSError, WriteFault):
        record.parent.mkdir(parents=True, exist_ok=True)
        write_model(path=record, model=document)


def _as_written(*, path: Path, root: Path) -> WrittenFile | None:
    """`path` as a note, when it is a regular file inside `root` (resolved)."""
    try:
        relative = real_path(path).relative_to(root).as_posix()
        size = os.stat(path).st_size
    except (OSError, ValueError):
        return None
    blob = _blob_of(path=path, size=size)
    return None if blob is None else WrittenFile(path=relative, size=size, blob_id=blob)


def _blob_of(*, path: Path, size: int) -> str | None:
    """The blob id of the regular file at `path` when its size is `size`; None otherwise
    (a file of another size is not read)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode) or found.st_size != size:
        return None
    key = (str(path), found.st_dev, found.st_ino, size, found.st_mtime_ns, found.st_ctime_ns)
    if key not in _HASHED:
        if len(_HASHED) > 4 * KEPT:
            _HASHED.clear()
        _HASHED[key] = file_blob_id(path=str(path))
    return _HASHED[key]


def _noted(*, path: Path) -> list[WrittenFile]:
    """The notes at `path`; none when it is missing or not eb's record as published (the next
    run that writes beside its run folder writes it anew)."""
    try:
        document = loads_json(read_regular(path))
    except (OSError, ValueError):
        return []
    if not isinstance(document, dict) or document.get("$schema") != WRITTEN_SCHEMA:
        return []
    files = document.get("files")
    if not isinstance(files, list):
        return []
    return [WrittenFile.model_validate(entry) for entry in files if _is_note(entry)]


def _is_note(entry: object) -> bool:
    """Whether a JSON value is a note as the schema has it (a path inside the project)."""
    if not isinstance(entry, dict) or set(entry) != {"path", "size", "blob_id"}:
        return False
    path, size, blob = entry["path"], entry["size"], entry["blob_id"]
    return (
        isinstance(path, str)
        and bool(path)
        and not path.startswith("/")
        and ".." not in path.split("/")
        and isinstance(size, int)
        and not isinstance(size, bool)
        and size >= 0
        and isinstance(blob, str)
        and len(blob) == 40
    )
