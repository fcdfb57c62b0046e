"""The files eb wrote into the project beside its run folders, remembered across runs.

A run that writes a JUnit file, a `--result-out` document or the GitHub step summary inside the
project knows them as its own (`ConfigDoc.outputs`); the next run, started without those flags,
would not, and every check that reads the whole project would miss the verdict cache. So each
run notes, in `written.json` beside `lastfailed.json`, the path, size and git blob id of each
such file it wrote; a later run counts a noted file as eb's while it holds those bytes. Edited
by anyone else, it is a project file again. Only the newest `KEPT` files are noted, and reading
them costs at most that many stats (a file is read only when its size is still eb's).

A note makes a file eb's: left out of every cache key and of what a judge's isolation watch
counts. So the record is eb's own state, as the cache is: it carries a MAC keyed by the verdict
cache's secret (core/mac.py), and a record without a valid one (written by anything but eb, or
before the cache had a secret) notes nothing, with a warning: the files it names are the
project's. A run's checks never see it change either: it is watched while they run
(isolation/places.py), and a run writes it only while no other run's checks execute in the
project (the folder's turn, as `eb calibrate` takes it for the calibration record beside it).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

from eval_banana.core.errors import WriteFault
from eval_banana.core.files import stage_json_bytes, write_bytes_atomic
from eval_banana.core.log import Logger
from eval_banana.core.mac import (
    WRITTEN_DOMAIN,
    load_secret,
    mac_problem,
    secret_path,
    signed_text,
)
from eval_banana.core.readback import loads_json, read_regular
from eval_banana.core.realpaths import real_path
from eval_banana.core.turns import alone_in_folder
from eval_banana.core.version import tool_version
from eval_banana.models.stages import ConfigDoc
from eval_banana.models.written import WRITTEN_SCHEMA, WrittenFile, WrittenFilesBody
from eval_banana.projectstate.blobs import file_blob_id

WRITTEN_FILE = "written.json"
# The newest files noted: a CI job writes two or three; more only when their paths change.
KEPT = 32
_CONFIG_FOLDER = ".eval-banana"
# (path, device, inode, size, mtime, ctime) -> blob id: each file is hashed once per process
# however often a run asks which files are eb's.
_Stat = tuple[str, int, int, int, int, int]
_HASHED: dict[_Stat, str | None] = {}
# The records already warned about in this process, with why: a run asks many times.
_WARNED: set[tuple[str, str]] = set()

logger = Logger("eval_banana.settings.written")


def written_record_path(*, config: ConfigDoc) -> Path:
    """Beside the config file in use, else `<project root>/.eval-banana/written.json`."""
    if config.config_file:
        return Path(config.config_file).parent / WRITTEN_FILE
    return Path(config.project_root) / _CONFIG_FOLDER / WRITTEN_FILE


def still_written(*, config: ConfigDoc, cache_folder: Path) -> list[Path]:
    """The noted files that still hold, byte for byte, what eb wrote there (absolute), when
    the record's MAC holds under the secret of the cache folder `cache_folder`. A record that
    would note a file but is not eb's (no MAC, a wrong one, or no secret to check it by) notes
    nothing, with one warning a process."""
    record = written_record_path(config=config)
    data = _record_bytes(path=record)
    if data is None:
        return []
    root = Path(config.project_root)
    found = [
        root / entry.path
        for entry in _notes_in(data=data)
        if _blob_of(path=root / entry.path, size=entry.size) == entry.blob_id
    ]
    if not found:
        return []
    problem = _unsigned(data=data, cache_folder=cache_folder)
    if problem is None:
        return found
    _warn_unsigned(record=record, problem=problem, files=found, root=root)
    return []


def remember_written(
    *, config: ConfigDoc, paths: Iterable[str | Path], key: Callable[[], bytes | None]
) -> None:
    """Note the files among `paths` that lie inside the project as eb's, as they are now
    (atomically, signed with `key()`, the verdict cache's secret, asked for only when there is
    a file to note; the newest `KEPT` kept). A record that cannot be written costs only the
    next run's reuse of verdicts: it is never an error. Nothing is written without a secret,
    nor while another run's checks execute in the project (their watch would take the record
    changing for their doing)."""
    root = real_path(config.project_root)
    fresh: dict[str, WrittenFile] = {}
    for path in paths:
        noted = _as_written(path=Path(path), root=root)
        if noted is not None:
            fresh[noted.path] = noted
    if not fresh:
        return
    record = written_record_path(config=config)
    with contextlib.suppress(OSError, WriteFault):
        record.parent.mkdir(parents=True, exist_ok=True)
        with alone_in_folder(folder=record.parent) as ours:
            secret = key() if ours else None
            if secret is None:
                logger.debug("The files this run wrote are not noted in %s", record)
                return
            _write_record(record=record, key=secret, fresh=fresh)


def _write_record(*, record: Path, key: bytes, fresh: dict[str, WrittenFile]) -> None:
    """The record rewritten: the notes it holds that eb signed, then `fresh`, signed."""
    data = _record_bytes(path=record)
    kept: list[WrittenFile] = []
    if data is not None and mac_problem(key=key, data=data, domain=WRITTEN_DOMAIN) is None:
        kept = [entry for entry in _notes_in(data=data) if entry.path not in fresh]
    body = WrittenFilesBody(
        tool_version=tool_version(),
        updated_at=datetime.now(UTC).isoformat(timespec="microseconds"),
        files=[*kept, *fresh.values()][-KEPT:],
    )
    text = signed_text(key=key, text=stage_json_bytes(document=body), domain=WRITTEN_DOMAIN)
    write_bytes_atomic(path=record, data=text)


def _unsigned(*, data: bytes, cache_folder: Path) -> str | None:
    """Why the record's bytes are not what eb signed with the cache's secret, or None."""
    key = load_secret(folder=cache_folder, create=False)
    if isinstance(key, str):
        return f"cannot be checked: the cache's secret {secret_path(folder=cache_folder)} {key}"
    return mac_problem(key=key, data=data, domain=WRITTEN_DOMAIN)


def _warn_unsigned(*, record: Path, problem: str, files: list[Path], root: Path) -> None:
    if (str(record), problem) in _WARNED:
        return
    _WARNED.add((str(record), problem))
    shown = ", ".join(sorted(path.relative_to(root).as_posix() for path in files))
    logger.warning(
        "Ignored %s: it %s, so eb cannot tell it wrote it; the files it notes count as "
        "project files (%s). A run that writes them again notes them anew; remove the "
        "record to silence this",
        record,
        problem,
        shown,
    )


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


def _record_bytes(*, path: Path) -> bytes | None:
    """The record's bytes; None when it is missing or cannot be read."""
    try:
        return read_regular(path)
    except OSError:
        return None


def _notes_in(*, data: bytes) -> list[WrittenFile]:
    """The notes in a record's bytes; none when it is not eb's record as published (the next
    run that writes beside its run folder writes it anew)."""
    try:
        document = loads_json(data)
    except ValueError:
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
