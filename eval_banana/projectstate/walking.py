"""The project's files found by walking its folder, for a project git does not list.

Outside a git repository (or in a folder its repository ignores) the state is every file below
the root outside the excluded folder names; `every_file` is what a judge in the project can
see. Neither walk enters a folder eb wrote (core/ownmark.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from eval_banana.core.errors import ProjectStateError
from eval_banana.core.ownmark import MARK_NAMES, OwnMarks
from eval_banana.projectstate.blobs import FileIdentity, blob_id, git_mode
from eval_banana.projectstate.prefixes import relative_folders, skipped
from eval_banana.projectstate.state import ProjectState, hash_file


def excluded_path(path: str, excluded: frozenset[str]) -> bool:
    """Whether a folder above `path` (its last part is the file) has an excluded name."""
    return any(name in excluded for name in path.split("/")[:-1])


def walk(
    *,
    root: str,
    start: str,
    excluded: frozenset[str],
    skip: tuple[str, ...],
    marks: OwnMarks | None = None,
) -> Iterator[str]:
    """Files (and links) below `root/start`, as root-relative paths; folders never followed,
    nor eb's own folders below the root (core/ownmark.py), wherever they lie: those `marks`
    takes for eb's (by default, every folder holding eb's mark)."""
    marks = marks or OwnMarks()
    stack = [start]
    while stack:
        relative = stack.pop()
        folder = os.path.join(root, relative) if relative else root
        files: list[str] = []
        folders: list[str] = []
        names: list[str] = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    if name in MARK_NAMES:
                        names.append(name)
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
        if names and relative and marks.listed(folder=folder, relative=relative, names=names):
            continue
        yield from files
        stack.extend(folders)


def prefixes_in_own_folders(
    *, root: str, prefixes: Sequence[str] | None, marks: OwnMarks | None = None
) -> list[str]:
    """The prefixes (as folders, ending in `/`) that lie in a folder eb wrote (as `marks` takes
    them): a walk or a listing below one never sees the mark above it."""
    top = Path(root)
    marks = marks or OwnMarks()
    return [
        prefix + "/"
        for prefix in prefixes or ()
        if prefix and marks.holds(path=top / prefix, root=top)
    ]


def every_file(*, root: str | Path, skip_folders: Iterable[str | Path] = ()) -> list[str]:
    """Every file (and link) below `root`, git's own folder and the ones git ignores included,
    but none inside `skip_folders`: what a judge running in the project can see."""
    top = os.path.realpath(root)
    skip = relative_folders(root=top, folders=skip_folders)
    return sorted(walk(root=top, start="", excluded=frozenset(), skip=skip))


def _known_identity(*, full: str, data: bytes) -> FileIdentity | None:
    """A file whose bytes were read this run: a regular file (a link's own path is never a
    resolved one), so only its execute bit is looked up (None: gone since)."""
    try:
        info = os.lstat(full)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return FileIdentity(git_mode(info), blob_id(data=data))


def walk_state(
    *,
    root: str,
    excluded: frozenset[str],
    skip: tuple[str, ...],
    prefixes: Sequence[str] | None,
    known: Mapping[str, bytes] | None = None,
    marks: OwnMarks | None = None,
) -> ProjectState:
    """The state of the files below `root` (or below `prefixes`), each hashed; eb's folders are
    those `marks` takes for its own."""
    paths: dict[str, None] = {}
    marks = marks or OwnMarks()
    skip = (*skip, *prefixes_in_own_folders(root=root, prefixes=prefixes, marks=marks))
    for start in prefixes if prefixes is not None else [""]:
        full = os.path.join(root, start) if start else root
        if start and (os.path.islink(full) or not os.path.isdir(full)):
            # A prefix naming one file (or link) is that file, when it exists.
            usable = not excluded_path(start, excluded) and not skipped(start, skip)
            if usable and os.path.lexists(full):
                paths[start] = None
            continue
        if start and (excluded_path(start + "/x", excluded) or skipped(start, skip)):
            continue
        listed = walk(root=root, start=start, excluded=excluded, skip=skip, marks=marks)
        paths.update(dict.fromkeys(listed))
    ids: dict[str, str] = {}
    modes: dict[str, str] = {}
    known = known or {}
    for path in paths:
        data = known.get(f"{root}/{path}")
        if data is None:
            found = hash_file(root=root, path=path, fmt="sha1")
        else:
            found = _known_identity(full=os.path.join(root, path), data=data)
        if found is not None:
            ids[path] = found.id
            modes[path] = found.mode
    return ProjectState(root=root, source="walk", ids=ids, modes=modes)
