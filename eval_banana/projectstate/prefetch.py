"""git's slow commands of a state read, started before the read asks for them.

`eb run` starts them for the whole project while it looks for check files; the first read of
that root takes them over when they answer what it asks, and whatever no read took is ended.
The started commands are kept here, one entry per project root, and nowhere else.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from eval_banana.projectstate import git
from eval_banana.projectstate.prefixes import relative_folders


class Walks(NamedTuple):
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
    ) -> Walks:
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
PREFETCHED: dict[str, Walks | None] = {}


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
        PREFETCHED[top] = Walks.start(repo=repo, prefixes=None, skip=skip)
    except git.NotARepository:
        PREFETCHED[top] = None  # the read walks the folder without asking git again
    except OSError:
        pass
    try:
        yield
    finally:
        drop_prefetched(root=top)


def drop_prefetched(*, root: str) -> None:
    """End and forget the prefetched commands of `root` (a real path), if any are left."""
    prefetched = PREFETCHED.pop(root, None)
    if prefetched is not None:
        prefetched.close()


def walks_for(
    *,
    repo: git.Repository,
    prefixes: Sequence[str] | None,
    skip: tuple[str, ...],
    prefetched: Walks | None,
) -> Walks:
    """The prefetched commands when they cover what this read asks git for, else the same
    commands started now."""
    if prefetched is not None and not git.narrows(prefixes) and prefetched.skip == skip:
        return prefetched
    if prefetched is not None:
        prefetched.close()
    return Walks.start(repo=repo, prefixes=prefixes, skip=skip)
