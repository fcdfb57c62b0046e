"""Where eb's own state lies for a run: the cache folder, the calibration record, the record of
the files eb wrote into the project (written.json), the finished earlier run folders under the
output folders (the newest 500) and the current run's checks/; and which of those a copy's
private mount namespace makes read-only."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.realpaths import real_path
from eval_banana.models.stages import ConfigDoc

# The earlier run folders watched: the most recently changed ones (three watches each), so a
# results folder that kept thousands of runs costs no more than this many.
EARLIER_RUNS = 500


# What eb reads back from the top of an earlier run folder (replay, merge, diff, status); the
# rest there (report.html, report.md, JUnit, their temporary files) is written for people, and
# a run still finishing its page beside ours must not count as a change of eb's state.
RUN_FOLDER_READ_BACK = frozenset({"report.json", "stages", "checks"})


class StatePlaces(NamedTuple):
    """Absolute paths: folders watched for any change of their entries; files (or folders not
    there yet) compared by identity; the cache folder, whose changed files are dropped; the
    earlier run folders among the folders, of whose entries only RUN_FOLDER_READ_BACK count."""

    folders: list[str]
    files: list[str]
    cache: str
    run_folders: frozenset[str] = frozenset()
    # The current run's checks/ folder, whose linked files are compared after the last check.
    current_checks: str | None = None
    # The output folders, where a run folder may appear only as another eb run makes it, and
    # when this run was created (recorded in its config stage).
    outputs: tuple[str, ...] = ()
    created_at: str | None = None
    # The record of the files eb wrote into the project (settings/written.py), among `files`:
    # changed by anyone but eb, it would make project files eb's, so it goes as the cache's do.
    written_record: str | None = None
    # The calibration record, among `files`: changed by anyone but eb, it is put back as it was
    # before the checks started (isolation/putback.py), since the next run's gate reads it.
    calibration_record: str | None = None


def _inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or below it (both resolved, so plain text compares)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _earlier_runs(*, bases: Iterable[Path], run_dir: Path, cache: Path) -> list[Path]:
    """Finished run folders (holding `stages/report.json`, the last file a run's report stage
    writes, after report.json) under the output folders, other than the current one and the
    cache; a run still writing its folder (another `eb run` at the same time) is not finished."""
    found: list[Path] = []
    current, cache_text = str(run_dir), str(cache)
    for base in bases:
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for entry in entries:
            # The directory test first: it costs no system call, and a history folder holds
            # a thousand records that are files.
            if not entry.is_dir(follow_symlinks=False):
                continue
            folder = entry.path
            if _inside(current, folder) or _inside(folder, current) or _inside(cache_text, folder):
                continue
            if os.path.isfile(os.path.join(folder, "stages", "report.json")):
                found.append(Path(folder))
    if len(found) > EARLIER_RUNS:
        found.sort(key=_changed_at, reverse=True)
        del found[EARLIER_RUNS:]
    return found


def _changed_at(folder: Path) -> int:
    try:
        return os.stat(folder / "report.json").st_mtime_ns
    except OSError:
        return 0


# The cache keeps its files two folders down (`entries/<2 hex>/<key>`, `blobs/<2 hex>/...`,
# `runs/<2 hex>/...`): those are all the folders eb reads from. Listing the leaf folders to
# look for folders in them would read every cached file's name (tens of thousands in a large
# cache) for nothing eb ever reads; a folder a check creates in one is a change of that leaf.
CACHE_DEPTH = 2


def cache_folders(top: str) -> list[str]:
    """`top` and the folders down to CACHE_DEPTH below it (symlinks not followed)."""
    found = [top]
    level = [top]
    for _ in range(CACHE_DEPTH):
        below: list[str] = []
        for folder in level:
            try:
                with os.scandir(folder) as entries:
                    below.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
            except OSError:
                continue
        found.extend(below)
        level = below
    return found


def state_places(*, config: ConfigDoc, run_dir: Path) -> StatePlaces:
    """Where eb's state lies for a run writing into `run_dir`."""
    from eval_banana.settings.folders import cache_dir, record_path, written_folders
    from eval_banana.settings.written import written_record_path

    cache = real_path(cache_dir(config=config))
    current = real_path(run_dir)
    bases = [real_path(folder) for folder in written_folders(config=config)]
    bases = [base for base in bases if base != cache]
    folders: list[str] = []
    written = str(written_record_path(config=config).absolute())
    calibration = str(record_path(config=config).absolute())
    files = [calibration, written]
    if cache.is_dir():
        folders.extend(cache_folders(str(cache)))
    else:
        files.append(str(cache))
    runs = _earlier_runs(bases=bases, run_dir=current, cache=cache)
    for run in runs:
        folders.extend(str(folder) for folder in (run, run / "stages", run / "checks"))
    return StatePlaces(
        folders=folders,
        files=files,
        cache=str(cache),
        run_folders=frozenset(map(str, runs)),
        current_checks=str(current / "checks"),
        outputs=tuple(map(str, bases)),
        created_at=config.run_created_at or config.created_at,
        written_record=written,
        calibration_record=calibration,
    )


class ReadOnly(NamedTuple):
    """What a copy's private mount namespace makes read-only (absolute paths that exist), and
    the current run's `checks/` folder, in which a deterministic check's own evidence folder
    stays writable there (`writable_for`)."""

    paths: list[str]
    checks: str

    def writable_for(self, *, check_type: str, stem: str) -> list[str]:
        """The folders bound writable again for one check: a deterministic check's
        `checks/<stem>/`, its `output_dir` (eb makes it before the check starts). A judge writes
        nothing there: eb writes its output through descriptors opened before it started."""
        if not self.paths or check_type != "deterministic":
            return []
        return [os.path.join(self.checks, stem)]


def read_only_places(*, config: ConfigDoc, places: StatePlaces, run_dir: Path) -> ReadOnly:
    """eb's state as a copy's namespace mounts it: the cache folder, the calibration record,
    each output folder whole (one mount however many runs it holds) and the current run folder:
    a check or a judge that could write there could rewrite another check's output while eb
    reads it (a judge appending a verdict to another judge's stdout file)."""
    from eval_banana.settings.folders import written_folders

    current = str(real_path(run_dir))
    wanted = {places.cache, *places.files, current}
    wanted.update(str(real_path(folder)) for folder in written_folders(config=config))
    paths = sorted(
        path for path in wanted if os.path.exists(path) and not path.startswith(current + os.sep)
    )
    if any(current.startswith(path + os.sep) for path in paths):
        paths.remove(current)  # inside an output folder, that folder's mount covers it
    return ReadOnly(paths=paths, checks=os.path.join(current, "checks"))
