"""Reading a project's state: from git where git lists the project, else by a walk.

The one entry point callers use (`read_project_state`); it takes over git commands a
`prefetch.prefetched_state` block started for the same root.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from eval_banana.core.ownmark import OwnMarks
from eval_banana.projectstate import git
from eval_banana.projectstate.gitlisting import git_state
from eval_banana.projectstate.prefetch import PREFETCHED
from eval_banana.projectstate.prefixes import relative_folders
from eval_banana.projectstate.state import ProjectState
from eval_banana.projectstate.walking import walk_state


def read_project_state(
    *,
    root: str | Path,
    excluded_names: Iterable[str] = (".git",),
    skip_folders: Iterable[str | Path] = (),
    prefixes: Sequence[str] | None = None,
    include_ignored: bool = False,
    known: Mapping[str, bytes] | None = None,
    marks: OwnMarks | None = None,
) -> ProjectState:
    """The state of the project at `root`.

    `excluded_names`: folder names never walked into (outside git, and for ignored files).
    `skip_folders`: folders whose files never count (eb's output and cache folders).
    `prefixes`: only paths at or below these root-relative paths (None: the whole project).
    `include_ignored`: also list the files git ignores, outside the excluded folders.
    `known`: contents already read this run, by absolute resolved path (the check files): a
    walk hashes them from memory instead of reading them again.
    `marks`: which folders are eb's own, never counted (by default every folder holding eb's
    mark; a watch fixes them before its checks start, core/ownmark.py).
    """
    top = os.path.realpath(root)
    skip = relative_folders(root=top, folders=skip_folders)
    excluded = frozenset(excluded_names) | {".git"}
    if prefixes is not None and not prefixes:
        return ProjectState(root=top, source="walk", ids={})
    walks = None
    if top in PREFETCHED:
        walks = PREFETCHED.pop(top)
        if walks is None:  # found outside any git work tree when the prefetch began
            return walk_state(
                root=top, excluded=excluded, skip=skip, prefixes=prefixes, known=known, marks=marks
            )
    try:
        repo = walks.repo if walks is not None else git.find_repository(root=top)
    except git.NotARepository:
        return walk_state(
            root=top, excluded=excluded, skip=skip, prefixes=prefixes, known=known, marks=marks
        )
    state = git_state(
        root=top,
        repo=repo,
        excluded=excluded,
        skip=skip,
        prefixes=prefixes,
        include_ignored=include_ignored,
        prefetched=walks,
        marks=marks,
    )
    if state is None:  # git lists nothing here: the folder is ignored by its repository
        return walk_state(
            root=top, excluded=excluded, skip=skip, prefixes=prefixes, known=known, marks=marks
        )
    return state
