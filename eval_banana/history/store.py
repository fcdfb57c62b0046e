"""The history folder on disk: one file per run, written once, pruned oldest first.

A record's name begins with the run's start time, so a listing sorts oldest first, and ends
with its run id, so two runs (shards, concurrent runs, runners whose records are imported)
never share a name. Each is written through a temporary sibling and a rename: a reader sees a
whole record or none.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.files import write_bytes_atomic
from eval_banana.core.ownmark import mark_folder
from eval_banana.core.words import plural
from eval_banana.history.entries import entry_document
from eval_banana.history.moments import utc_text
from eval_banana.history.read import (
    RECORD_SUFFIX,
    BadRecord,
    is_record_name,
    read_record,
    record_paths,
)
from eval_banana.history.record import HistoryRecord

_NOT_TIME = re.compile(r"[^0-9]")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def record_file_name(*, record: HistoryRecord) -> str:
    """`<start time, digits only>-<run id>.json`: sortable, unique per run."""
    return record_name(started_at=record.started_at, run_id=record.run_id)


def record_name(*, started_at: str, run_id: str) -> str:
    """The file name of the record of the run `run_id` started at `started_at`."""
    moment = _NOT_TIME.sub("", started_at[:26])
    return f"{moment}-{_UNSAFE.sub('_', run_id)}{RECORD_SUFFIX}"


def record_bytes(*, record: HistoryRecord) -> bytes:
    """One compact line of JSON, each check without its default fields: hundreds of records
    are read back at once, and every byte is parsed each time."""
    # The checks are dumped once, as entries: not a second time with the rest of the record.
    document = record.model_copy(update={"checks": []}).model_dump(by_alias=True)
    document["checks"] = [entry_document(check) for check in record.checks]
    return (
        json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
    ).encode()


def write_record(*, folder: Path, record: HistoryRecord) -> Path:
    """Write `record` into `folder` (made if missing) atomically; return its path."""
    path = folder / record_file_name(record=record)
    # Marked first: a history folder a changed `[history] dir` left behind is still eb's.
    mark_folder(folder=folder, kind="history", ours=_is_history_name)
    write_bytes_atomic(path=path, data=record_bytes(record=record))
    return path


def _is_history_name(name: str) -> bool:
    """A record's name (`<digits>-<run id>.json`), or a hidden one (a record being written)."""
    return name.startswith(".") or is_record_name(name)


def drop_other_records(*, folder: Path, run_id: str, kept: Path) -> list[Path]:
    """Remove the records of `run_id` other than `kept`: a run rebuilt by `eb update` has one
    record, its latest. An update keeps the run's start, but the earlier record may be named
    by another: its execute stage rebuilt whole (execute.json gone), or an older eb's record."""
    # `<digits>-<run id>.json`: the start time holds no '-', so what follows the first is the id.
    named = f"{_UNSAFE.sub('_', run_id)}{RECORD_SUFFIX}"
    removed: list[Path] = []
    for path in record_paths(folder=folder):
        if path.name.partition("-")[2] == named and path != kept:
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            removed.append(path)
    return removed


def record_of(*, folder: Path, run_id: str) -> HistoryRecord | None:
    """The record of the run `run_id` (the newest, when an older eb left two); None when
    there is none or it cannot be read."""
    named = f"{_UNSAFE.sub('_', run_id)}{RECORD_SUFFIX}"
    for path in reversed(record_paths(folder=folder)):
        if path.name.partition("-")[2] != named:
            continue
        try:
            return read_record(path=path)
        except (OSError, BadRecord):
            return None
    return None


def replayed_from(*, folder: Path, run_id: str) -> str | None:
    """The run whose verdicts the run `run_id` replayed, as its record says; None when its
    record is no replay (or there is none, or it cannot be read)."""
    named = f"{_UNSAFE.sub('_', run_id)}{RECORD_SUFFIX}"
    for path in record_paths(folder=folder):
        if path.name.partition("-")[2] != named:
            continue
        try:
            # The run's own fields are all it takes: none of its checks are parsed.
            record = read_record(path=path, only=frozenset())
        except (OSError, BadRecord):
            return None
        return record.replayed_from if record.kind == "replay" else None
    return None


def prune(*, folder: Path, keep: int) -> list[Path]:
    """Remove the oldest records past the newest `keep`; return what was removed. Only files
    named as records count and go: any other file in the folder is the project's."""
    paths = record_paths(folder=folder)
    removed: list[Path] = []
    for path in paths[: max(0, len(paths) - keep)]:
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue  # another run pruned it first
        removed.append(path)
    return removed


class Imported(NamedTuple):
    """What `import_records` did: records copied, records of known runs replaced by their
    newer record (`eb update` rewrote them), duplicates skipped, files refused (why)."""

    copied: list[str]
    duplicates: list[str]
    refused: list[tuple[Path, str]]
    updated: list[str]


def _known_run_ids(*, folder: Path) -> set[str]:
    """Run ids already in `folder`, from the file names (no record need be parsed)."""
    return {path.stem.partition("-")[2] for path in record_paths(folder=folder)}


def import_files(*, folder: Path) -> list[Path]:
    """The files `eb history import` reads in `folder`: every `*.json` there but hidden ones,
    whatever its name. What a file holds decides: a renamed record is imported (under its own
    name), anything else is refused by name."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [
        folder / name
        for name in sorted(names)
        if name.endswith(RECORD_SUFFIX) and not name.startswith(".")
    ]


def any_record(*, paths: Sequence[Path]) -> bool:
    """Whether any file of `paths` is a run record, whatever its name (as import reads it; only
    the run's own fields are parsed, none of its checks). Stops at the first one."""
    for path in paths:
        try:
            read_record(path=path, only=frozenset())
        except BadRecord:
            continue
        return True
    return False


def folders_holding_records(*, folder: Path, depth: int = 2) -> list[Path]:
    """The folders below `folder`, at most `depth` levels down, that hold record files: where
    the records are when `folder` holds none itself (a CI artifacts download keeps each job's
    in a subfolder of its own, a project in `.eval-banana/history`)."""
    found: list[Path] = []
    level = [folder]
    for _ in range(depth):
        level = [below for parent in level for below in _subfolders(folder=parent)]
        found.extend(below for below in level if record_paths(folder=below))
    return sorted(found)


def _subfolders(*, folder: Path) -> list[Path]:
    """The folders in `folder` (a link to one is not followed: it may lead back up)."""
    try:
        with os.scandir(folder) as entries:
            return [Path(entry.path) for entry in entries if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _in_utc(record: HistoryRecord) -> HistoryRecord:
    """`record` with its times in eb's form, UTC: another runner's record written with a zone
    offset is then named and ordered by when it started, as every record eb writes is.
    BadRecord when a time cannot be converted."""
    try:
        started_at, finished_at = utc_text(record.started_at), utc_text(record.finished_at)
    except ValueError as exc:
        raise BadRecord(f"it is not an eb run record: {exc}") from None
    return record.model_copy(update={"started_at": started_at, "finished_at": finished_at})


# Each count of a record's totals that its checks make, and the status each counts.
_COUNTED = (("passed", "passed"), ("failed", "failed"), ("errored", "error"))


def totals_problem(record: HistoryRecord) -> str | None:
    """Which count of the record's totals its own checks refute, and the fix; None when they
    agree. The run that wrote it counted its totals from those checks (report.json's counts
    are its results'), so a disagreement is an edit, and `eb history` would show it as a run
    that passed 8 of 7 checks (114%)."""
    fix = "write the counts its checks add up to, or import the record as eb wrote it"
    totals = record.totals
    for field, status in _COUNTED:
        counted = sum(check.status == status for check in record.checks)
        value = getattr(totals, field)
        if value != counted:
            return (
                f"its totals.{field} is {value}, but {counted} of its {len(record.checks)} "
                f"checks have the status {status!r}; {fix}"
            )
    if totals.checks != len(record.checks):
        listed = plural(count=len(record.checks), noun="check")
        return f"its totals.checks is {totals.checks}, but it lists {listed}; {fix}"
    return None


def _importable(record: HistoryRecord) -> HistoryRecord:
    """`record` as it is imported (`_in_utc`); BadRecord when its totals disagree with its
    checks, as for any file that is no record eb wrote."""
    problem = totals_problem(record)
    if problem is not None:
        raise BadRecord(f"it is not an eb run record: {problem}")
    return _in_utc(record)


def _newer_than_known(*, folder: Path, record: HistoryRecord) -> bool:
    """Whether `record` is a later state of its run than the record of it in `folder`: `eb
    update` rewrites a run's record in place, keeping its start and ending it later (its
    `finished_at`). A record there that cannot be read is left as it is (read_record warns of
    it where the history is read)."""
    known = record_of(folder=folder, run_id=record.run_id)
    if known is None:
        return False
    return utc_text(record.finished_at) > utc_text(known.finished_at)


def import_records(*, sources: Sequence[Path], folder: Path) -> Imported:
    """Copy every valid record in `sources` into `folder` (its times made UTC), skipping run ids
    already there unless the record is a later state of that run (`eb update` rewrote it on
    its runner): then it replaces the one there."""
    known = _known_run_ids(folder=folder)
    done = Imported(copied=[], duplicates=[], refused=[], updated=[])
    for source in sources:
        for path in import_files(folder=source):
            try:
                # A record read has times in UTC's range (`read._times_problem`), so `_in_utc`
                # refuses none; a time it could not convert would be refused here all the same.
                record = _importable(read_record(path=path))
            except BadRecord as exc:
                done.refused.append((path, str(exc)))
                continue
            key = _UNSAFE.sub("_", record.run_id)
            if key in known:
                if not _newer_than_known(folder=folder, record=record):
                    done.duplicates.append(record.run_id)
                    continue
                path = write_record(folder=folder, record=record)
                drop_other_records(folder=folder, run_id=record.run_id, kept=path)
                done.updated.append(record.run_id)
                continue
            write_record(folder=folder, record=record)
            known.add(key)
            done.copied.append(record.run_id)
    return done
