"""The project state: every file of a project and its git blob id, read once.

The file set is what git considers the project (every file it tracks plus untracked files it
does not ignore) or, outside a git repository, every file outside the excluded folders. Ids of
files git already knows unchanged come from git's index, so a 60,000-file tree is keyed by
hashing only the files that differ from it. Files git ignores are not part of the state; they
are listed apart (`ignored`) for callers that match globs against everything on disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Literal, NamedTuple

from eval_banana.core.errors import ProjectStateError
from eval_banana.core.ownmark import MARK_NAMES, in_own_folder, listed_as_own, own_folders_listed
from eval_banana.projectstate import git
from eval_banana.projectstate.blobs import ObjectFormat, blob_id, file_blob_id
from eval_banana.projectstate.patterns import InputPatterns, paths_under

StateSource = Literal["git", "walk"]
_DIGEST_PREFIX = b"eval-banana/project-state/v1\0"


class StateDiff(NamedTuple):
    """What differs between two states (or between a revision and the work tree)."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]

    @property
    def paths(self) -> frozenset[str]:
        return frozenset((*self.added, *self.removed, *self.changed))

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


class ProjectState:
    """The files of a project root (POSIX paths relative to it) and their blob ids."""

    def __init__(
        self,
        *,
        root: str,
        source: StateSource,
        ids: Mapping[str, str],
        object_format: ObjectFormat = "sha1",
        ignored: Iterable[str] = (),
    ) -> None:
        self.root = root
        self.source = source
        self.object_format = object_format
        self._ids = dict(ids)
        self.paths: list[str] = sorted(self._ids)
        self.ignored: list[str] = sorted(set(ignored) - self._ids.keys())
        self._ignored_ids: dict[str, str | None] = {}
        self._digest: str | None = None

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def files(self) -> Mapping[str, str]:
        """Path -> blob id of every file in the state."""
        return self._ids

    def id_of(self, path: str) -> str | None:
        """The blob id of a file of the state or of an ignored file (hashed on first use)."""
        known = self._ids.get(path)
        if known is not None:
            return known
        if path not in self._ignored_ids:
            self._ignored_ids[path] = _hash(root=self.root, path=path, fmt=self.object_format)
        return self._ignored_ids[path]

    def digest(self) -> str:
        """`sha256:<hex>` over every (path, id) of the state, in path order."""
        if self._digest is None:
            ids = self._ids
            self._digest = _digest(
                object_format=self.object_format,
                paths=self.paths,
                ids=[ids[path] for path in self.paths],
            )
        return self._digest

    def digest_of(self, *, paths: Sequence[str]) -> str:
        """`sha256:<hex>` over (path, id) of `paths` (a subset, in the order given)."""
        ids = [self.id_of(path) or "-" for path in paths]
        return _digest(object_format=self.object_format, paths=paths, ids=ids)

    def select(self, *, patterns: InputPatterns, include_ignored: bool = True) -> list[str]:
        """The paths `patterns` match: files of the state and, by default, ignored files."""
        found = patterns.select(self.paths)
        if include_ignored and self.ignored:
            extra = [p for p in patterns.select(self.ignored) if self.id_of(p) is not None]
            found = sorted({*found, *extra})
        return found

    def diff(self, other: ProjectState) -> StateDiff:
        """What `other` (the newer state) adds, removes and changes relative to this one."""
        old, new = self._ids, other._ids
        return StateDiff(
            added=tuple(sorted(new.keys() - old.keys())),
            removed=tuple(sorted(old.keys() - new.keys())),
            changed=tuple(sorted(p for p in old.keys() & new.keys() if old[p] != new[p])),
        )


def _digest(*, object_format: ObjectFormat, paths: Sequence[str], ids: Sequence[str]) -> str:
    # Paths cannot hold NUL and ids are hex, so NUL-separated fields are unambiguous.
    text = "\0".join(chain.from_iterable(zip(paths, ids, strict=True)))
    digest = hashlib.sha256(_DIGEST_PREFIX)
    digest.update(object_format.encode() + b"\0")
    digest.update(text.encode("utf-8", "surrogateescape"))
    return f"sha256:{digest.hexdigest()}"


def _hash(*, root: str, path: str, fmt: ObjectFormat) -> str | None:
    full = os.path.join(root, path)
    try:
        return file_blob_id(path=full, object_format=fmt)
    except OSError as exc:
        raise ProjectStateError(
            f"Cannot read {full}: {exc.strerror or exc}",
            file=full,
            hint="make the file readable, or move it out of the project",
        ) from None


def relative_folders(*, root: str, folders: Iterable[str | Path]) -> tuple[str, ...]:
    """Folders (absolute or root-relative) as root-relative prefixes ending in `/`."""
    out = []
    for folder in folders:
        full = os.path.normpath(os.path.join(root, folder))
        relative = os.path.relpath(full, root)
        if relative != "." and not relative.startswith(".."):
            out.append(relative.replace(os.sep, "/") + "/")
    return tuple(out)


def relative_files(*, root: str | Path, files: Iterable[Path]) -> frozenset[str]:
    """The files inside `root` (links resolved, as the root is) as root-relative POSIX
    paths; those outside it left out."""
    base = Path(root).resolve()
    found = set()
    for path in files:
        with contextlib.suppress(ValueError):
            found.add(path.resolve().relative_to(base).as_posix())
    return frozenset(found)


def read_project_state(
    *,
    root: str | Path,
    excluded_names: Iterable[str] = (".git",),
    skip_folders: Iterable[str | Path] = (),
    prefixes: Sequence[str] | None = None,
    include_ignored: bool = False,
    known: Mapping[str, bytes] | None = None,
) -> ProjectState:
    """The state of the project at `root`.

    `excluded_names`: folder names never walked into (outside git, and for ignored files).
    `skip_folders`: folders whose files never count (eb's output and cache folders).
    `prefixes`: only paths at or below these root-relative paths (None: the whole project).
    `include_ignored`: also list the files git ignores, outside the excluded folders.
    `known`: contents already read this run, by absolute resolved path (the check files): a
    walk hashes them from memory instead of reading them again.
    """
    top = os.path.realpath(root)
    skip = relative_folders(root=top, folders=skip_folders)
    excluded = frozenset(excluded_names) | {".git"}
    if prefixes is not None and not prefixes:
        return ProjectState(root=top, source="walk", ids={})
    walks = None
    if top in _PREFETCHED:
        walks = _PREFETCHED.pop(top)
        if walks is None:  # found outside any git work tree when the prefetch began
            return _walk_state(
                root=top, excluded=excluded, skip=skip, prefixes=prefixes, known=known
            )
    try:
        repo = walks.repo if walks is not None else git.find_repository(root=top)
    except git.NotARepository:
        return _walk_state(root=top, excluded=excluded, skip=skip, prefixes=prefixes, known=known)
    state = _git_state(
        root=top,
        repo=repo,
        excluded=excluded,
        skip=skip,
        prefixes=prefixes,
        include_ignored=include_ignored,
        prefetched=walks,
    )
    if state is None:  # git lists nothing here: the folder is ignored by its repository
        return _walk_state(root=top, excluded=excluded, skip=skip, prefixes=prefixes, known=known)
    return state


def _drop_folders(*, ids: dict[str, str], folders: Sequence[str]) -> None:
    """Remove the paths inside `folders` (each ending in `/`) by range, not one by one."""
    paths = sorted(ids)
    for folder in folders:
        start = bisect_left(paths, folder)
        end = bisect_left(paths, folder[:-1] + "0")  # "0" sorts right after "/"
        for path in paths[start:end]:
            ids.pop(path, None)  # folders may nest


def within(*, paths: Sequence[str], prefixes: Sequence[str]) -> list[str]:
    """The paths of a sorted sequence that are at or below one of `prefixes`, sorted."""
    found: set[str] = set()
    for prefix in prefixes:
        found.update(paths_under(paths, prefix))
    return sorted(found)


def under_any(*, path: str, prefixes: Sequence[str]) -> bool:
    """Whether `path` is at or below one of `prefixes` (or holds one, for a folder entry)."""
    return any(
        path == prefix or path.startswith(prefix + "/") or prefix.startswith(path + "/")
        for prefix in prefixes
    )


def skipped(path: str, skip: Sequence[str]) -> bool:
    """Whether `path` lies in one of the folders `skip` (root-relative, ending in `/`)."""
    return bool(skip) and (path + "/").startswith(tuple(skip))


def _excluded_path(path: str, excluded: frozenset[str]) -> bool:
    return any(name in excluded for name in path.split("/")[:-1])


class _Walks(NamedTuple):
    """git's two slow commands of a state read, started: one lstat()s every file in the index,
    the other walks the tree for untracked files. Both print little, so neither waits on its
    pipe: started early, they run to the end while eb does something else."""

    repo: git.Repository
    dirty: subprocess.Popen[bytes]
    untracked: subprocess.Popen[bytes]
    skip: tuple[str, ...]  # the folders left out of both walks

    @classmethod
    def start(
        cls, *, repo: git.Repository, prefixes: Sequence[str] | None, skip: tuple[str, ...]
    ) -> _Walks:
        top = repo.top
        spec = git.pathspecs(repo=repo, prefixes=prefixes, leave_out=skip)
        return cls(
            repo=repo,
            dirty=git.start(args=["diff-files", "--name-only", "-z", *spec], cwd=top),
            untracked=git.start(
                args=["ls-files", "-o", "--exclude-standard", "-z", *spec], cwd=top
            ),
            skip=skip,
        )

    def close(self) -> None:
        """End and reap both commands (their output is not wanted)."""
        for process in (self.dirty, self.untracked):
            git.stop(process=process)


# Project roots (real paths) whose whole state git has begun to read (`prefetched_state`),
# or None for a root found outside any git work tree.
_PREFETCHED: dict[str, _Walks | None] = {}


@contextlib.contextmanager
def prefetched_state(
    *, root: str | Path, skip_folders: Iterable[str | Path] = ()
) -> Iterator[None]:
    """Start git's slow commands for the whole state of the project at `root` now, for the
    first `read_project_state` of that root inside the block that reads the whole project
    (or paths git is not told about) and skips the same `skip_folders`; they are ended at the
    block's end if none did.

    `eb run` with the verdict cache begins this before it looks for check files, so git walks
    the tree on the other core meanwhile. What git reports is the tree as it was when they
    started, so they are never kept for a later read. Outside a git repository this does
    nothing; a problem is left for the read to report as usual.
    """
    top = os.path.realpath(root)
    drop_prefetched(root=top)
    try:
        repo = git.find_repository(root=top)
        skip = relative_folders(root=top, folders=skip_folders)
        _PREFETCHED[top] = _Walks.start(repo=repo, prefixes=None, skip=skip)
    except git.NotARepository:
        _PREFETCHED[top] = None  # the read walks the folder without asking git again
    except OSError:
        pass
    try:
        yield
    finally:
        drop_prefetched(root=top)


def drop_prefetched(*, root: str) -> None:
    """End and forget the prefetched commands of `root` (a real path), if any are left."""
    prefetched = _PREFETCHED.pop(root, None)
    if prefetched is not None:
        prefetched.close()


def _walks(
    *,
    repo: git.Repository,
    prefixes: Sequence[str] | None,
    skip: tuple[str, ...],
    prefetched: _Walks | None,
) -> _Walks:
    """The prefetched commands when they cover what this read asks git for, else the same
    commands started now."""
    if prefetched is not None and not git.narrows(prefixes) and prefetched.skip == skip:
        return prefetched
    if prefetched is not None:
        prefetched.close()
    return _Walks.start(repo=repo, prefixes=prefixes, skip=skip)


def _git_state(
    *,
    root: str,
    repo: git.Repository,
    excluded: frozenset[str],
    skip: tuple[str, ...],
    prefixes: Sequence[str] | None,
    include_ignored: bool,
    prefetched: _Walks | None = None,
) -> ProjectState | None:
    # eb's own folders are left out of every listing: their files never count.
    spec = git.pathspecs(repo=repo, prefixes=prefixes, leave_out=skip)
    top = repo.top
    # Started together (or before the check files were read): git lstat()s the index and
    # walks for untracked (and ignored) files in parallel.
    walks = _walks(repo=repo, prefixes=prefixes, skip=skip, prefetched=prefetched)
    ignored_process: subprocess.Popen[bytes] | None = None
    try:
        if include_ignored:
            ignored_process = git.start(
                args=["ls-files", "-o", "-i", "--exclude-standard", "--directory", "-z", *spec],
                cwd=top,
            )
        index = git.parse_stage_entries(
            output=git.run(args=["ls-files", "-s", "-z", *spec], cwd=top, what="ls-files -s"),
            repo=repo,
        )
        dirty = set(
            git.split_paths(output=git.finish(process=walks.dirty, what="diff-files"), repo=repo)
        )
        untracked = git.split_paths(
            output=git.finish(process=walks.untracked, what="ls-files -o"), repo=repo
        )
    except BaseException:
        walks.close()  # no git command of a failed read outlives it
        if ignored_process is not None:
            git.stop(process=ignored_process)
        raise
    ignored_raw = (
        git.split_paths(output=git.finish(process=ignored_process, what="ls-files -i"), repo=repo)
        if ignored_process is not None
        else []
    )
    if not index.ids and not untracked and prefixes is None:
        return None
    fmt = repo.object_format
    ids = index.ids
    # Run folders and marked cache or history folders that no setting names (an old
    # `--output-dir`, a moved `[cache] dir`) are eb's too: known by the mark files git lists.
    skip = (
        *skip,
        *own_folders_listed(root=root, paths=chain(ids, untracked)),
        *_prefixes_in_own_folders(root=root, prefixes=prefixes),
    )
    if skip:
        _drop_folders(ids=ids, folders=skip)
    if prefixes is not None and not git.narrows(prefixes):
        ids = {path: ids[path] for path in within(paths=sorted(ids), prefixes=prefixes)}
        untracked = within(paths=sorted(untracked), prefixes=prefixes)
        ignored_raw = [p for p in ignored_raw if under_any(path=p.rstrip("/"), prefixes=prefixes)]
    # Submodules count by the commit they record; everything git sees differ is hashed.
    for path in (dirty | index.conflicted) - index.gitlinks:
        if path not in ids:
            continue
        found = _hash(root=root, path=path, fmt=fmt)
        if found is None:  # deleted from the work tree
            ids.pop(path, None)  # folders may nest
        else:
            ids[path] = found
    for path in untracked:
        # A trailing slash is a nested repository, which git does not look into.
        if path.endswith("/") or skipped(path, skip) or path in ids:
            continue
        found = _hash(root=root, path=path, fmt=fmt)
        if found is not None:
            ids[path] = found
    ignored = list(expand_ignored(root=root, entries=ignored_raw, excluded=excluded, skip=skip))
    return ProjectState(root=root, source="git", ids=ids, object_format=fmt, ignored=ignored)


def expand_ignored(
    *, root: str, entries: list[str], excluded: frozenset[str], skip: tuple[str, ...]
) -> Iterator[str]:
    """Ignored files, with each ignored folder git reports walked (excluded names pruned)."""
    for entry in entries:
        path = entry.rstrip("/")
        if skipped(path, skip) or _excluded_path(path + "/x", excluded):
            continue
        if entry.endswith("/"):
            yield from _walk(root=root, start=path, excluded=excluded, skip=skip)
        else:
            yield path


def _walk(
    *, root: str, start: str, excluded: frozenset[str], skip: tuple[str, ...]
) -> Iterator[str]:
    """Files (and links) below `root/start`, as root-relative paths; folders never followed,
    nor eb's own folders below the root (core/ownmark.py), wherever they lie."""
    stack = [start]
    while stack:
        relative = stack.pop()
        folder = os.path.join(root, relative) if relative else root
        files: list[str] = []
        folders: list[str] = []
        marks: list[str] = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    if name in MARK_NAMES:
                        marks.append(name)
                    path = f"{relative}/{name}" if relative else name
                    if entry.is_dir(follow_symlinks=False):
                        if name not in excluded and not skipped(path, skip):
                            folders.append(path)
                    elif (
                        entry.is_file(follow_symlinks=False) or entry.is_symlink()
                    ) and not skipped(path, skip):
                        files.append(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise ProjectStateError(
                f"Cannot list {folder}: {exc.strerror or exc}",
                file=folder,
                hint="make the folder readable, or add its name to [discovery] exclude_dirs",
            ) from None
        # Only a folder whose listing names a mark costs a read more.
        if marks and relative and listed_as_own(folder=folder, names=marks):
            continue
        yield from files
        stack.extend(folders)


def _prefixes_in_own_folders(*, root: str, prefixes: Sequence[str] | None) -> list[str]:
    """The prefixes (as folders, ending in `/`) that lie in a folder eb wrote: a walk or a
    listing below one never sees the mark above it."""
    top = Path(root)
    return [
        prefix + "/"
        for prefix in prefixes or ()
        if prefix and in_own_folder(path=top / prefix, root=top)
    ]


def every_file(*, root: str | Path, skip_folders: Iterable[str | Path] = ()) -> list[str]:
    """Every file (and link) below `root`, git's own folder and the ones git ignores included,
    but none inside `skip_folders`: what a judge running in the project can see."""
    top = os.path.realpath(root)
    skip = relative_folders(root=top, folders=skip_folders)
    return sorted(_walk(root=top, start="", excluded=frozenset(), skip=skip))


def _walk_state(
    *,
    root: str,
    excluded: frozenset[str],
    skip: tuple[str, ...],
    prefixes: Sequence[str] | None,
    known: Mapping[str, bytes] | None = None,
) -> ProjectState:
    paths: dict[str, None] = {}
    skip = (*skip, *_prefixes_in_own_folders(root=root, prefixes=prefixes))
    for start in prefixes if prefixes is not None else [""]:
        full = os.path.join(root, start) if start else root
        if start and (os.path.islink(full) or not os.path.isdir(full)):
            # A prefix naming one file (or link) is that file, when it exists.
            usable = not _excluded_path(start, excluded) and not skipped(start, skip)
            if usable and os.path.lexists(full):
                paths[start] = None
            continue
        if start and (_excluded_path(start + "/x", excluded) or skipped(start, skip)):
            continue
        paths.update(dict.fromkeys(_walk(root=root, start=start, excluded=excluded, skip=skip)))
    ids: dict[str, str] = {}
    known = known or {}
    for path in paths:
        # A known path is a regular file: a link's own path is never a resolved one.
        data = known.get(f"{root}/{path}")
        found = _hash(root=root, path=path, fmt="sha1") if data is None else blob_id(data=data)
        if found is not None:
            ids[path] = found
    return ProjectState(root=root, source="walk", ids=ids)
