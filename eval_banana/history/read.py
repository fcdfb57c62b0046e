"""Loading the history folder back: every readable, valid record, oldest first.

A record that cannot be read (not JSON, not a record, a FIFO in its place, too big) is skipped
with a warning naming the file: one damaged file never hides the rest of the history.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from eval_banana.core.log import Logger
from eval_banana.core.readback import open_regular
from eval_banana.history.entries import read_entries
from eval_banana.history.moments import time_problem
from eval_banana.history.record import HistoryRecord

LOG = Logger("eval_banana.history")
# Far above any record eb writes (a 10,000-check run is a few MiB): a bigger file is no record.
MAX_RECORD_BYTES = 64 << 20
RECORD_SUFFIX = ".json"
# `store.record_name`: the start time's digits, a dash, the run id with anything but these
# characters made `_`.
_RECORD_NAME = re.compile(r"[0-9]+-[A-Za-z0-9_.-]*\.json")

Warn = Callable[[str], None]
Parsed = TypeVar("Parsed")


class BadRecord(Exception):
    """A file in the history folder that is no run record; `str()` says why."""


def is_record_name(name: str) -> bool:
    """Whether `name` is a record's (`<start time digits>-<run id>.json`). Nothing else in the
    history folder is read, counted or pruned as a record: the folder may be one the project
    keeps its own files in too (`[history] dir = "docs"`), and those stay the project's."""
    return _RECORD_NAME.fullmatch(name) is not None


def record_paths(*, folder: Path) -> list[Path]:
    """The record files in `folder` by name (names begin with the run's start time); none when
    the folder is missing. Hidden files (a write in progress) and files not named as records
    are none."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [folder / name for name in sorted(names) if is_record_name(name)]


def read_bounded(*, path: Path) -> bytes:
    """A record file's bytes: a regular file of at most MAX_RECORD_BYTES (BadRecord else)."""
    try:
        fd = open_regular(path)
    except OSError as exc:
        raise BadRecord(f"cannot read it: {exc.strerror or exc}") from None
    try:
        if os.fstat(fd).st_size > MAX_RECORD_BYTES:
            raise BadRecord(f"it is larger than {MAX_RECORD_BYTES >> 20} MiB")
        chunks = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > MAX_RECORD_BYTES:
                raise BadRecord(f"it is larger than {MAX_RECORD_BYTES >> 20} MiB")
            chunks.append(chunk)
    except OSError as exc:
        raise BadRecord(f"cannot read it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def record_json(data: bytes) -> Any:
    """A record file's JSON document (BadRecord when it is not JSON).

    Parsed at once, without `loads_json`'s bracket scan first (a third of the time of reading
    a record, and hundreds are read at a time): the parser refuses nesting past Python's
    recursion limit with a RecursionError, a BadRecord here, and anything nested deeper than
    a record's few levels fails the schema the reader checks next."""
    try:
        return json.loads(data)
    except RecursionError:
        raise BadRecord("it is not JSON eb wrote (nested too deep)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRecord(f"it is not JSON ({exc})") from None


def newest_parsed(
    *, paths: Sequence[Path], parse: Callable[[bytes], Parsed], warn: Warn | None = None
) -> Iterator[Parsed]:
    """`parse` of each record file of `paths` (as `record_paths` lists them), newest first and
    only as far as the caller reads; a file `parse` refuses (BadRecord) or that cannot be read
    is skipped and named in a warning (`warn`, else the log). Every reader of the folder, lean
    or whole, goes through here."""
    say = warn if warn is not None else LOG.warning
    for path in reversed(paths):
        try:
            yield parse(read_bounded(path=path))
        except BadRecord as exc:
            say(f"skipped {path} in the run history: {exc}")


class Focus:
    """Which checks a reader still wants from the records it reads next (None: every one).

    `eb history` reads records before its window only for the few checks failing in it: the
    other entries of those records are neither checked nor built.
    """

    def __init__(self) -> None:
        self.ids: frozenset[str] | None = None


def parse_record(*, data: bytes, only: frozenset[str] | None = None) -> HistoryRecord:
    """A record from a file's bytes, checked against the published schema (BadRecord else).

    The run's own fields go through the schema; its checks, thousands of them, through the
    equivalent loop of `entries` (the schema is asked only to word a refusal). `only`: keep
    just the checks with these ids (the record is then partial, for that reader alone).
    """
    record = _validated(document=record_json(data), only=only)
    problem = _times_problem(record)
    if problem is not None:
        raise BadRecord(f"it is not an eb run record: {problem}")
    return record


def _validated(*, document: Any, only: frozenset[str] | None) -> HistoryRecord:
    """`parse_record`'s record as the schema has it, its times not read yet."""
    from eval_banana.history.check import record_problem

    if type(document) is dict:
        items = document.get("checks", [])
        if only is not None and type(items) is list:
            items = [raw for raw in items if type(raw) is not dict or raw.get("id") in only]
        checks = read_entries(items)
        run = {key: value for key, value in document.items() if key != "checks"}
        if checks is not None and record_problem(run) is None:
            record = HistoryRecord.model_validate(run)
            record.checks = checks
            return record
    problem = record_problem(document)
    if problem is not None:
        raise BadRecord(f"it is not an eb run record: {problem}")
    return HistoryRecord.model_validate(document)


def _times_problem(record: HistoryRecord) -> str | None:
    """Which of the record's times is not an ISO-8601 time in years 1 to 9999 once made UTC,
    and the fix; None when both are. The schema says only that they are text, and every reader
    orders and windows by them."""
    for field, text in (("started_at", record.started_at), ("finished_at", record.finished_at)):
        problem = time_problem(field=field, text=text)
        if problem is not None:
            return problem
    return None


def read_record(*, path: Path, only: frozenset[str] | None = None) -> HistoryRecord:
    """One record file (BadRecord when it is none); `only`: as `parse_record`."""
    return parse_record(data=read_bounded(path=path), only=only)


def newest_first(
    *, paths: Sequence[Path], warn: Warn | None = None, focus: Focus | None = None
) -> Iterator[HistoryRecord]:
    """The records of `paths` (as `record_paths` lists them), newest first, each parsed only
    when the caller gets that far (with the checks `focus` names then, if any); a file that is
    no record is skipped and named in a warning (`warn`, else the log)."""
    return newest_parsed(
        paths=paths,
        # `focus` is read as each record is parsed: the caller may narrow it between records.
        parse=lambda data: parse_record(data=data, only=None if focus is None else focus.ids),
        warn=warn,
    )


def load_records(
    *, folder: Path, warn: Warn | None = None, last: int | None = None
) -> list[HistoryRecord]:
    """Every record in `folder` (or the newest `last` of them), oldest first (by start time,
    then run id); a file that is no record is skipped and named in a warning (`warn`, else
    the log)."""
    stream = newest_first(paths=record_paths(folder=folder), warn=warn)
    records = list(stream if last is None else itertools.islice(stream, last))
    records.sort(key=lambda record: (record.started_at, record.run_id))
    return records
