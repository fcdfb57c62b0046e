"""The project state as git lists it: ids and modes from git's index, hashing (and lstat-ing)
only what differs.

The file set is every file git tracks plus the untracked files it does not ignore, below the
project root and outside eb's own folders. Files git ignores are listed apart, each ignored
folder walked, for callers that match globs against everything on disk.
"""

from __future__ import annotations

import subprocess
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from itertools import chain

from eval_banana.core.ownmark import OwnMarks
from eval_banana.projectstate import conversion, git
from eval_banana.projectstate.blobs import EXECUTABLE, REGULAR, FileIdentity
from eval_banana.projectstate.prefetch import Walks, walks_for
from eval_banana.projectstate.prefixes import holding, skipped, under_any, within
from eval_banana.projectstate.state import ProjectState, hash_file
from eval_banana.projectstate.walking import excluded_path, prefixes_in_own_folders, walk


def _drop_folders(*, ids: dict[str, str], folders: Sequence[str]) -> None:
    """Remove the paths inside `folders` (each ending in `/`) by range, not one by one."""
    paths = sorted(ids)
    for folder in folders:
        start = bisect_left(paths, folder)
        end = bisect_left(paths, folder[:-1] + "0")  # "0" sorts right after "/"
        for path in paths[start:end]:
            ids.pop(path, None)  # folders may nest


def _take(
    *, ids: dict[str, str], modes: dict[str, str], path: str, found: FileIdentity | None
) -> None:
    """Record what eb found on disk at `path` in place of what the index said (None: gone)."""
    if found is None:
        ids.pop(path, None)
        modes.pop(path, None)
        return
    ids[path] = found.id
    if found.mode == REGULAR:
        modes.pop(path, None)
    else:
        modes[path] = found.mode


# git's spellings of false (`git config --type=bool`); unset, or any other value, is true.
_FALSE = frozenset({"false", "no", "off", "0"})
_FILE_MODES = frozenset({REGULAR, EXECUTABLE})


def _counts_executable_bit(settings: dict[str, str]) -> bool:
    """Whether git reads a file's executable bit (core.fileMode, true unless set false)."""
    return settings.get("core.filemode", "true").strip().lower() not in _FALSE


def _as_git_sees(*, found: FileIdentity | None, listed: str) -> FileIdentity | None:
    """`found` on disk, as git sees it under core.fileMode false: it never reads the
    executable bit then, so a regular file keeps the mode the index lists for it (`listed`,
    100644 for a file not in the index); a chmod alone changes nothing, as in `git status`."""
    if found is None or found.mode not in _FILE_MODES or listed not in _FILE_MODES:
        return found
    return FileIdentity(listed, found.id)


def git_state(
    *,
    root: str,
    repo: git.Repository,
    excluded: frozenset[str],
    skip: tuple[str, ...],
    prefixes: Sequence[str] | None,
    include_ignored: bool,
    prefetched: Walks | None = None,
    marks: OwnMarks | None = None,
) -> ProjectState | None:
    """The state as git lists it, or None when git lists nothing of a whole project (an
    ignored folder); eb's folders are those `marks` takes for its own."""
    marks = marks or OwnMarks()
    # eb's own folders are left out of every listing: their files never count.
    spec = git.pathspecs(repo=repo, prefixes=prefixes, leave_out=skip)
    top = repo.top
    # Started together (or before the check files were read): git lstat()s the index and
    # walks for untracked (and ignored) files in parallel.
    walks = walks_for(repo=repo, prefixes=prefixes, skip=skip, prefetched=prefetched)
    ignored_process: subprocess.Popen[bytes] | None = None
    settings = conversion.start_settings(repo=repo)
    try:
        if include_ignored:
            ignored_process = git.start(
                args=["ls-files", "-o", "-i", "--exclude-standard", "--directory", "-z", *spec],
                cwd=top,
            )
        # A submodule holding a prefix is listed too: a pattern naming a file in it matches it.
        holders = git.holder_pathspecs(repo=repo, prefixes=prefixes)
        index = git.parse_stage_entries(
            output=git.run(args=[*git.INDEX_LISTING, *spec, *holders], cwd=top, what="ls-files -s"),
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
        git.stop(process=settings)
        if ignored_process is not None:
            git.stop(process=ignored_process)
        raise
    ignored_raw = (
        git.split_paths(output=git.finish(process=ignored_process, what="ls-files -i"), repo=repo)
        if ignored_process is not None
        else []
    )
    if not index.ids and not untracked and prefixes is None:
        git.stop(process=settings)
        return None
    fmt = repo.object_format
    ids = index.ids
    modes = index.modes  # a mode left for a path dropped below is dropped by ProjectState
    values = conversion.read_settings(settings)
    listed_modes = None if _counts_executable_bit(values) else dict(modes)

    def on_disk(path: str) -> FileIdentity | None:
        found = hash_file(root=root, path=path, fmt=fmt)
        if listed_modes is None:
            return found
        return _as_git_sees(found=found, listed=listed_modes.get(path, REGULAR))

    # Run folders and marked cache or history folders that no setting names (an old
    # `--output-dir`, a moved `[cache] dir`) are eb's too: known by the mark files git lists.
    skip = (
        *skip,
        *marks.in_listing(root=root, paths=chain(ids, untracked)),
        *prefixes_in_own_folders(root=root, prefixes=prefixes, marks=marks),
    )
    if skip:
        _drop_folders(ids=ids, folders=skip)
    if prefixes is not None and not git.narrows(prefixes):
        kept = [*within(paths=sorted(ids), prefixes=prefixes), *holding(index.gitlinks, prefixes)]
        ids = {path: ids[path] for path in kept}
        untracked = within(paths=sorted(untracked), prefixes=prefixes)
        ignored_raw = [p for p in ignored_raw if under_any(path=p.rstrip("/"), prefixes=prefixes)]
    # Submodules count by the commit they record; everything git sees differ is hashed, and so
    # is every file git never compares (assume-unchanged, skip-worktree: only they are read).
    for path in (dirty | index.conflicted | index.unwatched) - index.gitlinks:
        if path in ids:  # else in a folder left out; a deleted file goes
            _take(ids=ids, modes=modes, path=path, found=on_disk(path))
    rule = conversion.conversion(
        repo=repo,
        root=root,
        settings=values,
        listed_attributes=_attributes_files(ids=ids, untracked=untracked, listed=index.attributes),
        prefixes=prefixes,
    )
    if rule is not None:
        # The index holds what git made of the bytes, the check reads the bytes themselves.
        read = dirty | index.conflicted | index.unwatched | index.gitlinks
        from_index = [path for path in ids if path not in read]
        for path in conversion.converted(repo=repo, rule=rule, candidates=from_index):
            _take(ids=ids, modes=modes, path=path, found=on_disk(path))
    listed_untracked: list[str] = []
    for path in untracked:
        # A trailing slash is a nested repository, which git does not look into.
        if path.endswith("/") or skipped(path, skip) or path in ids:
            continue
        found = on_disk(path)
        if found is not None:
            _take(ids=ids, modes=modes, path=path, found=found)
            listed_untracked.append(path)
    ignored = list(
        expand_ignored(root=root, entries=ignored_raw, excluded=excluded, skip=skip, marks=marks)
    )
    return ProjectState(
        root=root,
        source="git",
        ids=ids,
        modes=modes,
        object_format=fmt,
        ignored=ignored,
        untracked=listed_untracked,
    )


def expand_ignored(
    *,
    root: str,
    entries: list[str],
    excluded: frozenset[str],
    skip: tuple[str, ...],
    marks: OwnMarks | None = None,
) -> Iterator[str]:
    """Ignored files, with each ignored folder git reports walked (excluded names pruned)."""
    for entry in entries:
        path = entry.rstrip("/")
        if skipped(path, skip) or excluded_path(path + "/x", excluded):
            continue
        if entry.endswith("/"):
            yield from walk(root=root, start=path, excluded=excluded, skip=skip, marks=marks)
        else:
            yield path


def _attributes_files(*, ids: dict[str, str], untracked: Sequence[str], listed: bool) -> list[str]:
    """The project's `.gitattributes` files among the listed paths (the index's only looked
    through when its listing held such a name)."""
    tracked = [path for path in ids if path.endswith(".gitattributes")] if listed else []
    return [*tracked, *(path for path in untracked if path.endswith(".gitattributes"))]
