"""The commit a run's project was at, and whether tracked files differed from it.

Asked when the run starts (`begin`), answered when its record is written (`GitProbe.result`):
the two git commands run beside the checks, and what the run itself writes (a tracked
lastfailed.json, say) cannot make the tree it started from look dirty.
"""

from __future__ import annotations

import subprocess

from eval_banana.core.errors import ProjectStateError
from eval_banana.history.record import GitState
from eval_banana.projectstate import git

# Untracked files are not counted: eb's own outputs are untracked in most projects and would
# mark every run dirty.
_STATUS = ["status", "--porcelain", "-z", "--untracked-files=no", "--ignore-submodules"]


class GitProbe:
    """`git rev-parse HEAD` and `git status` started in the project root, read on demand."""

    def __init__(self, *, root: str) -> None:
        self._processes: tuple[subprocess.Popen[bytes], ...] = ()
        self._answer: GitState | None = None
        self._done = False
        if not git.may_be_in_work_tree(root=root):
            self._done = True
            return
        try:
            head = git.start(args=["rev-parse", "--verify", "-q", "HEAD"], cwd=root)
        except git.NotARepository:
            self._done = True
            return
        try:
            self._processes = (head, git.start(args=_STATUS, cwd=root))
        except git.NotARepository:
            git.stop(process=head)
            self._done = True

    def result(self) -> GitState | None:
        """HEAD and the dirty flag; None outside a work tree or before the first commit."""
        if not self._done:
            self._done = True
            self._answer = self._read()
        return self._answer

    def _read(self) -> GitState | None:
        head, status = self._processes
        try:
            commit = git.finish(process=head, what="rev-parse").decode("ascii", "replace")
            changes = git.finish(process=status, what="status")
        except ProjectStateError:
            for process in self._processes:
                git.stop(process=process)
            return None
        commit = commit.strip()
        return GitState(commit=commit, dirty=bool(changes)) if commit else None

    def close(self) -> None:
        """End the commands if no one read them (a run that stopped before its record)."""
        if not self._done:
            self._done = True
            for process in self._processes:
                git.stop(process=process)


def begin(*, root: str) -> GitProbe:
    """Start observing the work tree holding `root`."""
    return GitProbe(root=root)


def observe(*, root: str) -> GitState | None:
    """The work tree's commit and dirty flag now."""
    return begin(root=root).result()
