"""Judges that change the project they judge are caught: `[harness] isolation = "detect"`.

Before the execute stage the project's state is read (every file git tracks plus untracked files
it does not ignore, or the files outside the excluded folders where there is no git; eb's own
folders, and the files it writes beside them, never count). Whenever a watched check starts or
ends, eb looks at what changed since the last look: every watched check running at that moment
is charged with the change, so a judge that rewrote a file, and every judge that ran beside it
while it happened, ends as an `error`. Which files were touched comes from inotify where Linux
offers it (a look costs a few system calls), else from reading the state again; a touched file
counts as changed only when its content (its git blob id) or its mode as git records it (a chmod
of the execute bit, a file turned into a link) differs.

A change seen while no watched check runs, once one has ended, is kept for the checks that ended
before it (a process one of them left behind may have made it). And once every check has ended
(and what they left behind is ended), a last look reads the whole state again, as at the start:
inotify tells nothing of a write through a hard link made elsewhere (the kernel reports it on
the folder of the name written) nor of what happened after the last look, and git's stat of
each file does (a write moves its times, so git hashes it again). What it finds falls on every
watched check that ran: which one wrote is unknown.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.files import is_temp_sibling
from eval_banana.core.ownmark import OwnFolders, OwnMarks
from eval_banana.core.streams import stream_files
from eval_banana.isolation.watch import TreeWatcher
from eval_banana.isolation.watchturn import project_watched
from eval_banana.projectstate.blobs import REGULAR, FileIdentity, file_identity
from eval_banana.projectstate.git import command as git_command
from eval_banana.projectstate.git import environment as git_environment
from eval_banana.projectstate.patterns import InputPatterns
from eval_banana.projectstate.prefixes import relative_files, relative_folders
from eval_banana.projectstate.reading import read_project_state
from eval_banana.projectstate.state import ProjectState

# What running code leaves behind on its own, beside what `[harness] isolation_ignore` adds.
DEFAULT_IGNORE: tuple[str, ...] = (
    "**/__pycache__/**",
    "**/*.pyc",
    ".pytest_cache/**",
    ".mypy_cache/**",
    ".ruff_cache/**",
    ".hypothesis/**",
)


def ignore_patterns(extra: Sequence[str]) -> InputPatterns:
    return InputPatterns([*DEFAULT_IGNORE, *extra])


class LateChanges(NamedTuple):
    """What the project's looks charged to checks that had already ended, for the run to charge
    once every check has ended.

    `alone`: changes seen while no watched check ran, by the watched checks (their keys) that
    had ended before; `at_end`: the changes the last look found that no look while the checks
    ran had seen, which fall on every watched check in `ran`; `changed`: every project path
    charged to some watched check during the run, these included (then the run stores no
    verdict: some may rest on files other than those their keys name)."""

    alone: dict[str, list[str]]
    at_end: list[str]
    ran: tuple[str, ...]
    changed: list[str]


NO_LATE_CHANGES = LateChanges(alone={}, at_end=[], ran=(), changed=[])


class ChangeMonitor:
    """The project's state, kept current, and which watched check is charged with each change."""

    def __init__(
        self,
        *,
        state: ProjectState,
        excluded: frozenset[str],
        skip: tuple[str, ...],
        ignore: InputPatterns,
        read_state: Callable[[], ProjectState],
        marks: OwnMarks,
        own: frozenset[str] = frozenset(),
    ) -> None:
        self.root = state.root
        self.source = state.source
        self.object_format = state.object_format
        self._excluded = excluded
        self._skip = skip
        self._own = own
        self._marks = marks
        self._own_names = {os.path.split(path) for path in own}
        self._ids = self._without_own(state.files)
        self._modes = self._without_own(state.modes)
        self._ignore = ignore
        self._read_state = read_state
        self._lock = threading.Lock()
        self._running: set[str] = set()
        self._charged: dict[str, set[str]] = {}
        # The watched checks that ended, in order; changes seen while none ran, with the checks
        # that had ended by then; every path charged to some check.
        self._ended: list[str] = []
        self._seen_alone: list[tuple[set[str], tuple[str, ...]]] = []
        self._charged_paths: set[str] = set()
        folders = {os.path.dirname(path) for path in self._ids}
        # Every folder on the way to a file, so new files and folders beside them are seen.
        for folder in list(folders):
            while folder:
                folder = os.path.dirname(folder)
                folders.add(folder)
        # A chmod changes the mode the state counts: attribute changes are touches too.
        self._watcher = TreeWatcher.open(root=self.root, folders=folders, attributes=True)
        # The project's watch turn (`open`), held until `close`.
        self._turn = contextlib.ExitStack()

    @classmethod
    def open(
        cls,
        *,
        root: Path,
        excluded_names: Iterable[str],
        skip_folders: Iterable[Path],
        ignore: Sequence[str],
        own_files: Iterable[Path] = (),
    ) -> ChangeMonitor:
        """`skip_folders` and `own_files`: eb's own folders and the files eb writes into the
        project (settings/folders.py), which are never the project's. Nor is a file eb's own
        stdout or stderr writes to (`eb run > eb.log`): eb's progress lines change it."""
        excluded = tuple(excluded_names)
        skips = tuple(skip_folders)

        def read(marks: OwnMarks) -> ProjectState:
            return read_project_state(
                root=root, excluded_names=excluded, skip_folders=skips, marks=marks
            )

        # Taken before the first read, let go after the last look (`close`): no other run
        # writes a report into the project meanwhile (isolation/watchturn.py).
        with contextlib.ExitStack() as turn:
            turn.enter_context(project_watched(root=root))
            found = OwnMarks()
            state = read(found)
            # eb's folders no setting names (another run's `--output-dir`) are those that hold
            # its mark now, before any check starts: a check can write a mark too, and one
            # written later makes no folder eb's (core/ownmark.py).
            marks = OwnMarks(fixed=found.found)
            # Where the system cannot name the file behind eb's output, it is one of these.
            streams = stream_files(among=lambda: (Path(state.root) / path for path in state.files))
            monitor = cls(
                state=state,
                excluded=frozenset(excluded) | {".git"},
                skip=relative_folders(root=state.root, folders=skips),
                ignore=ignore_patterns(ignore),
                read_state=lambda: read(marks),
                marks=marks,
                own=relative_files(root=state.root, files=[*own_files, *streams]),
            )
            monitor._turn = turn.pop_all()
        return monitor

    @property
    def paths(self) -> list[str]:
        """The project's file set as it stands (what a disposable copy holds)."""
        with self._lock:
            return sorted(self._ids)

    @property
    def inotify(self) -> bool:
        return self._watcher is not None

    def _is_own(self, path: str) -> bool:
        """One of eb's files, or a temporary file an atomic write of one leaves beside it:
        another eb run writes those whenever it likes (its failures, its JUnit file)."""
        if path in self._own:
            return True
        folder, name = os.path.split(path)
        return any(
            folder == own_folder and is_temp_sibling(name=name, of=own_name)
            for own_folder, own_name in self._own_names
        )

    def _without_own(self, files: Mapping[str, str]) -> dict[str, str]:
        return {path: ids for path, ids in files.items() if not self._is_own(path)}

    def _counts(self, path: str, *, own: OwnFolders) -> bool:
        """Whether a path can belong to the state at all (eb's folders and files, excluded
        names, ignore). `own`: asks about the folders eb wrote that no setting names (another
        run's `--output-dir`), once per batch of paths: only those found before any check
        started, while they still hold their mark (`OwnMarks`)."""
        if any(path.startswith(folder) for folder in self._skip) or self._is_own(path):
            return False
        if any(part in self._excluded for part in path.split("/")[:-1]):
            return False
        return not self._ignore.matches(path) and not own(path)

    def _git_ignored(self, paths: list[str]) -> set[str]:
        """The new paths git ignores (so they are not part of the state)."""
        if self.source != "git" or not paths:
            return set()
        done = subprocess.run(
            git_command(args=["check-ignore", "--stdin", "-z", "--no-index"]),
            cwd=self.root,
            input=b"\0".join(path.encode("utf-8", "surrogateescape") for path in paths) + b"\0",
            capture_output=True,
            env=git_environment(),
            check=False,
        )
        return {
            item.decode("utf-8", "surrogateescape") for item in done.stdout.split(b"\0") if item
        }

    def project_paths(self, paths: Sequence[str]) -> list[str]:
        """The paths that are (or would be) files of the project's state: not eb's folders, no
        excluded name, not ignored by isolation_ignore or, for new files, by git."""
        with self._lock:
            own = OwnFolders(root=self.root, marks=self._marks)
            kept = [path for path in paths if self._counts(path, own=own)]
            new = [path for path in kept if path not in self._ids]
        ignored = self._git_ignored(new)
        return [path for path in kept if path not in ignored]

    def _candidates(self, touched: set[str]) -> set[str]:
        """Files a set of touched paths may stand for (a folder that went: all it held)."""
        found: set[str] = set()
        known: list[str] | None = None
        for path in touched:
            found.add(path)
            if path in self._ids:
                continue
            if known is None:
                known = sorted(self._ids)
            prefix = f"{path}/"
            start = bisect_left(known, prefix)
            while start < len(known) and known[start].startswith(prefix):
                found.add(known[start])
                start += 1
        return found

    def _confirm(self, candidates: set[str]) -> set[str]:
        """The candidates whose content differs from the state; the state is brought up to date."""
        changed: set[str] = set()
        new: list[str] = []
        own = OwnFolders(root=self.root, marks=self._marks)
        for path in sorted(candidates):
            if not self._counts(path, own=own):
                continue
            full = os.path.join(self.root, path)
            current = file_identity(path=full, object_format=self.object_format)
            before = self._identity(path)
            if current == before:
                continue
            if before is None:
                new.append(path)
                continue
            changed.add(path)
            self._record(path=path, found=current)
        ignored = self._git_ignored(new)
        for path in new:
            if path in ignored:
                continue
            current = file_identity(
                path=os.path.join(self.root, path), object_format=self.object_format
            )
            if current is not None:
                self._record(path=path, found=current)
                changed.add(path)
        return changed

    def _identity(self, path: str) -> FileIdentity | None:
        known = self._ids.get(path)
        return None if known is None else FileIdentity(self._modes.get(path, REGULAR), known)

    def _record(self, *, path: str, found: FileIdentity | None) -> None:
        """The state brought up to date at `path` (None: the file is gone)."""
        if found is None:
            self._ids.pop(path, None)
            self._modes.pop(path, None)
            return
        self._ids[path] = found.id
        if found.mode == REGULAR:
            self._modes.pop(path, None)
        else:
            self._modes[path] = found.mode

    def _changes(self, *, whole: bool = False) -> set[str]:
        """The paths changed since the last look; `whole`: read the whole state again, whatever
        inotify says (the last look)."""
        touched = self._watcher.touched() if self._watcher is not None else None
        if touched is not None and not whole:
            return self._confirm(self._candidates(touched)) if touched else set()
        # No inotify, events were lost, or the last look: read the whole state again and
        # compare. git hashes again each file whose stat moved, a write through a link included.
        now = self._read_state()
        before = ProjectState(
            root=self.root,
            source=self.source,
            ids=self._ids,
            modes=self._modes,
            object_format=self.object_format,
        )
        diff = before.diff(now)
        self._ids = self._without_own(now.files)
        self._modes = self._without_own(now.modes)
        own = OwnFolders(root=self.root, marks=self._marks)
        return {path for path in diff.paths if self._counts(path, own=own)}

    def _charge_running(self) -> None:
        changed = self._changes()
        if not changed:
            return
        if self._running:
            for key in self._running:
                self._charged.setdefault(key, set()).update(changed)
            self._charged_paths |= changed
        elif self._ended:
            # Made after the checks that ended had started: a process one of them left behind
            # (a daemon with an environment of its own, which eb ends only when no check runs)
            # may have made it, beside checks nothing watches.
            self._seen_alone.append((changed, tuple(self._ended)))
            self._charged_paths |= changed

    def started(self, *, key: str) -> None:
        """A watched check starts: what changed before now is charged to those already running."""
        with self._lock:
            self._charge_running()
            self._running.add(key)

    def ended(self, *, key: str) -> list[str]:
        """A watched check ended: the paths that changed while it ran, sorted."""
        with self._lock:
            self._charge_running()
            self._running.discard(key)
            self._ended.append(key)
            return sorted(self._charged.pop(key, set()))

    def finish(self) -> LateChanges:
        """The last look, once every check has ended and the processes they left behind are
        ended (only when a watched check ran): the whole state read again and compared with
        the state the looks kept, and what the looks charged to checks already ended."""
        with self._lock:
            if not self._ended:
                return NO_LATE_CHANGES
            at_end = self._changes(whole=True)
            self._charged_paths |= at_end
            alone: dict[str, set[str]] = {}
            for changed, ended in self._seen_alone:
                for key in ended:
                    alone.setdefault(key, set()).update(changed)
            return LateChanges(
                alone={key: sorted(paths) for key, paths in alone.items()},
                at_end=sorted(at_end),
                ran=tuple(self._ended),
                changed=sorted(self._charged_paths),
            )

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
        self._turn.close()
