"""eb's own files are watched while a run's checks execute (and while `eb calibrate`'s judge
samples run, by the same watch and turns): no check or judge may write them.

What eb reads back later and builds verdicts on (the verdict cache, earlier run folders, the
calibration record) must have been written by eb alone. While checks execute eb writes none of
it: verdicts are stored only once the last check has ended, and the current run folder is not
watched. So any change seen there meanwhile was made by someone else, most likely a check or a
judge (or a process one left behind), and the checks running at that moment are charged with
it, whatever their isolation mode.

What is watched:
- the cache folder and its folders down to where its files are (two levels);
- each finished earlier run folder (holding `stages/` and `report.json`; the newest 500): its
  `report.json`, `stages/` and `checks/` (the files eb reads back; not the checks' own
  evidence folders, nor the pages written for people, which a run may still be finishing);
- the calibration record, the record of the files eb wrote into the project (written.json),
  and the cache folder if it does not exist yet (one `lstat` a look);
- the files of the current run folder's `checks/` that share their inode with another name (the
  outputs a cache reuse linked from the cache's copies, which earlier run folders link too): a
  write into one of them is a write into the cache, though inotify reports it only on the path
  written. They are compared once, after the last check, by inode, size and modification time
  (not the status-change time: another run linking the same cached copy, or eb removing a file
  it is about to write again, changes that of every name of the inode), and a change is charged
  to every check that ran (a run whose every verdict was reused starts no watch, and pays
  nothing);
- the cache's entries and kept runs and the earlier run folders' `report.json` and stage files,
  which a write through a hard link made elsewhere changes with no event on their folder: noted
  before the first check and compared after the last (isolation/inplace.py), and a change is
  charged to every check that ran.

A look happens when a watched check starts or ends: on Linux inotify says what was touched (a
few system calls); elsewhere, or where the kernel refuses more watches, the listings of the
watched folders are compared at the start and at the end of the checks only (two walks a run,
not two a check), and a change found then is charged to every check that ran.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.log import Logger
from eval_banana.core.realpaths import real_path
from eval_banana.core.turns import (
    LOCK_NAME,
    alone,
    alone_in_folder,
    made_in_turn,
    sharing,
    sharing_folder,
    waiting_alone_in_folder,
)
from eval_banana.isolation.identities import (
    Identity,
    content,
    identity,
    linked_files,
    listing,
)
from eval_banana.isolation.inplace import InPlace
from eval_banana.isolation.newruns import NewRuns
from eval_banana.isolation.places import RUN_FOLDER_READ_BACK, StatePlaces, state_places
from eval_banana.isolation.putback import Saved, put_back, saved_record
from eval_banana.isolation.watch import TreeWatcher
from eval_banana.models.stages import ConfigDoc

# Beyond this many folders the state is compared at the start and end of the checks instead
# (each inotify watch costs kernel memory, and the per-user limit is shared with the project).
FOLDER_BUDGET = 8192

logger = Logger("eval_banana.isolation.state")


class StateReport(NamedTuple):
    """What changed in eb's state during the checks, as shown paths.

    `charged`: the changes seen while checks ran, by the check (its key) running then; `late`:
    changes seen while no check ran, by the checks that had started before (a process one left
    behind may have made them; without inotify every change is seen at the end, so every
    check); `unattributed`: changes seen before any check had started.
    """

    changed: list[str]
    charged: dict[str, list[str]]
    late: dict[str, list[str]]
    unattributed: list[str]
    # Whether the kernel told every write into the folders watched while the checks ran
    # (inotify, no event lost): a file whose times alone changed meanwhile was not written.
    writes_told: bool = False
    # The calibration record changed meanwhile: what was done about it once the checks had
    # ended (put back as it was before they started, or removed), as the warning says it.
    record_put_back: str | None = None


@contextlib.contextmanager
def checks_running(
    *, cache: Path, create: bool, runs: Path | None, record: Path | None = None
) -> Iterator[None]:
    """Held (shared) while a run's checks execute: no other eb run writes into the cache, nor
    deletes old run folders from the output folder `runs`, nor `eb calibrate` replaces the
    calibration record in the folder `record`, meanwhile, which this run's watch would otherwise
    take for a check's write. `create`: make the cache folder and its lock file when missing (a
    run that may store), unless another eb process's checks execute meanwhile: then the missing
    folder's place is held shared as theirs is, and the cache is made when this run stores."""
    if create:
        # First: the folder the cache is made in is often the record's, held shared below.
        made_in_turn(folder=cache)
    with contextlib.ExitStack() as stack:
        for folder in (runs, record):
            if folder is not None:
                stack.enter_context(sharing_folder(folder=folder, waits=_waiting(folder=folder)))
        # Last: a run waiting for the folders above holds nothing another run needs to store.
        stack.enter_context(sharing(folder=cache, create=create, waits=_waiting(folder=cache)))
        yield


def own_state_held(
    *, config: ConfigDoc, run_dir: Path, create: bool
) -> contextlib.AbstractContextManager[None]:
    """`checks_running` on this project's own folders: its cache, the output folder holding
    `run_dir` beside earlier runs (none with --flat-output: the run is the folder) and the
    calibration record's folder. Held by `eb run` while its checks execute and by `eb
    calibrate` while its samples run, so that no other eb process writes there meanwhile."""
    from eval_banana.settings.folders import cache_dir, record_path
    from eval_banana.settings.rundir import output_base

    base = real_path(output_base(config=config))
    return checks_running(
        cache=cache_dir(config=config),
        create=create,
        runs=None if base == real_path(run_dir) else base,
        record=record_path(config=config).parent,
    )


def _waiting(*, folder: Path) -> Callable[[], None]:
    """What a run says before its checks wait for another eb process changing `folder` (an
    `eb update` of a run beside it may take as long as its own checks)."""
    return lambda: logger.warning(
        "Waiting for another eb process changing %s to end before this run's checks start",
        folder,
    )


def checks_executing(*, record: Path) -> bool:
    """Whether some eb process's checks (or judges) execute in the project of the calibration
    record `record` right now (they hold its folder shared): a probe that never waits."""
    with alone_in_folder(folder=record.parent) as ours:
        return not ours


def record_writes(
    *, record: Path, waits: Callable[[], None]
) -> contextlib.AbstractContextManager[None]:
    """Held (exclusive, on the record's folder itself) while `eb calibrate` replaces the
    calibration record: it waits while any run's checks execute (`waits` says so once)."""
    return waiting_alone_in_folder(folder=record.parent, waits=waits)


def cache_writes(*, cache: Path) -> contextlib.AbstractContextManager[bool]:
    """Held (exclusive) while eb writes into the cache once its checks have ended; False,
    never waiting, while another run's checks execute (then nothing is written: runs sharing a
    cache store only while none of them runs checks)."""
    return alone(folder=cache)


class StateWatch:
    """Which check was running whenever eb's state changed during a run's checks."""

    def __init__(
        self, *, places: StatePlaces, project_root: Path, running: frozenset[str] = frozenset()
    ) -> None:
        self.places = places
        self._project = str(real_path(project_root))
        self._lock = threading.Lock()
        self._running: set[str] = set()
        self._ended: list[str] = []
        self._charged: dict[str, set[str]] = {}
        self._seen_alone: list[tuple[set[str], tuple[str, ...]]] = []
        self._changed: set[str] = set()
        self._files = {path: identity(path) for path in places.files}
        # The calibration record as it stands before any check starts: what a change to it
        # while they run is undone to (the watch's turn is held: no eb process replaces it).
        self._record_before: Saved | None = (
            saved_record(path=places.calibration_record)
            if places.calibration_record is not None
            else None
        )
        self._watcher: TreeWatcher | None = None
        self._root = ""
        self._before: dict[str, Identity] | None = None
        self._lost = False  # inotify lost events once: what changed is no longer known
        folders = places.folders
        if folders and len(folders) <= FOLDER_BUDGET:
            self._root = os.path.commonpath(folders)
            relative = [os.path.relpath(folder, self._root) for folder in folders]
            self._watcher = TreeWatcher.open(
                root=self._root,
                folders=["" if rel == "." else rel for rel in relative],
                watch_root=False,
            )
        if self._watcher is None and folders:
            self._before = listing(folders=folders, files=())
        # Written through a hard link made elsewhere, these change with no event on their folder.
        self._in_place = InPlace(cache=places.cache, runs=places.run_folders)
        self._new_runs = NewRuns(outputs=places.outputs, since=places.created_at)
        # Taken once the cache has restored every reused verdict, before any check starts.
        self._linked = (
            linked_files(places.current_checks, running=running)
            if places.current_checks is not None
            else {}
        )

    @classmethod
    def open(
        cls, *, config: ConfigDoc, run_dir: Path, running: frozenset[str] = frozenset()
    ) -> StateWatch:
        """eb's own state for a run (or a calibration) writing into `run_dir`, watched from
        now; `running`: the stems of the checks about to run, whose files eb replaces itself."""
        return cls(
            places=state_places(config=config, run_dir=run_dir),
            project_root=Path(config.project_root),
            running=running,
        )

    @property
    def inotify(self) -> bool:
        return self._watcher is not None

    def _shown(self, path: str) -> str:
        """A changed path as reports name it: relative to the project when inside it."""
        if path.startswith(self._project + os.sep):
            return path[len(self._project) + 1 :]
        return path

    def _changes(self, *, last: bool) -> set[str]:
        """The absolute paths changed since the last look (`last`: the final one)."""
        changed: set[str] = set()
        for path, before in self._files.items():
            now = identity(path)
            if now != before:
                changed.add(path)
                self._files[path] = now
        if self._watcher is not None:
            touched = self._watcher.touched()
            if touched is None:  # events were lost: all that is watched may have changed
                self._lost = True
                return changed | set(self.places.folders)
            changed.update(os.path.join(self._root, path) for path in touched)
        elif last and self._before is not None:
            after = listing(folders=self.places.folders, files=())
            changed.update(
                path
                for path in self._before.keys() | after.keys()
                if self._before.get(path) != after.get(path)
            )
        if last:
            # Written in place (or removed), a linked file is the cache's copy changed too; a
            # write changes its size or modification time. A check that sets the time back after
            # writing is not told here, but the cache checks a copy's digest before any reuse.
            changed.update(path for path, before in self._linked.items() if content(path) != before)
            # A change the kernel told already fell on the checks running then.
            changed.update(self._in_place.changed() - self._changed)
            changed.update(self._new_runs.planted())
        return changed

    def _read_back(self, path: str) -> bool:
        """Whether eb reads `path` back: every watched path but a run folder's other files and
        the temporary files of eb's atomic writes (`.<name>.<pid>.<n>.tmp`), which are renamed
        or linked into place and never read; another run making the cache's secret beside
        this one's running checks writes such a file, and only its final name counts."""
        folder, name = os.path.split(path)
        if name.startswith(".") and name.endswith(".tmp"):
            return False
        return folder not in self.places.run_folders or name in RUN_FOLDER_READ_BACK

    def _look(self, *, last: bool = False) -> None:
        changed = {path for path in self._changes(last=last) if self._read_back(path)}
        changed.discard(os.path.join(self.places.cache, LOCK_NAME))  # eb runs taking turns
        if not changed:
            return
        self._changed |= changed
        if self._running:
            for key in self._running:
                self._charged.setdefault(key, set()).update(changed)
        else:
            self._seen_alone.append((changed, tuple(self._ended)))

    def started(self, *, key: str) -> None:
        """A check starts: what changed before now is charged to those already running."""
        with self._lock:
            self._look()
            self._running.add(key)

    def ended(self, *, key: str) -> list[str]:
        """A check ended: the shown paths of eb's state that changed while it ran, sorted."""
        with self._lock:
            self._look()
            self._running.discard(key)
            self._ended.append(key)
            return sorted(self._shown(path) for path in self._charged.pop(key, set()))

    def finish(self) -> StateReport:
        """The last look, once every check has ended; the watch is closed, and the
        calibration record, if it changed meanwhile, put back as it was before the checks (the
        caller still holds the turn on eb's state, so no eb process writes it meanwhile)."""
        with self._lock:
            self._look(last=True)
            told = self._watcher is not None and not self._lost
            self.close()
            record = self.places.calibration_record
            put = None
            if record is not None and self._record_before is not None and record in self._changed:
                put = put_back(path=record, saved=self._record_before)
            late: dict[str, set[str]] = {}
            unattributed: set[str] = set()
            for changed, ended in self._seen_alone:
                if not ended:
                    unattributed |= changed
                for key in ended:
                    late.setdefault(key, set()).update(changed)
            return StateReport(
                changed=sorted(map(self._shown, self._changed)),
                charged={
                    key: sorted(map(self._shown, paths)) for key, paths in self._charged.items()
                },
                late={key: sorted(map(self._shown, paths)) for key, paths in late.items()},
                unattributed=sorted(map(self._shown, unattributed)),
                writes_told=told,
                record_put_back=put,
            )

    def changed_file(self, *, path: str) -> bool:
        """Whether the watched file at `path` (absolute, as the places name it) was seen
        changed by the looks so far."""
        with self._lock:
            return path in self._changed

    def drop_cache_changes(self) -> list[str]:
        """Remove whatever changed in the cache folder during the run: nothing there that eb
        did not write may be reused (a cache folder that appeared meanwhile goes whole); and
        the record of the files eb wrote, which would make the files it notes eb's. The shown
        paths removed."""
        cache = self.places.cache
        removed: list[str] = []
        for path in sorted(self._changed):
            inside = path == cache or path.startswith(cache + os.sep)
            if not inside and path != self.places.written_record:
                continue
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)
                removed.append(self._shown(path))
        return removed

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
